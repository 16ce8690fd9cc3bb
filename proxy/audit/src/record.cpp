#include "faultline/audit/record.hpp"

#include "faultline/audit/utf8.hpp"
#include "faultline/net/rfc3339.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/ignore_case.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <utility>

namespace faultline::audit {
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
  if (!v) throw FormatError("audit record: missing key \"" + std::string(key) + "\"");
  return *v;
}

[[noreturn]] void wrong_type(std::string_view key, std::string_view want) {
  throw FormatError("audit record: key \"" + std::string(key) + "\" is not " + std::string(want));
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

json::object to_json(const Record& r) {
  json::object o;
  o.reserve(23);
  o["seq"] = r.seq;
  o["ts"] = net::format_rfc3339(r.ts, 6);
  o["conn"] = r.conn;
  o["client"] = text(r.client);
  o["userAgent"] = text(r.user_agent);
  o["proto"] = text(r.proto);
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
  o["upstreamStatus"] = r.upstream_status ? json::value(*r.upstream_status) : json::value(nullptr);
  o["bytesIn"] = r.bytes_in;
  o["bytesOut"] = r.bytes_out;
  o["durationUs"] = r.duration.count();
  if (r.held) {
    json::object held;
    held["outcome"] = text(r.held->outcome);
    held["batch"] = r.held->batch;
    held["waitedMs"] = r.held->waited.count();
    o["held"] = std::move(held);
  }
  if (r.events_delayed) o["eventsDelayed"] = *r.events_delayed;
  if (r.events_withheld) o["eventsWithheld"] = *r.events_withheld;
  if (r.stale_read) {
    json::object stale;
    stale["requested"] = text(r.stale_read->requested);
    stale["served"] = text(r.stale_read->served);
    stale["expired"] = r.stale_read->expired;
    o["staleRead"] = std::move(stale);
  }
  return o;
}

namespace {

// Bytes JSON needs escaped: control characters, '"' and '\\' (one table load per byte instead of
// three compares).
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = true;
  table['"'] = true;
  table['\\'] = true;
  return table;
}();

// The line is written directly, byte for byte what json::serialize(to_json(record)) writes (a unit
// test holds them equal): building the object first (a node and a string per key) was a tenth of
// the relay thread's instructions per small request.
void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t clean = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!kEscaped[c]) continue;
    out.append(s.data() + clean, i - clean);
    clean = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
  }
  out.append(s.data() + clean, s.size() - clean);
  out.push_back('"');
}

// True when no byte of `s` needs attention: none is escaped (kEscaped) and none is outside ASCII
// (UTF-8 to check). Eight bytes per step: most values (paths, names, addresses) are plain, and
// the byte loops of append_escaped and the ASCII check were half of the audit line's instructions.
bool plain(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  // Bytes below 0x20, '"' (0x22) or '\\' (0x5c), or with the high bit set: a high bit in the byte.
  auto attention = [](std::uint64_t w) {
    auto zero_byte = [](std::uint64_t x) { return (x - kOnes) & ~x & kHigh; };
    return ((w - kOnes * 0x20) & ~w & kHigh) | zero_byte(w ^ (kOnes * '"')) | zero_byte(w ^ (kOnes * '\\')) |
           (w & kHigh);
  };
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (attention(w) != 0) return false;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 || kEscaped[c]) return false;
  }
  return true;
}

void append_text(std::string& out, std::string_view s) {
  if (plain(s)) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
  const bool ascii = std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  if (ascii || is_valid_utf8(s)) append_escaped(out, s);
  else append_escaped(out, to_valid_utf8(s));
}

template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

}  // namespace

std::string to_json_line(const Record& r) { return to_json_line(r, r.seq, r.ts); }

