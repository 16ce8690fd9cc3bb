// faultline explore's plans from a reference run's audit (harness/src/explore_plan.cpp), on small
// traces in tests/data/harness/explore/: JSON lines as the proxy's audit log writes them.
//   scheduler-small.jsonl         hand-made, kube-scheduler's user agents: binds, a lease, events,
//                                 a delete whose pod comes back, failed writes, watches
//   kcm-daemonset-control.jsonl   a real audit log of kube-controller-manager (daemonset-control)
//   kcm-daemonset-stale.jsonl     a real one of daemonset-stale-duplicates (watches, 409s, cuts)
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "faultline/audit/record.hpp"
#include "faultline/faults/engine.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/harness/explore_plan.hpp"
#include "faultline/harness/schema/component_fault.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "files.hpp"

namespace faultline::harness::explore {
namespace {

namespace fs = std::filesystem;
using faultline::testing::slurp;

const fs::path kData = fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "explore";
const fs::path kScenarios = fs::path(FAULTLINE_SOURCE_DIR) / "harness" / "scenarios";

std::vector<audit::Record> trace(const std::string& name) {
  auto decoded = audit::decode_lines(slurp(kData / name));
  EXPECT_EQ(decoded.malformed, 0u) << decoded.first_error;
  return decoded.records;
}

std::string scenario(const std::string& name) { return slurp(kScenarios / name); }

std::vector<std::string> ids_of(const std::vector<Plan>& plans) {
  std::vector<std::string> out;
  for (const auto& p : plans) out.push_back(p.id);
  return out;
}

const Plan& plan_named(const Plans& plans, const std::string& id) {
  for (const auto& p : plans.plans)
    if (p.id == id) return p;
  throw std::runtime_error("no plan " + id);
}

const GenerationRule& rule_named(const Plans& plans, const std::string& name) {
  for (const auto& r : plans.rules)
    if (r.name == name) return r;
  throw std::runtime_error("no rule " + name);
}

std::vector<std::string> write_ids(const std::string& key, const std::string& occurrence, bool meta) {
  std::vector<std::string> out;
  for (const char* v : {"500", "503", "429", "409", "drop-response", "cut"})
    out.push_back(std::string("write-") + v + "-" + key + "-" + occurrence);
  if (meta) {
    out.push_back("kill-after-" + key + "-" + occurrence);
    out.push_back("pause-after-" + key + "-" + occurrence);
  }
  return out;
}

std::vector<std::string> expected_small_ids() {
  std::vector<std::string> ids;
  auto add = [&](std::vector<std::string> more) { ids.insert(ids.end(), more.begin(), more.end()); };
  add(write_ids("create-pods-binding", "first", true));
  add(write_ids("create-pods-binding", "densest", true));
  add(write_ids("create-pods-binding", "late", true));
  add(write_ids("create-events-events-k8s-io", "first", false));
  // Two lease updates: the late one (one before the last) is the first.
  add(write_ids("update-leases-coordination-k8s-io", "first", true));
  add(write_ids("delete-pods", "first", false));
  // A blackhole ends no watch: no relist after it.
  for (const char* moment : {"densest", "first", "middle"}) {
    ids.push_back(std::string("outage-reset-") + moment);
    ids.push_back(std::string("outage-relist-reset-") + moment);
    ids.push_back(std::string("outage-blackhole-") + moment);
  }
  for (const char* resource : {"nodes", "pods"})
    for (const char* kind : {"watch-reset", "watch-gone", "watch-drop", "watch-delay"})
      ids.push_back(std::string(kind) + "-" + resource);
  ids.push_back("stale-read-pods");
  return ids;
}

Plans small() { return generate_plans(scenario("kube-scheduler-3355-outage.yaml"), trace("scheduler-small.jsonl")); }

TEST(ExplorePlan, IdsAndKindsOfASmallTrace) {
  const Plans plans = small();
  EXPECT_EQ(ids_of(plans.plans), expected_small_ids());
  std::map<std::string, int> kinds;
  for (const auto& p : plans.plans) ++kinds[p.kind];
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"write-fail", 24},
                                               {"write-drop-response", 6},
                                               {"write-cut", 6},
                                               {"kill", 4},
                                               {"pause", 4},
                                               {"outage", 6},
                                               {"outage-relist", 3},
                                               {"watch-reset", 2},
                                               {"watch-gone", 2},
                                               {"watch-drop", 2},
                                               {"watch-delay", 2},
                                               {"stale-read", 1}}));
  const Plan& p = plan_named(plans, "write-503-create-pods-binding-densest");
  EXPECT_EQ(p.kind, "write-fail");
  EXPECT_EQ(p.source, "Rainmaker");
  EXPECT_EQ(p.faults, std::vector<std::string>{"write-503"});
  EXPECT_EQ(p.site,
            "create pods/binding by kube-scheduler/* (linux/amd64) kubernetes/$Format/scheduler "
            "(occurrence 3 of 7, densest burst, 4 in one second)");
  EXPECT_EQ(plan_named(plans, "kill-after-create-pods-binding-late").source, "CrashTuner");
  EXPECT_EQ(plan_named(plans, "write-500-create-pods-binding-late").site,
            "create pods/binding by kube-scheduler/* (linux/amd64) kubernetes/$Format/scheduler "
            "(occurrence 6 of 7, late, 1 before the last)");
  EXPECT_EQ(plan_named(plans, "watch-drop-pods").source, "Sieve");
  EXPECT_EQ(plan_named(plans, "stale-read-pods").source, "Sieve");
  EXPECT_EQ(plan_named(plans, "outage-relist-reset-first").source, "outage");
  // Only the watches that carried events relist: csinodes answered 500 only, persistentvolumes
  // relayed a bookmark only.
  EXPECT_EQ(plan_named(plans, "outage-relist-reset-first").faults,
            (std::vector<std::string>{"outage", "relist-configmaps", "relist-nodes", "relist-pods"}));
  EXPECT_NE(plan_named(plans, "outage-relist-reset-first")
                .site.find(", then the watches of the 3 resources that carried events relist (2 with bookmarks only "
                           "left out)"),
            std::string::npos)
      << plan_named(plans, "outage-relist-reset-first").site;
}

