#pragma once
// `faultline-harness run --seed`: the proxy takes its seed from the scenario text it is sent, so
// the override goes into that text.
#include <cstdint>
#include <string>
#include <string_view>

namespace faultline::harness {

// The scenario YAML with its top-level `seed` set to `seed` (added when absent), written in place
// by schema::with_value_at so that quoting, comments and every other value stay as written. The
// text must be a loadable scenario (schema::load_scenario_text accepted it); throws
// std::runtime_error otherwise.
std::string scenario_with_seed(std::string_view yaml, std::uint64_t seed);

}  // namespace faultline::harness