std::string to_json_line(const Record& r, std::uint64_t seq, std::chrono::system_clock::time_point ts) {
  std::string out;
  out.reserve(384 + r.user_agent.size() + r.path.size());
  out += "{\"seq\":";
  append_int(out, seq);
  out += ",\"ts\":\"";
  out += net::format_rfc3339(ts, 6);
  out += "\",\"conn\":";
  append_int(out, r.conn);
  // Each key with its punctuation, one append.
  const std::pair<std::string_view, const std::string*> texts[] = {{",\"client\":", &r.client},
                                                                   {",\"userAgent\":", &r.user_agent},
                                                                   {",\"proto\":", &r.proto},
                                                                   {",\"method\":", &r.method},
                                                                   {",\"path\":", &r.path},
                                                                   {",\"verb\":", &r.verb},
                                                                   {",\"resource\":", &r.resource},
                                                                   {",\"subresource\":", &r.subresource},
                                                                   {",\"namespace\":", &r.namespace_},
                                                                   {",\"name\":", &r.name}};
  for (const auto& [key, value] : texts) {
    out += key;
    append_text(out, *value);
  }
  out += r.watch ? ",\"watch\":true" : ",\"watch\":false";
  out += ",\"rule\":";
  if (r.rule) append_text(out, *r.rule);
  else out += "null";
  out += ",\"action\":";
  if (r.action) append_text(out, *r.action);
  else out += "null";
  out += ",\"status\":";
  append_int(out, r.status);
  out += ",\"upstreamStatus\":";
  if (r.upstream_status) append_int(out, *r.upstream_status);
  else out += "null";
  out += ",\"bytesIn\":";
  append_int(out, r.bytes_in);
  out += ",\"bytesOut\":";
  append_int(out, r.bytes_out);
  out += ",\"durationUs\":";
  append_int(out, r.duration.count());
  if (r.held) {
    out += ",\"held\":{\"outcome\":";
    append_text(out, r.held->outcome);
    out += ",\"batch\":";
    append_int(out, r.held->batch);
    out += ",\"waitedMs\":";
    append_int(out, r.held->waited.count());
    out += "}";
  }
  if (r.events_delayed) {
    out += ",\"eventsDelayed\":";
    append_int(out, *r.events_delayed);
  }
  if (r.events_withheld) {
    out += ",\"eventsWithheld\":";
    append_int(out, *r.events_withheld);
  }
  if (r.stale_read) {
    out += ",\"staleRead\":{\"requested\":";
    append_text(out, r.stale_read->requested);
    out += ",\"served\":";
    append_text(out, r.stale_read->served);
    out += r.stale_read->expired ? ",\"expired\":true}" : ",\"expired\":false}";
  }
  out += "}\n";
  return out;
}

Record from_json(const json::value& value) {
  if (!value.is_object()) throw FormatError("audit record: not a JSON object");
  const json::object& o = value.get_object();
  Record r;
  r.seq = get_uint(o, "seq");
  std::string ts = get_string(o, "ts");
  auto parsed = net::parse_rfc3339(ts);
  if (!parsed) throw FormatError("audit record: ts \"" + ts.substr(0, 64) + "\" is not an RFC 3339 UTC time");
  r.ts = *parsed;
  r.conn = get_uint(o, "conn");
  r.client = get_string(o, "client");
  r.user_agent = get_string(o, "userAgent");
  r.proto = get_string(o, "proto");
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
  if (!field(o, "upstreamStatus").is_null()) r.upstream_status = get_status(o, "upstreamStatus");
  r.bytes_in = get_uint(o, "bytesIn");
  r.bytes_out = get_uint(o, "bytesOut");
  const std::uint64_t us = get_uint(o, "durationUs");
  if (us > static_cast<std::uint64_t>(std::chrono::microseconds::max().count())) wrong_type("durationUs", "a duration");
  r.duration = std::chrono::microseconds(static_cast<std::int64_t>(us));
  if (const json::value* held = o.if_contains("held")) {
    if (!held->is_object()) wrong_type("held", "an object");
    const json::object& h = held->get_object();
    Held out;
    out.outcome = get_string(h, "outcome");
    out.batch = get_uint(h, "batch");
    const std::uint64_t ms = get_uint(h, "waitedMs");
    if (ms > static_cast<std::uint64_t>(INT64_MAX)) wrong_type("waitedMs", "a duration");
    out.waited = std::chrono::milliseconds(static_cast<std::int64_t>(ms));
    r.held = std::move(out);
  }
  // Absent in the records of earlier versions: null.
  if (const auto* v = o.if_contains("eventsDelayed"); v && !v->is_null())
    r.events_delayed = get_uint(o, "eventsDelayed");
  if (const auto* v = o.if_contains("eventsWithheld"); v && !v->is_null())
    r.events_withheld = get_uint(o, "eventsWithheld");
  if (const json::value* stale = o.if_contains("staleRead"); stale && !stale->is_null()) {
    if (!stale->is_object()) wrong_type("staleRead", "an object");
    const json::object& so = stale->get_object();
    StaleRead read;
    read.requested = get_string(so, "requested");
    read.served = get_string(so, "served");
    const json::value& expired = field(so, "expired");
    if (!expired.is_bool()) wrong_type("staleRead.expired", "a boolean");
    read.expired = expired.get_bool();
    r.stale_read = std::move(read);
  }
  return r;
}

DecodedLines decode_lines(std::string_view text) {
  DecodedLines out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string problem;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec) {
      problem = "not JSON: " + ec.message();
    } else {
      try {
        out.records.push_back(from_json(v));
        continue;
      } catch (const FormatError& e) {
        problem = e.what();
      }
    }
    if (out.malformed++ == 0) out.first_error = "line " + std::to_string(line_no) + ": " + problem;
  }
  return out;
}

std::string redact_path(std::string_view target) {
  // Without a query there is nothing to remove (parsed or not, the target stays as it is).
  if (target.find('?') == std::string_view::npos) return std::string(target);
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

}  // namespace faultline::audit