TEST(ExplorePlan, PruningIsCounted) {
  const Plans plans = small();
  // The harness's own create is not the system's.
  EXPECT_EQ(rule_named(plans, "audit-records").produced, 20u);
  EXPECT_EQ(rule_named(plans, "audit-records").removed, 1u);
  // A 409 bind, a 500 and a cut status update: not effective.
  EXPECT_EQ(rule_named(plans, "effective-writes").produced, 10u);
  EXPECT_EQ(rule_named(plans, "effective-writes").removed, 3u);
  EXPECT_NE(rule_named(plans, "effective-writes").why_removed.find("1 x cut, 1 x 409, 1 x 500"), std::string::npos)
      << rule_named(plans, "effective-writes").why_removed;
  // update pods/status never succeeded: not reached.
  EXPECT_EQ(rule_named(plans, "write-sites").produced, 4u);
  EXPECT_EQ(rule_named(plans, "write-sites").removed, 1u);
  // csinodes answered 500 only; persistentvolumes relayed a bookmark only; configmaps' watch opened
  // after the last write.
  for (const char* kind : {"watch-reset", "watch-gone", "watch-drop", "watch-delay"}) {
    EXPECT_EQ(rule_named(plans, kind).produced, 2u) << kind;
    EXPECT_EQ(rule_named(plans, kind).removed, 3u) << kind;
    EXPECT_NE(rule_named(plans, kind).why_removed.find("1 watched resources never answered 200"), std::string::npos);
    EXPECT_NE(rule_named(plans, kind).why_removed.find("1 watched resources whose watches relayed no event"),
              std::string::npos);
    EXPECT_NE(rule_named(plans, kind).why_removed.find("1 watched resources with no write"), std::string::npos);
  }
  EXPECT_EQ(rule_named(plans, "write-fail").produced, 24u);
  EXPECT_EQ(rule_named(plans, "write-fail").removed, 0u);
  EXPECT_EQ(rule_named(plans, "outage-relist").produced, 3u);
  EXPECT_EQ(rule_named(plans, "outage-relist").removed, 3u);
  EXPECT_EQ(rule_named(plans, "outage-relist").why_removed,
            "3 after a blackhole, which ends no watch (no relist follows it)");
  EXPECT_EQ(rule_named(plans, "bound").produced, 62u);
  EXPECT_EQ(rule_named(plans, "bound").removed, 0u);
  EXPECT_EQ(rule_named(plans, "invalid").removed, 0u);
  const std::string tsv = generation_tsv(plans.rules);
  EXPECT_EQ(tsv.substr(0, tsv.find('\n')), "rule\tproduced\tremoved\twhy");
  EXPECT_NE(tsv.find("\nwrite-sites\t4\t1\tnot reached"), std::string::npos) << tsv;
}

// Every plan of every trace loads with the harness's scenario loader, and carries no
// checks.expect (a plan run expects no violation).
TEST(ExplorePlan, EveryPlanLoads) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"kube-scheduler-3355-outage.yaml", "scheduler-small.jsonl"},
      {"daemonset-control.yaml", "kcm-daemonset-control.jsonl"},
      {"daemonset-stale-duplicates.yaml", "kcm-daemonset-stale.jsonl"},
      {"yunikorn-3355-outage.yaml", "scheduler-small.jsonl"},
  };
  for (const auto& [file, audit] : cases) {
    const Plans plans = generate_plans(scenario(file), trace(audit));
    EXPECT_FALSE(plans.plans.empty()) << file;
    EXPECT_EQ(rule_named(plans, "invalid").removed, 0u) << rule_named(plans, "invalid").why_removed;
    std::set<std::string> ids;
    for (const auto& p : plans.plans) {
      SCOPED_TRACE(file + " " + p.id);
      EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id";
      EXPECT_FALSE(p.id.empty());
      EXPECT_LE(p.id.size(), max_plan_id_bytes + 4);
      EXPECT_EQ(p.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos);
      std::shared_ptr<const schema::Scenario> s;
      ASSERT_NO_THROW(s = schema::load_scenario_text(p.scenario_yaml, p.id)) << p.scenario_yaml;
      EXPECT_TRUE(s->checks.expect.empty());
      std::vector<std::string> names;
      for (const auto& r : s->faults) names.push_back(r.name);
      for (const auto& c : s->component_faults) names.push_back(c.name);
      EXPECT_EQ(names, p.faults);
      EXPECT_FALSE(p.faults.empty());
    }
  }
}

