#include "faultline/harness/scenario_seed.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

namespace faultline::harness {

std::string scenario_with_seed(std::string_view yaml, std::uint64_t seed) {
  const std::string text(yaml);
  const YAML::Node root = YAML::Load(text);
  if (!root.IsMap() || root.size() == 0) throw std::runtime_error("--seed: the scenario is not a YAML mapping");
  const std::string value = std::to_string(seed);
  if (const YAML::Node old = root["seed"]) {
    // Replace the value as written, plain or quoted.
    const std::size_t at = old.Mark().pos;
    std::size_t end = std::string::npos;
    if (old.IsScalar() && at < text.size() && (text[at] == '"' || text[at] == '\'')) {
      end = text.find(text[at], at + 1);
      if (end != std::string::npos) ++end;
    } else if (old.IsScalar() && text.compare(at, old.Scalar().size(), old.Scalar()) == 0) {
      end = at + old.Scalar().size();
    }
    if (end == std::string::npos) throw std::runtime_error("--seed: cannot find the scenario's seed in its text");
    return text.substr(0, at) + value + text.substr(end);
  }
  // No seed yet: a new first key of the top-level mapping, in its style.
  const YAML::Mark first = root.begin()->first.Mark();
  const std::string entry = root.Style() == YAML::EmitterStyle::Flow
                                ? "seed: " + value + ", "
                                : "seed: " + value + "\n" + std::string(static_cast<std::size_t>(first.column), ' ');
  return text.substr(0, static_cast<std::size_t>(first.pos)) + entry + text.substr(static_cast<std::size_t>(first.pos));
}

}  // namespace faultline::harness
