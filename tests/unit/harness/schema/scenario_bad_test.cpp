// Bad scenario files (tests/data/scenarios/bad/) and the exact errors a user sees for them.
#include <gtest/gtest.h>

#include "faultline/harness/schema/scenario.hpp"
#include "scenario_helpers.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

using faults::testing::load_errors;

struct BadFile {
  const char* file;
  std::vector<std::string> errors;  // each without the leading "<path>:"
};

std::ostream& operator<<(std::ostream& out, const BadFile& bad) { return out << bad.file; }

std::string bad_path(const char* file) { return std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/bad/" + file; }

// The action types as the unknown-type error lists them: every type of the registry, in its order
// (derived, so that a new action is not one more place to edit).
std::string known_action_list() {
  std::string out;
  for (auto type : known_action_types()) out += (out.empty() ? "" : ", ") + std::string(type);
  return out;
}

class BadScenario : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadScenario, ReportsExactlyTheseErrors) {
  const BadFile& bad = GetParam();
  std::string path = bad_path(bad.file);
  std::vector<std::string> expected;
  for (const auto& error : bad.errors) expected.push_back(path + ":" + error);
  EXPECT_EQ(load_errors([&] { load_scenario_file(path); }), expected);
}

const BadFile bad_files[] = {
    {"unknown-top-level-key.yaml",
     {R"(5:1: fault: unknown key, did you mean "faults"? (allowed: apiVersion, checks, componentFaults, faults, kind, metadata, seed, workload))"}},
    {"unknown-when-key.yaml",
     {R"(7:12: faults[0].when.probabilty: unknown key, did you mean "probability"? (allowed: afterMatches, at, every, for, limit, of, probability, repeat))"}},
    {"wrong-api-version.yaml", {R"(1:13: apiVersion: must be "faultline/v1", got "faultline/v2")"}},
    {"probability-out-of-range.yaml", {"7:25: faults[0].when.probability: must be between 0 and 1, got 1.5"}},
    {"code-out-of-range.yaml", {"7:35: faults[0].action.code: must be an HTTP status code from 200 to 599, got 600"}},
    {"bad-duration.yaml",
     {R"(7:17: faults[0].when.for: invalid duration "10" (write a number and a unit: 250ms, 10s, 2m, 1h))"}},
    {"zero-node-count.yaml", {"6:18: workload.nodes.count: must be greater than 0, got 0"}},
    {"unknown-action-type.yaml",
     {R"(7:20: faults[0].action.type: unknown action type "explode" (known: )" + known_action_list() + ")"}},
    {"unknown-invariant.yaml",
     {R"(6:28: checks.invariants[1]: unknown invariant "pods-happy" (known: pods-bound, queue-accounting, )"
      R"(no-orphan-allocations, no-unexpected-deletes, bound-to-live-node))"}},
    {"expect-not-in-invariants.yaml",
     {R"(7:12: checks.expect[0]: "queue-accounting" is not listed in checks.invariants)"}},
    {"verbs-not-a-list.yaml", {R"(7:20: faults[0].match.verbs: expected a list, got "create")"}},
    {"missing-action.yaml", {"6:5: faults[0].action: required key is missing"}},
    {"duplicate-rule-name.yaml", {R"(7:12: faults[1].name: duplicate rule name "r" (first used on line 6))"}},
    {"bad-phase-start.yaml",
     {R"(8:33: workload.phases[0].start: expected a duration (e.g. 30s) or "settled", got "soon")"}},
    {"unknown-verb.yaml",
     {R"(6:39: faults[0].match.verbs[1]: unknown verb "bind" (known: get, list, watch, create, update, patch, )"
      R"(delete, deletecollection, proxy, connect, *))"}},
    {"bad-resource.yaml",
     {R"(6:35: faults[0].match.resources[0]: invalid resource "pods/" (write resource[.group][/subresource], )"
      R"(e.g. pods/binding or deployments.apps))"}},
    {"negative-seed-and-wrong-kind.yaml",
     {R"(2:7: kind: must be "Scenario", got "Scenery")", R"(4:7: seed: expected a whole number, got "-1")"}},
    {"zero-rate.yaml", {"7:37: workload.phases[0].rate: must be greater than 0, got 0"}},
    {"node-flap-steps.yaml",
     {"8:31: workload.phases[1].pods: a nodeFlap step creates no pods: leave this key out",
      "9:49: workload.phases[2].nodeFlap.downFor: required key is missing",
      "11:38: workload.phases[4].nodeFlap.nodes: must be greater than 0, got 0",
      "11:50: workload.phases[4].nodeFlap.downFor: must be greater than 0",
      "11:54: workload.phases[4].nodeFlap.for: unknown key (allowed: downFor, nodes)",
      "10:42: workload.phases[3].nodeFlap.nodes: more than the workload's 10 nodes"}},
    {"repeat.yaml",
     {"5:35: faults[0].when.repeat: needs when.for, the length of each window (shorter than repeat)",
      "6:38: faults[1].when.for: must be shorter than when.repeat (5m): a window closes before the next one opens",
      "7:42: faults[2].when.repeat: must be greater than 0",
      "8:63: faults[3].action: outage duration must be shorter than when.repeat (1m): one outage ends before the "
      "next window",
      R"(9:52: faults[4].when.repeat: invalid duration "5" (write a number and a unit: 250ms, 10s, 2m, 1h))"}},
    {"churn.yaml",
     {"7:38: workload.phases[0].churn.rate: rate * for is 8640000 pods, more than the limit of 200000",
      "7:53: workload.phases[0].churn.lifetime: rate * lifetime is 60000 pods alive at once, more than the limit of "
      "20000",
      "8:31: workload.phases[1].pods: a churn step takes its pods and rate from churn: leave this key out",
      R"(9:38: workload.phases[2].churn.rate: expected pods per second greater than 0 (5 or 5/s), got "fast")",
      "9:54: workload.phases[2].churn.lifetime: must be greater than 0",
      "9:31: workload.phases[2].churn.for: required key is missing",
      "10:62: workload.phases[3].churn.for: at most 24h (a longer soak is several runs)",
      "12:15: checks.quietAfter: must be greater than 0",
      "13:22: checks.resources.every: at least 1s (each sample reads /proc of every component)",
      "13:46: checks.resources.rssKiBPerMinute: must be a number >= 0",
      "13:50: checks.resources.slope: unknown key (allowed: every, fdsPerMinute, rssKiBPerMinute)"}},
    {"node-flap-only.yaml", {"7:5: workload.phases: needs at least one phase of pods or objects"}},
    {"component-faults.yaml",
     {R"(5:23: componentFaults[0].target: must be one of kube-apiserver, scheduler, kwok, etcd, airflow-scheduler, got "kube-scheduler")",
      "6:5: componentFaults[1].downFor: kill needs downFor: how long the component stays down before it is started "
      "again",
      "7:55: componentFaults[2].downFor: only kill and pause take downFor, not restart",
      R"(9:42: componentFaults[4].action: must be one of kill, pause, resume, restart, got "explode")",
      "10:51: componentFaults[5].when.of: required key is missing",
      "11:57: componentFaults[6].when.of: only meaningful with afterMatches",
      "12:84: componentFaults[7].when.of.headers: cannot be counted: the proxy's audit log records no headers",
      "13:52: componentFaults[8].downFor: must be greater than 0",
      R"(13:12: componentFaults[8].name: duplicate name "b" (first used on line 6))",
      "14:50: componentFaults[9].action: airflow-scheduler can be paused and resumed only, not kill: nothing can "
      "start it again",
      "15:50: componentFaults[10].action: airflow-scheduler can be paused and resumed only, not restart: nothing can "
      "start it again",
      "8:37: componentFaults[3].action: a pause without downFor needs a resume of kwok in componentFaults"}},
    {"declared-checks.yaml",
     {R"(6:13: checks.declared[0].name: "pods-bound" is the name of a built-in invariant: choose another name)",
      R"(7:27: checks.declared[0].watch.apiVersion: invalid apiVersion "apps/v1beta" (write v1 or group/version, e.g. apps/v1))",
      R"(7:50: checks.declared[0].watch.resource: invalid resource "Pods" (write the plural resource name in lower case, e.g. daemonsets or pods))",
      R"(7:56: checks.declared[0].watch.bogus: unknown key (allowed: apiVersion, labelSelector, namespace, resource))",
      R"(8:33: checks.declared[0].atMostPerGroup.groupBy: an empty list puts every object in one group: list at least one field path)",
      R"(8:42: checks.declared[0].atMostPerGroup.max: must be at least 1, got 0 (a group of zero objects: nothing could ever pass))",
      R"(9:16: checks.declared[0].reaches: a check has one kind and this one is atMostPerGroup: leave this key out or declare a check of its own)",
      R"(12:34: checks.declared[1].atMostPerGroup.groupBy[0]: invalid field path "spec..nodeName": two dots or a dot after nothing (write keys with dots, [N] for a list item, ["a.b"] for a key with dots, e.g. metadata.ownerReferences[0].uid))",
      R"(12:52: checks.declared[1].atMostPerGroup.groupBy[1]: invalid field path "a[": expected a list index or a quoted key after [ (write keys with dots, [N] for a list item, ["a.b"] for a key with dots, e.g. metadata.ownerReferences[0].uid))",
      R"(12:58: checks.declared[1].atMostPerGroup.groupBy[2]: invalid field path "b[x]": expected a list index or a quoted key after [ (write keys with dots, [N] for a list item, ["a.b"] for a key with dots, e.g. metadata.ownerReferences[0].uid))",
      R"(12:66: checks.declared[1].atMostPerGroup.groupBy[3]: invalid field path "labels["a.b"": expected ] at character 13 (write keys with dots, [N] for a list item, ["a.b"] for a key with dots, e.g. metadata.ownerReferences[0].uid))",
      R"(12:88: checks.declared[1].atMostPerGroup.max: must be at least 1, got -2 (a group of zero objects: nothing could ever pass))",
      R"(15:44: checks.declared[2].noWriteBy.verbs[0]: unknown verb "get" (known: create, update, patch, delete, deletecollection))",
      R"(13:13: checks.declared[2].name: duplicate check name "x" (first used on line 10))",
      R"(16:7: checks.declared[3]: needs one of atMostPerGroup, reaches, noWriteBy: what the check asks of the objects)",
      R"(19:58: checks.declared[4].watch.namespace: invalid namespace "All" (a namespace name, or all))",
      R"(20:16: checks.declared[4].reaches: needs value or equalsField: what the field must reach)",
      R"(20:35: checks.declared[4].reaches.within: must be greater than 0 (a time of zero: nothing can reach a value in no time))",
      R"(20:46: checks.declared[4].reaches.after: must be one of workload, lastFault, got "soon")",
      R"(21:15: checks.expect[1]: unknown invariant "w" (known: pods-bound, queue-accounting, no-orphan-allocations, no-unexpected-deletes, bound-to-live-node; declared: pods-bound, x, x, y, z))"}},
    {"objects-step.yaml",
     {R"(8:13: workload.phases[0].pods: an objects step creates what objects.template says: leave this key out)",
      R"(9:37: workload.phases[0].objects.resource: invalid resource "DaemonSets" (write the plural resource name in lower case, e.g. daemonsets))",
      R"(9:59: workload.phases[0].objects.template: needs apiVersion: the object's apiVersion)",
      R"(9:94: workload.phases[0].objects.template.metadata.name: the same name for 3 objects: put {i} in it or use metadata.generateName)",
      R"(11:13: workload.phases[1].rate: objects per second, greater than 0 and at most 10000)",
      R"(12:24: workload.phases[1].objects.count: must be greater than 0, got 0)",
      R"(12:16: workload.phases[1].objects.resource: required key is missing)",
      R"(12:37: workload.phases[1].objects.template: expected a mapping (a whole object: apiVersion, kind, metadata), got a list)",
      R"(14:24: workload.phases[2].objects.count: must be at most 10000 objects, got 10001)",
      R"(14:63: workload.phases[2].objects.template: needs metadata.name ("{i}" in it becomes 1, 2, ...) or metadata.generateName)"}},
    {"of-without-after-matches.yaml", {"6:26: faults[0].when.of: only meaningful with afterMatches"}},
    {"duplicate-keys.yaml", {"7:37: faults[0].action.type: duplicate key", "5:1: seed: duplicate key"}},
    {"many-errors.yaml",
     {"6:37: workload.nodes.capacity.cpu: expected a string, got a list",
      "7:11: workload.phases: must list at least one phase",
      "10:19: faults[0].when.limit: must be greater than 0, got 0",
      R"(10:29: faults[0].when.every: expected a whole number, got "two")",
      R"(11:48: faults[0].action.jitter: invalid duration "soon" (write a number and a unit: 250ms, 10s, 2m, 1h))",
      "13:11: checks.settle: must be greater than 0",
      "14:3: checks.colour: unknown key (allowed: declared, expect, invariants, quietAfter, resources, settle)"}},
    {"anchor-and-alias.yaml",
     {R"(6:25: anchors are not supported in scenario files ("&spaces"): write the value out in full)",
      R"(9:25: aliases are not supported in scenario files ("*spaces"): write the value out in full)"}},
    {"invalid-utf8.yaml", {"5:19: invalid UTF-8 (byte 0xE9): a scenario is UTF-8 text"}},
    {"control-character.yaml",
     {"3:23: control character 0x07 (a scenario is text: only tabs and line breaks are allowed)"}},
    {"too-deep.yaml", {"6:105: mappings and lists nested more than 64 deep"}},
    {"long-glob.yaml",
     {"7:19: faults[0].match.names[1]: pattern of 1200 bytes is longer than the maximum of 1024 bytes",
      "8:25: faults[0].match.headers.X-Test: pattern of 1025 bytes is longer than the maximum of 1024 bytes"}},
    {"too-long-durations.yaml",
     {R"(12:38: workload.phases[0].start: duration "9000h" is longer than the maximum of 8760h (365 days))",
      R"(6:16: faults[0].when.at: duration "2562048h" is longer than the maximum of 8760h (365 days))",
      R"(6:31: faults[0].when.for: duration "8761h" is longer than the maximum of 8760h (365 days))",
      R"(7:52: faults[0].action.retryAfter: duration "596524h" is longer than the maximum of 8760h (365 days))",
      R"(9:51: faults[1].action.jitter: duration "525601m" is longer than the maximum of 8760h (365 days))",
      R"(13:18: checks.settle: duration "31536000001ms" is longer than the maximum of 8760h (365 days))"}},
    {"two-documents.yaml",
     {R"(7:1: a second YAML document: a file holds one scenario (or matrix); remove this "---" and what follows, )"
      "or put it in a file of its own"}},
    {"unbounded-workload.yaml",
     {"5:18: workload.nodes.count: must be at most 100000 nodes, got 99999999999",
      "7:23: workload.phases[0].pods: must be at most 200000 pods, got 99999999999999",
      "7:45: workload.phases[0].rate: must be at most 10000 pods per second, got 1e308",
      "7:65: workload.phases[0].concurrency: must be at most 256, got 4294967297",
      "8:38: workload.phases[1].start: must be at most 24h, got 48h",
      "10:30: workload.phases[3].concurrency: must be at most 256, got 257",
      R"(10:63: workload.phases[3].churn.rate: must be at most 10000 pods per second, got "1e308")",
      "10:80: workload.phases[3].churn.lifetime: must be at most 24h, got 25h",
      "11:35: workload.phases[4].nodeFlap.nodes: must be at most 100000 nodes, got 100001",
      "11:52: workload.phases[4].nodeFlap.downFor: must be at most 24h, got 25h",
      "7:5: workload.phases: the phases create 300000 pods together, more than the limit of 200000",
      "12:35: checks.quietAfter: must be at most 24h, got 48h", "12:18: checks.settle: must be at most 24h, got 25h"}},
    {"escapes-in-errors.yaml",
     {R"(2:7: kind: must be "Scenario", got "Sc\nenery \x1b[31m")",
      R"(4:1: inj\nfake: 1: unknown key (allowed: apiVersion, checks, componentFaults, faults, kind, metadata, seed, workload))"}},
    {"respond-codes.yaml",
     {"6:35: faults[0].action.code: must be a final HTTP status code from 200 to 599, got 103 "
      "(1xx codes are interim responses, never the answer)",
      "8:49: faults[1].action.message: a 204 response has no body, so it has no message",
      "10:48: faults[2].action.reason: a 304 response has no body, so it has no reason",
      "12:35: faults[3].action.code: must be an HTTP status code from 200 to 599, got 99"}},
};

INSTANTIATE_TEST_SUITE_P(Files, BadScenario, ::testing::ValuesIn(bad_files));

TEST(BadScenarioFiles, InvalidYamlIsReportedWithItsPosition) {
  std::string path = bad_path("invalid-yaml.yaml");
  EXPECT_EQ(load_errors([&] { load_scenario_file(path); }),
            std::vector<std::string>{path + ":7:1: invalid YAML: end of map flow not found"});
}

TEST(BadScenarioFiles, EmptyFile) {
  std::string path = bad_path("empty.yaml");
  EXPECT_EQ(load_errors([&] { load_scenario_file(path); }), std::vector<std::string>{path + ": the file is empty"});
}

TEST(BadScenarioFiles, MissingFile) {
  std::string path = bad_path("no-such-file.yaml");
  EXPECT_EQ(load_errors([&] { load_scenario_file(path); }),
            std::vector<std::string>{path + ": cannot read the file: No such file or directory"});
}

TEST(BadScenarioFiles, ErrorMessageJoinsAllErrors) {
  try {
    load_scenario_file(bad_path("negative-seed-and-wrong-kind.yaml"));
    FAIL() << "loaded";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), e.errors()[0] + "\n" + e.errors()[1]);
  }
}

}  // namespace
}  // namespace faultline::harness::schema

