// checks.declared evaluated over sequences of watch events (DeclaredEvaluator): each kind passes,
// is violated (also by a state that existed only for a moment), and has no data when its source
// is missing; and how a declared result joins the built-in checks and the verdict.
#include "faultline/harness/declared_checks.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "faultline/harness/limits.hpp"
#include "faultline/harness/run.hpp"
#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const WallTime t0 = WallTime{} + std::chrono::hours(24 * 365 * 50);

WallTime at(std::chrono::milliseconds offset) { return t0 + offset; }

// The checks section of a scenario, through the loader (the same parse as a file).
schema::Checks checks_of(const std::string& checks_yaml) {
  return schema::load_scenario_text(
             "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: t}\nchecks:\n" + checks_yaml, "test.yaml")
      ->checks;
}

schema::DeclaredCheck declared(const std::string& entry) {
  auto checks = checks_of("  declared:\n    - " + entry + "\n");
  EXPECT_EQ(checks.declared.size(), 1u);
  return checks.declared.at(0);
}

json::value object(const std::string& name, const std::string& json_rest = "") {
  return json::parse(R"({"metadata":{"namespace":"ns","name":")" + name + R"(","uid":"uid-)" + name + "\"}" +
                     (json_rest.empty() ? "" : "," + json_rest) + "}");
}

json::value pod(const std::string& name, const std::string& node, const std::string& owner = "ds-1") {
  return json::parse(R"({"metadata":{"namespace":"ns","name":")" + name + R"(","uid":"uid-)" + name +
                     R"(","ownerReferences":[{"uid":")" + owner + R"("}]},"spec":{"nodeName":")" + node + "\"}}");
}

DeclaredContext context() {
  DeclaredContext c;
  c.run_started = t0;
  c.workload_created = at(10s);
  c.ended = at(120s);
  return c;
}

std::string text(const CheckResult& r) {
  std::string out = to_string(r.status) + ": " + r.summary;
  for (const auto& line : r.evidence) out += "\n  " + line;
  return out;
}

bool mentions(const CheckResult& r, const std::string& what) {
  if (r.summary.find(what) != std::string::npos) return true;
  for (const auto& line : r.evidence)
    if (line.find(what) != std::string::npos) return true;
  return false;
}

const std::string one_per_node =
    R"({name: one-per-node, watch: {apiVersion: v1, resource: pods}, )"
    R"(atMostPerGroup: {groupBy: [spec.nodeName, "metadata.ownerReferences[0].uid"], max: 1}})";

TEST(AtMostPerGroup, ADuplicateThatIsDeletedAgainIsStillAViolation) {
  DeclaredEvaluator e(declared(one_per_node), "ns");
  e.watch_established();
  e.observe("ADDED", pod("a", "n1"), at(1s));
  e.observe("ADDED", pod("b", "n2"), at(1s));
  e.observe("ADDED", pod("c", "n1"), at(2500ms));  // a second daemon pod on n1
  e.observe("DELETED", pod("c", "n1"), at(3s));    // gone again before the end
  CheckResult r = e.result(context());
  EXPECT_EQ(r.name, "one-per-node");
  EXPECT_EQ(r.status, CheckStatus::violated) << text(r);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r,
                       "group spec.nodeName=n1, metadata.ownerReferences[0].uid=ds-1: 2 objects at +2.5s "
                       "(ns/a, ns/c), at most 2, 1 at the end (max 1)"))
      << text(r);
  EXPECT_TRUE(mentions(r, "the first at +2.5s")) << text(r);
}

TEST(AtMostPerGroup, OneObjectPerGroupPassesAndAMovedObjectLeavesItsGroup) {
  DeclaredEvaluator e(declared(one_per_node), "ns");
  e.watch_established();
  e.observe("ADDED", pod("a", "n1"), at(1s));
  e.observe("ADDED", pod("b", "n2"), at(1s));
  e.observe("MODIFIED", pod("b", "n3"), at(2s));  // moves: n2 is free again
  e.observe("ADDED", pod("c", "n2"), at(3s));
  e.observe("ADDED", pod("d", "n1", "ds-2"), at(3s));  // another owner on n1: another group
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::passed) << text(r);
  EXPECT_EQ(r.count, 0);
  EXPECT_TRUE(mentions(r, "4 objects seen, 4 live at the end in 4 groups")) << text(r);
}

