#include "faultline/faults/match.hpp"

#include <algorithm>

namespace faultline::faults {
namespace {

template <typename Pred>
bool any_or_empty(const std::vector<std::string>& patterns, Pred pred) {
  return patterns.empty() || std::any_of(patterns.begin(), patterns.end(), pred);
}

bool verb_matches(std::string_view pattern, const RequestInfo& info) {
  if (pattern == "*") return true;
  if (pattern == "connect") return info.is_connect();
  return pattern == info.verb;
}

}  // namespace

// Iterative glob with single-star backtracking: linear enough for the short strings we match.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1, t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool resource_matches(std::string_view pattern, const RequestInfo& info) {
  if (!info.is_resource_request) return false;
  if (pattern == "*") return true;
  std::string_view resource_part = pattern, sub_part;
  bool has_sub = false;
  if (auto slash = pattern.find('/'); slash != std::string_view::npos) {
    resource_part = pattern.substr(0, slash);
    sub_part = pattern.substr(slash + 1);
    has_sub = true;
  }
  if (auto dot = resource_part.find('.'); dot != std::string_view::npos) {
    if (resource_part.substr(dot + 1) != info.api_group) return false;
    resource_part = resource_part.substr(0, dot);
  }
  if (resource_part != "*" && resource_part != info.resource) return false;
  if (!has_sub) return info.subresource.empty();
  return sub_part == "*" ? !info.subresource.empty() : sub_part == info.subresource;
}

bool Match::matches(const Request& request) const {
  const RequestInfo& info = request.info;
  auto glob_over = [](const std::string& text) {
    return [&text](const std::string& pattern) { return glob_match(pattern, text); };
  };
  return any_or_empty(verbs, [&](const std::string& v) { return verb_matches(v, info); }) &&
         any_or_empty(resources, [&](const std::string& r) { return resource_matches(r, info); }) &&
         any_or_empty(namespaces, glob_over(info.namespace_)) &&
         any_or_empty(names, glob_over(info.name)) &&
         any_or_empty(user_agents, glob_over(request.user_agent)) &&
         any_or_empty(paths, glob_over(info.path)) &&
         std::all_of(headers.begin(), headers.end(), [&](const HeaderMatch& h) {
           const std::string* value = request.header(h.name);
           return value != nullptr && glob_match(h.value, *value);
         });
}

bool Match::empty() const {
  return verbs.empty() && resources.empty() && namespaces.empty() && names.empty() &&
         user_agents.empty() && paths.empty() && headers.empty();
}

}  // namespace faultline::faults