TEST(ExplorePlan, RealKubeControllerManagerTrace) {
  const Plans plans = generate_plans(scenario("daemonset-stale-duplicates.yaml"), trace("kcm-daemonset-stale.jsonl"));
  const auto ids = ids_of(plans.plans);
  auto has = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  // The DaemonSet controller's status update is meta-information: CrashTuner plans follow it.
  EXPECT_TRUE(has("write-503-update-daemonsets-apps-status-first"));
  EXPECT_TRUE(has("kill-after-update-daemonsets-apps-status-first"));
  EXPECT_TRUE(has("write-cut-create-pods-densest"));
  // Pods are watched by the shared informers before the controller's writes.
  EXPECT_TRUE(has("watch-gone-pods"));
  const Plan& kill = plan_named(plans, "kill-after-update-daemonsets-apps-status-first");
  EXPECT_NE(kill.scenario_yaml.find("componentFaults:\n  - name: kill-system\n    target: scheduler\n    action: kill\n"
                                    "    downFor: 10s\n    when: {afterMatches: 1, of: {verbs: [update], resources: "
                                    "[\"daemonsets.apps/status\"], userAgents: [\"kube-controller-manager/* "
                                    "(linux/amd64) kubernetes/$Format/daemon-set-controller\"]}}\n"),
            std::string::npos)
      << kill.scenario_yaml;
}

// The scenario's rule faults exactly the occurrence the plan names: the proxy's engine, fed the
// reference run's requests in the order the proxy saw them, fires on that request and no other.
TEST(ExplorePlan, WriteRulesFaultTheNamedOccurrence) {
  const Plans plans = small();
  const auto records = trace("scheduler-small.jsonl");
  std::vector<audit::Record> ordered = records;
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) { return x.ts < y.ts; });
  auto fired_on = [&](const std::string& id) {
    auto scenario = schema::load_scenario_text(plan_named(plans, id).scenario_yaml, id);
    faults::Engine engine(scenario);
    const faults::Clock::time_point t0{};
    engine.arm(t0);
    std::vector<std::string> fired;
    for (const auto& r : ordered) {
      const auto at = t0 + (r.ts - ordered.front().ts);
      const auto plan = engine.decide(faults::make_request(r.method, r.path, {{"User-Agent", r.user_agent}}), at);
      if (plan.fires()) fired.push_back(r.verb + " " + r.resource + "/" + r.subresource + " " + r.name);
    }
    return fired;
  };
  EXPECT_EQ(fired_on("write-500-create-pods-binding-first"), std::vector<std::string>{"create pods/binding p1"});
  EXPECT_EQ(fired_on("write-500-create-pods-binding-densest"), std::vector<std::string>{"create pods/binding p3"});
  EXPECT_EQ(fired_on("write-cut-create-pods-binding-late"), std::vector<std::string>{"create pods/binding p5"});
  EXPECT_EQ(fired_on("write-409-update-leases-coordination-k8s-io-first"),
            std::vector<std::string>{"update leases.coordination.k8s.io/ kube-scheduler"});
  EXPECT_EQ(fired_on("watch-gone-pods"), std::vector<std::string>{"watch pods/ "});
  // The outage after the 3rd write: the 4th (the 409 bind) is the first request it takes.
  EXPECT_EQ(fired_on("outage-reset-densest").front(), "create pods/binding px");
  const Plan& densest = plan_named(plans, "write-500-create-pods-binding-densest");
  EXPECT_NE(densest.scenario_yaml.find("when: {afterMatches: 2, of: {verbs: [create], resources: [\"pods/binding\"]"),
            std::string::npos)
      << densest.scenario_yaml;
  // The first occurrence has no trigger: afterMatches must be at least 1.
  const Plan& first = plan_named(plans, "write-500-create-pods-binding-first");
  EXPECT_NE(first.scenario_yaml.find("    when: {limit: 1}\n"), std::string::npos) << first.scenario_yaml;
  std::string zero = first.scenario_yaml;
  zero.replace(zero.find("when: {limit: 1}"), 16, "when: {afterMatches: 0, limit: 1}");
  EXPECT_THROW(schema::load_scenario_text(zero, "zero"), std::exception);
}

TEST(ExplorePlan, ShardsMakeTheWhole) {
  const Plans plans = small();
  const auto one = shard_of(plans.plans, 1, 2), two = shard_of(plans.plans, 2, 2);
  EXPECT_EQ(one.size() + two.size(), plans.plans.size());
  std::vector<std::string> merged = ids_of(one), all = ids_of(plans.plans);
  for (const auto& id : ids_of(two)) merged.push_back(id);
  std::sort(merged.begin(), merged.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(merged, all);
  EXPECT_EQ(one.front(), plans.plans[0]);
  EXPECT_EQ(two.front(), plans.plans[1]);
  EXPECT_EQ(shard_of(plans.plans, 1, 1), plans.plans);
  EXPECT_EQ(shard_of(plans.plans, 3, 3).front(), plans.plans[2]);
  EXPECT_THROW(shard_of(plans.plans, 0, 2), std::invalid_argument);
  EXPECT_THROW(shard_of(plans.plans, 3, 2), std::invalid_argument);
  EXPECT_THROW(shard_of(plans.plans, 1, 0), std::invalid_argument);
  try {
    shard_of(plans.plans, 3, 2);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "shard index 3 is outside 1..2 (--shard I/N: I is 1-based)");
  }
}

TEST(ExplorePlan, Deterministic) {
  const Plans a = small(), b = small();
  EXPECT_EQ(a.plans, b.plans);
  EXPECT_EQ(a.rules, b.rules);
  // The log's order (completion) does not matter: the proxy counts in arrival order.
  auto records = trace("scheduler-small.jsonl");
  std::reverse(records.begin(), records.end());
  const Plans c = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  EXPECT_EQ(ids_of(c.plans), ids_of(a.plans));
}

