#pragma once
// Kubernetes Status bodies (metav1.Status) for injected errors, byte for byte as kube-apiserver
// writes them: compact JSON in metav1.Status field order, Go's string escaping, trailing newline.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/request.hpp"

namespace faultline::faults {

struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::optional<int> retry_after_seconds;
};

struct Status {
  int code = 500;
  std::string reason;  // "" (StatusReasonUnknown) is left out of the JSON, as Go's omitempty does
  std::string message;
  std::optional<StatusDetails> details;
};

// A complete HTTP answer: status code, headers (Content-Type, Retry-After), body.
struct HttpResponse {
  int code = 0;
  std::vector<Header> headers;
  std::string body;
};

// The StatusReason kube-apiserver uses for `code` (429 -> "TooManyRequests", 500 ->
// "InternalError", 503 -> "ServiceUnavailable", 409 -> "Conflict", 404 -> "NotFound",
// 504 -> "Timeout", 410 -> "Gone", ...); "" when it has none.
std::string_view reason_for_code(int code);

// The standard HTTP reason phrase ("Too Many Requests"); "Unknown" when not standard.
std::string_view http_reason_phrase(int code);

// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",...,"code":N}\n
std::string status_json(const Status& status);

// Status body plus Content-Type: application/json, and Retry-After when details carry
// retryAfterSeconds (kube-apiserver sets both for 429).
HttpResponse status_response(const Status& status);

// Go's encoding/json string literal for `text`, quotes included (escapes <, >, &, U+2028/9,
// replaces invalid UTF-8 with U+FFFD).
std::string go_json_string(std::string_view text);

}  // namespace faultline::faults
