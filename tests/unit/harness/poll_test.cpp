// poll_until: asks until the answer is yes, `every` apart, and gives up once `within` has passed on
// the injected clock with the error its caller words.
#include "faultline/harness/poll.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "faultline/harness/async.hpp"

namespace faultline::harness {
namespace {

using namespace std::chrono_literals;

struct PollTest : ::testing::Test {
  // What the wait threw ("" when it ended without an error).
  std::string poll(PollLimits limits, std::function<bool()> answer) {
    try {
      run_blocking(ioc, poll_until(
                            clock, limits,
                            [&]() -> asio::awaitable<bool> {
                              ++questions;
                              co_return answer();
                            },
                            [&] {
                              ++timeouts;
                              return std::string("the thing did not happen");
                            }));
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  }
  // A wait of 10 s, every question taking `each` of the injected clock and answering `answer`.
  std::string poll_taking(faults::Clock::duration each, bool answer) {
    return poll({10s, 1ms}, [this, each, answer] {
      clock.advance(each);
      return answer;
    });
  }
  asio::io_context ioc;
  faults::ManualClock clock;
  int questions = 0;
  int timeouts = 0;
};

TEST_F(PollTest, EndsAtTheFirstYes) {
  EXPECT_EQ(poll({10s, 1ms}, [&] { return questions == 3; }), "");
  EXPECT_EQ(questions, 3);
  EXPECT_EQ(timeouts, 0);
}

TEST_F(PollTest, GivesUpOnceTheDeadlinePassedOnTheInjectedClock) {
  // Every question takes 4 s of the injected clock: after the third (12 s) the 10 s are over,
  // however little real time has passed.
  EXPECT_EQ(poll_taking(4s, false), "the thing did not happen");
  EXPECT_EQ(questions, 3);
  EXPECT_EQ(timeouts, 1);
}

TEST_F(PollTest, AsksOnceMoreWhenTheDeadlineIsJustReached) {
  EXPECT_EQ(poll_taking(5s, false), "the thing did not happen");
  EXPECT_EQ(questions, 3);  // at 5 s, at 10 s (not over yet), at 15 s
}

TEST_F(PollTest, AYesAfterTheDeadlineStillCounts) {
  EXPECT_EQ(poll_taking(20s, true), "");
  EXPECT_EQ(questions, 1);
  EXPECT_EQ(timeouts, 0);
}

TEST_F(PollTest, WaitsEveryIntervalBetweenTwoQuestions) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(poll({10s, 40ms}, [&] { return questions == 3; }), "");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 80ms);  // two pauses, none before the first question
  EXPECT_EQ(questions, 3);
}

TEST_F(PollTest, AnErrorOfTheQuestionEndsTheWait) {
  EXPECT_EQ(poll({10s, 1ms}, []() -> bool { throw std::runtime_error("cannot ask"); }), "cannot ask");
  EXPECT_EQ(questions, 1);
  EXPECT_EQ(timeouts, 0);
}

}  // namespace
}  // namespace faultline::harness
