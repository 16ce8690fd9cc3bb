#pragma once
// Request classification, the same way kube-apiserver's RequestInfoFactory does it
// (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), so rules name requests in the words
// RBAC and audit logs use: verb, API group, version, namespace, resource, subresource, name.

#include <string>
#include <string_view>

namespace faultline::faults {

struct RequestInfo {
  // false for non-resource URLs (/healthz, /version, /api, /apis/apps, ...)
  bool is_resource_request = false;
  // the URL path, percent-decoded, without the query
  std::string path;
  // Resource requests: get list watch create update patch delete deletecollection proxy
  // (or "" for an unknown HTTP method). Non-resource requests: the lower-case HTTP method.
  std::string verb;
  std::string api_prefix;   // "api" or "apis"
  std::string api_group;    // "" for the core group
  std::string api_version;  // "v1"
  std::string namespace_;   // "" when cluster-scoped
  std::string resource;     // "pods"
  std::string subresource;  // "binding", "status", "exec", ...
  // From the path, or (list/watch only) from fieldSelector=metadata.name=<name>, as kube-apiserver.
  std::string name;
  // Raw query values, only for list, watch and deletecollection (as kube-apiserver parses them).
  std::string label_selector;
  std::string field_selector;
  // kube-apiserver could not classify it (e.g. "/api/v1/watch" with nothing after); it answers
  // such requests with an error.
  bool malformed = false;

  // True for streaming connect subresources that admission calls CONNECT: pods/exec, pods/attach,
  // pods/portforward, pods/proxy, services/proxy, nodes/proxy. Their `verb` stays what
  // RequestInfoFactory says (create or get); rules can still name them with verb `connect`.
  bool is_connect() const;
  bool is_watch() const { return verb == "watch"; }
  // "pods", "pods/binding": the resource as rules and RBAC write it.
  std::string resource_path() const;
};

// `method` is the HTTP method ("GET"), `target` the request target ("/api/v1/pods?watch=1").
RequestInfo classify(std::string_view method, std::string_view target);

}  // namespace faultline::faults
