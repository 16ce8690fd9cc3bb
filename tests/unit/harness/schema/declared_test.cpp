// checks.declared and objects steps as the loader reads them (tests/data/scenarios/good/declared.yaml;
// the bad ones are in scenario_bad_test.cpp), and the field path syntax.
#include <gtest/gtest.h>

#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness::schema {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const Scenario> load_declared() {
  return load_scenario_file(std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/good/declared.yaml");
}

using Step = std::variant<std::string, std::size_t>;

std::vector<Step> steps_of(std::string_view text) {
  std::string problem;
  auto path = parse_field_path(text, &problem);
  EXPECT_TRUE(path) << problem;
  return path ? path->steps : std::vector<Step>{};
}

std::string problem_of(std::string_view text) {
  std::string problem;
  EXPECT_FALSE(parse_field_path(text, &problem)) << text;
  return problem;
}

TEST(FieldPath, KeysIndexesAndQuotedKeys) {
  EXPECT_EQ(steps_of("spec.nodeName"), (std::vector<Step>{"spec", "nodeName"}));
  EXPECT_EQ(steps_of("metadata.ownerReferences[0].uid"),
            (std::vector<Step>{"metadata", "ownerReferences", std::size_t{0}, "uid"}));
  EXPECT_EQ(steps_of(R"(metadata.labels["app.kubernetes.io/name"])"),
            (std::vector<Step>{"metadata", "labels", "app.kubernetes.io/name"}));
  EXPECT_EQ(steps_of("a[1][2]"), (std::vector<Step>{"a", std::size_t{1}, std::size_t{2}}));
}

TEST(FieldPath, BadSyntaxSaysWhere) {
  EXPECT_NE(problem_of("").find("empty"), std::string::npos);
  EXPECT_NE(problem_of(".a").find("starts with a dot"), std::string::npos);
  EXPECT_NE(problem_of("a.").find("ends with a dot"), std::string::npos);
  EXPECT_NE(problem_of("a..b").find("two dots"), std::string::npos);
  EXPECT_NE(problem_of("[0]").find("starts with ["), std::string::npos);
  EXPECT_NE(problem_of("a[x]").find("list index or a quoted key"), std::string::npos);
  EXPECT_NE(problem_of(R"(a["b)").find("not closed"), std::string::npos);
  EXPECT_NE(problem_of("a[0]b").find("expected . or ["), std::string::npos);
  EXPECT_NE(problem_of("a b").find("expected . or [ at character 2"), std::string::npos);
  EXPECT_NE(problem_of("a.b c").find("expected . or [ at character 4"), std::string::npos);
  EXPECT_NE(problem_of("a.%").find("unexpected character '%' at character 3"), std::string::npos);
  EXPECT_NE(problem_of("a.[0]").find("[ right after a dot"), std::string::npos);
  EXPECT_NE(problem_of(std::string(300, 'a')).find("longer than 256"), std::string::npos);
}

TEST(DeclaredChecks, EveryKindAsWritten) {
  auto s = load_declared();
  const auto& d = s->checks.declared;
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].name, "one-daemon-pod-per-node");
  EXPECT_EQ(d[0].watch.api_version, "v1");
  EXPECT_EQ(d[0].watch.resource, "pods");
  EXPECT_EQ(d[0].watch.namespace_, "");
  EXPECT_EQ(d[0].watch.label_selector, "app=ds");
  EXPECT_EQ(d[0].watch.audit_resource(), "pods");
  const auto& at_most = std::get<AtMostPerGroup>(d[0].kind);
  ASSERT_EQ(at_most.group_by.size(), 2u);
  EXPECT_EQ(at_most.group_by[1].text, "metadata.ownerReferences[0].uid");
  EXPECT_EQ(at_most.max, 1u);

  EXPECT_EQ(d[1].watch.namespace_, "all");
  EXPECT_EQ(d[1].watch.audit_resource(), "daemonsets.apps");
  const auto& ready = std::get<Reaches>(d[1].kind);
  EXPECT_EQ(ready.field.text, "status.numberReady");
  EXPECT_FALSE(ready.value);
  ASSERT_TRUE(ready.equals_field);
  EXPECT_EQ(ready.equals_field->text, "status.desiredNumberScheduled");
  EXPECT_EQ(ready.within, 60s);
  EXPECT_EQ(ready.after, Reaches::After::last_fault);

  const auto& three = std::get<Reaches>(d[2].kind);
  EXPECT_EQ(three.value, "3");
  EXPECT_EQ(three.after, Reaches::After::workload);

  const auto& no_delete = std::get<NoWriteBy>(d[3].kind);
  EXPECT_EQ(no_delete.user_agents, std::vector<std::string>{"kube-controller-manager/*"});
  EXPECT_EQ(no_delete.verbs, std::vector<std::string>{"delete"});
  // Verbs left out: every write verb.
  EXPECT_EQ(std::get<NoWriteBy>(d[4].kind).verbs.size(), std::size(write_verbs));
  // expect may name a declared check; an empty invariants list leaves the declared ones.
  EXPECT_EQ(s->checks.expect, std::vector<std::string>{"controller-does-not-delete"});
  EXPECT_TRUE(s->checks.invariants_to_check().empty());
}

std::optional<std::string> reaches_value(const std::string& value) {
  auto s = load_scenario_text(
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: t}\nchecks:\n  declared:\n"
      "    - {name: r, watch: {apiVersion: v1, resource: pods}, "
      "reaches: {field: a, value: " +
          value + ", within: 1s}}\n",
      "t.yaml");
  return std::get<Reaches>(s->checks.declared.at(0).kind).value;
}

// The value is compared with the field as text: typed as YAML types it, then written as JSON would.
TEST(DeclaredChecks, ReachesValueIsTheScalarAsJsonWritesIt) {
  EXPECT_EQ(reaches_value("3"), "3");
  EXPECT_EQ(reaches_value("03"), "3");
  EXPECT_EQ(reaches_value(R"("03")"), "03");
  EXPECT_EQ(reaches_value("True"), "true");
  EXPECT_EQ(reaches_value("Running"), "Running");
  EXPECT_EQ(reaches_value("1.5"), "1.5");
  EXPECT_THROW(reaches_value("null"), faults::ScenarioError);
}

TEST(ObjectsStep, TemplateCountRateAndNoPods) {
  auto s = load_declared();
  ASSERT_TRUE(s->workload);
  const auto& phases = s->workload->phases;
  ASSERT_EQ(phases.size(), 2u);
  ASSERT_TRUE(phases[0].objects);
  EXPECT_EQ(phases[0].pods, 0u);
  EXPECT_EQ(phases[0].rate, 2.0);
  EXPECT_EQ(phases[0].concurrency, 1u);
  EXPECT_EQ(phases[0].objects->count, 2u);
  EXPECT_EQ(phases[0].objects->resource, "daemonsets");
  EXPECT_EQ(phases[0].objects->api_version, "apps/v1");
  EXPECT_NE(phases[0].objects->template_json.find(R"("name":"ds-{i}")"), std::string::npos);
  EXPECT_NE(phases[0].objects->template_json.find(R"("kind":"DaemonSet")"), std::string::npos);
  ASSERT_TRUE(phases[1].objects);
  EXPECT_EQ(phases[1].objects->api_version, "v1");
  EXPECT_NE(phases[1].objects->template_json.find(R"("data":{"a":"1"})"), std::string::npos);
}

}  // namespace
}  // namespace faultline::harness::schema
