#include "faultline/harness/token_bucket.hpp"

#include <gtest/gtest.h>

namespace faultline::harness {
namespace {

using namespace std::chrono_literals;

TEST(TokenBucket, SpacesTokensAtTheRate) {
  faults::ManualClock clock;
  TokenBucket bucket(10, 1, clock);  // 10/s: one every 100 ms
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 100ms);
  EXPECT_EQ(bucket.reserve(), 200ms);
  clock.advance(300ms);
  EXPECT_EQ(bucket.reserve(), 0ns);  // caught up: the slot is due now
}

TEST(TokenBucket, BurstLetsSeveralGoAtOnce) {
  faults::ManualClock clock;
  TokenBucket bucket(1000, 4, clock);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bucket.reserve(), 0ns) << i;
  EXPECT_EQ(bucket.reserve(), 1ms);
}

TEST(TokenBucket, IdleTimeDoesNotAccumulateBeyondTheBurst) {
  faults::ManualClock clock;
  TokenBucket bucket(100, 2, clock);
  bucket.reserve();
  clock.advance(10s);
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 10ms);
}

TEST(TokenBucket, AverageRateOverManyTokens) {
  faults::ManualClock clock;
  TokenBucket bucket(2000, 16, clock);
  std::chrono::nanoseconds last{};
  for (int i = 0; i < 2000; ++i) last = bucket.reserve();
  // 2000 tokens at 2000/s with 16 up front: the last one is due just under a second later.
  EXPECT_EQ(last, std::chrono::nanoseconds(500000) * (2000 - 16));
}

TEST(TokenBucket, RejectsNonsense) {
  EXPECT_THROW(TokenBucket(0, 1), std::invalid_argument);
  EXPECT_THROW(TokenBucket(10, 0.5), std::invalid_argument);
}

}  // namespace
}  // namespace faultline::harness
