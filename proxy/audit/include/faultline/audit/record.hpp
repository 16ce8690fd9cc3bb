#pragma once
// The audit record: one per request that crossed (or was stopped by) the proxy, and its JSON line
// (docs/proxy.md, "Audit record"). The relay fills it, the proxy's audit log encodes it, and
// faultline-harness decodes the lines with the same codec.
//
// The record deliberately has no header fields: an Authorization header can never reach it, and
// the relay stores the path through redact_path() so query tokens never reach it either.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::audit {

// What a `hold` rule did with the request (the JSON key "held", present only then).
struct Held {
  std::string outcome;                  // forwarded, reset, answered, gave-up, not-held
  std::uint64_t batch = 0;              // requests released together (0: gave-up, not-held)
  std::chrono::milliseconds waited{0};  // JSON key "waitedMs": from held to released (or given up)

  friend bool operator==(const Held&, const Held&) = default;
};

// What a stale-read rule did to a LIST: the resourceVersion the client asked for ("" for none) and
// the one the answer was read at ("" when the rule had none recorded: the request went as it was);
// `expired`: kube-apiserver answered 410, the resourceVersion is compacted.
struct StaleRead {
  std::string requested;
  std::string served;
  bool expired = false;
  friend bool operator==(const StaleRead&, const StaleRead&) = default;
};

struct Record {
  std::uint64_t seq = 0;                       // assigned by the audit log, from 1 without gaps
  std::chrono::system_clock::time_point ts{};  // request start; the audit log stamps "now" when unset
  std::uint64_t conn = 0;                      // client connection id (proxy-assigned)
  std::string client;                          // client address "ip:port"
  std::string user_agent;                      // JSON key "userAgent"
  std::string proto;                           // client side protocol: "h1" (HTTP/1.1), "h2"
  std::string method;                          // HTTP method as sent: GET, POST, ...
  std::string path;                            // request target, redacted (see redact_path)
  std::string verb;                            // Kubernetes verb: get, list, watch, create, ...
  std::string resource;                        // e.g. "pods", "deployments.apps"; "" if none
  std::string subresource;                     // e.g. "binding"; "" if none
  std::string namespace_;                      // JSON key "namespace"
  std::string name;
  bool watch = false;
  std::optional<std::string> rule;        // fault rule that fired; null when none
  std::optional<std::string> action;      // its action type; null when none
  int status = 0;                         // status the client saw; 0 = connection cut
  std::optional<int> upstream_status;     // null when the request never got an answer
  std::uint64_t bytes_in = 0;             // request body bytes read from the client
  std::uint64_t bytes_out = 0;            // response body bytes written to the client
  std::chrono::microseconds duration{0};  // JSON key "durationUs"
  std::optional<Held> held;               // a hold rule fired; the key is absent otherwise
  // Watch events a watch-delay or watch-coalesce rule held back and relayed later (JSON key
  // "eventsDelayed"), and those watch-coalesce left out ("eventsWithheld"); both keys are absent on other records.
  std::optional<std::uint64_t> events_delayed;
  std::optional<std::uint64_t> events_withheld;
  std::optional<StaleRead> stale_read;  // JSON key "staleRead", present only when set

  friend bool operator==(const Record&, const Record&) = default;
};

// Thrown by from_json for a value that is not a well-formed audit record.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The record as a JSON object with exactly the keys of "Audit record" in docs/proxy.md, in that order.
boost::json::object to_json(const Record& record);
// One line: serialized object plus '\n'.
std::string to_json_line(const Record& record);
// The same line with `seq` and `ts` in place of the record's own (the audit log assigns them
// without a copy of the record).
std::string to_json_line(const Record& record, std::uint64_t seq, std::chrono::system_clock::time_point ts);
// Inverse of to_json; throws FormatError naming the offending key.
Record from_json(const boost::json::value& value);

// JSON lines as GET /v1/audit serves them and --audit-log holds them. Blank lines are skipped. A
// line that is not a well-formed record is skipped too, and counted: one bad line does not lose
// the others.
struct DecodedLines {
  std::vector<Record> records;
  std::size_t malformed = 0;
  std::string first_error;  // "line N: ..." of the first malformed line; "" when none
};
DecodedLines decode_lines(std::string_view text);

// The request target with every query parameter named token or access_token (any case, after
// percent-decoding) removed. A target that does not parse as origin-form keeps only its path
// part: when in doubt the query is dropped rather than risk writing a secret.
std::string redact_path(std::string_view target);

}  // namespace faultline::audit
