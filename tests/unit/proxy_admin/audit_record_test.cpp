#include "faultline/audit/record.hpp"

#include "audit_sample.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace faultline::audit {
namespace {

using namespace std::chrono;
namespace json = boost::json;

using testing::sample_bind_record;

// The JSON example of the "Audit record" section of docs/proxy.md.
json::value documented_example() {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/docs/proxy.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  const auto section = page.find("## Audit record");
  const auto begin = page.find("```json\n", section);
  const auto end = page.find("```", begin + 8);
  if (section == std::string::npos || begin == std::string::npos || end == std::string::npos) return nullptr;
  return json::parse(page.substr(begin + 8, end - begin - 8));
}

TEST(AuditRecord, JsonHasExactlyTheDocumentedKeysInTheirOrder) {
  const json::value example = documented_example();
  ASSERT_TRUE(example.is_object()) << "docs/proxy.md has no JSON example under \"## Audit record\"";
  std::vector<std::string> documented;
  for (const auto& kv : example.get_object()) documented.emplace_back(kv.key());
  std::vector<std::string> keys;
  for (const auto& kv : to_json(sample_bind_record())) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, documented);
}

TEST(AuditRecord, DocumentedExampleDecodesAndEncodesBackUnchanged) {
  const json::value example = documented_example();
  ASSERT_TRUE(example.is_object());
  EXPECT_EQ(json::value(to_json(from_json(example))), example);
}

TEST(AuditRecord, FieldTypesAndNulls) {
  const json::object o = to_json(sample_bind_record());
  EXPECT_EQ(o.at("seq").as_uint64(), 42u);
  EXPECT_EQ(o.at("ts").as_string(), "2026-11-30T14:48:19.123456Z");
  EXPECT_EQ(o.at("namespace").as_string(), "faultline");
  EXPECT_FALSE(o.at("watch").as_bool());
  EXPECT_EQ(o.at("rule").as_string(), "outage-mid-bind");
  EXPECT_TRUE(o.at("upstreamStatus").is_null());  // the request never got an upstream answer

  Record untouched = sample_bind_record();
  untouched.rule.reset();
  untouched.action.reset();
  untouched.upstream_status = 201;
  const json::object u = to_json(untouched);
  EXPECT_TRUE(u.at("rule").is_null());
  EXPECT_TRUE(u.at("action").is_null());
  EXPECT_EQ(u.at("upstreamStatus").as_int64(), 201);
}

TEST(AuditRecord, LineIsOneJsonObjectEndingInNewlineEvenWithNastyStrings) {
  Record r = sample_bind_record();
  r.user_agent = "evil\"agent\nsecond line\\";
  const std::string line = to_json_line(r);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "a raw newline inside a JSON line splits the record";
  EXPECT_EQ(from_json(json::parse(line)).user_agent, r.user_agent);
}

