#include "faultline/harness/schema/scenario.hpp"

#include "sections.hpp"

namespace faultline::harness::schema {
namespace {

// Reads the harness_sections of a document into a harness Scenario.
class Sections final : public faults::SectionReader {
 public:
  explicit Sections(Scenario& scenario) : scenario_(scenario) {}

  void read(std::string_view key, const YAML::Node& node, faults::detail::Errors& errors) override {
    if (key == "componentFaults") {
      scenario_.component_faults = detail::parse_component_faults(node, std::string(key), errors);
      return;
    }
    if (!node.IsDefined()) return;
    faults::detail::MapReader reader(node, std::string(key), errors);
    if (!reader.valid()) return;
    if (key == "workload") scenario_.workload = detail::parse_workload(reader);
    if (key == "checks") scenario_.checks = detail::parse_checks(reader);
    reader.finish();
  }

 private:
  Scenario& scenario_;
};

}  // namespace

const InvariantSpec* find_invariant(std::string_view name) {
  for (const auto& spec : invariant_specs)
    if (spec.name == name) return &spec;
  return nullptr;
}

std::vector<std::string> invariant_names() {
  std::vector<std::string> names;
  for (const auto& spec : invariant_specs) names.emplace_back(spec.name);
  return names;
}

std::vector<std::string> default_invariant_names() {
  std::vector<std::string> names;
  for (const auto& spec : invariant_specs)
    if (spec.by_default) names.emplace_back(spec.name);
  return names;
}

std::vector<std::string> Checks::invariants_to_check() const {
  return invariants ? *invariants : default_invariant_names();
}

std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name) {
  auto scenario = std::make_shared<Scenario>();
  Sections sections(*scenario);
  faults::load_scenario_text(text, source_name, *scenario, sections);
  return scenario;
}

std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path) {
  return load_scenario_text(faults::read_scenario_file(path), path.string());
}

}  // namespace faultline::harness::schema
