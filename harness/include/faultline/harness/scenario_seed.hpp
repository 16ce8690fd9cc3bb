#pragma once
// `faultline-harness run --seed`: the proxy takes its seed from the scenario text it is sent, so
// the override goes into that text.
#include <cstdint>
#include <string>
#include <string_view>

namespace faultline::harness {

// The scenario YAML with its top-level `seed` set to `seed` (added when absent). yaml-cpp finds the
// seed (or the first key) in the parsed document; only that place of the text changes, so quoting,
// comments and every other value stay as written (writing the parsed document out again would
// drop the quotes of strings such as "32"). The text must be a loadable scenario
// (faults::load_scenario_text accepted it); throws std::runtime_error otherwise.
std::string scenario_with_seed(std::string_view yaml, std::uint64_t seed);

}  // namespace faultline::harness
