#include "faultline/proxy/watch_stream.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline::proxy {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kAdded = R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a{b}\"c"}}})"
                           "\n";
const std::string kDeleted = R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"x","labels":{"k":"]}"}}}})"
                             "\n";

TEST(JsonFrameSplitter, WholeEventsInOneChunk) {
  JsonFrameSplitter s;
  EXPECT_THAT(s.feed(kAdded + kDeleted), ElementsAre(kAdded, kDeleted));
  EXPECT_EQ(s.pending(), "");
}

TEST(JsonFrameSplitter, EventsSplitAtEveryByteComeOutWhole) {
  JsonFrameSplitter s;
  std::vector<std::string> events;
  std::string stream = kAdded + kDeleted + kAdded;
  for (char c : stream) {
    for (auto& e : s.feed(std::string_view(&c, 1))) events.push_back(e);
  }
  EXPECT_THAT(events, ElementsAre(kAdded, kDeleted, kAdded));
}

TEST(JsonFrameSplitter, BracesAndQuotesInsideStringsDoNotEndAnEvent) {
  JsonFrameSplitter s;
  std::string tricky = R"({"type":"MODIFIED","object":{"s":"}\\\"{","t":"\\"}})"
                       "\n";
  EXPECT_THAT(s.feed(tricky), ElementsAre(tricky));
}

TEST(JsonFrameSplitter, EventWithoutNewlineIsHeldUntilTheNextStarts) {
  JsonFrameSplitter s;
  std::string bare = R"({"type":"ADDED","object":{}})";
  EXPECT_THAT(s.feed(bare), IsEmpty());
  EXPECT_THAT(s.feed(bare), ElementsAre(bare));
  EXPECT_THAT(s.feed("\n"), ElementsAre(bare + "\n"));
}

TEST(JsonFrameSplitter, OversizedEventIsAnError) {
  JsonFrameSplitter s;
  s.set_limit(10);
  EXPECT_THROW(s.feed(kAdded), std::length_error);
}

// An upstream that follows an event with whitespace and never a newline must not grow the
// pending bytes past the limit (found by the watch framer fuzzer).
TEST(JsonFrameSplitter, WhitespaceAfterAnEventCountsAgainstTheLimit) {
  JsonFrameSplitter s;
  s.set_limit(64);
  EXPECT_TRUE(s.feed("{}").empty());
  EXPECT_THROW(
      {
        for (int i = 0; i < 1000; ++i) s.feed("  \t\r");
      },
      std::length_error);
  EXPECT_LE(s.pending().size(), 65u);
}

// What comes out, the event with its newline, is what the limit bounds.
TEST(JsonFrameSplitter, AnEventWithItsNewlineIsBoundedByTheLimit) {
  JsonFrameSplitter fits;
  fits.set_limit(8);
  auto events = fits.feed("{\"a\":1}\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "{\"a\":1}\n");
  JsonFrameSplitter over;
  over.set_limit(8);
  EXPECT_TRUE(over.feed("{\"a\":12}").empty());
  EXPECT_THROW(over.feed("\n"), std::length_error);
}

TEST(WatchEvent, TypeAndObject) {
  EXPECT_EQ(watch_event_type(kAdded), "ADDED");
  EXPECT_EQ(watch_event_object(kDeleted), R"({"kind":"Pod","metadata":{"name":"x","labels":{"k":"]}"}}})");
  EXPECT_FALSE(watch_event_type("not json").has_value());
  EXPECT_FALSE(watch_event_type("[1,2]").has_value());
  EXPECT_FALSE(watch_event_object(R"({"type":"ADDED"})").has_value());
}

}  // namespace
}  // namespace faultline::proxy
