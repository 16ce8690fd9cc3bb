#include <gtest/gtest.h>

#include "faultline/faults/duration.hpp"

namespace faultline::faults {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, ReadsEveryUnit) {
  EXPECT_EQ(parse_duration("250ms"), Duration{250});
  EXPECT_EQ(parse_duration("10s"), Duration{10s});
  EXPECT_EQ(parse_duration("2m"), Duration{2min});
  EXPECT_EQ(parse_duration("1h"), Duration{1h});
  EXPECT_EQ(parse_duration("0s"), Duration{0});
}

TEST(ParseDuration, ReadsCompoundDurations) {
  EXPECT_EQ(parse_duration("1m30s"), Duration{90s});
  EXPECT_EQ(parse_duration("1h2m3s4ms"), Duration{1h + 2min + 3s + 4ms});
}

TEST(ParseDuration, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "10", "s", "10x", "1.5s", "-1s", "10 s", "ms10", "10sm", "99999999999999999h"})
    EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
}

TEST(FormatDuration, RoundTrips) {
  for (const char* text : {"250ms", "10s", "2m", "1h", "1m30s", "0s", "1h1ms"})
    EXPECT_EQ(format_duration(*parse_duration(text)), text);
}

}  // namespace
}  // namespace faultline::faults
