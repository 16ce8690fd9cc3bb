#include "faultline/harness/scenario_seed.hpp"

#include <stdexcept>

#include "faultline/faults/yaml_edit.hpp"

namespace faultline::harness {

std::string scenario_with_seed(std::string_view yaml, std::uint64_t seed) {
  try {
    return faults::with_value_at(yaml, "seed", std::to_string(seed));
  } catch (const faults::YamlEditError& e) {
    throw std::runtime_error(std::string("--seed: ") + e.what());
  }
}

}  // namespace faultline::harness
