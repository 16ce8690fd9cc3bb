#pragma once
// The harness's one async idiom: C++20 coroutines on a Boost.Asio executor, as in the proxy's
// relay. Network calls (KubeClient, http_call, the proxy admin and YuniKorn clients) are
// asio::awaitable; run_blocking() is where a synchronous caller (main, a test) enters that world.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "faultline/net/async.hpp"

namespace faultline::harness {

namespace asio = boost::asio;

// The completion token and the throw helper of the proxy's coroutines (faultline/net/async.hpp).
using net::throw_if;
using net::use_tuple;

// Waits `d` on the current executor. A cancelled wait throws (operation_aborted), like any
// operation of a cancelled coroutine.
template <class Rep, class Period>
asio::awaitable<void> sleep_for(std::chrono::duration<Rep, Period> d) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(d);
  auto [ec] = co_await timer.async_wait(use_tuple);
  throw_if(ec, "sleep");
}

// Runs the tasks concurrently on the current executor and returns once every one has finished;
// then rethrows the first exception one of them threw.
inline asio::awaitable<void> all_of(std::vector<asio::awaitable<void>> tasks) {
  auto executor = co_await asio::this_coro::executor;
  using Op = decltype(asio::co_spawn(executor, std::declval<asio::awaitable<void>>(), asio::deferred));
  std::vector<Op> ops;
  ops.reserve(tasks.size());
  for (auto& task : tasks) ops.push_back(asio::co_spawn(executor, std::move(task), asio::deferred));
  auto group = asio::experimental::make_parallel_group(std::move(ops));
  auto [order, errors] = co_await group.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// A coroutine that runs on its own (the pod watch, the audit poller) until it ends or stop()
// cancels it. Single-threaded executor: every member is called on the executor's thread.
class BackgroundTask {
 public:
  explicit BackgroundTask(const asio::any_io_executor& executor) : executor_(executor), ended_(executor) {}
  ~BackgroundTask() {  // cancels a task still running; stop() first to wait for its end
    if (running_) signal_.emit(asio::cancellation_type::terminal);
  }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  void start(asio::awaitable<void> task) {
    running_ = true;
    ended_.expires_at(asio::steady_timer::time_point::max());
    auto on_end = [this](std::exception_ptr e) {
      if (e && !stopping_) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& failure) {
          error_ = failure.what();
        } catch (...) {
          error_ = "unknown exception";
        }
      }
      running_ = false;
      ended_.cancel();
    };
    asio::co_spawn(executor_, std::move(task), asio::bind_cancellation_slot(signal_.slot(), std::move(on_end)));
  }

  // Cancels the task (terminal cancellation) and returns once it has ended.
  asio::awaitable<void> stop() {
    if (!running_) co_return;
    stopping_ = true;
    signal_.emit(asio::cancellation_type::terminal);
    while (running_) co_await ended_.async_wait(use_tuple);
  }

  bool running() const { return running_; }
  // What the task threw when it ended by itself; empty while it runs, after a clean end or a stop().
  const std::string& error() const { return error_; }

 private:
  asio::any_io_executor executor_;
  asio::cancellation_signal signal_;
  asio::steady_timer ended_;  // cancelled when the task ends
  bool running_ = false;
  bool stopping_ = false;
  std::string error_;
};

// Runs `task` on `ioc` on the calling thread until it has finished, and returns its result or
// rethrows its exception. Background tasks it started stay pending in `ioc` (they go on in the
// next run_blocking).
template <class T>
T run_blocking(asio::io_context& ioc, asio::awaitable<T> task) {
  auto result = asio::co_spawn(ioc, std::move(task), asio::use_future);
  ioc.restart();
  while (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    if (ioc.run_one() == 0) throw std::logic_error("run_blocking: the task waits for nothing that can happen");
  }
  return result.get();
}

}  // namespace faultline::harness
