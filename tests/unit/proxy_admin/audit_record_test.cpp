#include "faultline/admin/audit_record.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline::admin {
namespace {

using namespace std::chrono;
namespace json = boost::json;

// 2026-11-30T14:48:19.123456Z
system_clock::time_point sample_time() {
  return sys_days{year{2026} / November / 30} + hours{14} + minutes{48} + seconds{19} + microseconds{123456};
}

AuditRecord sample_record() {
  AuditRecord r;
  r.seq = 42;
  r.ts = sample_time();
  r.conn = 7;
  r.client = "127.0.0.1:40312";
  r.userAgent = "yunikorn/v1.9.0 (linux/amd64) kubernetes/$Format";
  r.method = "POST";
  r.path = "/api/v1/namespaces/faultline/pods/burst-1-17/binding";
  r.verb = "create";
  r.resource = "pods";
  r.subresource = "binding";
  r.namespace_ = "faultline";
  r.name = "burst-1-17";
  r.watch = false;
  r.rule = "outage-mid-bind";
  r.action = "outage";
  r.status = 0;
  r.upstreamStatus = std::nullopt;
  r.bytesIn = 312;
  r.bytesOut = 0;
  r.durationUs = 1234;
  return r;
}

TEST(AuditRecord, JsonHasExactlyTheDesignKeysInDesignOrder) {
  const json::object o = to_json(sample_record());
  std::vector<std::string> keys;
  for (const auto& kv : o) keys.emplace_back(kv.key());
  const std::vector<std::string> design = {
      "seq",         "ts",        "conn",  "client", "userAgent", "method", "path",
      "verb",        "resource",  "subresource", "namespace", "name", "watch", "rule",
      "action",      "status",    "upstreamStatus", "bytesIn", "bytesOut", "durationUs", "proto"};
  EXPECT_EQ(keys, design);
}

TEST(AuditRecord, FieldTypesAndNulls) {
  const json::object o = to_json(sample_record());
  EXPECT_EQ(o.at("seq").as_uint64(), 42u);
  EXPECT_EQ(o.at("ts").as_string(), "2026-11-30T14:48:19.123456Z");
  EXPECT_EQ(o.at("namespace").as_string(), "faultline");
  EXPECT_FALSE(o.at("watch").as_bool());
  EXPECT_EQ(o.at("rule").as_string(), "outage-mid-bind");
  EXPECT_TRUE(o.at("upstreamStatus").is_null());  // the request never got an upstream answer

  AuditRecord untouched = sample_record();
  untouched.rule.reset();
  untouched.action.reset();
  untouched.upstreamStatus = 201;
  const json::object u = to_json(untouched);
  EXPECT_TRUE(u.at("rule").is_null());
  EXPECT_TRUE(u.at("action").is_null());
  EXPECT_EQ(u.at("upstreamStatus").as_int64(), 201);
}

TEST(AuditRecord, LineIsOneJsonObjectEndingInNewlineEvenWithNastyStrings) {
  AuditRecord r = sample_record();
  r.userAgent = "evil\"agent\nsecond line\\";
  const std::string line = to_json_line(r);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "a raw newline inside a JSON line splits the record";
  EXPECT_EQ(audit_record_from_json(json::parse(line)).userAgent, r.userAgent);
}

TEST(AuditRecord, LineIsValidUtf8WhenTheClientSentOtherBytes) {
  AuditRecord r = sample_record();
  r.userAgent = "kubectl/\xff\xfe";               // raw header bytes
  r.path = "/api/v1/namespaces/caf\xe9/pods";     // raw target bytes
  r.namespace_ = "caf\xe9";
  r.name = "\xc3\x28";                           // percent-decoded from the path
  const std::string line = to_json_line(r);
  boost::system::error_code ec;
  const json::value parsed = json::parse(line, ec);  // Boost.JSON rejects ill-formed UTF-8
  ASSERT_FALSE(ec) << ec.message() << ": " << line;
  const AuditRecord back = audit_record_from_json(parsed);
  EXPECT_EQ(back.userAgent, "kubectl/\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(back.path, "/api/v1/namespaces/caf\xEF\xBF\xBD/pods");
  EXPECT_EQ(back.namespace_, "caf\xEF\xBF\xBD");
  EXPECT_EQ(back.name, "\xEF\xBF\xBD(");
}

TEST(AuditRecord, RoundTripsThroughJson) {
  AuditRecord a = sample_record();
  EXPECT_EQ(audit_record_from_json(json::parse(to_json_line(a))), a);
  AuditRecord b = sample_record();
  b.rule.reset();
  b.action.reset();
  b.upstreamStatus = 200;
  b.status = 200;
  b.watch = true;
  b.verb = "watch";
  EXPECT_EQ(audit_record_from_json(json::parse(to_json_line(b))), b);
}

TEST(AuditRecord, FromJsonNamesTheMissingOrMistypedKey) {
  json::object o = to_json(sample_record());
  o.erase("bytesOut");
  try {
    audit_record_from_json(o);
    FAIL() << "missing key accepted";
  } catch (const AuditFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bytesOut"), std::string::npos) << e.what();
  }
  json::object wrong = to_json(sample_record());
  wrong["watch"] = "yes";
  try {
    audit_record_from_json(wrong);
    FAIL() << "string watch accepted";
  } catch (const AuditFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("watch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(audit_record_from_json(json::value(3)), AuditFormatError);
  json::object bad_ts = to_json(sample_record());
  bad_ts["ts"] = "yesterday";
  EXPECT_THROW(audit_record_from_json(bad_ts), AuditFormatError);
}

TEST(AuditRecord, TimestampsAreRfc3339UtcWithMicroseconds) {
  EXPECT_EQ(format_rfc3339_micros(sample_time()), "2026-11-30T14:48:19.123456Z");
  EXPECT_EQ(format_rfc3339_micros(system_clock::time_point{}), "1970-01-01T00:00:00.000000Z");
  // Sub-microsecond parts are truncated, never rounded up into the next second.
  EXPECT_EQ(format_rfc3339_micros(sys_days{year{2024} / February / 29} + seconds{59} + nanoseconds{999'999'999}),
            "2024-02-29T00:00:59.999999Z");
  EXPECT_EQ(parse_rfc3339_micros("2026-11-30T14:48:19.123456Z"), sample_time());
  EXPECT_FALSE(parse_rfc3339_micros("2026-11-30T14:48:19Z"));
  EXPECT_FALSE(parse_rfc3339_micros("2026-02-30T14:48:19.123456Z"));
  EXPECT_FALSE(parse_rfc3339_micros("2026-11-30T24:48:19.123456Z"));
  EXPECT_FALSE(parse_rfc3339_micros("2026-11-30T14:48:19.123456+01:00"));
}

TEST(RedactPath, RemovesTokenAndAccessTokenParameters) {
  EXPECT_EQ(redact_path("/api/v1/pods?watch=1&token=abc.def&limit=500"), "/api/v1/pods?watch=1&limit=500");
  EXPECT_EQ(redact_path("/api/v1/namespaces/x/pods/p/exec?access_token=s3cret"), "/api/v1/namespaces/x/pods/p/exec");
  EXPECT_EQ(redact_path("/api?TOKEN=a&Access_Token=b&token=c"), "/api");
  EXPECT_EQ(redact_path("/api?token"), "/api");
  // Percent-encoded names are still names: "acc%65ss_token" is access_token.
  EXPECT_EQ(redact_path("/api?acc%65ss_token=s3cret&x=1"), "/api?x=1");
}

TEST(RedactPath, KeepsEverythingElseAsSent) {
  EXPECT_EQ(redact_path("/api/v1/pods"), "/api/v1/pods");
  EXPECT_EQ(redact_path("/api/v1/pods?labelSelector=app%3Dweb&tokens=1"),
            "/api/v1/pods?labelSelector=app%3Dweb&tokens=1");
  EXPECT_EQ(redact_path("/api/v1/pods?fieldSelector=spec.nodeName%3D&token=x&resourceVersion=5"),
            "/api/v1/pods?fieldSelector=spec.nodeName%3D&resourceVersion=5");
}

TEST(RedactPath, DropsTheWholeQueryOfTargetsItCannotParse) {
  EXPECT_EQ(redact_path("http://apiserver/api?token=s3cret"), "http://apiserver/api");
  EXPECT_EQ(redact_path("/api?token=s3cret#frag"), "/api");
  EXPECT_EQ(redact_path("/api?bad%zzquery&token=s3cret"), "/api");
}

TEST(AuditRecord, SerializedRecordOfATokenRequestHoldsNoSecret) {
  AuditRecord r = sample_record();
  r.path = redact_path("/api/v1/pods?watch=true&access_token=eyJhbGciOiJSUzI1NiJ9.s3cret");
  const std::string line = to_json_line(r);
  EXPECT_EQ(line.find("eyJhbGciOiJSUzI1NiJ9"), std::string::npos) << line;
  EXPECT_EQ(line.find("access_token"), std::string::npos) << line;
  EXPECT_EQ(line.find("uthorization"), std::string::npos) << line;
}

}  // namespace
}  // namespace faultline::admin
