#pragma once
// Watches the objects of any resource for a declared check (declared_checks.hpp): lists, then
// watches from the list's resourceVersion, relists after a 410 (objects missing from the relist
// were deleted while the watch was down) and hands every event to the check's evaluator. A
// coroutine on the client's executor, stopped by cancelling it. A watch that cannot be started or
// ends with an error leaves the evaluator with the reason (its result is no-data).
#include <boost/asio/awaitable.hpp>
#include <string>

#include "faultline/harness/async.hpp"
#include "faultline/harness/declared_checks.hpp"
#include "faultline/harness/kube_client.hpp"

namespace faultline::harness {

class ObjectWatcher {
 public:
  ObjectWatcher(KubeClient& client, DeclaredEvaluator& evaluator);
  ObjectWatcher(const ObjectWatcher&) = delete;
  ObjectWatcher& operator=(const ObjectWatcher&) = delete;

  // The first list happens here; a failure is kept in the evaluator, not thrown.
  boost::asio::awaitable<void> start();
  // Cancels the watch, returns once it has ended, and tells the evaluator when it had failed.
  boost::asio::awaitable<void> stop();

 private:
  boost::asio::awaitable<std::string> list_and_reconcile();
  boost::asio::awaitable<void> run();

  KubeClient& client_;
  DeclaredEvaluator& evaluator_;
  std::string collection_;
  std::string resource_version_;
  bool failed_ = false;
  BackgroundTask watch_;
};

}  // namespace faultline::harness
