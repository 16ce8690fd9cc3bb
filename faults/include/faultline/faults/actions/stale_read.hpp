#pragma once
// stale-read: a matching LIST is answered as the cluster was at an earlier moment. Its query is
// rewritten to `resourceVersion=RV&resourceVersionMatch=Exact`, so the answer is kube-apiserver's
// own consistent read at RV (or its own error: 410 Expired once RV is compacted). RV is the
// `resourceVersion` given, or the one the proxy recorded when the rule's window opened.

#include <optional>
#include <string>
#include <string_view>

#include "faultline/faults/request.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct StaleRead {
  static constexpr std::string_view type = "stale-read";
  static StaleRead parse(detail::MapReader& reader);
  // A fixed resourceVersion (decimal, as kube-apiserver writes them); "" -> the one recorded when
  // the rule's window opened.
  std::string resource_version;

  // The requests it acts on: LISTs (not the continuation of a paginated one: its continue token
  // already names the resourceVersion of the first page).
  static bool applies_to(const Request& request);
};

// A resourceVersion as kube-apiserver writes one: 1 to 20 decimal digits, no leading zero, not
// past 2^64-1 ("0" means "any version" to the apiserver, not a moment).
bool is_resource_version(std::string_view text);

// `target` with resourceVersion and resourceVersionMatch replaced by `resourceVersion=rv&
// resourceVersionMatch=Exact`, every other parameter kept in its order and spelling.
std::string rewrite_to_exact(std::string_view target, std::string_view rv);

// The value of query parameter `name` in `target` (percent-decoded), nullopt when absent.
std::optional<std::string> query_parameter(std::string_view target, std::string_view name);

}  // namespace faultline::faults::actions
