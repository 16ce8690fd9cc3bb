// run_relay_thread with and without --spin-us: it runs what becomes ready while it polls and
// while it sleeps (posted handlers, timers, other threads' work), survives a handler's exception,
// and returns once the io_context has no work left or is stopped.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "faultline/proxy/server.hpp"

namespace faultline::proxy {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class RelayThread : public ::testing::TestWithParam<int> {};

std::chrono::microseconds spin() { return std::chrono::microseconds(RelayThread::GetParam()); }

TEST_P(RelayThread, RunsWorkThatArrivesWhileItWaitsAndReturnsWhenNoneIsLeft) {
  asio::io_context ioc;
  auto guard = asio::make_work_guard(ioc);
  std::atomic<int> ran{0};
  // Arrives from another thread 1 s in: by then the relay thread sleeps (polling 0 to 100 us) or
  // is still polling (2 s).
  std::thread other([&] {
    std::this_thread::sleep_for(1s);
    asio::post(ioc, [&] {
      ++ran;
      guard.reset();  // the last work: run_relay_thread returns once this has run
    });
  });
  // A timer: the sleep must end at its expiry, with nothing else ready.
  asio::steady_timer timer(ioc, 50ms);
  auto started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration timer_after{};
  timer.async_wait([&](boost::system::error_code ec) {
    if (!ec) timer_after = std::chrono::steady_clock::now() - started;
    ++ran;
  });
  run_relay_thread(ioc, spin());
  other.join();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_GE(timer_after, 50ms);
  EXPECT_LT(timer_after, 900ms);  // not held until the other thread's post at 1 s
  EXPECT_TRUE(ioc.stopped());
}

TEST_P(RelayThread, GoesOnAfterAHandlerThrows) {
  asio::io_context ioc;
  auto before = escaped_handler_exceptions();
  int ran = 0;
  asio::post(ioc, [] { throw std::runtime_error("one connection's bug"); });
  asio::post(ioc, [&] { ++ran; });
  run_relay_thread(ioc, spin());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(escaped_handler_exceptions(), before + 1);
}

TEST_P(RelayThread, StopEndsEveryThreadEvenWithWorkLeft) {
  asio::io_context ioc;
  auto guard = asio::make_work_guard(ioc);
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { run_relay_thread(ioc, spin()); });
  // Handlers spread over the threads, each posting the next, while the others poll or sleep.
  constexpr int kChain = 10000;
  std::function<void()> step = [&] {
    if (++ran < kChain) asio::post(ioc, step);
    else ioc.stop();
  };
  asio::post(ioc, step);
  for (auto& t : threads) t.join();  // hangs (the test times out) if a thread misses the stop
  EXPECT_EQ(ran.load(), kChain);
}

INSTANTIATE_TEST_SUITE_P(Spin, RelayThread, ::testing::Values(0, 1, 100, 2000000),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return "spin_us_" + std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace faultline::proxy