TEST(ExplorePlan, ArmedLeavesEarlierRecordsOut) {
  GenerateOptions options;
  const auto records = trace("scheduler-small.jsonl");
  options.armed = records.front().ts + std::chrono::milliseconds(1000);  // after the first bind (1.0 s)
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records, options);
  EXPECT_EQ(rule_named(plans, "audit-records").removed, 7u);  // before arming, the harness's create among them
  // The watches opened before arming (pods, nodes; persistentvolumes relayed no event) are seen by
  // no rule: their plans first cut the system's connections, then fault the watch opened again.
  std::set<std::string> watch_plans;
  for (const auto& p : plans.plans)
    if (p.kind.starts_with("watch-")) watch_plans.insert(p.id);
  EXPECT_EQ(watch_plans,
            (std::set<std::string>{"watch-delay-nodes", "watch-delay-pods", "watch-drop-nodes", "watch-drop-pods",
                                   "watch-gone-nodes", "watch-gone-pods", "watch-reset-nodes", "watch-reset-pods"}));
  const Plan& gone = plan_named(plans, "watch-gone-pods");
  EXPECT_EQ(gone.faults, (std::vector<std::string>{"cut-watches", "watch-gone"}));
  const auto loaded = schema::load_scenario_text(gone.scenario_yaml, "watch-gone-pods.yaml");
  ASSERT_EQ(loaded->faults.size(), 2u);
  EXPECT_EQ(faults::action_type(loaded->faults[0].action), "outage");
  // The cut comes at the system's first request, then the first new pod watch is faulted.
  faults::Engine engine(loaded);
  const faults::Clock::time_point t0{};
  engine.arm(t0);
  const auto ua =
      std::vector<faults::Header>{{"User-Agent", "kube-scheduler/v1.36.4 (linux/amd64) kubernetes/$Format/scheduler"}};
  EXPECT_TRUE(engine.decide(faults::make_request("POST", "/api/v1/namespaces/a/pods/p/binding", ua), t0).fires());
  const auto later = t0 + std::chrono::seconds(2);
  EXPECT_TRUE(engine.decide(faults::make_request("GET", "/api/v1/pods?watch=true", ua), later).fires());
  EXPECT_FALSE(engine.decide(faults::make_request("GET", "/api/v1/pods?watch=true", ua), later).fires());
  // Any of the system's agents brings the cut, not only the one that watches: the watching agent
  // may make no request after arming.
  faults::Engine other(loaded);
  other.arm(t0);
  const auto lease_ua = std::vector<faults::Header>{
      {"User-Agent", "kube-scheduler/v1.36.4 (linux/amd64) kubernetes/$Format/leader-election"}};
  EXPECT_TRUE(
      other
          .decide(faults::make_request("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", lease_ua),
                  t0)
          .fires());
  // Times count from arming: p2, the first write after it, came with it.
  EXPECT_NE(plan_named(plans, "outage-reset-first").site.find("after write 1 of 12 (0.0 s after arming)"),
            std::string::npos)
      << plan_named(plans, "outage-reset-first").site;
  // p2 is now the first bind the proxy counts.
  EXPECT_NE(plan_named(plans, "write-500-create-pods-binding-densest").site.find("occurrence 2 of 6"),
            std::string::npos)
      << plan_named(plans, "write-500-create-pods-binding-densest").site;
}

// Thousands of sites: at most max_plans plans, the rest counted, the first occurrence of every
// site kept before any later one.
TEST(ExplorePlan, BoundedToAThousandPlans) {
  std::vector<audit::Record> records;
  audit::Record r;
  r.user_agent = "operator/v1 (linux/amd64) kubernetes/abc/controller";
  r.method = "POST";
  r.verb = "create";
  r.status = 201;
  r.upstream_status = 201;
  r.proto = "h2";
  const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(24 * 365 * 50);
  for (int i = 0; i < 3000; ++i)
    for (int k = 0; k < 3; ++k) {
      r.seq = records.size() + 1;
      r.ts = t0 + std::chrono::milliseconds(i * 10 + k * 5000);
      r.resource = "kind" + std::to_string(i) + "s.example.com";
      r.path = "/apis/example.com/v1/namespaces/faultline/kind" + std::to_string(i) + "s";
      r.namespace_ = "faultline";
      records.push_back(r);
    }
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  EXPECT_EQ(plans.plans.size(), max_plans);
  const auto& bound = rule_named(plans, "bound");
  EXPECT_EQ(bound.produced, max_plans);
  // 2 occurrences (first, late) x 6 per site, 6 outages (3 moments x 2 modes, nothing watched)
  EXPECT_EQ(bound.removed, 3000u * 2 * 6 + 6 - max_plans);
  EXPECT_NE(rule_named(plans, "write-fail").why_removed.find("beyond the bound of 1000 plans"), std::string::npos);
  for (const auto& p : plans.plans) EXPECT_EQ(p.id.find("-late"), std::string::npos) << p.id;
  std::set<std::string> ids;
  for (const auto& p : plans.plans) EXPECT_TRUE(ids.insert(p.id).second);
  EXPECT_EQ(plans.plans.front().id, "write-500-create-kind0s-example-com-first");
}

