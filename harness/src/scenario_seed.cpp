#include "faultline/harness/scenario_seed.hpp"

#include <stdexcept>

#include "faultline/harness/schema/yaml_edit.hpp"

namespace faultline::harness {

std::string scenario_with_seed(std::string_view yaml, std::uint64_t seed) {
  try {
    return schema::with_value_at(yaml, "seed", std::to_string(seed));
  } catch (const schema::YamlEditError& e) {
    throw std::runtime_error(std::string("--seed: ") + e.what());
  }
}

}  // namespace faultline::harness
