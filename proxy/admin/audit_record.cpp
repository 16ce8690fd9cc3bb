#include "faultline/admin/audit_record.hpp"

#include "utf8.hpp"

#include <boost/json/serialize.hpp>
#include <boost/url/ignore_case.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>

namespace faultline::admin {
namespace json = boost::json;

namespace {

// Query parameters whose value is a credential (client-go, kubectl proxy, websocket clients).
constexpr std::array<std::string_view, 2> kSecretParams = {"token", "access_token"};

// Clients choose most of these bytes (User-Agent, path, names decoded from the path); a JSON line
// must be UTF-8 whatever they sent.
json::string text(std::string_view s) { return json::string(to_valid_utf8(s)); }

json::value optional_string(const std::optional<std::string>& s) {
  return s ? json::value(text(*s)) : json::value(nullptr);
}

const json::value& field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) throw AuditFormatError("audit record: missing key \"" + std::string(key) + "\"");
  return *v;
}

[[noreturn]] void wrong_type(std::string_view key, std::string_view want) {
  throw AuditFormatError("audit record: key \"" + std::string(key) + "\" is not " +
                         std::string(want));
}

std::string get_string(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (!v.is_string()) wrong_type(key, "a string");
  return std::string(v.get_string());
}

std::optional<std::string> get_optional_string(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) wrong_type(key, "a string or null");
  return std::string(v.get_string());
}

std::uint64_t get_uint(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  wrong_type(key, "a non-negative integer");
}

int get_status(const json::object& o, std::string_view key) {
  std::uint64_t v = get_uint(o, key);
  if (v > 999) wrong_type(key, "an HTTP status");
  return static_cast<int>(v);
}

}  // namespace

json::object to_json(const AuditRecord& r) {
  json::object o;
  o.reserve(21);
  o["seq"] = r.seq;
  o["ts"] = format_rfc3339_micros(r.ts);
  o["conn"] = r.conn;
  o["client"] = text(r.client);
  o["userAgent"] = text(r.userAgent);
  o["method"] = text(r.method);
  o["path"] = text(r.path);
  o["verb"] = text(r.verb);
  o["resource"] = text(r.resource);
  o["subresource"] = text(r.subresource);
  o["namespace"] = text(r.namespace_);
  o["name"] = text(r.name);
  o["watch"] = r.watch;
  o["rule"] = optional_string(r.rule);
  o["action"] = optional_string(r.action);
  o["status"] = r.status;
  o["upstreamStatus"] = r.upstreamStatus ? json::value(*r.upstreamStatus) : json::value(nullptr);
  o["bytesIn"] = r.bytesIn;
  o["bytesOut"] = r.bytesOut;
  o["durationUs"] = r.durationUs;
  o["proto"] = text(r.proto);
  return o;
}

std::string to_json_line(const AuditRecord& record) {
  std::string line = json::serialize(to_json(record));
  line.push_back('\n');
  return line;
}

AuditRecord audit_record_from_json(const json::value& value) {
  if (!value.is_object()) throw AuditFormatError("audit record: not a JSON object");
  const json::object& o = value.get_object();
  AuditRecord r;
  r.seq = get_uint(o, "seq");
  std::string ts = get_string(o, "ts");
  auto parsed = parse_rfc3339_micros(ts);
  if (!parsed) throw AuditFormatError("audit record: ts \"" + ts + "\" is not RFC 3339 UTC");
  r.ts = *parsed;
  r.conn = get_uint(o, "conn");
  r.client = get_string(o, "client");
  r.userAgent = get_string(o, "userAgent");
  r.method = get_string(o, "method");
  r.path = get_string(o, "path");
  r.verb = get_string(o, "verb");
  r.resource = get_string(o, "resource");
  r.subresource = get_string(o, "subresource");
  r.namespace_ = get_string(o, "namespace");
  r.name = get_string(o, "name");
  const json::value& watch = field(o, "watch");
  if (!watch.is_bool()) wrong_type("watch", "a boolean");
  r.watch = watch.get_bool();
  r.rule = get_optional_string(o, "rule");
  r.action = get_optional_string(o, "action");
  r.status = get_status(o, "status");
  if (!field(o, "upstreamStatus").is_null()) r.upstreamStatus = get_status(o, "upstreamStatus");
  r.bytesIn = get_uint(o, "bytesIn");
  r.bytesOut = get_uint(o, "bytesOut");
  r.durationUs = get_uint(o, "durationUs");
  if (o.contains("proto")) r.proto = get_string(o, "proto");  // absent in audit files before HTTP/2
  return r;
}

std::string format_rfc3339_micros(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto us = floor<microseconds>(t.time_since_epoch());
  const auto secs = floor<seconds>(us);
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];  // ample for any int year
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>((us - secs).count()));
  return buf;
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339_micros(std::string_view s) {
  // Fixed layout: YYYY-MM-DDTHH:MM:SS.ffffffZ (27 characters).
  if (s.size() != 27 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != '.' || s[26] != 'Z') {
    return std::nullopt;
  }
  auto number = [&](std::size_t pos, std::size_t len, int& out) {
    auto [end, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
    return ec == std::errc() && end == s.data() + pos + len;
  };
  int year, month, day, hour, minute, second, micros;
  if (!number(0, 4, year) || !number(5, 2, month) || !number(8, 2, day) || !number(11, 2, hour) ||
      !number(14, 2, minute) || !number(17, 2, second) || !number(20, 6, micros)) {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day date{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                            std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;
  return sys_days{date} + hours{hour} + minutes{minute} + seconds{second} + microseconds{micros};
}

std::string redact_path(std::string_view target) {
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) {
    // Not origin-form: keep what precedes any query; a secret may hide in what we cannot parse.
    return std::string(target.substr(0, target.find('?')));
  }
  boost::urls::url url(*parsed);
  if (!url.has_query()) return std::string(target);
  for (std::string_view key : kSecretParams) url.params().erase(key, boost::urls::ignore_case);
  if (url.params().empty()) url.remove_query();
  return std::string(url.buffer());
}

}  // namespace faultline::admin
