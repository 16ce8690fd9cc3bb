#include "faultline/harness/checks.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "faultline/harness/run.hpp"
#include "faultline/harness/schema/invariants.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "fixtures.hpp"

namespace faultline::harness {
namespace {

using testing::make_pod;
using testing::observations_3355;
using testing::observations_healthy;
using testing::put;

bool mentions(const CheckResult& r, const std::string& text) {
  return std::any_of(r.evidence.begin(), r.evidence.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

// All evidence lines, for failure messages (safe when there are none).
std::string evidence_text(const CheckResult& r) {
  std::string out = r.summary;
  for (const auto& line : r.evidence) out += "\n  " + line;
  return out;
}

TEST(PodsBound, StrandedPodIsAViolationNamingThePod) {
  auto r = check_pods_bound(observations_3355());
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "faultline/burst-00002")) << evidence_text(r);
}

// The proxy's audit says why the pod has no node: its bind was cut by the outage.
TEST(PodsBound, StrandedPodEvidenceCarriesItsBindAsTheProxySawIt) {
  auto r = check_pods_bound(observations_3355());
  EXPECT_TRUE(mentions(r, "burst-00002 is Pending with empty spec.nodeName")) << evidence_text(r);
  EXPECT_TRUE(
      mentions(r, "binds seen by the proxy: 14:48:30.200000Z no answer (connection cut by rule outage-mid-bind)"))
      << evidence_text(r);
}

TEST(PodsBound, StrandedPodWhoseBindNeverReachedTheProxySaysSo) {
  auto obs = observations_3355();
  obs.audit->erase(std::remove_if(obs.audit->begin(), obs.audit->end(),
                                  [](const AuditRecord& rec) { return rec.name == "burst-00002"; }),
                   obs.audit->end());
  auto r = check_pods_bound(obs);
  EXPECT_TRUE(mentions(r, "no bind of it reached the proxy")) << evidence_text(r);
}

TEST(PodsBound, WithoutAProxyAuditTheEvidenceClaimsNothingAboutBinds) {
  auto obs = observations_3355();
  obs.audit.reset();
  auto r = check_pods_bound(obs);
  ASSERT_TRUE(mentions(r, "burst-00002 is Pending with empty spec.nodeName")) << evidence_text(r);
  EXPECT_FALSE(mentions(r, "bind")) << evidence_text(r);
}

TEST(PodsBound, BoundButNotRunningIsAViolation) {
  auto obs = observations_healthy();
  put(obs, make_pod(3, "kwok-node-0", "Pending"));
  auto r = check_pods_bound(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "burst-00003 bound to kwok-node-0"));
}

TEST(PodsBound, HealthyRunPasses) {
  auto r = check_pods_bound(observations_healthy());
  EXPECT_EQ(r.status, CheckStatus::passed) << r.summary;
  EXPECT_EQ(r.count, 0);
}

TEST(QueueAccounting, PhantomAllocationIsListedWithItsKey) {
  auto r = check_queue_accounting(observations_3355());
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "queue root.default: allocatedResource.pods=4, bound live pods=3"));
  EXPECT_TRUE(mentions(r, "phantom allocation 5b1c0c1e-0002-4d6a-9a51-000000000002 (pod faultline/burst-00002"));
  EXPECT_TRUE(mentions(r,
                       "node kwok-node-1): pod is Pending with empty spec.nodeName; binds seen by the proxy: "
                       "14:48:30.200000Z no answer (connection cut by rule outage-mid-bind)"));
}

