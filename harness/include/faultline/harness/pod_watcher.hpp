#pragma once
// The pod observer: lists, then watches the workload's pods and records each one's history
// (first seen, bound to which node and when, Running, deleted). Relists after a 410 and treats
// pods missing from the relist as deleted while the watch was down. The watch is a coroutine on
// the client's executor, stopped by cancelling it. It tracks at most `max_pods` pods: one more
// ends the watch with a LimitError (something else creates pods with the workload's label).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "faultline/harness/async.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/token_bucket.hpp"

namespace faultline::harness {

class PodWatcher {
 public:
  struct Counts {
    std::int64_t pods = 0;
    std::int64_t live = 0;
    std::int64_t bound = 0;    // live and bound
    std::int64_t running = 0;  // live and Running
    SteadyTime last_change{};  // on the watcher's clock

    // Every live pod bound and Running, and the watch has delivered at least the `created` pods
    // the harness created (it lags behind the creations: judged earlier, the last ones of a phase
    // were missed here and found Pending by the checks a moment later).
    bool settled(std::int64_t created) const { return live > 0 && bound == live && running == live && pods >= created; }
  };

  PodWatcher(KubeClient& client, std::string ns, std::string label_selector, std::uint64_t max_pods,
             const faults::Clock& clock = real_clock());
  // Destroying it cancels a watch that is still running; stop() first to wait for its end.
  PodWatcher(const PodWatcher&) = delete;
  PodWatcher& operator=(const PodWatcher&) = delete;

  // The first list happens here (throws on failure); then the watch runs on its own.
  boost::asio::awaitable<void> start();
  // Cancels the watch and returns once it has ended.
  boost::asio::awaitable<void> stop();
  void mark_deleted_by_harness(const std::string& uid);

  PodObservations snapshot() const;
  Counts counts() const;
  std::string error() const;  // why the watch gave up, empty while healthy
  std::int64_t relists() const { return relists_; }
  // Returns at the watch's next change of a pod (an event other than a bookmark, or a relist) or
  // once `at_most` has passed (a real timer), whichever comes first; true when a change ended the
  // wait. Settling looks again as soon as a pod changes instead of on a fixed poll.
  boost::asio::awaitable<bool> next_change(std::chrono::nanoseconds at_most);

  // Applies one pod object as seen at `now` (exposed for unit tests of the history rules).
  static void apply(PodObservations& obs, const std::string& type, const boost::json::value& pod, WallTime now);

 private:
  boost::asio::awaitable<std::string> list_and_reconcile();
  boost::asio::awaitable<void> run();
  void track(const std::string& type, const boost::json::value& pod, WallTime now);

  // Everything runs on the client's (single-threaded) executor: no locks.
  KubeClient& client_;
  std::string ns_;
  std::string selector_;
  std::uint64_t max_pods_;
  PodObservations obs_;
  const faults::Clock& clock_;
  SteadyTime last_change_{};
  std::int64_t relists_ = 0;
  std::string resource_version_;
  boost::asio::steady_timer changed_;  // next_change() waits on it; a change cancels it
  BackgroundTask watch_;
};

}  // namespace faultline::harness