audit::Record write_record(std::uint64_t seq, const std::string& agent, const std::string& path) {
  audit::Record r;
  r.seq = seq;
  r.ts = std::chrono::system_clock::time_point{} + std::chrono::hours(24 * 365 * 50) + std::chrono::seconds(seq);
  r.user_agent = agent;
  r.proto = "h1";
  r.method = "POST";
  r.path = path;
  r.verb = "create";
  r.status = 201;
  r.upstream_status = 201;
  return r;
}

// Two controllers writing the same resource: their ids name them. Two resources whose names make
// the same id: the second gets "-2".
TEST(ExplorePlan, IdsNameTheAgentWhenSeveralWriteAndStayUnique) {
  const std::vector<audit::Record> records = {
      write_record(1, "op/v1 (linux/amd64) kubernetes/abc/a-controller", "/api/v1/namespaces/x/configmaps"),
      write_record(2, "op/v1 (linux/amd64) kubernetes/abc/b-controller", "/api/v1/namespaces/x/configmaps"),
      write_record(3, "op/v1 (linux/amd64) kubernetes/abc/a-controller", "/apis/example.com/v1/namespaces/x/foo"),
      write_record(4, "op/v1 (linux/amd64) kubernetes/abc/a-controller", "/apis/com/v1/namespaces/x/foo-example"),
  };
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  const auto ids = ids_of(plans.plans);
  auto has = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  EXPECT_TRUE(has("write-500-create-configmaps-a-controller-first"));
  EXPECT_TRUE(has("write-500-create-configmaps-b-controller-first"));
  EXPECT_TRUE(has("write-500-create-foo-example-com-first"));
  EXPECT_TRUE(has("write-500-create-foo-example-com-first-2"));
  EXPECT_EQ(plan_named(plans, "write-500-create-foo-example-com-first-2").site.substr(0, 26),
            "create foo-example.com by ");
  EXPECT_EQ(rule_named(plans, "invalid").removed, 0u);
}

// A glob made of one agent ("op/*") that also matches another agent's requests: the site counts
// them as the proxy will, and the outages count each write once.
TEST(ExplorePlan, OverlappingAgentGlobsCountEachWriteOnce) {
  std::vector<audit::Record> records = {
      write_record(1, "op/v1", "/api/v1/namespaces/x/configmaps"),
      write_record(2, "op/v1 informers/x", "/api/v1/namespaces/x/configmaps"),
  };
  records[1].ts -= std::chrono::milliseconds(500);
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  EXPECT_EQ(rule_named(plans, "effective-writes").produced, 2u);
  EXPECT_EQ(plan_named(plans, "write-500-create-configmaps-op-densest").site,
            "create configmaps by op/* (occurrence 2 of 2, densest burst, 2 in one second)");
  EXPECT_EQ(plan_named(plans, "outage-reset-densest").site,
            "apiserver reset outage of 10s in the densest second of writes (2): after write 2 of 2 (0.5 s after the "
            "first request)");
}

// A system watching more resources than one scenario should hold watch-gone rules for: one rule
// for every watch, as many times as there are resources.
TEST(ExplorePlan, ManyWatchedResourcesMakeOneRelistRule) {
  std::vector<audit::Record> records;
  for (int i = 0; i < 70; ++i) {
    audit::Record w =
        write_record(records.size() + 1, "op/v1", "/apis/example.com/v1/kind" + std::to_string(i) + "s?watch=true");
    w.method = "GET";
    w.verb = "watch";
    w.watch = true;
    w.status = 200;
    w.upstream_status = 200;
    w.bytes_out = 4096;
    records.push_back(w);
  }
  records.push_back(write_record(records.size() + 1, "op/v1", "/api/v1/namespaces/x/configmaps"));
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  const Plan& p = plan_named(plans, "outage-relist-reset-densest");  // one write: densest = first = middle
  EXPECT_EQ(p.faults, (std::vector<std::string>{"outage", "relist"}));
  EXPECT_NE(p.scenario_yaml.find("  - name: relist\n    match: {verbs: [watch], userAgents: [\"op/*\"]}\n    when: "
                                 "{afterMatches: 1, of: {verbs: [create, update, patch, delete], userAgents: "
                                 "[\"op/*\"]}, for: 2m, limit: 70}\n"),
            std::string::npos)
      << p.scenario_yaml;
  EXPECT_EQ(rule_named(plans, "watch-gone").produced, 70u);
  EXPECT_EQ(rule_named(plans, "invalid").removed, 0u);
}

// Whatever a client sends is classified as the proxy does; a resource with a dot in a core path
// (which no apiserver serves) still makes loadable plans.
TEST(ExplorePlan, OddRequestsStillMakeLoadablePlans) {
  const std::vector<audit::Record> records = {
      write_record(1, "odd/1 \"quoted\" {x: [y]} #c", "/api/v1/namespaces/x/foo.bar"),
      write_record(2, "no-slash*?", "/api/v1/namespaces/x/configmaps"),
  };
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), records);
  // foo.bar reads as resource foo of group bar in a rule: no rule can select that request.
  EXPECT_EQ(rule_named(plans, "write-sites").produced, 1u);
  EXPECT_EQ(rule_named(plans, "write-sites").removed, 1u);
  EXPECT_EQ(rule_named(plans, "invalid").removed, 0u) << rule_named(plans, "invalid").why_removed;
  EXPECT_EQ(plan_named(plans, "write-500-create-configmaps-first").site,
            "create configmaps by no-slash?? (occurrence 1 of 1, first)");
}

