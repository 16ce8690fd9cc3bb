// The objects the harness sends to the apiserver, and how the pod watcher turns events into history.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/workload.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;

TEST(Nodes, FollowTheKwokRecommendations) {
  json::value n = make_node("kwok-node-7", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}});
  EXPECT_EQ(n.at("metadata").at("name").as_string(), "kwok-node-7");
  EXPECT_EQ(n.at("metadata").at("annotations").at("kwok.x-k8s.io/node").as_string(), "fake");
  EXPECT_EQ(n.at("metadata").at("labels").at("type").as_string(), "kwok");
  const auto& taint = n.at("spec").at("taints").at(0);
  EXPECT_EQ(taint.at("key").as_string(), "kwok.x-k8s.io/node");
  EXPECT_EQ(taint.at("value").as_string(), "fake");
  EXPECT_EQ(taint.at("effect").as_string(), "NoSchedule");
  EXPECT_EQ(n.at("status").at("allocatable").at("memory").as_string(), "256Gi");
  EXPECT_EQ(n.at("status").at("capacity").at("pods").as_string(), "110");
}

TEST(Objects, TheTemplateWithItsIndexNamespaceAndTheWorkloadLabels) {
  schema::ObjectStep step;
  step.api_version = "apps/v1";
  step.resource = "daemonsets";
  step.count = 3;
  step.template_json =
      R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds-{i}","labels":{"app":"x"}},"spec":{"a":1}})";
  json::value o = make_object(step, "create-ds", "work", 2);
  EXPECT_EQ(o.at("metadata").at("name").as_string(), "ds-2");
  EXPECT_EQ(o.at("metadata").at("namespace").as_string(), "work");
  EXPECT_EQ(o.at("metadata").at("labels").at("app").as_string(), "x");
  EXPECT_EQ(o.at("metadata").at("labels").at(kWorkloadLabel).as_string(), "true");
  EXPECT_EQ(o.at("metadata").at("labels").at(kPhaseLabel).as_string(), "create-ds");
  EXPECT_EQ(o.at("spec").at("a").as_int64(), 1);
  EXPECT_EQ(object_collection(step, "work"), "/apis/apps/v1/namespaces/work/daemonsets");

  step.api_version = "v1";
  step.resource = "configmaps";
  step.template_json = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"cm-","namespace":"x"}})";
  json::value cm = make_object(step, "cms", "work", 1);
  EXPECT_FALSE(cm.at("metadata").as_object().contains("name"));
  EXPECT_EQ(cm.at("metadata").at("namespace").as_string(), "x");
  EXPECT_EQ(object_collection(step, "work"), "/api/v1/namespaces/x/configmaps");
}

TEST(Nodes, AreReadyWithAReadyConditionThatIsTrue) {
  const auto with_conditions = [](json::array conditions) {
    return json::value{{"metadata", {{"name", "n"}}}, {"status", {{"conditions", std::move(conditions)}}}};
  };
  EXPECT_TRUE(node_ready(
      with_conditions({{{"type", "MemoryPressure"}, {"status", "False"}}, {{"type", "Ready"}, {"status", "True"}}})));
  EXPECT_FALSE(node_ready(with_conditions({{{"type", "Ready"}, {"status", "False"}}})));
  EXPECT_FALSE(node_ready(with_conditions({{{"type", "Ready"}, {"status", "Unknown"}}})));
  EXPECT_FALSE(node_ready(with_conditions({{{"type", "NetworkUnavailable"}, {"status", "True"}}})));
  EXPECT_FALSE(node_ready(with_conditions({})));
  EXPECT_FALSE(node_ready(json::value{{"metadata", {{"name", "new"}}}}));  // no status yet
}

// The apiserver (Go's url.ParseQuery) reads a literal '+' in a query as a space: a base64
// continue token or a label value with a '+' must go out as %2B.
TEST(Queries, PercentEncodeEverythingButUnreservedCharacters) {
  EXPECT_EQ(
      with_query("/api/v1/pods", {{"continue", "eyJ2+Ijo/i=="}, {"labelSelector", "a in (b c),d=e"}, {"limit", ""}}),
      "/api/v1/pods?continue=eyJ2%2BIjo%2Fi%3D%3D&labelSelector=a%20in%20%28b%20c%29%2Cd%3De");
  EXPECT_EQ(with_query("http://127.0.0.1:8080/v1/audit?since=0", {{"limit", "1"}}),
            "http://127.0.0.1:8080/v1/audit?since=0&limit=1");
}

schema::Phase burst_phase() {
  schema::Phase p;
  p.name = "burst";
  p.pods = 3000;
  p.pod_template.scheduler_name = "yunikorn";
  p.pod_template.labels = {{"applicationId", "burst-1"}, {"queue", "root.default"}};
  p.pod_template.requests = {{"cpu", "10m"}, {"memory", "16Mi"}};
  return p;
}

