#pragma once
// One audit record per request that crossed the proxy (README "Audit record").
// The record deliberately has no header fields: an Authorization header can never reach it, and
// the path is stored through redact_path() so query tokens never reach it either.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace faultline::admin {

struct AuditRecord {
  std::uint64_t seq = 0;                        // assigned by AuditLog::append
  std::chrono::system_clock::time_point ts{};   // request start; AuditLog stamps "now" when unset
  std::uint64_t conn = 0;                       // client connection id (proxy-assigned)
  std::string client;                           // client address "ip:port"
  std::string userAgent;
  std::string method;                           // HTTP method as sent: GET, POST, ...
  std::string path;                             // request target, redacted (see redact_path)
  std::string verb;                             // Kubernetes verb: get, list, watch, create, ...
  std::string resource;                         // e.g. "pods", "deployments.apps"; "" if none
  std::string subresource;                      // e.g. "binding"; "" if none
  std::string namespace_;                       // JSON key "namespace"
  std::string name;
  bool watch = false;
  std::optional<std::string> rule;              // fault rule that fired; null when none
  std::optional<std::string> action;            // its action type; null when none
  int status = 0;                               // status the client saw; 0 = connection cut
  std::optional<int> upstreamStatus;            // null when the request never got an answer
  std::uint64_t bytesIn = 0;                    // request body bytes read from the client
  std::uint64_t bytesOut = 0;                   // response body bytes written to the client
  std::uint64_t durationUs = 0;
  std::string proto = "h1";                    // "h1" or "h2" (the client's protocol)

  friend bool operator==(const AuditRecord&, const AuditRecord&) = default;
};

// Thrown by audit_record_from_json for a line that is not a well-formed audit record.
class AuditFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The record as a JSON object with exactly the keys of the README's "Audit record", in that order.
boost::json::object to_json(const AuditRecord& record);
// One line: serialized object plus '\n'.
std::string to_json_line(const AuditRecord& record);
// Inverse of to_json; throws AuditFormatError naming the offending key.
AuditRecord audit_record_from_json(const boost::json::value& value);

// "2026-11-30T14:48:19.123456Z" (UTC, always six fractional digits).
std::string format_rfc3339_micros(std::chrono::system_clock::time_point t);
// Inverse of format_rfc3339_micros (accepts 'Z' only); nullopt when malformed.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339_micros(std::string_view text);

// The request target with every query parameter named token or access_token (any case, after
// percent-decoding) removed. A target that does not parse as origin-form keeps only its path
// part: when in doubt the query is dropped rather than risk writing a secret.
std::string redact_path(std::string_view target);

}  // namespace faultline::admin