// An Airflow reference run as the proxy's audit log holds it (written and read with its codec, in
// the order the log writes records: when each request ended): kube-scheduler and a triggerer there
// before arming; after it, scheduler 1 creates its worker pods, kube-scheduler binds them, then
// scheduler 2 starts (a pod watch it keeps open, a short watch, a list that ends first) and
// relabels the pods; scheduler 3
// only opens a watch it keeps open. The watches kept open through the run are added at the end,
// ended after the run, as scripts/explore adds them.
const auto kT0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
const auto kArmed = kT0 + std::chrono::seconds(1);
const auto kFinished = kT0 + std::chrono::seconds(100);
constexpr const char* kScheduler1 = "airflow-scheduler-1 OpenAPI-Generator/23.6.0/python";
constexpr const char* kScheduler2 = "airflow-scheduler-2 OpenAPI-Generator/23.6.0/python";
constexpr const char* kKubeScheduler = "kube-scheduler/v1.36.4 (linux/amd64) kubernetes/$Format/scheduler";

struct AirflowTrace {
  std::string lines;
  std::uint64_t seq = 0;
  void add(const char* agent, const std::string& method, const std::string& path, int status, double at_seconds,
           double for_seconds = 0.05) {
    audit::Record r;
    r.user_agent = agent;
    r.proto = "h1";
    r.method = method;
    r.path = path;
    const auto info = faults::make_request(method, path, {{"User-Agent", agent}}).info;
    r.verb = info.verb;
    r.resource = info.resource;
    r.subresource = info.subresource;
    r.namespace_ = info.namespace_;
    r.name = info.name;
    r.watch = info.verb == "watch";
    r.status = status;
    r.upstream_status = status;
    r.bytes_out = 4096;
    r.duration = std::chrono::microseconds(static_cast<std::int64_t>(for_seconds * 1e6));
    lines +=
        audit::to_json_line(r, ++seq, kT0 + std::chrono::microseconds(static_cast<std::int64_t>(at_seconds * 1e6)));
  }
};

std::vector<audit::Record> airflow_trace() {
  AirflowTrace t;
  t.add(kKubeScheduler, "GET", "/api/v1/nodes", 200, 0.2);
  t.add("airflow-triggerer OpenAPI-Generator/23.6.0/python", "GET", "/api/v1/namespaces/airflow/pods", 200, 0.3);
  t.add(kScheduler1, "GET", "/api/v1/namespaces/airflow/pods", 200, 2.0);
  t.add("faultline-harness/0.1", "POST", "/api/v1/namespaces/faultline/pods", 201, 2.5);
  for (int i = 0; i < 4; ++i) {
    t.add(kScheduler1, "POST", "/api/v1/namespaces/airflow/pods", 201, 3.0 + 0.2 * i);
    t.add(kKubeScheduler, "POST", "/api/v1/namespaces/airflow/pods/long-" + std::to_string(i) + "/binding", 201,
          3.1 + 0.2 * i);
  }
  t.add(kScheduler2, "GET", "/api/v1/namespaces/airflow/pods", 200, 11.0);
  // Started before that list, written after it: the harness counts the list first.
  t.add(kScheduler2, "GET", "/api/v1/namespaces/airflow/pods?watch=true&timeoutSeconds=1", 200, 10.5, 1.5);
  t.add("airflow-triggerer OpenAPI-Generator/23.6.0/python", "GET", "/api/v1/namespaces/airflow/pods", 200, 20.0);
  for (int i = 0; i < 4; ++i)
    t.add(kScheduler2, "PATCH", "/api/v1/namespaces/airflow/pods/long-" + std::to_string(i), 200, 30.0 + 0.5 * i);
  // Kept open through the run, added afterwards: ended after the run.
  t.add(kKubeScheduler, "GET", "/api/v1/pods?watch=true", 200, 0.5, 150);
  t.add(kScheduler2, "GET", "/api/v1/namespaces/airflow/pods?watch=true", 200, 10.0, 140);
  t.add("airflow-scheduler-3 OpenAPI-Generator/23.6.0/python", "GET", "/api/v1/namespaces/airflow/pods?watch=true", 200,
        12.0, 140);
  auto decoded = audit::decode_lines(t.lines);
  EXPECT_EQ(decoded.malformed, 0u) << decoded.first_error;
  return decoded.records;
}

constexpr const char* kAirflowScenario = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: airflow-unit}
workload:
  namespace: faultline
  nodes: {count: 2, capacity: {cpu: "32", memory: 256Gi, pods: "110"}}
  phases:
    - {name: canary, pods: 1}
checks:
  settle: 20s
  invariants: [no-unexpected-deletes]
)";

GenerateOptions airflow_options() {
  GenerateOptions options;
  options.armed = kArmed;
  options.finished = kFinished;
  schema::ExploreComponent c;
  c.target = schema::Component::airflow_scheduler;
  c.user_agents = {"airflow-scheduler-1 *"};
  c.actions = {schema::ComponentAction::pause};
  c.down_for = {std::chrono::seconds(10), std::chrono::seconds(40)};
  options.components = {c};
  return options;
}

std::vector<std::string> crashtuner_ids(const Plans& plans) {
  std::vector<std::string> out;
  for (const auto& p : plans.plans)
    if (p.source == "CrashTuner") out.push_back(p.id);
  return out;
}

std::string component_faults_of(const Plan& p) {
  const auto at = p.scenario_yaml.find("\ncomponentFaults:\n");
  return at == std::string::npos ? "" : p.scenario_yaml.substr(at + 1);
}