TEST(Pods, CarryTemplateLabelsRequestsAndTheKwokToleration) {
  json::value pod = make_pod("faultline", pod_name("burst", 42), burst_phase(), "yunikorn");
  EXPECT_EQ(pod.at("metadata").at("name").as_string(), "burst-00042");
  EXPECT_EQ(pod.at("metadata").at("namespace").as_string(), "faultline");
  const auto& labels = pod.at("metadata").at("labels");
  EXPECT_EQ(labels.at("applicationId").as_string(), "burst-1");
  EXPECT_EQ(labels.at("queue").as_string(), "root.default");
  EXPECT_EQ(labels.at(kWorkloadLabel).as_string(), "true");
  EXPECT_EQ(labels.at(kPhaseLabel).as_string(), "burst");
  const auto& spec = pod.at("spec");
  EXPECT_EQ(spec.at("schedulerName").as_string(), "yunikorn");
  EXPECT_EQ(spec.at("tolerations").at(0).at("key").as_string(), "kwok.x-k8s.io/node");
  EXPECT_EQ(spec.at("tolerations").at(0).at("effect").as_string(), "NoSchedule");
  EXPECT_EQ(spec.at("nodeSelector").at("type").as_string(), "kwok");
  EXPECT_EQ(spec.at("containers").at(0).at("resources").at("requests").at("memory").as_string(), "16Mi");
}

TEST(Pods, WellKnownSchedulerNamesMeanTheSchedulerUnderTest) {
  schema::PodTemplate t;
  EXPECT_EQ(pod_scheduler_name(t, "yunikorn"), "yunikorn");
  EXPECT_EQ(pod_scheduler_name(t, "kube-scheduler"), "default-scheduler");
  t.scheduler_name = "yunikorn";
  EXPECT_EQ(pod_scheduler_name(t, "kube-scheduler"), "default-scheduler");
  t.scheduler_name = "my-scheduler";
  EXPECT_EQ(pod_scheduler_name(t, "yunikorn"), "my-scheduler");
}

json::value pod_json(const std::string& node, const std::string& phase, bool deleting = false) {
  json::object meta{{"name", "burst-00001"},
                    {"namespace", "faultline"},
                    {"uid", "u1"},
                    {"labels", {{"queue", "root.default"}, {"applicationId", "burst-1"}}}};
  if (deleting) meta["deletionTimestamp"] = "2026-11-30T15:00:00Z";
  json::object spec{{"schedulerName", "yunikorn"}};
  if (!node.empty()) spec["nodeName"] = node;
  return json::object{{"metadata", meta}, {"spec", spec}, {"status", {{"phase", phase}}}};
}

TEST(PodHistory, RecordsFirstSeenBoundRunningAndDeleted) {
  PodObservations obs;
  WallTime t0 = WallTime{} + std::chrono::seconds(100);
  PodWatcher::apply(obs, "ADDED", pod_json("", "Pending"), t0);
  PodWatcher::apply(obs, "MODIFIED", pod_json("kwok-node-3", "Pending"), t0 + std::chrono::seconds(1));
  PodWatcher::apply(obs, "MODIFIED", pod_json("kwok-node-3", "Running"), t0 + std::chrono::seconds(2));
  PodWatcher::apply(obs, "MODIFIED", pod_json("kwok-node-3", "Running"), t0 + std::chrono::seconds(3));
  const PodState& p = obs.pods.at("u1");
  EXPECT_EQ(p.name, "burst-00001");
  EXPECT_EQ(p.queue_label, "root.default");
  EXPECT_EQ(p.created, t0);
  EXPECT_EQ(p.bound, t0 + std::chrono::seconds(1));
  EXPECT_EQ(p.running, t0 + std::chrono::seconds(2));
  EXPECT_TRUE(p.live());
  PodWatcher::apply(obs, "MODIFIED", pod_json("kwok-node-3", "Running", true), t0 + std::chrono::seconds(4));
  EXPECT_EQ(obs.pods.at("u1").deleted, t0 + std::chrono::seconds(4));
  EXPECT_FALSE(obs.pods.at("u1").gone);
  PodWatcher::apply(obs, "DELETED", pod_json("kwok-node-3", "Running", true), t0 + std::chrono::seconds(5));
  EXPECT_EQ(obs.pods.at("u1").deleted, t0 + std::chrono::seconds(4));
  EXPECT_TRUE(obs.pods.at("u1").gone);
}

// Settling waits for the watch to deliver every pod the harness created: three pods seen bound and
// Running while four were created is not settled (the fourth, still Pending, is on its way).
TEST(Settle, NeedsEveryCreatedPodSeenBoundAndRunning) {
  PodWatcher::Counts seen_three{.pods = 3, .live = 3, .bound = 3, .running = 3};
  EXPECT_FALSE(seen_three.settled(4));
  EXPECT_TRUE(seen_three.settled(3));
  // Deleted pods count as seen: a churn's pods are created and deleted.
  PodWatcher::Counts after_churn{.pods = 10, .live = 2, .bound = 2, .running = 2};
  EXPECT_TRUE(after_churn.settled(10));
  PodWatcher::Counts not_running{.pods = 4, .live = 4, .bound = 4, .running = 3};
  EXPECT_FALSE(not_running.settled(4));
  EXPECT_FALSE(PodWatcher::Counts{}.settled(0));  // nothing live yet
}

}  // namespace
}  // namespace faultline::harness