namespace faultline::harness::schema {
namespace {

using namespace faults;

// Odd shapes anywhere in the file end as a ScenarioError with a position, never a crash or a
// yaml-cpp exception.
TEST(BadScenarioShapes, OnlyScenarioErrorsEscape) {
  const std::string header = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\n";
  const char* bodies[] = {
      "faults: [1, 2]",
      "faults: [[]]",
      "faults: {a: b}",
      "faults: [{name: r, action: []}]",
      "faults: [{name: r, when: 5, action: {type: reset}}]",
      "faults: [{name: r, match: [a], action: {type: reset}}]",
      "faults: [{name: [r], action: {type: reset}}]",
      "faults: [{name: r, action: {type: [reset]}}]",
      "faults: [{name: r, action: {type: watch-inject, object: [1]}}]",
      "faults: [{name: r, match: {headers: [a]}, action: {type: reset}}]",
      "faults: [{name: r, match: {verbs: [[get]]}, action: {type: reset}}]",
      "? [complex, key]\n: value",
      "seed: 99999999999999999999999",
      "seed: !!binary aGVsbG8=",
      "workload: {nodes: {count: 1}, phases: [5]}",
      "workload: {nodes: 3, phases: [{name: p, pods: 1, template: [x]}]}",
      "checks: {invariants: {a: b}, expect: 7}",
      "anchor: &a {x: 1}\nother: *a",
  };
  for (const char* body : bodies) {
    try {
      load_scenario_text(header + body + "\n", "odd.yaml");
      ADD_FAILURE() << "loaded: " << body;
    } catch (const ScenarioError& e) {
      ASSERT_FALSE(e.errors().empty()) << body;
      for (const auto& error : e.errors()) EXPECT_EQ(error.rfind("odd.yaml:", 0), 0u) << error;
    } catch (const std::exception& e) {
      ADD_FAILURE() << body << ": " << e.what();
    }
  }
  for (const char* whole : {"[]", "just text", "- a\n- b", "{{{"}) {
    EXPECT_THROW(load_scenario_text(whole, "odd.yaml"), ScenarioError) << whole;
  }
}

}  // namespace
}  // namespace faultline::harness::schema
