#include "faultline/faults/scenario.hpp"

#include "faultline/faults/file.hpp"
#include "faultline/faults/scenario_reader.hpp"
#include "faultline/faults/yaml_load.hpp"
#include "scenario_parse.hpp"

namespace faultline::faults {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

void parse_header(detail::MapReader& root, Scenario& scenario) {
  detail::check_header(root, "Scenario");
  YAML::Node metadata = root.take("metadata");
  if (!metadata.IsDefined()) {
    root.missing("metadata");
    return;
  }
  detail::MapReader reader(metadata, "metadata", root.errors());
  if (auto name = reader.string("name", true)) scenario.metadata.name = *name;
  if (auto description = reader.string("description")) scenario.metadata.description = *description;
  reader.finish();
}

// Reads nothing: what load_scenario_text does with the harness_sections.
class Unread final : public SectionReader {
 public:
  explicit Unread(Scenario& scenario) : scenario_(scenario) {}
  void read(std::string_view key, const YAML::Node& node, detail::Errors&) override {
    if (node.IsDefined()) scenario_.unread_sections.emplace_back(key);
  }

 private:
  Scenario& scenario_;
};

void parse_document(const YAML::Node& document, Scenario& scenario, SectionReader& sections, detail::Errors& errors) {
  detail::MapReader root(document, "", errors);
  if (!root.valid()) return;
  parse_header(root, scenario);
  if (auto seed = root.count("seed", 0)) scenario.seed = *seed;
  // In the order of the file format: workload, faults, componentFaults, checks.
  sections.read(harness_sections[0], root.take(harness_sections[0]), errors);
  scenario.faults = detail::parse_faults(root.take("faults"), "faults", errors);
  for (std::size_t i = 1; i < harness_sections.size(); ++i)
    sections.read(harness_sections[i], root.take(harness_sections[i]), errors);
  root.finish();
}

}  // namespace

ScenarioError::ScenarioError(std::vector<std::string> errors)
    : std::runtime_error(join_lines(errors)), errors_(std::move(errors)) {}

void load_scenario_text(std::string_view text, std::string_view source_name, Scenario& scenario,
                        SectionReader& sections) {
  detail::Errors errors{std::string(source_name)};
  scenario.source = std::string(source_name);
  detail::read_document(text, errors,
                        [&](const YAML::Node& document) { parse_document(document, scenario, sections, errors); });
}

std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name) {
  auto scenario = std::make_shared<Scenario>();
  Unread unread(*scenario);
  load_scenario_text(text, source_name, *scenario, unread);
  return scenario;
}

std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path) {
  return load_scenario_text(read_scenario_file(path), path.string());
}

std::string read_scenario_file(const std::filesystem::path& path) {
  try {
    return read_regular_file(path, max_scenario_bytes, "a scenario");
  } catch (const FileError& e) {
    throw ScenarioError({e.what()});
  }
}

}  // namespace faultline::faults