TEST(QueueAccounting, DeletedPodStillAllocatedIsAPhantom) {
  auto obs = observations_healthy();
  obs.pods.pods.begin()->second.deleted = WallTime{} + std::chrono::seconds(9);
  auto r = check_queue_accounting(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_TRUE(mentions(r, "pod was deleted"));
}

TEST(QueueAccounting, BoundPodWithoutAllocationIsAMismatch) {
  auto obs = observations_healthy();
  put(obs, make_pod(5, "kwok-node-1", "Running"));
  auto r = check_queue_accounting(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_TRUE(mentions(r, "burst-00005 bound to kwok-node-1 but YuniKorn lists no allocation"));
}

TEST(QueueAccounting, HealthyRunPasses) {
  auto r = check_queue_accounting(observations_healthy());
  EXPECT_EQ(r.status, CheckStatus::passed) << r.summary;
}

TEST(NoOrphanAllocations, AllocationOfUnknownApplicationIsAnOrphan) {
  auto obs = observations_healthy();
  obs.yunikorn->nodes[0].allocations[0].application_id = "gone-app";
  auto r = check_no_orphan_allocations(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "unknown application 'gone-app'"));
}

TEST(NoOrphanAllocations, AllocationOnUnknownNodeIsAnOrphan) {
  auto obs = observations_healthy();
  obs.yunikorn->applications[0].allocations[3].node_id = "kwok-node-9";
  auto r = check_no_orphan_allocations(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_TRUE(mentions(r, "kwok-node-9"));
}

TEST(NoOrphanAllocations, HealthyRunPasses) {
  EXPECT_EQ(check_no_orphan_allocations(observations_healthy()).status, CheckStatus::passed);
}

TEST(NoUnexpectedDeletes, PodDeletedBehindTheHarnessIsAViolation) {
  auto obs = observations_healthy();
  auto& pod = obs.pods.pods.begin()->second;
  pod.deleted = WallTime{} + std::chrono::seconds(30);
  auto r = check_no_unexpected_deletes(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "pod faultline/" + pod.name + " deleted at"));
}

TEST(NoUnexpectedDeletes, HarnessOwnDeletesAreExpected) {
  auto obs = observations_healthy();
  auto& [uid, pod] = *obs.pods.pods.begin();
  pod.deleted = WallTime{} + std::chrono::seconds(30);
  obs.pods.deleted_by_harness.insert(uid);
  EXPECT_EQ(check_no_unexpected_deletes(obs).status, CheckStatus::passed);
}

// A pod DELETE as the proxy's audit log records it.
AuditRecord pod_delete(std::uint64_t seq, const std::string& ns, const std::string& name, const std::string& agent,
                       int status) {
  AuditRecord rec;
  rec.seq = seq;
  rec.method = "DELETE";
  rec.verb = "delete";
  rec.resource = "pods";
  rec.namespace_ = ns;
  rec.name = name;
  rec.path = "/api/v1/namespaces/" + ns + "/pods/" + name;
  rec.user_agent = agent;
  rec.status = status;
  return rec;
}

TEST(NoUnexpectedDeletes, AuditDeleteFromAnotherAgentIsAViolation) {
  auto obs = observations_healthy();
  obs.audit->push_back(pod_delete(77, "faultline", "burst-00004", "yunikorn-scheduler/v1.9.0", 200));
  // The harness's own: fine.
  obs.audit->push_back(pod_delete(78, "faultline", "burst-00003", "faultline-harness/0.1", 200));
  auto r = check_no_unexpected_deletes(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "audit #77"));
  EXPECT_FALSE(mentions(r, "audit #78"));
}

// An Airflow scheduler's DELETE of its worker pod (outside the workload's namespace): the evidence
// names the deleter by its User-Agent, the pod, and whether the pod still existed.
TEST(NoUnexpectedDeletes, AuditEvidenceNamesTheDeleterAndThePod) {
  auto obs = observations_healthy();
  const std::string airflow = "airflow-scheduler-1 OpenAPI-Generator/23.6.0/python";
  obs.audit->push_back(pod_delete(12, "airflow", "faultline-long-tasks-long-0-abc", airflow, 200));
  obs.audit->push_back(pod_delete(13, "airflow", "faultline-long-tasks-long-1-def", airflow, 404));
  auto r = check_no_unexpected_deletes(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 2);
  EXPECT_TRUE(
      mentions(r, "DELETE of pod airflow/faultline-long-tasks-long-0-abc by '" + airflow + "' -> 200, the pod existed"))
      << evidence_text(r);
  EXPECT_TRUE(
      mentions(r, "DELETE of pod airflow/faultline-long-tasks-long-1-def by '" + airflow + "' -> 404, already gone"))
      << evidence_text(r);
}

