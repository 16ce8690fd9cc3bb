// RFC 3339 times: what the audit records, the reports and Kubernetes objects carry.
#include "faultline/net/rfc3339.hpp"

#include <gtest/gtest.h>

#include "audit_sample.hpp"

namespace faultline::net {
namespace {

using namespace std::chrono;

using testing::sample_time;  // 2026-11-30T14:48:19.123456Z

TEST(Rfc3339, FormatsUtcWithTheAskedFractionDigits) {
  EXPECT_EQ(format_rfc3339(sample_time(), 6), "2026-11-30T14:48:19.123456Z");
  EXPECT_EQ(format_rfc3339(sample_time(), 3), "2026-11-30T14:48:19.123Z");
  EXPECT_EQ(format_rfc3339(sample_time(), 0), "2026-11-30T14:48:19Z");
  EXPECT_EQ(format_rfc3339(sample_time() + nanoseconds{789}, 9), "2026-11-30T14:48:19.123456789Z");
  EXPECT_EQ(format_rfc3339(system_clock::time_point{}, 6), "1970-01-01T00:00:00.000000Z");
  // Before the epoch the day and the time of day still count forward.
  EXPECT_EQ(format_rfc3339(system_clock::time_point{} - microseconds{1}, 6), "1969-12-31T23:59:59.999999Z");
}

TEST(Rfc3339, TruncatesNeverRoundsIntoTheNextSecond) {
  EXPECT_EQ(format_rfc3339(sys_days{year{2024} / February / 29} + seconds{59} + nanoseconds{999'999'999}, 6),
            "2024-02-29T00:00:59.999999Z");
  EXPECT_EQ(format_rfc3339(sys_days{year{2024} / February / 29} + seconds{59} + nanoseconds{999'999'999}, 3),
            "2024-02-29T00:00:59.999Z");
}

TEST(Rfc3339, ParsesWhatItFormatsAndWhatKubernetesWrites) {
  EXPECT_EQ(parse_rfc3339("2026-11-30T14:48:19.123456Z"), sample_time());
  EXPECT_EQ(parse_rfc3339(format_rfc3339(sample_time(), 6)), sample_time());
  EXPECT_EQ(parse_rfc3339("2026-11-30T14:48:19Z"), floor<seconds>(sample_time()));  // metadata.creationTimestamp
  EXPECT_EQ(parse_rfc3339("2026-11-30T14:48:19.1Z"), floor<seconds>(sample_time()) + milliseconds{100});
  EXPECT_EQ(parse_rfc3339("2026-11-30T14:48:19.123456789Z"), sample_time() + nanoseconds{789});
  EXPECT_EQ(parse_rfc3339("1969-12-31T23:59:59.999999Z"), system_clock::time_point{} - microseconds{1});
}

TEST(Rfc3339, RejectsMalformedImpossibleAndUnrepresentableTimes) {
  for (const char* bad :
       {"", "yesterday", "2026-11-30", "2026-11-30T14:48:19", "2026-11-30 14:48:19Z", "2026-11-30T14:48:19.Z",
        "2026-11-30T14:48:19.1234567890Z", "2026-11-30T14:48:19.12a4Z", "2026-11-30T14:48:19.123456+01:00",
        "2026-11-30T14:48:19Zjunk", "+026-11-30T14:48:19Z", "2026-1 -30T14:48:19Z", "2026-02-30T14:48:19Z",
        "2026-11-30T24:48:19Z", "2026-11-30T14:60:19Z", "2026-11-30T14:48:60Z",
        // outside what a nanosecond system_clock holds (about 1677-09-21 .. 2262-04-11)
        "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z", "1677-01-01T00:00:00Z", "2263-01-01T00:00:00Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

}  // namespace
}  // namespace faultline::net
