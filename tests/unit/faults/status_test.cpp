#include <gtest/gtest.h>

#include "faultline/faults/status.hpp"

namespace faultline::faults {
namespace {

StatusDetails retry_after(int seconds) {
  StatusDetails details;
  details.retry_after_seconds = seconds;
  return details;
}

std::string header(const HttpResponse& response, std::string_view name) {
  for (const auto& h : response.headers)
    if (h.name == name) return h.value;
  return "<absent>";
}

TEST(StatusJson, TooManyRequestsIsByteForByteWhatKubeApiserverSends) {
  Status status{429, "TooManyRequests", "Too many requests, please try again later.", retry_after(1)};
  EXPECT_EQ(status_json(status), R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                                 R"("message":"Too many requests, please try again later.","reason":"TooManyRequests",)"
                                 R"("details":{"retryAfterSeconds":1},"code":429})"
                                 "\n");
}

TEST(StatusJson, NotFoundCarriesNameAndKindInDetails) {
  Status status{404, "NotFound", R"(pods "foo" not found)", StatusDetails{"foo", "", "pods", std::nullopt}};
  EXPECT_EQ(
      status_json(status),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"pods \"foo\" not found","reason":"NotFound","details":{"name":"foo","kind":"pods"},"code":404})"
      "\n");
}

TEST(StatusJson, DetailsFieldOrderFollowsMetav1StatusDetails) {
  Status status{409, "Conflict", "x", StatusDetails{"web", "apps", "deployments", 3}};
  EXPECT_EQ(status_json(status),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"x","reason":"Conflict",)"
            R"("details":{"name":"web","group":"apps","kind":"deployments","retryAfterSeconds":3},"code":409})"
            "\n");
}

TEST(StatusJson, OmitsEmptyReasonMessageAndDetailsLikeGoOmitempty) {
  Status status{599, "", "", std::nullopt};
  EXPECT_EQ(status_json(status), R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":599})"
                                 "\n");
}

TEST(StatusJson, SuccessCodesSaySuccess) {
  EXPECT_NE(status_json(Status{200, "", "", std::nullopt}).find(R"("status":"Success")"), std::string::npos);
}

TEST(StatusResponse, TooManyRequestsSetsRetryAfterHeaderAndJsonContentType) {
  HttpResponse response = status_response(Status{429, "TooManyRequests", "slow down", retry_after(7)});
  EXPECT_EQ(response.code, 429);
  EXPECT_EQ(header(response, "Retry-After"), "7");
  EXPECT_EQ(header(response, "Content-Type"), "application/json");
  EXPECT_EQ(header(response, "Cache-Control"), "no-cache, private");
}

TEST(StatusResponse, NoRetryAfterWithoutRetryAfterSeconds) {
  HttpResponse response = status_response(Status{500, "InternalError", "boom", std::nullopt});
  EXPECT_EQ(header(response, "Retry-After"), "<absent>");
}

TEST(ReasonForCode, UsesKubernetesStatusReasons) {
  EXPECT_EQ(reason_for_code(429), "TooManyRequests");
  EXPECT_EQ(reason_for_code(500), "InternalError");
  EXPECT_EQ(reason_for_code(503), "ServiceUnavailable");
  EXPECT_EQ(reason_for_code(409), "Conflict");
  EXPECT_EQ(reason_for_code(404), "NotFound");
  EXPECT_EQ(reason_for_code(504), "Timeout");
  EXPECT_EQ(reason_for_code(410), "Gone");
  EXPECT_EQ(reason_for_code(422), "Invalid");
  EXPECT_EQ(reason_for_code(403), "Forbidden");
  EXPECT_EQ(reason_for_code(418), "");
}

TEST(GoJsonString, EscapesLikeEncodingJson) {
  EXPECT_EQ(go_json_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(go_json_string("<a&b>"), R"("\u003ca\u0026b\u003e")");
  EXPECT_EQ(go_json_string("line\nfeed\ttab\rcr"), R"("line\nfeed\ttab\rcr")");
  EXPECT_EQ(go_json_string("\b\f"), R"("\b\f")");
  EXPECT_EQ(go_json_string(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(go_json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  EXPECT_EQ(go_json_string("\xE2\x80\xA8\xE2\x80\xA9"), R"("\u2028\u2029")");
}

TEST(GoJsonString, ReplacesInvalidUtf8WithReplacementCharacter) {
  EXPECT_EQ(go_json_string("a\xFF"
                           "b"),
            R"("a\ufffdb")");
  EXPECT_EQ(go_json_string("\xC0\xAF"), R"("\ufffd\ufffd")");             // overlong '/'
  EXPECT_EQ(go_json_string("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");   // surrogate half
  EXPECT_EQ(go_json_string("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");  // valid 4-byte
}

}  // namespace
}  // namespace faultline::faults