TEST(NoUnexpectedDeletes, HealthyRunPasses) {
  EXPECT_EQ(check_no_unexpected_deletes(observations_healthy()).status, CheckStatus::passed);
}

TEST(BoundToLiveNode, PodOnVanishedNodeIsAViolation) {
  auto obs = observations_healthy();
  obs.live_nodes = std::vector<std::string>{"kwok-node-0"};
  auto r = check_bound_to_live_node(obs);
  EXPECT_EQ(r.status, CheckStatus::violated);
  EXPECT_EQ(r.count, 2);
  EXPECT_TRUE(mentions(r, "kwok-node-1 which does not exist"));
}

TEST(BoundToLiveNode, HealthyRunPasses) {
  EXPECT_EQ(check_bound_to_live_node(observations_healthy()).status, CheckStatus::passed);
}

TEST(NoData, EveryCheckFailsWithoutData) {
  Observations empty;
  empty.scheduler = "yunikorn";
  for (const auto& r : run_checks(schema::invariant_names(), {}, empty)) {
    EXPECT_EQ(r.status, CheckStatus::no_data) << r.name;
    EXPECT_TRUE(r.failed()) << r.name;
  }
  EXPECT_EQ(decide_verdict(run_checks(schema::invariant_names(), {}, empty)), Verdict::fail);
}

// no-data is for a source that could not be read; a source that was read and holds nothing to
// check is an empty subject: passed, count 0, and the summary says there was nothing.
TEST(NoData, EachSourceThatCouldNotBeReadIsNoData) {
  auto no_watch = observations_healthy();
  no_watch.pods.watched = false;
  for (const auto& name : {"pods-bound", "queue-accounting", "no-unexpected-deletes", "bound-to-live-node"}) {
    auto results = run_checks({name}, {}, no_watch);
    EXPECT_EQ(results.at(0).status, CheckStatus::no_data) << name;
  }
  auto no_snapshot = observations_healthy();
  no_snapshot.yunikorn.reset();
  EXPECT_EQ(check_queue_accounting(no_snapshot).status, CheckStatus::no_data);
  EXPECT_EQ(check_no_orphan_allocations(no_snapshot).status, CheckStatus::no_data);
  auto no_nodes = observations_healthy();
  no_nodes.live_nodes.reset();
  EXPECT_EQ(check_bound_to_live_node(no_nodes).status, CheckStatus::no_data);
}

TEST(EmptySubject, AWatchThatDeliveredNoPodsPassesWithCountZero) {
  auto obs = observations_healthy();
  obs.pods.pods.clear();
  obs.yunikorn->applications.clear();
  for (auto& q : obs.yunikorn->queues) q.allocated.clear();
  for (auto& n : obs.yunikorn->nodes) n.allocations.clear();
  for (const auto& r : run_checks(schema::invariant_names(), {}, obs)) {
    EXPECT_EQ(r.status, CheckStatus::passed) << r.name << ": " << r.summary;
    EXPECT_EQ(r.count, 0) << r.name;
  }
  auto pods = check_pods_bound(obs);
  EXPECT_NE(pods.summary.find("0 live pods to check"), std::string::npos) << pods.summary;
}

// kube-scheduler whose every bind failed: no pod is bound, so bound-to-live-node has nothing to
// quantify over. That is a pass with count 0, and the run reproduces the stranded pods.
TEST(EmptySubject, NoBoundPodIsAPassAndTheRunStillReproduces) {
  auto obs = observations_3355();
  obs.scheduler = "kube-scheduler";
  obs.yunikorn.reset();
  for (auto& [uid, pod] : obs.pods.pods) pod.node_name.clear();
  auto nodes = check_bound_to_live_node(obs);
  EXPECT_EQ(nodes.status, CheckStatus::passed) << nodes.summary;
  EXPECT_EQ(nodes.count, 0);
  EXPECT_NE(nodes.summary.find("0 bound pods to check"), std::string::npos) << nodes.summary;
  EXPECT_EQ(decide_verdict(run_checks(schema::invariant_names(), {"pods-bound"}, obs)), Verdict::reproduced);
}