TEST(AtMostPerGroup, AnObjectWithADeletionTimestampNoLongerCounts) {
  DeclaredEvaluator e(declared(one_per_node), "ns");
  e.watch_established();
  e.observe("ADDED", pod("a", "n1"), at(1s));
  json::value terminating = pod("a", "n1");
  terminating.as_object()["metadata"].as_object()["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  e.observe("MODIFIED", terminating, at(2s));
  e.observe("ADDED", pod("b", "n1"), at(3s));
  EXPECT_EQ(e.result(context()).status, CheckStatus::passed) << text(e.result(context()));
}

TEST(AtMostPerGroup, ObjectsMissingAPathAreNotGroupedAndCounted) {
  DeclaredEvaluator e(declared(one_per_node), "ns");
  e.watch_established();
  e.observe("ADDED", pod("a", "n1"), at(1s));
  e.observe("ADDED", object("pending", R"("spec":{})"), at(1s));  // not bound: no spec.nodeName
  e.observe("ADDED", object("pending2", R"("spec":{})"), at(1s));
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::passed) << text(r);
  EXPECT_TRUE(mentions(r, "2 not grouped (a groupBy field is absent)")) << text(r);
}

TEST(AtMostPerGroup, ZeroObjectsPassSayingSo) {
  DeclaredEvaluator e(declared(one_per_node), "ns");
  e.watch_established();
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::passed) << text(r);
  EXPECT_TRUE(mentions(r, "0 objects of pods matched")) << text(r);
}

TEST(AtMostPerGroup, AFieldAbsentOnEveryObjectIsNoData) {
  DeclaredEvaluator e(declared(R"({name: typo, watch: {apiVersion: v1, resource: pods}, )"
                               R"(atMostPerGroup: {groupBy: [spec.nodeNme], max: 1}})"),
                      "ns");
  e.watch_established();
  e.observe("ADDED", pod("a", "n1"), at(1s));
  e.observe("ADDED", pod("b", "n1"), at(1s));
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::no_data) << text(r);
  EXPECT_EQ(r.summary, "no data: field spec.nodeNme is absent on all 2 objects of pods");
}

TEST(AtMostPerGroup, AQuotedKeyReadsALabelWithDots) {
  DeclaredEvaluator e(declared(R"({name: by-label, watch: {apiVersion: v1, resource: configmaps}, )"
                               R"(atMostPerGroup: {groupBy: ['metadata.labels["app.kubernetes.io/name"]'], max: 1}})"),
                      "ns");
  e.watch_established();
  const std::string labelled = R"({"metadata":{"namespace":"ns","labels":{"app.kubernetes.io/name":"x"},"name":")";
  e.observe("ADDED", json::parse(labelled + R"(b","uid":"1"}})"), at(1s));
  e.observe("ADDED", json::parse(labelled + R"(a","uid":"2"}})"), at(2s));
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::violated) << text(r);
  // The objects by name, whatever their uids.
  EXPECT_TRUE(mentions(r, R"(metadata.labels["app.kubernetes.io/name"]=x: 2 objects at +2.0s (ns/a, ns/b))"))
      << text(r);
}