TEST(AuditRecord, LineIsValidUtf8WhenTheClientSentOtherBytes) {
  Record r = sample_bind_record();
  r.user_agent = "kubectl/\xff\xfe";           // raw header bytes
  r.path = "/api/v1/namespaces/caf\xe9/pods";  // raw target bytes
  r.namespace_ = "caf\xe9";
  r.name = "\xc3\x28";  // percent-decoded from the path
  const std::string line = to_json_line(r);
  boost::system::error_code ec;
  const json::value parsed = json::parse(line, ec);  // Boost.JSON rejects ill-formed UTF-8
  ASSERT_FALSE(ec) << ec.message() << ": " << line;
  const Record back = from_json(parsed);
  EXPECT_EQ(back.user_agent, "kubectl/\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(back.path, "/api/v1/namespaces/caf\xEF\xBF\xBD/pods");
  EXPECT_EQ(back.namespace_, "caf\xEF\xBF\xBD");
  EXPECT_EQ(back.name, "\xEF\xBF\xBD(");
}

// to_json_line writes the line directly (not through a json::object): it must be, byte for byte,
// the serialized object, for every byte a client can put into a field.
TEST(AuditRecord, LineIsTheSerializedObjectByteForByte) {
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  std::vector<Record> records;
  records.push_back(sample_bind_record());
  Record nasty = sample_bind_record();
  nasty.user_agent = every_byte;
  nasty.client = "\"quoted\" \\ back\tslash";
  nasty.path = "/api/v1/namespaces/caf\xc3\xa9/pods?x=\x7f\x1f";
  nasty.name = every_byte.substr(0, 40);
  nasty.rule = "r\n";
  nasty.action = "\x01";
  nasty.upstream_status = 503;
  nasty.watch = true;
  nasty.seq = UINT64_MAX;
  nasty.bytes_in = UINT64_MAX;
  nasty.duration = microseconds{INT64_MAX};
  records.push_back(nasty);
  Record empty;
  records.push_back(empty);
  for (const Record& r : records) EXPECT_EQ(to_json_line(r), json::serialize(to_json(r)) + "\n");
}

// The line checks values eight bytes at a time for bytes to escape or validate: a byte that
// needs either is caught in every lane of a word and in the tail after the last whole word.
TEST(AuditRecord, EveryByteAtEveryPositionIsWrittenAsTheSerializedObject) {
  for (int c = 0; c < 256; ++c) {
    for (std::size_t at = 0; at < 19; ++at) {
      Record r = sample_bind_record();
      r.path = std::string(19, 'a');
      r.path[at] = static_cast<char>(c);
      ASSERT_EQ(to_json_line(r), json::serialize(to_json(r)) + "\n") << "byte " << c << " at " << at;
    }
  }
}

TEST(AuditRecord, RoundTripsThroughJson) {
  Record a = sample_bind_record();
  EXPECT_EQ(from_json(json::parse(to_json_line(a))), a);
  Record b = sample_bind_record();
  b.rule.reset();
  b.action.reset();
  b.upstream_status = 200;
  b.status = 200;
  b.watch = true;
  b.verb = "watch";
  EXPECT_EQ(from_json(json::parse(to_json_line(b))), b);
  Record held = b;  // a watch a watch-coalesce rule acted on
  held.events_delayed = 7;
  held.events_withheld = 3;
  const std::string line = to_json_line(held);
  EXPECT_NE(line.find(R"("eventsDelayed":7,"eventsWithheld":3})"), std::string::npos) << line;
  EXPECT_EQ(from_json(json::parse(line)), held);
}

TEST(AuditRecord, RecordsWithoutTheHeldEventCountsDecodeAsNull) {
  json::object o = to_json(sample_bind_record());
  o.erase("eventsDelayed");
  o.erase("eventsWithheld");
  const Record r = from_json(o);
  EXPECT_FALSE(r.events_delayed);
  EXPECT_FALSE(r.events_withheld);
}

// `held` (a hold rule's record) comes last, only when set, and round-trips like every other key.
TEST(AuditRecord, HeldIsWrittenOnlyForAHoldRuleAndRoundTrips) {
  Record plain = sample_bind_record();
  EXPECT_FALSE(to_json(plain).contains("held"));
  Record held = sample_bind_record();
  held.action = "hold";
  held.held = Held{"forwarded", 3, milliseconds(2004)};
  const std::string line = to_json_line(held);
  EXPECT_EQ(line, json::serialize(to_json(held)) + "\n");
  EXPECT_NE(line.find(R"("durationUs":1234,"held":{"outcome":"forwarded","batch":3,"waitedMs":2004}})"),
            std::string::npos)
      << line;
  EXPECT_EQ(from_json(json::parse(line)), held);
  Record gave_up = held;
  gave_up.held = Held{"gave-up\x01", 0, milliseconds(0)};
  EXPECT_EQ(to_json_line(gave_up), json::serialize(to_json(gave_up)) + "\n");
  json::object wrong = to_json(held);
  wrong["held"] = "yes";
  EXPECT_THROW(from_json(wrong), FormatError);
}

TEST(AuditRecord, FromJsonNamesTheMissingOrMistypedKey) {
  json::object o = to_json(sample_bind_record());
  o.erase("bytesOut");
  try {
    from_json(o);
    FAIL() << "missing key accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bytesOut"), std::string::npos) << e.what();
  }
  json::object wrong = to_json(sample_bind_record());
  wrong["watch"] = "yes";
  try {
    from_json(wrong);
    FAIL() << "string watch accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("watch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(from_json(json::value(3)), FormatError);
  json::object bad_ts = to_json(sample_bind_record());
  bad_ts["ts"] = "yesterday";
  EXPECT_THROW(from_json(bad_ts), FormatError);
}

TEST(AuditLines, DecodeEveryRecordAndSkipBlankLines) {
  Record a = sample_bind_record();
  Record b = sample_bind_record();
  b.seq = 43;
  b.rule.reset();
  b.action.reset();
  b.upstream_status = 200;
  const DecodedLines lines = decode_lines(to_json_line(a) + "\n  \r\n" + to_json_line(b));
  EXPECT_EQ(lines.malformed, 0u);
  EXPECT_EQ(lines.first_error, "");
  ASSERT_EQ(lines.records.size(), 2u);
  EXPECT_EQ(lines.records[0], a);
  EXPECT_EQ(lines.records[1], b);
  EXPECT_FALSE(lines.records[0].upstream_status) << "null upstreamStatus is no status, not 0";
}

TEST(AuditLines, AMalformedLineIsCountedAndSkippedNotFatal) {
  Record a = sample_bind_record();
  Record b = sample_bind_record();
  b.seq = 44;
  json::object no_proto = to_json(sample_bind_record());
  no_proto.erase("proto");
  const std::string text = to_json_line(a) + "{oops\n" + json::serialize(no_proto) + "\n" + to_json_line(b);
  const DecodedLines lines = decode_lines(text);
  ASSERT_EQ(lines.records.size(), 2u) << "the well-formed records around the bad lines are kept";
  EXPECT_EQ(lines.records[0], a);
  EXPECT_EQ(lines.records[1], b);
  EXPECT_EQ(lines.malformed, 2u);
  EXPECT_EQ(lines.first_error.rfind("line 2: not JSON", 0), 0u) << lines.first_error;
}

TEST(AuditLines, AKeyOfTheWrongTypeIsMalformedAndNamed) {
  json::object o = to_json(sample_bind_record());
  o["upstreamStatus"] = "201";
  const DecodedLines lines = decode_lines(json::serialize(o) + "\n");
  EXPECT_TRUE(lines.records.empty());
  EXPECT_EQ(lines.malformed, 1u);
  EXPECT_NE(lines.first_error.find("line 1: audit record: key \"upstreamStatus\""), std::string::npos)
      << lines.first_error;
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
  Record r = sample_bind_record();
  r.path = redact_path("/api/v1/pods?watch=true&access_token=eyJhbGciOiJSUzI1NiJ9.s3cret");
  const std::string line = to_json_line(r);
  EXPECT_EQ(line.find("eyJhbGciOiJSUzI1NiJ9"), std::string::npos) << line;
  EXPECT_EQ(line.find("access_token"), std::string::npos) << line;
  EXPECT_EQ(line.find("uthorization"), std::string::npos) << line;
}

}  // namespace
}  // namespace faultline::audit
