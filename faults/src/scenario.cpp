#include "faultline/faults/scenario.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

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

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
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
  const std::string name = path.string();
  auto fail = [&name](const std::string& what) { return ScenarioError({name + ": " + what}); };
  auto system_error = [](int error) { return std::generic_category().message(error); };
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw fail("cannot read the file: " + system_error(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw fail("cannot read the file: " + system_error(errno));
  if (!S_ISREG(info.st_mode))
    throw fail("not a regular file (" + file_kind(info.st_mode) + "): a scenario is read from a regular file only");
  const std::string maximum = "the maximum is " + std::to_string(max_scenario_bytes) + " bytes (1 MiB)";
  if (static_cast<std::uint64_t>(info.st_size) > max_scenario_bytes)
    throw fail("the file is " + std::to_string(info.st_size) + " bytes; " + maximum);
  std::string text;
  std::array<char, 64 * 1024> chunk{};
  for (;;) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("cannot read the file: " + system_error(errno));
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > max_scenario_bytes) throw fail("the file grew while being read; " + maximum);
  }
  return text;
}

}  // namespace faultline::faults