TEST(DeclaredWatch, AFailedOrMissingWatchIsNoDataAndTheRelistForgetsDeletedObjects) {
  DeclaredEvaluator never(declared(one_per_node), "ns");
  EXPECT_EQ(never.result(context()).status, CheckStatus::no_data);
  EXPECT_TRUE(mentions(never.result(context()), "was never established"));

  DeclaredEvaluator failed(declared(one_per_node), "ns");
  failed.watch_established();
  failed.observe("ADDED", pod("a", "n1"), at(1s));
  failed.watch_failed("watching /api/v1/namespaces/ns/pods: HTTP 403");
  CheckResult r = failed.result(context());
  EXPECT_EQ(r.status, CheckStatus::no_data) << text(r);
  EXPECT_TRUE(mentions(r, "the watch of pods (/api/v1/namespaces/ns/pods) failed: watching")) << text(r);

  DeclaredEvaluator relisted(declared(one_per_node), "ns");
  relisted.watch_established();
  relisted.observe("ADDED", pod("a", "n1"), at(1s));
  relisted.forget("uid-a", at(5s));  // missing from a relist
  EXPECT_TRUE(relisted.live_ids().empty());
  relisted.observe("ADDED", pod("b", "n1"), at(6s));
  EXPECT_EQ(relisted.result(context()).status, CheckStatus::passed);
}

TEST(DeclaredWatch, CollectionPathsAndTheObjectBound) {
  EXPECT_EQ(DeclaredEvaluator(declared(one_per_node), "work").collection_path(), "/api/v1/namespaces/work/pods");
  EXPECT_EQ(DeclaredEvaluator(declared(R"({name: d, watch: {apiVersion: apps/v1, resource: daemonsets, )"
                                       R"(namespace: all}, noWriteBy: {userAgents: ["*"]}})"),
                              "work")
                .collection_path(),
            "/apis/apps/v1/daemonsets");
  DeclaredEvaluator small(declared(one_per_node), "ns", 2);
  small.observe("ADDED", pod("a", "n1"), at(1s));
  small.observe("ADDED", pod("b", "n2"), at(1s));
  small.observe("MODIFIED", pod("b", "n3"), at(1s));  // a known object is no new one
  EXPECT_THROW(small.observe("ADDED", pod("c", "n4"), at(1s)), LimitError);
}

const std::string ready_three = R"({name: ready, watch: {apiVersion: apps/v1, resource: daemonsets}, )"
                                R"(reaches: {field: status.numberReady, value: "3", within: 30s}})";

json::value ds(const std::string& name, int ready, int desired = 3) {
  return object(name, R"("status":{"numberReady":)" + std::to_string(ready) + R"(,"desiredNumberScheduled":)" +
                          std::to_string(desired) + "}");
}

TEST(Reaches, EveryObjectReachingTheValueInTimePasses) {
  DeclaredEvaluator e(declared(ready_three), "ns");
  e.watch_established();
  e.observe("ADDED", ds("a", 0), at(5s));
  e.observe("ADDED", ds("b", 0), at(5s));
  e.observe("MODIFIED", ds("a", 3), at(20s));
  e.observe("MODIFIED", ds("b", 3), at(40s));  // deadline: workload (10s) + 30s
  e.observe("MODIFIED", ds("b", 2), at(50s));  // it did reach the value: a later drop is not judged here
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::passed) << text(r);
  EXPECT_TRUE(mentions(r, "2/2 live objects reached status.numberReady = \"3\" within 30s after the workload"))
      << text(r);
}

TEST(Reaches, LateOrNeverIsAViolationNamingTheObject) {
  DeclaredEvaluator e(declared(ready_three), "ns");
  e.watch_established();
  e.observe("ADDED", ds("late", 0), at(5s));
  e.observe("ADDED", ds("never", 1), at(5s));
  e.observe("MODIFIED", ds("late", 3), at(40500ms));
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::violated) << text(r);
  EXPECT_EQ(r.count, 2);
  EXPECT_TRUE(mentions(r, "ns/late: status.numberReady reached \"3\" at +40.5s, after its deadline +40.0s")) << text(r);
  EXPECT_TRUE(mentions(r, "ns/never: status.numberReady is \"1\" at the end and never was \"3\" (deadline +40.0s)"))
      << text(r);
}

