#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

std::string header(const HttpResponse& response, std::string_view name) {
  for (const auto& h : response.headers)
    if (h.name == name) return h.value;
  return "<absent>";
}

TEST(RespondAction, TooManyRequestsPlanCarriesStatusBodyAndRetryAfter) {
  Plan plan = decide_once(scenario_with_action("{type: respond, code: 429, retryAfter: 3s}"), bind_request());
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::Respond>(*plan.action));
  ASSERT_TRUE(plan.response);
  EXPECT_EQ(plan.response->code, 429);
  EXPECT_EQ(header(*plan.response, "Retry-After"), "3");
  EXPECT_EQ(plan.response->body, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                                 R"("message":"Too many requests, please try again later.","reason":"TooManyRequests",)"
                                 R"("details":{"retryAfterSeconds":3},"code":429})"
                                 "\n");
}

TEST(RespondAction, TooManyRequestsDefaultsToRetryAfterOneSecond) {
  Plan plan = decide_once(scenario_with_action("{type: respond, code: 429}"), bind_request());
  ASSERT_TRUE(plan.response);
  EXPECT_EQ(header(*plan.response, "Retry-After"), "1");
}

TEST(RespondAction, ConflictOnBindNamesThePodLikeKubeApiserver) {
  Plan plan = decide_once(scenario_with_action("{type: respond, code: 409}"), bind_request("burst-9"));
  ASSERT_TRUE(plan.response);
  EXPECT_EQ(plan.response->body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Operation cannot be fulfilled on pods/binding \"burst-9\": the object has been modified; )"
            R"(please apply your changes to the latest version and try again","reason":"Conflict",)"
            R"("details":{"name":"burst-9","kind":"pods/binding"},"code":409})"
            "\n");
  EXPECT_EQ(header(*plan.response, "Retry-After"), "<absent>");
}

TEST(RespondAction, OwnReasonAndMessageWin) {
  Plan plan =
      decide_once(scenario_with_action(R"({type: respond, code: 503, reason: Overloaded, message: "etcd is <down>"})"),
                  bind_request());
  ASSERT_TRUE(plan.response);
  EXPECT_EQ(plan.response->code, 503);
  EXPECT_EQ(plan.response->body, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                                 R"("message":"etcd is \u003cdown\u003e","reason":"Overloaded","code":503})"
                                 "\n");
}

TEST(RespondAction, InternalErrorUsesReasonFromCode) {
  Plan plan = decide_once(scenario_with_action("{type: respond, code: 500}"), bind_request());
  ASSERT_TRUE(plan.response);
  EXPECT_NE(plan.response->body.find(R"("reason":"InternalError")"), std::string::npos);
  EXPECT_NE(plan.response->body.find(R"("code":500})"), std::string::npos);
}

TEST(RespondAction, RetryAfterRoundsUpToWholeSeconds) {
  actions::Respond respond;
  respond.code = 429;
  respond.retry_after = Duration{1500};
  EXPECT_EQ(header(respond.render(bind_request().info), "Retry-After"), "2");
}

TEST(RespondAction, CodeIsRequired) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: respond}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.code: required key is missing"});
}

}  // namespace
}  // namespace faultline::faults
