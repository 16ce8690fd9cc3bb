#include <gtest/gtest.h>

#include "faultline/faults/match.hpp"

namespace faultline::faults {
namespace {

Request bind(std::string ns = "faultline", std::string name = "burst-1") {
  return make_request("POST", "/api/v1/namespaces/" + ns + "/pods/" + name + "/binding",
                      {{"User-Agent", "yunikorn-scheduler/v1.9.0"}, {"X-Test", "yes"}});
}

Match verbs(std::vector<std::string> values) {
  Match match;
  match.verbs = std::move(values);
  return match;
}

TEST(Glob, StarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("burst-*", "burst-17"));
  EXPECT_TRUE(glob_match("*-scheduler/*", "kube-scheduler/v1.35.5 (linux/amd64)"));
  EXPECT_TRUE(glob_match("b?rst", "burst"));
  EXPECT_FALSE(glob_match("burst-*", "afterwards-1"));
  EXPECT_FALSE(glob_match("b?rst", "brst"));
  EXPECT_TRUE(glob_match("a*b*c", "a-b-b-c"));
  EXPECT_FALSE(glob_match("a*b*c", "a-b-b-d"));
}

TEST(ResourcePattern, SubresourcesFollowRbacRules) {
  RequestInfo binding = bind().info;
  RequestInfo pod = classify("GET", "/api/v1/namespaces/a/pods/b");
  EXPECT_TRUE(resource_matches("pods/binding", binding));
  EXPECT_FALSE(resource_matches("pods", binding));  // "pods" does not cover its subresources
  EXPECT_TRUE(resource_matches("pods", pod));
  EXPECT_TRUE(resource_matches("pods/*", binding));
  EXPECT_FALSE(resource_matches("pods/*", pod));
  EXPECT_TRUE(resource_matches("*/binding", binding));
  EXPECT_TRUE(resource_matches("*", binding));
  EXPECT_FALSE(resource_matches("*", classify("GET", "/healthz")));
}

TEST(ResourcePattern, GroupSuffixPinsTheApiGroup) {
  RequestInfo deployment = classify("GET", "/apis/apps/v1/namespaces/a/deployments/web");
  EXPECT_TRUE(resource_matches("deployments.apps", deployment));
  EXPECT_TRUE(resource_matches("deployments", deployment));
  EXPECT_FALSE(resource_matches("deployments.extensions", deployment));
  EXPECT_TRUE(resource_matches("leases.coordination.k8s.io",
                               classify("PUT", "/apis/coordination.k8s.io/v1/namespaces/k/leases/l")));
  EXPECT_FALSE(resource_matches("pods.apps", classify("GET", "/api/v1/pods")));
}

TEST(Match, EmptyMatchesEverything) {
  EXPECT_TRUE(Match{}.matches(bind()));
  EXPECT_TRUE(Match{}.matches(make_request("GET", "/healthz")));
  EXPECT_TRUE(Match{}.empty());
}

TEST(Match, EveryGivenKeyMustMatch) {
  Match match;
  match.verbs = {"create"};
  match.resources = {"pods/binding"};
  match.namespaces = {"fault*"};
  match.names = {"burst-*"};
  match.user_agents = {"yunikorn*"};
  EXPECT_TRUE(match.matches(bind()));
  EXPECT_FALSE(match.matches(bind("default")));
  EXPECT_FALSE(match.matches(bind("faultline", "other")));
  EXPECT_FALSE(match.matches(make_request("POST", "/api/v1/namespaces/faultline/pods/burst-1/binding",
                                          {{"User-Agent", "kube-scheduler/v1.35.5"}})));
}

TEST(Match, AnyEntryOfAKeyMayMatch) {
  Match match = verbs({"get", "create"});
  EXPECT_TRUE(match.matches(bind()));
  EXPECT_FALSE(match.matches(make_request("GET", "/api/v1/pods")));  // that is a list
}

TEST(Match, ConnectAndStarVerbs) {
  Request exec = make_request("GET", "/api/v1/namespaces/a/pods/b/exec?command=sh");
  EXPECT_TRUE(verbs({"connect"}).matches(exec));
  EXPECT_FALSE(verbs({"connect"}).matches(bind()));
  EXPECT_TRUE(verbs({"*"}).matches(bind()));
}

TEST(Match, PathsAndHeaders) {
  Match readyz;
  readyz.paths = {"/readyz*"};
  EXPECT_TRUE(readyz.matches(make_request("GET", "/readyz?verbose")));
  EXPECT_FALSE(readyz.matches(make_request("GET", "/livez")));
  auto header = [](std::string name, std::string value) {
    Match match;
    match.headers.push_back({std::move(name), std::move(value)});
    return match;
  };
  EXPECT_TRUE(header("x-test", "y*").matches(bind()));
  EXPECT_FALSE(header("x-test", "no").matches(bind()));
  EXPECT_FALSE(header("x-absent", "*").matches(bind()));
}

}  // namespace
}  // namespace faultline::faults