TEST(Reaches, EqualsFieldComparesTwoFieldsOfTheSameObject) {
  DeclaredEvaluator e(declared(R"({name: all-ready, watch: {apiVersion: apps/v1, resource: daemonsets}, )"
                               R"(reaches: {field: status.numberReady, equalsField: status.desiredNumberScheduled, )"
                               R"(within: 30s}})"),
                      "ns");
  e.watch_established();
  e.observe("ADDED", ds("a", 2, 5), at(5s));
  e.observe("MODIFIED", ds("a", 5, 5), at(12s));
  e.observe("ADDED", ds("b", 1, 2), at(5s));
  CheckResult r = e.result(context());
  EXPECT_EQ(r.status, CheckStatus::violated) << text(r);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r,
                       "ns/b: status.numberReady is \"1\" at the end and never was its "
                       "status.desiredNumberScheduled"))
      << text(r);
}

TEST(Reaches, AfterLastFaultMeasuresFromTheEndOfTheFaults) {
  DeclaredEvaluator e(declared(R"({name: ready, watch: {apiVersion: apps/v1, resource: daemonsets}, )"
                               R"(reaches: {field: status.numberReady, value: 3, within: 30s, after: lastFault}})"),
                      "ns");
  e.watch_established();
  e.observe("ADDED", ds("a", 0), at(5s));
  e.observe("MODIFIED", ds("a", 3), at(70s));
  DeclaredContext c = context();
  EXPECT_EQ(e.result(c).status, CheckStatus::violated);  // no fault seen: from the workload (10s)
  c.faults_ended = at(60s);
  EXPECT_EQ(e.result(c).status, CheckStatus::passed) << text(e.result(c));
  EXPECT_TRUE(mentions(e.result(c), "after the last fault"));
}

TEST(Reaches, NoObjectAnAbsentFieldOrAnEarlyEndIsNoData) {
  DeclaredEvaluator empty(declared(ready_three), "ns");
  empty.watch_established();
  EXPECT_EQ(empty.result(context()).summary, "no data: no object of daemonsets matched");

  DeclaredEvaluator absent(declared(R"({name: typo, watch: {apiVersion: apps/v1, resource: daemonsets}, )"
                                    R"(reaches: {field: status.numberRedy, value: "3", within: 30s}})"),
                           "ns");
  absent.watch_established();
  absent.observe("ADDED", ds("a", 3), at(5s));
  EXPECT_EQ(absent.result(context()).summary,
            "no data: field status.numberRedy is absent on all 1 object of daemonsets");

  DeclaredEvaluator early(declared(ready_three), "ns");
  early.watch_established();
  early.observe("ADDED", ds("a", 1), at(5s));
  DeclaredContext c = context();
  c.ended = at(20s);  // before the deadline at 40s
  EXPECT_EQ(early.result(c).status, CheckStatus::no_data) << text(early.result(c));
}

