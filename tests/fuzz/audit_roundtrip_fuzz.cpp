// Audit records: the encoder faultline-proxy writes with (to_json_line) -> the decoder
// faultline-harness reads with (decode_lines). A record built from the input must come back as one
// JSON line that decodes, with every field equal to what was encoded. Strings that are not UTF-8
// must still give a valid JSON line; those fields come back as (some) valid UTF-8 and every other
// field unchanged.
//
// Input: the fields below in this order, separated by the byte 0x1F (unit separator); numbers in
// decimal (anything else reads as 0), `watch` true when "1" or "true", an empty `rule`, `action`
// or `upstreamStatus` field is null.

#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "faultline/audit/record.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;
using fuzz::valid_utf8;

enum Field {
  kSeq,
  kTs,
  kConn,
  kClient,
  kUserAgent,
  kProto,
  kMethod,
  kPath,
  kVerb,
  kResource,
  kSubresource,
  kNamespace,
  kName,
  kWatch,
  kRule,
  kAction,
  kStatus,
  kUpstreamStatus,
  kBytesIn,
  kBytesOut,
  kDurationUs,
  kFieldCount
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
  // One day inside the clock's ends: RFC 3339 parsing works from a day boundary, which must itself
  // be representable in nanoseconds (years 1677 and 2262 are not audit times).
  constexpr std::int64_t kDayUs = 86'400'000'000;
  const std::int64_t lo = duration_cast<microseconds>(clock::time_point::min().time_since_epoch()).count() + kDayUs;
  const std::int64_t hi = duration_cast<microseconds>(clock::time_point::max().time_since_epoch()).count() - kDayUs;
  auto us = number<std::int64_t>(text);
  if (us < lo || us > hi) {
    us = lo + static_cast<std::int64_t>(static_cast<std::uint64_t>(us) % static_cast<std::uint64_t>(hi - lo + 1));
  }
  return std::chrono::system_clock::time_point(std::chrono::microseconds(us));
}

// An HTTP status as the proxy records it: 0..999 (what the decoder accepts).
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

  audit::Record r;
  r.seq = number<std::uint64_t>(f[kSeq]);
  r.ts = timestamp(f[kTs]);
  r.conn = number<std::uint64_t>(f[kConn]);
  r.client = f[kClient];
  r.user_agent = f[kUserAgent];
  r.proto = f[kProto];
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
  if (!f[kUpstreamStatus].empty()) r.upstream_status = status(f[kUpstreamStatus]);
  r.bytes_in = number<std::uint64_t>(f[kBytesIn]);
  r.bytes_out = number<std::uint64_t>(f[kBytesOut]);
  r.duration = std::chrono::microseconds(number<std::int64_t>(f[kDurationUs]) & INT64_MAX);

  const std::string line = audit::to_json_line(r);
  check(!line.empty() && line.back() == '\n', "an audit line does not end in a newline");
  check(line.find('\n') == line.size() - 1, "an audit line has a newline inside it");
  check(valid_utf8(line), "an audit line is not valid UTF-8");

  // What faultline-harness reads GET /v1/audit with.
  const audit::DecodedLines decoded = audit::decode_lines(line);
  if (decoded.malformed > 0) fuzz::fail("an encoded audit line does not decode: " + decoded.first_error + ": " + line);
  check(decoded.records.size() == 1, "one record did not decode to one record");
  const audit::Record& back = decoded.records.front();
  check(back.ts == std::chrono::floor<std::chrono::microseconds>(r.ts), "ts changed");
  check(back.seq == r.seq && back.conn == r.conn && back.watch == r.watch && back.status == r.status &&
            back.upstream_status == r.upstream_status && back.bytes_in == r.bytes_in && back.bytes_out == r.bytes_out &&
            back.duration == r.duration && back.rule.has_value() == r.rule.has_value() &&
            back.action.has_value() == r.action.has_value(),
        "a number, flag or null changed");
  check_string("client", r.client, back.client);
  check_string("userAgent", r.user_agent, back.user_agent);
  check_string("proto", r.proto, back.proto);
  check_string("method", r.method, back.method);
  check_string("path", r.path, back.path);
  check_string("verb", r.verb, back.verb);
  check_string("resource", r.resource, back.resource);
  check_string("subresource", r.subresource, back.subresource);
  check_string("namespace", r.namespace_, back.namespace_);
  check_string("name", r.name, back.name);
  check_string("rule", r.rule.value_or(""), back.rule.value_or(""));
  check_string("action", r.action.value_or(""), back.action.value_or(""));
  return 0;
}
