// Request lines as client-go, kubectl, kube-scheduler and YuniKorn send them, classified the way
// kube-apiserver's RequestInfoFactory does (requestinfo.go in k8s.io/apiserver).
#include <gtest/gtest.h>

#include "faultline/faults/request_info.hpp"

namespace faultline::faults {
namespace {

struct Row {
  const char* method;
  const char* target;
  const char* verb;
  bool resource_request;
  const char* group;
  const char* version;
  const char* ns;
  const char* resource;
  const char* subresource;
  const char* name;
  bool connect = false;
  const char* label_selector = "";
  const char* field_selector = "";
};

std::ostream& operator<<(std::ostream& out, const Row& row) { return out << row.method << " " << row.target; }

class Classify : public ::testing::TestWithParam<Row> {};

TEST_P(Classify, MatchesKubeApiserver) {
  const Row& row = GetParam();
  RequestInfo info = classify(row.method, row.target);
  EXPECT_EQ(info.verb, row.verb);
  EXPECT_EQ(info.is_resource_request, row.resource_request);
  EXPECT_EQ(info.api_group, row.group);
  EXPECT_EQ(info.api_version, row.version);
  EXPECT_EQ(info.namespace_, row.ns);
  EXPECT_EQ(info.resource, row.resource);
  EXPECT_EQ(info.subresource, row.subresource);
  EXPECT_EQ(info.name, row.name);
  EXPECT_EQ(info.is_connect(), row.connect);
  EXPECT_EQ(info.label_selector, row.label_selector);
  EXPECT_EQ(info.field_selector, row.field_selector);
}

const Row rows[] = {
    // core group, namespaced: list, get, watch (query and legacy prefix)
    {"GET", "/api/v1/namespaces/default/pods", "list", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods/web-0", "get", true, "", "v1", "default", "pods", "", "web-0"},
    {"HEAD", "/api/v1/namespaces/default/pods/web-0", "get", true, "", "v1", "default", "pods", "", "web-0"},
    {"GET", "/api/v1/pods?limit=500&resourceVersion=0", "list", true, "", "v1", "", "pods", "", ""},
    {"GET", "/api/v1/pods?allowWatchBookmarks=true&resourceVersion=1234&timeoutSeconds=417&watch=true", "watch", true,
     "", "v1", "", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods?watch=1", "watch", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods?watch", "watch", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods?watch=false", "list", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods?watch=0", "list", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/namespaces/default/pods?watch=FALSE", "list", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/watch/pods", "watch", true, "", "v1", "", "pods", "", ""},
    {"GET", "/api/v1/watch/namespaces/default/pods", "watch", true, "", "v1", "default", "pods", "", ""},
    {"GET", "/api/v1/watch/namespaces/default/pods/web-0", "watch", true, "", "v1", "default", "pods", "", "web-0"},
    // writes
    {"POST", "/api/v1/namespaces/default/pods", "create", true, "", "v1", "default", "pods", "", ""},
    {"POST", "/api/v1/namespaces/faultline/pods/burst-17/binding", "create", true, "", "v1", "faultline", "pods",
     "binding", "burst-17"},
    {"POST", "/api/v1/namespaces/default/bindings", "create", true, "", "v1", "default", "bindings", "", ""},
    {"PUT", "/api/v1/namespaces/default/pods/web-0/status", "update", true, "", "v1", "default", "pods", "status",
     "web-0"},
    {"PATCH", "/api/v1/namespaces/default/pods/web-0/status", "patch", true, "", "v1", "default", "pods", "status",
     "web-0"},
    {"POST", "/api/v1/namespaces/default/pods/web-0/eviction", "create", true, "", "v1", "default", "pods", "eviction",
     "web-0"},
    {"PUT", "/api/v1/namespaces/default/pods/web-0/ephemeralcontainers", "update", true, "", "v1", "default", "pods",
     "ephemeralcontainers", "web-0"},
    {"DELETE", "/api/v1/namespaces/default/pods/web-0", "delete", true, "", "v1", "default", "pods", "", "web-0"},
    {"DELETE", "/api/v1/namespaces/default/pods", "deletecollection", true, "", "v1", "default", "pods", "", ""},
    {"DELETE", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb", "deletecollection", true, "", "v1", "default",
     "pods", "", "", false, "app=web"},
    {"POST", "/api/v1/namespaces/default/serviceaccounts/default/token", "create", true, "", "v1", "default",
     "serviceaccounts", "token", "default"},
    {"OPTIONS", "/api/v1/pods", "", true, "", "v1", "", "pods", "", ""},
    // connect subresources (RequestInfo keeps create/get; admission calls them CONNECT)
    {"POST", "/api/v1/namespaces/default/pods/web-0/exec?command=ls&stdout=true", "create", true, "", "v1", "default",
     "pods", "exec", "web-0", true},
    {"GET", "/api/v1/namespaces/default/pods/web-0/exec?command=ls&stdout=true", "get", true, "", "v1", "default",
     "pods", "exec", "web-0", true},
    {"POST", "/api/v1/namespaces/default/pods/web-0/attach?stdin=true", "create", true, "", "v1", "default", "pods",
     "attach", "web-0", true},
    {"POST", "/api/v1/namespaces/default/pods/web-0/portforward?ports=8080", "create", true, "", "v1", "default",
     "pods", "portforward", "web-0", true},
    {"GET", "/api/v1/namespaces/default/pods/web-0/proxy/metrics", "get", true, "", "v1", "default", "pods", "proxy",
     "web-0", true},
    {"GET", "/api/v1/namespaces/default/services/web:http/proxy/metrics", "get", true, "", "v1", "default", "services",
     "proxy", "web:http", true},
    {"GET", "/api/v1/nodes/node-1/proxy/metrics", "get", true, "", "v1", "", "nodes", "proxy", "node-1", true},
    {"GET", "/api/v1/namespaces/default/pods/web-0/log?container=app", "get", true, "", "v1", "default", "pods", "log",
     "web-0"},
    // the legacy proxy verb never takes a subresource
    {"GET", "/api/v1/proxy/namespaces/default/pods/web-0", "proxy", true, "", "v1", "default", "pods", "", "web-0",
     true},
    {"GET", "/api/v1/proxy/namespaces/default/pods/web-0/healthz", "proxy", true, "", "v1", "default", "pods", "",
     "web-0", true},
    // cluster-scoped, and the namespaces resource itself
    {"GET", "/api/v1/nodes", "list", true, "", "v1", "", "nodes", "", ""},
    {"GET", "/api/v1/nodes/node-1", "get", true, "", "v1", "", "nodes", "", "node-1"},
    {"PATCH", "/api/v1/nodes/node-1/status", "patch", true, "", "v1", "", "nodes", "status", "node-1"},
    {"GET", "/api/v1/namespaces", "list", true, "", "v1", "", "namespaces", "", ""},
    {"GET", "/api/v1/namespaces/kube-system", "get", true, "", "v1", "kube-system", "namespaces", "", "kube-system"},
    {"PUT", "/api/v1/namespaces/kube-system/finalize", "update", true, "", "v1", "kube-system", "namespaces",
     "finalize", "kube-system"},
    {"GET", "/api/v1/namespaces/kube-system/status", "get", true, "", "v1", "kube-system", "namespaces", "status",
     "kube-system"},
    // named groups
    {"GET", "/apis/apps/v1/namespaces/default/deployments", "list", true, "apps", "v1", "default", "deployments", "",
     ""},
    {"GET", "/apis/apps/v1/deployments", "list", true, "apps", "v1", "", "deployments", "", ""},
    {"PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", "patch", true, "apps", "v1", "default",
     "deployments", "scale", "web"},
    {"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "get", true,
     "coordination.k8s.io", "v1", "kube-system", "leases", "", "kube-scheduler"},
    {"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "update", true,
     "coordination.k8s.io", "v1", "kube-system", "leases", "", "kube-scheduler"},
    {"POST", "/apis/events.k8s.io/v1/namespaces/default/events", "create", true, "events.k8s.io", "v1", "default",
     "events", "", ""},
    {"GET", "/apis/storage.k8s.io/v1/csinodes?allowWatchBookmarks=true&watch=true", "watch", true, "storage.k8s.io",
     "v1", "", "csinodes", "", ""},
    {"GET", "/apis/scheduling.k8s.io/v1/priorityclasses?limit=500&resourceVersion=0", "list", true, "scheduling.k8s.io",
     "v1", "", "priorityclasses", "", ""},
    {"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "create", true, "authorization.k8s.io", "v1", "",
     "subjectaccessreviews", "", ""},
    {"GET", "/apis/metrics.k8s.io/v1beta1/nodes", "list", true, "metrics.k8s.io", "v1beta1", "", "nodes", "", ""},
    {"GET", "/apis/apps/v1/watch/namespaces/default/replicasets", "watch", true, "apps", "v1", "default", "replicasets",
     "", ""},
    // selectors: recorded for list/watch/deletecollection; metadata.name pins the name
    {"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
     "list", true, "", "v1", "", "pods", "", "", false, "",
     "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"},
    {"GET", "/api/v1/namespaces/faultline/pods?labelSelector=applicationId+in+%28a%2Cb%29", "list", true, "", "v1",
     "faultline", "pods", "", "", false, "applicationId in (a,b)"},
    {"GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb-0&watch=1", "watch", true, "", "v1",
     "default", "pods", "", "web-0", false, "", "metadata.name=web-0"},
    {"GET", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3D%3Dkube-root-ca.crt", "list", true, "",
     "v1", "default", "configmaps", "", "kube-root-ca.crt", false, "", "metadata.name==kube-root-ca.crt"},
    {"GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%21%3Dweb-0", "list", true, "", "v1", "default",
     "pods", "", "", false, "", "metadata.name!=web-0"},
    {"GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb-0&limit=abc", "list", true, "", "v1",
     "default", "pods", "", "", false, "", "metadata.name=web-0"},
    {"GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb%5C%2C0", "list", true, "", "v1",
     "default", "pods", "", "web,0", false, "", "metadata.name=web\\,0"},
    {"GET", "/api/v1/namespaces/default/pods/web-0?labelSelector=app%3Dweb", "get", true, "", "v1", "default", "pods",
     "", "web-0"},
    // percent-encoded path
    {"GET", "/api/v1/namespaces/default/configmaps/my%2Dconfig", "get", true, "", "v1", "default", "configmaps", "",
     "my-config"},
    // kube-apiserver cannot classify "/watch" with nothing after it; the verb stays the method
    {"GET", "/api/v1/watch", "get", true, "", "v1", "", "", "", ""},
    // non-resource URLs: the lower-case HTTP method
    {"GET", "/healthz", "get", false, "", "", "", "", "", ""},
    {"GET", "/readyz?verbose", "get", false, "", "", "", "", "", ""},
    {"GET", "/version", "get", false, "", "", "", "", "", ""},
    {"GET", "/api", "get", false, "", "", "", "", "", ""},
    {"GET", "/api/v1", "get", false, "", "", "", "", "", ""},
    {"GET", "/apis", "get", false, "", "", "", "", "", ""},
    {"GET", "/apis/apps", "get", false, "", "", "", "", "", ""},
    {"GET", "/apis/apps/v1", "get", false, "", "", "", "", "", ""},
    {"GET", "/openapi/v3/apis/apps/v1", "get", false, "", "", "", "", "", ""},
    {"POST", "/metrics", "post", false, "", "", "", "", "", ""},
};

INSTANTIATE_TEST_SUITE_P(RequestLines, Classify, ::testing::ValuesIn(rows));

TEST(Classify, KeepsDecodedPathWithoutQuery) {
  RequestInfo info = classify("GET", "/api/v1/namespaces/default/configmaps/my%2Dconfig?watch=0");
  EXPECT_EQ(info.path, "/api/v1/namespaces/default/configmaps/my-config");
  EXPECT_EQ(info.api_prefix, "api");
}

TEST(Classify, MarksUnclassifiableWatch) {
  EXPECT_TRUE(classify("GET", "/api/v1/watch").malformed);
  EXPECT_FALSE(classify("GET", "/api/v1/watch/pods").malformed);
}

TEST(Classify, ResourcePathJoinsSubresource) {
  EXPECT_EQ(classify("POST", "/api/v1/namespaces/a/pods/b/binding").resource_path(), "pods/binding");
  EXPECT_EQ(classify("GET", "/api/v1/pods").resource_path(), "pods");
}

}  // namespace
}  // namespace faultline::faults

namespace faultline::faults {
namespace {

TEST(Classify, DoubleSlashIsPathNotAuthority) {
  RequestInfo info = classify("GET", "//api/v1/pods");
  EXPECT_EQ(info.path, "//api/v1/pods");
  EXPECT_EQ(info.verb, "list");
  EXPECT_EQ(info.resource, "pods");
}

TEST(Classify, AbsoluteFormTargets) {
  RequestInfo info = classify("GET", "https://127.0.0.1:6443/api/v1/namespaces/a/pods/b");
  EXPECT_EQ(info.path, "/api/v1/namespaces/a/pods/b");
  EXPECT_EQ(info.name, "b");
}

TEST(Classify, UnparseableTargetKeepsRawPath) {
  RequestInfo info = classify("GET", "/api/v1/pods/a b?watch=1");
  EXPECT_EQ(info.path, "/api/v1/pods/a b");
  EXPECT_EQ(info.name, "a b");
}

}  // namespace
}  // namespace faultline::faults