TEST(EmptySubject, NoLiveNodeListedMakesEveryBoundPodAViolation) {
  auto obs = observations_healthy();
  obs.live_nodes = std::vector<std::string>{};
  auto r = check_bound_to_live_node(obs);
  EXPECT_EQ(r.status, CheckStatus::violated) << r.summary;
  EXPECT_GT(r.count, 0);
}

TEST(EmptySubject, YunikornWithNoQueuesAndNoBoundPodsPasses) {
  auto obs = observations_healthy();
  obs.yunikorn->queues.clear();
  obs.yunikorn->applications.clear();
  obs.yunikorn->nodes.clear();
  for (auto& [uid, pod] : obs.pods.pods) pod.node_name.clear();
  auto q = check_queue_accounting(obs);
  EXPECT_EQ(q.status, CheckStatus::passed) << q.summary;
  EXPECT_NE(q.summary.find("0 allocations to check"), std::string::npos) << q.summary;
  EXPECT_EQ(check_no_orphan_allocations(obs).status, CheckStatus::passed);
}

TEST(RunChecks, YunikornChecksAreSkippedOnKubeScheduler) {
  auto obs = observations_healthy();
  obs.scheduler = "kube-scheduler";
  obs.yunikorn.reset();
  auto results = run_checks(schema::invariant_names(), {}, obs);
  for (const auto& r : results) {
    if (schema::find_invariant(r.name)->needs_yunikorn) {
      EXPECT_EQ(r.status, CheckStatus::skipped) << r.name;
      EXPECT_NE(r.summary.find("kube-scheduler"), std::string::npos);
    } else {
      EXPECT_EQ(r.status, CheckStatus::passed) << r.name << ": " << r.summary;
    }
  }
  EXPECT_EQ(decide_verdict(results), Verdict::pass);
}

TEST(RunChecks, UnknownNamesAreRejected) {
  EXPECT_THROW(run_checks({"pods-bound", "pods-happy"}, {}, observations_healthy()), std::invalid_argument);
  EXPECT_THROW(run_checks({"pods-bound"}, {"queue-accounting"}, observations_healthy()), std::invalid_argument);
}

TEST(Verdict, HealthyRunWithoutExpectationPasses) {
  EXPECT_EQ(decide_verdict(run_checks(schema::invariant_names(), {}, observations_healthy())), Verdict::pass);
}

TEST(Verdict, ViolationWithoutExpectationFails) {
  EXPECT_EQ(decide_verdict(run_checks(schema::invariant_names(), {}, observations_3355())), Verdict::fail);
}

TEST(Verdict, ExactlyTheExpectedViolationsReproduce) {
  auto results = run_checks(schema::invariant_names(), {"pods-bound", "queue-accounting"}, observations_3355());
  EXPECT_EQ(decide_verdict(results), Verdict::reproduced);
}

TEST(Verdict, ExpectedButNotViolatedFails) {
  auto results = run_checks(schema::invariant_names(), {"pods-bound", "queue-accounting"}, observations_healthy());
  EXPECT_EQ(decide_verdict(results), Verdict::fail);
}

TEST(Verdict, ExtraViolationBeyondExpectationFails) {
  auto obs = observations_3355();
  obs.live_nodes = std::vector<std::string>{"kwok-node-0"};
  auto results = run_checks(schema::invariant_names(), {"pods-bound", "queue-accounting"}, obs);
  EXPECT_EQ(decide_verdict(results), Verdict::fail);
}

TEST(Verdict, ExpectedCheckWithoutDataNeverReproduces) {
  auto obs = observations_3355();
  obs.yunikorn.reset();
  auto results = run_checks({"pods-bound", "queue-accounting"}, {"pods-bound", "queue-accounting"}, obs);
  EXPECT_EQ(decide_verdict(results), Verdict::fail);
}