// The audit record after which the harness starts the plan's component fault: it counts the
// records in the order they were written, from arming on, until the run's end.
std::string fires_after(const Plan& p, const std::vector<audit::Record>& records) {
  const auto loaded = schema::load_scenario_text(p.scenario_yaml, p.id);
  const auto& fault = loaded->component_faults.at(0);
  std::uint64_t matched = 0;
  for (const auto& r : records) {
    if (r.ts < kArmed || r.ts + r.duration > kFinished) continue;
    if (fault.trigger->of.matches(faults::make_request(r.method, r.path, {{"User-Agent", r.user_agent}}))) ++matched;
    if (schema::component_fault_due(fault, faults::Duration(0), matched))
      return r.user_agent.substr(0, r.user_agent.find(' ')) + " " + r.method + " " + r.path + " #" +
             std::to_string(r.seq);
  }
  return "never";
}

TEST(ExplorePlan, DeclaredComponentIsPausedAfterItsOwnWritesAndAfterAPeerStarts) {
  const auto records = airflow_trace();
  const Plans plans = generate_plans(kAirflowScenario, records, airflow_options());
  EXPECT_EQ(crashtuner_ids(plans),
            (std::vector<std::string>{"pause-after-create-pods-first", "pause-40s-after-create-pods-first",
                                      "pause-after-create-pods-densest", "pause-40s-after-create-pods-densest",
                                      "pause-after-first-request-airflow-scheduler-2",
                                      "pause-40s-after-first-request-airflow-scheduler-2"}));
  EXPECT_EQ(rule_named(plans, "invalid").removed, 0u) << rule_named(plans, "invalid").why_removed;
  const Plan& peer = plan_named(plans, "pause-40s-after-first-request-airflow-scheduler-2");
  EXPECT_EQ(peer.kind, "pause");
  EXPECT_EQ(peer.source, "CrashTuner");
  EXPECT_EQ(peer.faults, std::vector<std::string>{"pause-airflow-scheduler"});
  EXPECT_EQ(component_faults_of(peer),
            "componentFaults:\n  - name: pause-airflow-scheduler\n    target: airflow-scheduler\n    action: pause\n"
            "    downFor: 40s\n    when: {afterMatches: 1, of: {userAgents: [\"airflow-scheduler-2 "
            "OpenAPI-Generator/*\"]}}\n");
  // Its first request is the list, the first one written: not the watch it opened half a second
  // earlier, written after the list, nor the one it opened a second earlier and kept open past the run.
  EXPECT_EQ(peer.site,
            "right after the first request of airflow-scheduler-2 OpenAPI-Generator/* (list pods, 10.0 s after "
            "arming), a peer that started during the run");
  EXPECT_EQ(fires_after(peer, records), "airflow-scheduler-2 GET /api/v1/namespaces/airflow/pods #13");
  EXPECT_EQ(component_faults_of(plan_named(plans, "pause-after-first-request-airflow-scheduler-2")),
            "componentFaults:\n  - name: pause-airflow-scheduler\n    target: airflow-scheduler\n    action: pause\n"
            "    downFor: 10s\n    when: {afterMatches: 1, of: {userAgents: [\"airflow-scheduler-2 "
            "OpenAPI-Generator/*\"]}}\n");
  const Plan& own = plan_named(plans, "pause-40s-after-create-pods-densest");
  EXPECT_EQ(component_faults_of(own),
            "componentFaults:\n  - name: pause-airflow-scheduler\n    target: airflow-scheduler\n    action: pause\n"
            "    downFor: 40s\n    when: {afterMatches: 3, of: {verbs: [create], resources: [\"pods\"], userAgents: "
            "[\"airflow-scheduler-1 OpenAPI-Generator/*\"]}}\n");
  EXPECT_EQ(own.site,
            "right after create pods by airflow-scheduler-1 OpenAPI-Generator/* (occurrence 3 of 4, densest burst, 4 "
            "in one second), its own write");
  EXPECT_EQ(fires_after(own, records), "airflow-scheduler-1 POST /api/v1/namespaces/airflow/pods #9");
  EXPECT_EQ(fires_after(plan_named(plans, "pause-after-create-pods-first"), records),
            "airflow-scheduler-1 POST /api/v1/namespaces/airflow/pods #5");
  // kube-scheduler's binds are not the component's: no plan after them, and not the default's.
  for (const auto& p : plans.plans) EXPECT_EQ(p.id.find("kill"), std::string::npos) << p.id;
  // The triggerer and kube-scheduler were there before arming; scheduler 3 made no request the
  // harness counts (its only one is a watch that ended after the run); the harness is not the system.
  const GenerationRule& rule = rule_named(plans, "components");
  EXPECT_EQ(rule.produced, 6u);
  EXPECT_EQ(rule.removed, 3u);
  EXPECT_EQ(rule.why_removed,
            "2 user agents that made requests before arming: not peers that started during the run; 1 user agents "
            "whose requests after arming all ended after the run (watches kept open): the harness never counts them");
  EXPECT_EQ(rule_named(plans, "pause").produced, 6u);
  EXPECT_NE(generation_tsv(plans.rules).find("\ncomponents\t6\t3\t2 user agents"), std::string::npos)
      << generation_tsv(plans.rules);
}

