#include "faultline/harness/object_watcher.hpp"

#include <boost/json.hpp>
#include <set>

namespace faultline::harness {

ObjectWatcher::ObjectWatcher(KubeClient& client, DeclaredEvaluator& evaluator)
    : client_(client), evaluator_(evaluator), collection_(evaluator.collection_path()), watch_(client.executor()) {}

asio::awaitable<std::string> ObjectWatcher::list_and_reconcile() {
  ListResult list = co_await client_.list(collection_, evaluator_.check().watch.label_selector);
  const WallTime now = WallClock::now();
  std::set<std::string> present;
  for (const auto& item : list.items) {
    const auto* meta = item.as_object().if_contains("metadata");
    const auto* uid = meta != nullptr && meta->is_object() ? meta->as_object().if_contains("uid") : nullptr;
    if (uid != nullptr && uid->is_string()) present.insert(std::string(uid->get_string()));
    evaluator_.observe("ADDED", item, now);
  }
  for (const auto& id : evaluator_.live_ids())
    if (!present.contains(id)) evaluator_.forget(id, now);
  co_return list.resource_version;
}

asio::awaitable<void> ObjectWatcher::start() {
  try {
    resource_version_ = co_await list_and_reconcile();
  } catch (const std::exception& e) {
    failed_ = true;
    evaluator_.watch_failed("listing " + collection_ + ": " + e.what());
    co_return;
  }
  evaluator_.watch_established();
  watch_.start(run());
}

asio::awaitable<void> ObjectWatcher::run() {
  auto on_event = [this](const WatchEvent& ev) {
    if (ev.type == "BOOKMARK" || ev.type == "ERROR") return;
    evaluator_.observe(ev.type, ev.object, WallClock::now());
  };
  for (;;) {
    WatchEnd end =
        co_await client_.watch(collection_, resource_version_, on_event, evaluator_.check().watch.label_selector);
    if (end == WatchEnd::stopped) co_return;
    resource_version_ = co_await list_and_reconcile();
  }
}

asio::awaitable<void> ObjectWatcher::stop() {
  const std::string error = watch_.error();  // ended by itself with an error before the stop
  co_await watch_.stop();
  if (!failed_ && !error.empty()) evaluator_.watch_failed("watching " + collection_ + ": " + error);
}

}  // namespace faultline::harness
