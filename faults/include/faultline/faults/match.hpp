#pragma once
// Which requests a rule looks at. A pure function of the request. Empty lists match everything;
// within one key any entry may match, and every given key must match.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/request.hpp"

namespace faultline::faults {

struct HeaderMatch {
  std::string name;   // case-insensitive
  std::string value;  // glob
};

struct Match {
  // get list watch create update patch delete deletecollection proxy, plus `connect` (see
  // RequestInfo::is_connect) and `*`.
  std::vector<std::string> verbs;
  // "pods" (no subresource), "pods/binding", "pods/*", "*/status", "deployments.apps", "*".
  // Without ".group" the resource matches in any API group.
  std::vector<std::string> resources;
  std::vector<std::string> namespaces;   // globs
  std::vector<std::string> names;        // globs
  std::vector<std::string> user_agents;  // globs
  std::vector<std::string> paths;        // globs over the URL path (useful for non-resource URLs)
  std::vector<HeaderMatch> headers;      // every header listed must be present and match

  bool matches(const Request& request) const;
  bool empty() const;
};

// The longest glob a scenario may use (namespaces, names, userAgents, paths, header values).
// Matching costs time in proportion to text length x (pattern length / 64), under the engine's lock.
inline constexpr std::size_t max_glob_pattern_bytes = 1024;
// What is wrong with a glob of `bytes` bytes, beyond max_glob_pattern_bytes (every reader of globs says it so).
std::string glob_too_long(std::size_t bytes);

// Shell-style glob: `*` any run of characters, `?` one character (byte); everything else literal.
bool glob_match(std::string_view pattern, std::string_view text);

// One `resources` entry against a classified request.
bool resource_matches(std::string_view pattern, const RequestInfo& info);

}  // namespace faultline::faults
