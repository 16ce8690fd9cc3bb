#include <algorithm>

#include "scenario_parse.hpp"

namespace faultline::faults::detail {
namespace {

const std::vector<std::string_view> known_verbs{
    "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy", "connect", "*"};

void check_verbs(MapReader& reader, const std::vector<std::string>& verbs) {
  for (std::size_t i = 0; i < verbs.size(); ++i)
    if (std::find(known_verbs.begin(), known_verbs.end(), verbs[i]) == known_verbs.end())
      reader.errors().add(reader.take("verbs")[i].Mark(), reader.path_of("verbs") + "[" + std::to_string(i) + "]",
                          "unknown verb \"" + verbs[i] + "\" (known: " + join(known_verbs) + ")");
}

// "resource[.group][/subresource]" with non-empty parts.
bool valid_resource_pattern(std::string_view pattern) {
  auto slash = pattern.find('/');
  std::string_view resource = pattern.substr(0, slash);
  if (resource.empty() || resource.front() == '.' || resource.back() == '.') return false;
  if (slash == std::string_view::npos) return true;
  std::string_view sub = pattern.substr(slash + 1);
  return !sub.empty() && sub.find('/') == std::string_view::npos;
}

void check_resources(MapReader& reader, const std::vector<std::string>& resources) {
  for (std::size_t i = 0; i < resources.size(); ++i)
    if (!valid_resource_pattern(resources[i]))
      reader.errors().add(reader.take("resources")[i].Mark(),
                          reader.path_of("resources") + "[" + std::to_string(i) + "]",
                          "invalid resource \"" + resources[i] +
                              "\" (write resource[.group][/subresource], e.g. pods/binding or deployments.apps)");
}

std::optional<std::vector<std::string>> glob_list(MapReader& reader, std::string_view key) {
  auto patterns = reader.string_list(key);
  if (!patterns) return patterns;
  bool ok = true;
  for (std::size_t i = 0; i < patterns->size(); ++i)
    if ((*patterns)[i].size() > max_glob_pattern_bytes) {
      reader.errors().add(reader.take(key)[i].Mark(), reader.path_of(key) + "[" + std::to_string(i) + "]",
                          glob_too_long((*patterns)[i].size()));
      ok = false;
    }
  if (!ok) return std::nullopt;
  return patterns;
}

void check_header_patterns(MapReader& reader) {
  for (auto entry : reader.take("headers"))
    if (entry.second.IsScalar() && entry.second.Scalar().size() > max_glob_pattern_bytes)
      reader.errors().add(entry.second.Mark(), reader.path_of("headers") + "." + entry.first.Scalar(),
                          glob_too_long(entry.second.Scalar().size()));
}

}  // namespace

Match parse_match(MapReader& reader) {
  Match match;
  if (auto verbs = reader.string_list("verbs")) {
    check_verbs(reader, *verbs);
    match.verbs = *verbs;
  }
  if (auto resources = reader.string_list("resources")) {
    check_resources(reader, *resources);
    match.resources = *resources;
  }
  if (auto v = glob_list(reader, "namespaces")) match.namespaces = *v;
  if (auto v = glob_list(reader, "names")) match.names = *v;
  if (auto v = glob_list(reader, "userAgents")) match.user_agents = *v;
  if (auto v = glob_list(reader, "paths")) match.paths = *v;
  if (auto headers = reader.string_map("headers")) {
    check_header_patterns(reader);
    for (auto& [name, value] : *headers) match.headers.push_back({name, value});
  }
  reader.finish();
  return match;
}

}  // namespace faultline::faults::detail

namespace faultline::faults {

std::string glob_too_long(std::size_t bytes) {
  return "pattern of " + std::to_string(bytes) + " bytes is longer than the maximum of " +
         std::to_string(max_glob_pattern_bytes) + " bytes";
}

}  // namespace faultline::faults
