#include "faultline/faults/scenario.hpp"

#include <array>
#include <fstream>
#include <sstream>

#include "scenario_parse.hpp"

namespace faultline::faults {
namespace {

constexpr std::array<std::string_view, 5> invariant_names{
    "pods-bound", "queue-accounting", "no-orphan-allocations", "no-unexpected-deletes", "bound-to-live-node"};

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
  if (auto checks = parse_optional_section<Checks>(root, "checks", detail::parse_checks)) scenario.checks = *checks;
  else scenario.checks.invariants = detail::default_invariants();
  root.finish();
}

YAML::Node parse_yaml(std::string_view text, detail::Errors& errors) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    errors.add(e.mark, "", "invalid YAML: " + e.msg);
    return YAML::Node(YAML::NodeType::Undefined);
  }
}

}  // namespace

namespace detail {
std::vector<std::string> default_invariants() { return {"pods-bound", "bound-to-live-node", "no-unexpected-deletes"}; }
}  // namespace detail

std::span<const std::string_view> known_invariants() { return invariant_names; }

ScenarioError::ScenarioError(std::vector<std::string> errors)
    : std::runtime_error(join_lines(errors)), errors_(std::move(errors)) {}

std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name) {
  detail::Errors errors{std::string(source_name)};
  auto scenario = std::make_shared<Scenario>();
  scenario->source = std::string(source_name);
  YAML::Node document = parse_yaml(text, errors);
  try {
    if (document.IsDefined() && !document.IsNull()) parse_document(document, *scenario, errors);
    else if (errors.list().empty()) errors.add(YAML::Mark::null_mark(), "", "the file is empty");
  } catch (const YAML::Exception& e) {  // a node shape the readers did not expect: still an error report
    errors.add(e.mark, "", "cannot read this YAML: " + e.msg);
  }
  if (!errors.list().empty()) throw ScenarioError(errors.list());
  return scenario;
}

std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError({path.string() + ": cannot read the file"});
  std::ostringstream text;
  text << in.rdbuf();
  return load_scenario_text(text.str(), path.string());
}

}  // namespace faultline::faults