// The harness checks exactly faults' invariants: each name faults defines runs a check that
// reports under that name (a check wired to the wrong invariant, or none, fails here).
TEST(Invariants, EveryFaultsInvariantRunsItsOwnCheck) {
  for (const auto& spec : schema::invariant_specs) {
    const std::string name(spec.name);
    auto results = run_checks({name}, {}, observations_3355());
    ASSERT_EQ(results.size(), 1u) << name;
    EXPECT_EQ(results[0].name, name);
    EXPECT_NE(results[0].status, CheckStatus::skipped) << name << ": " << results[0].summary;
    EXPECT_NE(results[0].status, CheckStatus::no_data) << name << ": " << results[0].summary;
  }
}

// Which invariants need YuniKorn is faults' word too: on kube-scheduler exactly those are skipped.
TEST(Invariants, OnKubeSchedulerExactlyTheYunikornInvariantsAreSkipped) {
  auto obs = observations_healthy();
  obs.scheduler = "kube-scheduler";
  for (const auto& spec : schema::invariant_specs) {
    auto r = run_checks({std::string(spec.name)}, {}, obs).at(0);
    EXPECT_EQ(r.status == CheckStatus::skipped, spec.needs_yunikorn) << spec.name << ": " << r.summary;
  }
}

schema::Checks checks_of(const std::string& checks_yaml) {
  auto scenario = schema::load_scenario_text(
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: unit}\nchecks: " + checks_yaml + "\n", "unit.yaml");
  return scenario->checks;
}

std::vector<std::string> names_of(const std::vector<CheckResult>& results) {
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(r.name);
  return names;
}

TEST(Invariants, AScenarioWithoutInvariantsChecksTheDefaultSet) {
  Report report;
  check_invariants(checks_of("{settle: 30s}"), std::nullopt, observations_3355(), report);
  EXPECT_EQ(names_of(report.checks), schema::default_invariant_names());
  EXPECT_TRUE(report.notes.empty());
}

// `invariants: []` checks nothing: the stranded pod of the 3355 observations would fail pods-bound,
// but with no invariant asked for there is no check, the verdict is pass and a note says why.
TEST(Invariants, AnExplicitEmptyListChecksNothingAndPassesWithANote) {
  Report report;
  Verdict v = check_invariants(checks_of("{invariants: []}"), std::nullopt, observations_3355(), report);
  EXPECT_TRUE(report.checks.empty()) << ::testing::PrintToString(names_of(report.checks));
  EXPECT_EQ(to_string(v), "pass");
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("no invariants checked"), std::string::npos) << report.notes[0];
}

TEST(Invariants, AnExpectOverrideNamingAnUncheckedInvariantIsRejected) {
  Report report;
  EXPECT_THROW(check_invariants(checks_of("{invariants: []}"), std::vector<std::string>{"pods-bound"},
                                observations_3355(), report),
               std::invalid_argument);
}

TEST(Invariants, AnExplicitListIsCheckedInTheOrderWritten) {
  Report report;
  Verdict v = check_invariants(checks_of("{invariants: [bound-to-live-node, pods-bound], expect: [pods-bound]}"),
                               std::nullopt, observations_3355(), report);
  EXPECT_EQ(names_of(report.checks), (std::vector<std::string>{"bound-to-live-node", "pods-bound"}));
  EXPECT_EQ(to_string(v), "reproduced");
}

TEST(Stats, CountStrandedPodsAndPhantomAllocations) {
  auto s = compute_stats(observations_3355());
  EXPECT_EQ(s.pods, 4);
  EXPECT_EQ(s.bound_pods, 3);
  EXPECT_EQ(s.stranded_pods, 1);
  EXPECT_EQ(s.running_pods, 3);
  EXPECT_EQ(s.queue_allocated_pods, 4);
  EXPECT_EQ(s.phantom_allocations, 1);
}

}  // namespace
}  // namespace faultline::harness
