// Audit records: the proxy's encoder (to_json_line) -> the harness's decoder (decode_audit_lines),
// and the proxy's own decoder (audit_record_from_json). A record built from the input must come
// back as one JSON line that both decode, with every field the decoders read equal to what was
// encoded. Strings that are not UTF-8 must still give a valid JSON line; those fields come back as
// (some) valid UTF-8 and every other field unchanged.
//
// Input: the fields below in this order, separated by the byte 0x1F (unit separator); numbers in
// decimal (anything else reads as 0), `watch` true when "1" or "true", an empty `rule`, `action`
// or `upstreamStatus` field is null.

#include <boost/json/parse.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/admin/audit_record.hpp"
#include "faultline/harness/yunikorn_rest.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;
using fuzz::valid_utf8;

enum Field {
  kSeq, kTs, kConn, kClient, kUserAgent, kMethod, kPath, kVerb, kResource, kSubresource, kNamespace,
  kName, kWatch, kRule, kAction, kStatus, kUpstreamStatus, kBytesIn, kBytesOut, kDurationUs, kFieldCount
};

template <typename T>
T number(std::string_view text) {
  T value{};
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// Microseconds since the epoch, folded into what a system_clock time point can hold: its duration
// counts nanoseconds in 64 bits (about 1677-09-21 .. 2262-04-11), a narrower range than the
// format's 0001 .. 9999.
std::chrono::system_clock::time_point timestamp(std::string_view text) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  using clock = std::chrono::system_clock;
  const std::int64_t lo = duration_cast<microseconds>(clock::time_point::min().time_since_epoch()).count() + 1;
  const std::int64_t hi = duration_cast<microseconds>(clock::time_point::max().time_since_epoch()).count() - 1;
  auto us = number<std::int64_t>(text);
  if (us < lo || us > hi) {
    us = lo + static_cast<std::int64_t>(static_cast<std::uint64_t>(us) % static_cast<std::uint64_t>(hi - lo + 1));
  }
  return std::chrono::system_clock::time_point(std::chrono::microseconds(us));
}

// An HTTP status as the proxy records it: 0..999 (what audit_record_from_json accepts).
int status(std::string_view text) {
  const auto raw = number<std::int64_t>(text);
  return static_cast<int>((raw % 1000 + 1000) % 1000);
}

// Compares a decoded string with the encoded one: equal when the original was valid UTF-8,
// otherwise any valid UTF-8 (invalid bytes may be replaced or escaped).
void check_string(std::string_view name, const std::string& encoded, const std::string& decoded) {
  if (valid_utf8(encoded)) check(decoded == encoded, std::string(name) + " changed in the round trip");
  else check(valid_utf8(decoded), std::string(name) + " decoded to invalid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::array<std::string_view, kFieldCount> f{};
  for (std::size_t i = 0; i < kFieldCount; ++i) {
    const auto sep = input.find('\x1f');
    f[i] = input.substr(0, sep);
    if (sep == std::string_view::npos) break;
    input.remove_prefix(sep + 1);
  }

  admin::AuditRecord r;
  r.seq = number<std::uint64_t>(f[kSeq]);
  r.ts = timestamp(f[kTs]);
  r.conn = number<std::uint64_t>(f[kConn]);
  r.client = f[kClient];
  r.userAgent = f[kUserAgent];
  r.method = f[kMethod];
  r.path = f[kPath];
  r.verb = f[kVerb];
  r.resource = f[kResource];
  r.subresource = f[kSubresource];
  r.namespace_ = f[kNamespace];
  r.name = f[kName];
  r.watch = f[kWatch] == "1" || f[kWatch] == "true";
  if (!f[kRule].empty()) r.rule = std::string(f[kRule]);
  if (!f[kAction].empty()) r.action = std::string(f[kAction]);
  r.status = status(f[kStatus]);
  if (!f[kUpstreamStatus].empty()) r.upstreamStatus = status(f[kUpstreamStatus]);
  r.bytesIn = number<std::uint64_t>(f[kBytesIn]);
  r.bytesOut = number<std::uint64_t>(f[kBytesOut]);
  r.durationUs = number<std::uint64_t>(f[kDurationUs]);

  const std::string line = admin::to_json_line(r);
  check(!line.empty() && line.back() == '\n', "an audit line does not end in a newline");
  check(line.find('\n') == line.size() - 1, "an audit line has a newline inside it");
  check(valid_utf8(line), "an audit line is not valid UTF-8");

  // The harness's decoder (what `faultline-harness` reads from GET /v1/audit).
  std::vector<harness::AuditRecord> decoded;
  try {
    decoded = harness::decode_audit_lines(line);
  } catch (const harness::DecodeError& e) {
    fuzz::fail(std::string("the harness cannot decode an audit line: ") + e.what() + ": " + line);
  }
  check(decoded.size() == 1, "one record did not decode to one record");
  const harness::AuditRecord& h = decoded.front();
  check(h.seq == r.seq, "seq changed");
  check(h.ts == admin::format_rfc3339_micros(r.ts), "ts changed");
  check(h.status == r.status, "status changed");
  check(h.upstreamStatus == r.upstreamStatus.value_or(0), "upstreamStatus changed");
  check_string("userAgent", r.userAgent, h.userAgent);
  check_string("method", r.method, h.method);
  check_string("path", r.path, h.path);
  check_string("verb", r.verb, h.verb);
  check_string("resource", r.resource, h.resource);
  check_string("subresource", r.subresource, h.subresource);
  check_string("namespace", r.namespace_, h.ns);
  check_string("name", r.name, h.name);
  check_string("rule", r.rule.value_or(""), h.rule);
  check_string("action", r.action.value_or(""), h.action);

  // The proxy's own decoder reads every field, timestamps to the microsecond.
  admin::AuditRecord back;
  try {
    back = admin::audit_record_from_json(boost::json::parse(line));
  } catch (const std::exception& e) {
    fuzz::fail(std::string("audit_record_from_json rejects an audit line: ") + e.what() + ": " + line);
  }
  check(back.ts == r.ts, "ts changed in the proxy's decoder");
  check(back.seq == r.seq && back.conn == r.conn && back.watch == r.watch && back.status == r.status &&
            back.upstreamStatus == r.upstreamStatus && back.bytesIn == r.bytesIn && back.bytesOut == r.bytesOut &&
            back.durationUs == r.durationUs && back.rule.has_value() == r.rule.has_value() &&
            back.action.has_value() == r.action.has_value(),
        "a number, flag or null changed in the proxy's decoder");
  check_string("client", r.client, back.client);
  check_string("userAgent", r.userAgent, back.userAgent);
  check_string("path", r.path, back.path);
  check_string("name", r.name, back.name);
  return 0;
}