const std::string no_kcm_delete = R"({name: no-kcm-delete, watch: {apiVersion: apps/v1, resource: daemonsets}, )"
                                  R"(noWriteBy: {userAgents: ["kube-controller-manager/*"], verbs: [delete]}})";

AuditRecord record(std::uint64_t seq, const std::string& verb, const std::string& name, const std::string& agent,
                   const std::string& resource = "daemonsets.apps") {
  AuditRecord rec;
  rec.seq = seq;
  rec.ts = at(std::chrono::seconds(seq));
  rec.verb = verb;
  rec.resource = resource;
  rec.namespace_ = "ns";
  rec.name = name;
  rec.user_agent = agent;
  rec.status = 200;
  return rec;
}

TEST(NoWriteBy, AMatchingRequestOnAWatchedObjectIsAViolation) {
  DeclaredEvaluator e(declared(no_kcm_delete), "ns");
  e.watch_established();
  e.observe("ADDED", ds("a", 0), at(1s));
  std::vector<AuditRecord> audit{
      record(3, "delete", "a", "kube-controller-manager/v1.36.0 (linux/amd64) kubernetes/abc/system:serviceaccount"),
      record(4, "update", "a", "kube-controller-manager/v1.36.0"),    // another verb
      record(5, "delete", "a", "kubectl/v1.36.0"),                    // another client
      record(6, "delete", "other", "kube-controller-manager/v1.36"),  // an object the watch never saw
      record(7, "delete", "a", "kube-controller-manager/v1.36", "pods"),
  };
  DeclaredContext c = context();
  c.audit = &audit;
  CheckResult r = e.result(c);
  EXPECT_EQ(r.status, CheckStatus::violated) << text(r);
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(mentions(r, "audit #3 at +3.0s: delete of ns/a by 'kube-controller-manager/v1.36.0")) << text(r);
  audit.erase(audit.begin());
  EXPECT_EQ(e.result(c).status, CheckStatus::passed) << text(e.result(c));
}

TEST(NoWriteBy, WithoutAnAuditOrAnObjectThereIsNoData) {
  DeclaredEvaluator e(declared(no_kcm_delete), "ns");
  e.watch_established();
  e.observe("ADDED", ds("a", 0), at(1s));
  EXPECT_EQ(e.result(context()).summary, "no data: no proxy audit: the requests were not recorded");
  DeclaredEvaluator none(declared(no_kcm_delete), "ns");
  none.watch_established();
  std::vector<AuditRecord> audit;
  DeclaredContext c = context();
  c.audit = &audit;
  EXPECT_EQ(none.result(c).status, CheckStatus::no_data);
}

TEST(ResolveField, ScalarsAsTextAndAbsentSteps) {
  std::string problem;
  const auto path = [&](std::string_view text) { return *schema::parse_field_path(text, &problem); };
  const json::value o = json::parse(
      R"({"a":{"s":"x","i":3,"d":1.5,"b":true,"n":null,"l":[{"k":"first"}],"m":{"x":1},"dotted.key":"y"}})");
  EXPECT_EQ(resolve_field(o, path("a.s")), "x");
  EXPECT_EQ(resolve_field(o, path("a.i")), "3");
  EXPECT_EQ(resolve_field(o, path("a.d")), "1.5");
  EXPECT_EQ(resolve_field(o, path("a.b")), "true");
  EXPECT_EQ(resolve_field(o, path("a.l[0].k")), "first");
  EXPECT_EQ(resolve_field(o, path("a.m")), R"({"x":1})");
  EXPECT_EQ(resolve_field(o, path(R"(a["dotted.key"])")), "y");
  EXPECT_FALSE(resolve_field(o, path("a.n")));
  EXPECT_FALSE(resolve_field(o, path("a.l[1].k")));
  EXPECT_FALSE(resolve_field(o, path("a.s.deeper")));
  EXPECT_FALSE(resolve_field(o, path("a.missing")));
}

TEST(DeclaredVerdict, DeclaredResultsFollowTheInvariantsAndMayBeExpected) {
  auto checks = checks_of("  invariants: []\n  declared:\n    - " + one_per_node + "\n    - " + ready_three +
                          "\n  expect: [one-per-node]\n");
  CheckResult violated;
  violated.name = "one-per-node";
  violated.status = CheckStatus::violated;
  Report report;
  Verdict v = check_invariants(checks, std::nullopt, Observations{}, report, {violated});
  ASSERT_EQ(report.checks.size(), 2u);
  EXPECT_EQ(report.checks[0].name, "one-per-node");
  EXPECT_TRUE(report.checks[0].expected_violated);
  // `ready` has no result (its watch never started): no data, so the run fails.
  EXPECT_EQ(report.checks[1].name, "ready");
  EXPECT_EQ(report.checks[1].status, CheckStatus::no_data);
  EXPECT_EQ(to_string(v), "fail");
  CheckResult passed;
  passed.name = "ready";
  passed.status = CheckStatus::passed;
  Report again;
  EXPECT_EQ(to_string(check_invariants(checks, std::nullopt, Observations{}, again, {violated, passed})), "reproduced");
  EXPECT_TRUE(again.notes.empty());
}

}  // namespace
}  // namespace faultline::harness
