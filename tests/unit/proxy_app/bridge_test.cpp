#include "faultline/app/bridge.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "faultline/faults/scenario.hpp"
#include "prometheus_text.hpp"

namespace faultline::app {
namespace {

using ::testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

// Every third bind is reset; secrets are never asked for in these tests.
constexpr const char* kScenario = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: unit}
seed: 1
faults:
  - {name: every-third-bind, match: {verbs: [create], resources: [pods/binding]}, when: {every: 3}, action: {type: reset}}
  - {name: secrets, match: {resources: [secrets]}, action: {type: reset}}
)";

faults::Request bind_request(int i) {
  return faults::make_request("POST", "/api/v1/namespaces/faultline/pods/p-" + std::to_string(i) + "/binding");
}

class RuleMatchedMetric : public ::testing::Test {
 protected:
  void SetUp() override {
    count_rule_matches(engine_, metrics_);
    engine_.load(faults::load_scenario_text(kScenario, "unit.yaml"));
    engine_.arm(clock_.now());
  }

  // Decides `count` binds (and a pod GET no rule matches after each); returns how many fired.
  int decide_binds(int count) {
    int fired = 0;
    for (int i = 0; i < count; ++i) {
      fired += engine_.decide(bind_request(i), clock_.now()).fires() ? 1 : 0;
      EXPECT_FALSE(engine_.decide(faults::make_request("GET", "/api/v1/pods"), clock_.now()).fires());
    }
    return fired;
  }

  double matched(const std::string& rule) {
    return admin::test::parse_exposition(metrics_.render())
        .value("faultline_rule_matched_total", Labels{{"rule", rule}});
  }

  faults::ManualClock clock_;
  faults::Engine engine_;
  admin::ProxyMetrics metrics_;
};

TEST_F(RuleMatchedMetric, CountsEveryMatchWhetherOrNotTheRuleFired) {
  EXPECT_EQ(decide_binds(7), 2) << "every: 3 fires on the 3rd and 6th match";
  EXPECT_EQ(matched("every-third-bind"), 7);
  EXPECT_EQ(engine_.counters()[0].matched, 7u) << "the metric and GET /v1/rules agree";
  EXPECT_FALSE(
      admin::test::parse_exposition(metrics_.render()).has("faultline_rule_matched_total", Labels{{"rule", "secrets"}}))
      << "a rule that matched nothing has no series yet";
}

TEST_F(RuleMatchedMetric, NothingMatchesWhileDisarmed) {
  engine_.disarm();
  decide_binds(4);
  EXPECT_FALSE(admin::test::parse_exposition(metrics_.render())
                   .has("faultline_rule_matched_total", Labels{{"rule", "every-third-bind"}}));
}

TEST_F(RuleMatchedMetric, KeepsCountingWhenAScenarioReloadRestartsTheRuleCounters) {
  decide_binds(4);
  engine_.load(faults::load_scenario_text(kScenario, "unit.yaml"));
  engine_.arm(clock_.now());
  decide_binds(2);
  EXPECT_EQ(engine_.counters()[0].matched, 2u);
  EXPECT_EQ(matched("every-third-bind"), 6) << "a Prometheus counter never goes down";
}

audit::Record record() {
  audit::Record r;
  r.method = "GET";
  r.path = "/api/v1/pods";
  r.status = 200;
  return r;
}

// An AdminBridge whose audit log writes to `path` and flushes on every record.
struct BridgeWithAuditFile {
  explicit BridgeWithAuditFile(const std::string& path) : audit({.path = path, .flush_bytes = 1}) {}
  faults::ManualClock clock;
  faults::Engine engine;
  admin::AuditLog audit;
  admin::ProxyMetrics metrics;
  AdminBridge bridge{engine, clock, audit, metrics};
};

TEST(AdminBridgeHealth, HealthyWhileTheAuditFileIsWritten) {
  BridgeWithAuditFile b("/dev/null");
  b.audit.append(record());
  EXPECT_EQ(b.bridge.health_problem(), "");
}

TEST(AdminBridgeHealth, AnAuditFileThatCannotBeWrittenIsAHealthProblemNamingIt) {
  BridgeWithAuditFile b("/dev/full");
  EXPECT_EQ(b.bridge.health_problem(), "") << "nothing was written yet";
  b.audit.append(record());
  EXPECT_THAT(b.bridge.health_problem(), HasSubstr("audit log /dev/full: writing failed: No space left on device"));
}

}  // namespace
}  // namespace faultline::app