TEST(ExplorePlan, APeerIsOnlyOneThatStartedAfterArming) {
  auto records = airflow_trace();
  // Scheduler 2 also made a request before arming: it was there all along, no takeover to catch.
  audit::Record early = records.front();
  early.user_agent = kScheduler2;
  early.ts = kT0 + std::chrono::milliseconds(700);
  records.insert(records.begin() + 1, early);
  Plans plans = generate_plans(kAirflowScenario, records, airflow_options());
  EXPECT_EQ(crashtuner_ids(plans),
            (std::vector<std::string>{"pause-after-create-pods-first", "pause-40s-after-create-pods-first",
                                      "pause-after-create-pods-densest", "pause-40s-after-create-pods-densest"}));
  EXPECT_EQ(rule_named(plans, "components").removed, 4u);
  // Without the time of arming no user agent is known to have started during the run.
  GenerateOptions options = airflow_options();
  options.armed.reset();
  plans = generate_plans(kAirflowScenario, airflow_trace(), options);
  for (const auto& id : crashtuner_ids(plans)) EXPECT_EQ(id.find("first-request"), std::string::npos) << id;
  EXPECT_NE(rule_named(plans, "components").why_removed.find("the reference run's time of arming is unknown"),
            std::string::npos);
}

TEST(ExplorePlan, WithoutDeclaredComponentsTheSchedulerIsKilledAndPausedAsBefore) {
  GenerateOptions options = airflow_options();
  options.components.clear();
  const Plans plans = generate_plans(kAirflowScenario, airflow_trace(), options);
  EXPECT_EQ(
      crashtuner_ids(plans),
      (std::vector<std::string>{"kill-after-create-pods-binding-first", "pause-after-create-pods-binding-first",
                                "kill-after-create-pods-binding-densest", "pause-after-create-pods-binding-densest"}));
  EXPECT_NE(component_faults_of(plan_named(plans, "pause-after-create-pods-binding-first"))
                .find("  - name: pause-system\n    target: scheduler\n    action: pause\n    downFor: 10s\n"),
            std::string::npos);
  for (const auto& r : plans.rules) EXPECT_NE(r.name, "components");
}

TEST(ExplorePlan, ABadReferenceScenarioIsAnError) {
  std::string text = scenario("kube-scheduler-3355-outage.yaml");
  text.replace(text.find("seed: 3355"), 10, "seed: -1");
  try {
    generate_plans(text, trace("scheduler-small.jsonl"));
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the reference scenario does not load: reference scenario:", 0), 0u)
        << e.what();
  }
}

TEST(ExplorePlan, EmptyAuditGivesNoPlans) {
  const Plans plans = generate_plans(scenario("kube-scheduler-3355-outage.yaml"), {});
  EXPECT_TRUE(plans.plans.empty());
  EXPECT_EQ(rule_named(plans, "bound").produced, 0u);
  EXPECT_EQ(rule_named(plans, "write-sites").produced, 0u);
}

TEST(ExplorePlan, ReferenceScenarioDropsFaultsAndExpect) {
  const std::string text = scenario("yunikorn-3355-outage.yaml");
  const std::string ref = reference_scenario(text);
  auto s = schema::load_scenario_text(ref, "ref");
  EXPECT_TRUE(s->faults.empty());
  EXPECT_TRUE(s->component_faults.empty());
  EXPECT_TRUE(s->checks.expect.empty());
  auto original = schema::load_scenario_text(text, "orig");
  EXPECT_EQ(s->checks.invariants, original->checks.invariants);
  EXPECT_EQ(s->workload->phases.size(), 2u);
  EXPECT_EQ(s->workload->nodes.capacity.at("cpu"), "32");
  // Comments stay, the removed sections' own comments go.
  EXPECT_NE(ref.find("# YUNIKORN-3355: an apiserver outage"), std::string::npos);
  EXPECT_NE(ref.find("    # After the burst settled"), std::string::npos);
  EXPECT_EQ(ref.find("A trigger, not a wall-clock guess"), std::string::npos);
  EXPECT_EQ(ref.find("expect:"), std::string::npos);
  EXPECT_NE(ref.find("  invariants: [pods-bound, queue-accounting"), std::string::npos);
  EXPECT_EQ(reference_scenario(ref), ref);

  // componentFaults, and an expect list over several lines.
  const std::string kill = scenario("yunikorn-3355-apiserver-kill.yaml");
  const auto kref = schema::load_scenario_text(reference_scenario(kill), "kill");
  EXPECT_TRUE(kref->component_faults.empty());
  EXPECT_TRUE(kref->faults.empty());
  const std::string block =
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\nchecks:\n  expect:\n    - pods-bound\n"
      "  # settle\n  settle: 30s\n  invariants: [pods-bound]\n# tail\nfaults:\n  - name: a\n    action: {type: "
      "reset}\n";
  EXPECT_EQ(reference_scenario(block),
            "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\nchecks:\n"
            "  # settle\n  settle: 30s\n  invariants: [pods-bound]\n# tail\n");
  // A flow-style checks mapping: written out again, still loadable.
  const std::string flow =
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\nchecks: {settle: 30s, invariants: [pods-bound], "
      "expect: [pods-bound]}\n";
  const auto fref = schema::load_scenario_text(reference_scenario(flow), "flow");
  EXPECT_TRUE(fref->checks.expect.empty());
  EXPECT_EQ(fref->checks.settle, std::chrono::seconds(30));
  EXPECT_THROW(reference_scenario("- a list\n"), std::runtime_error);
}

}  // namespace
}  // namespace faultline::harness::explore
