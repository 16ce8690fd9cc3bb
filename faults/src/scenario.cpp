#include "faultline/faults/scenario.hpp"

#include "faultline/faults/file.hpp"
#include "scenario_parse.hpp"
#include "yaml_load.hpp"

namespace faultline::faults {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

void parse_header(detail::MapReader& root, Scenario& scenario) {
  auto api_version = root.string("apiVersion", true);
  if (api_version && *api_version != "faultline/v1")
    root.error_at("apiVersion", "must be \"faultline/v1\", got \"" + *api_version + "\"");
  auto kind = root.string("kind", true);
  if (kind && *kind != "Scenario") root.error_at("kind", "must be \"Scenario\", got \"" + *kind + "\"");
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

template <typename T, typename Parse>
std::optional<T> parse_optional_section(detail::MapReader& root, std::string_view key, Parse parse) {
  YAML::Node node = root.take(key);
  if (!node.IsDefined()) return std::nullopt;
  detail::MapReader reader(node, std::string(key), root.errors());
  if (!reader.valid()) return std::nullopt;
  T value = parse(reader);
  reader.finish();
  return value;
}

void parse_document(const YAML::Node& document, Scenario& scenario, detail::Errors& errors) {
  detail::MapReader root(document, "", errors);
  if (!root.valid()) return;
  parse_header(root, scenario);
  if (auto seed = root.count("seed", 0)) scenario.seed = *seed;
  scenario.workload = parse_optional_section<Workload>(root, "workload", detail::parse_workload);
  scenario.faults = detail::parse_faults(root.take("faults"), "faults", errors);
  scenario.component_faults = detail::parse_component_faults(root.take("componentFaults"), "componentFaults", errors);
  if (auto checks = parse_optional_section<Checks>(root, "checks", detail::parse_checks)) scenario.checks = *checks;
  root.finish();
}

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

ScenarioError::ScenarioError(std::vector<std::string> errors)
    : std::runtime_error(join_lines(errors)), errors_(std::move(errors)) {}

std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name) {
  detail::Errors errors{std::string(source_name)};
  auto scenario = std::make_shared<Scenario>();
  scenario->source = std::string(source_name);
  YAML::Node document = detail::load_yaml(text, errors);
  try {
    if (document.IsDefined() && !document.IsNull()) parse_document(document, *scenario, errors);
    else if (errors.empty()) errors.add(YAML::Mark::null_mark(), "", "the file is empty");
  } catch (const YAML::Exception& e) {  // a node shape the readers did not expect: still an error report
    errors.add(e.mark, "", "cannot read this YAML: " + e.msg);
  }
  if (!errors.empty()) throw ScenarioError(errors.report());
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
