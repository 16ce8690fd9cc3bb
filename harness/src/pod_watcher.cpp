#include "faultline/harness/pod_watcher.hpp"

#include <boost/json.hpp>
#include <set>

namespace faultline::harness {
namespace json = boost::json;
namespace {

std::string field(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* cur = &v;
  for (const char* key : path) {
    if (!cur->is_object()) return {};
    cur = cur->get_object().if_contains(key);
    if (cur == nullptr) return {};
  }
  return cur->is_string() ? std::string(cur->get_string()) : std::string();
}

bool has_deletion_timestamp(const json::value& pod) { return !field(pod, {"metadata", "deletionTimestamp"}).empty(); }

}  // namespace

PodWatcher::PodWatcher(KubeClient& client, std::string ns, std::string label_selector, std::uint64_t max_pods,
                       const faults::Clock& clock)
    : client_(client),
      ns_(std::move(ns)),
      selector_(std::move(label_selector)),
      max_pods_(max_pods),
      clock_(clock),
      changed_(client.executor()),
      watch_(client.executor()) {}

void PodWatcher::track(const std::string& type, const json::value& pod, WallTime now) {
  if (obs_.pods.size() >= max_pods_ && !obs_.pods.contains(field(pod, {"metadata", "uid"}))) {
    throw LimitError("pod watch of namespace " + ns_ + ", label " + selector_ + ": more than " +
                     std::to_string(max_pods_) + " pods, far more than the workload creates: something else creates " +
                     "pods with its label");
  }
  apply(obs_, type, pod, now);
}

void PodWatcher::apply(PodObservations& obs, const std::string& type, const json::value& pod, WallTime now) {
  std::string uid = field(pod, {"metadata", "uid"});
  if (uid.empty()) return;
  PodState& p = obs.pods[uid];
  if (p.uid.empty()) {
    p.uid = uid;
    p.created = now;
  }
  p.ns = field(pod, {"metadata", "namespace"});
  p.name = field(pod, {"metadata", "name"});
  p.queue_label = field(pod, {"metadata", "labels", "queue"});
  p.application_id = field(pod, {"metadata", "labels", "applicationId"});
  p.scheduler_name = field(pod, {"spec", "schedulerName"});
  p.node_name = field(pod, {"spec", "nodeName"});
  p.phase = field(pod, {"status", "phase"});
  if (!p.node_name.empty() && !p.bound) p.bound = now;
  if (p.phase == "Running" && !p.running) p.running = now;
  if ((type == "DELETED" || has_deletion_timestamp(pod)) && !p.deleted) p.deleted = now;
  if (type == "DELETED") p.gone = true;
}

asio::awaitable<void> PodWatcher::start() {
  resource_version_ = co_await list_and_reconcile();
  obs_.watched = true;
  watch_.start(run());
}

asio::awaitable<void> PodWatcher::stop() { co_await watch_.stop(); }

std::string PodWatcher::error() const {
  return watch_.error().empty() ? std::string() : "pod watch failed: " + watch_.error();
}

void PodWatcher::mark_deleted_by_harness(const std::string& uid) { obs_.deleted_by_harness.insert(uid); }

asio::awaitable<std::string> PodWatcher::list_and_reconcile() {
  ListResult list = co_await client_.list("/api/v1/namespaces/" + ns_ + "/pods", selector_);
  WallTime now = WallClock::now();
  std::set<std::string> present;
  for (const auto& item : list.items) {
    present.insert(field(item, {"metadata", "uid"}));
    track("ADDED", item, now);
  }
  // Pods we knew that the list no longer has were deleted while we were not watching.
  for (auto& [uid, p] : obs_.pods) {
    if (!present.contains(uid) && !p.gone) {
      if (!p.deleted) p.deleted = now;
      p.gone = true;
    }
  }
  last_change_ = clock_.now();
  changed_.cancel();
  co_return list.resource_version;
}

asio::awaitable<void> PodWatcher::run() {
  auto on_event = [this](const WatchEvent& ev) {
    if (ev.type == "BOOKMARK") return;
    WallTime now = WallClock::now();
    track(ev.type, ev.object, now);
    last_change_ = clock_.now();
    changed_.cancel();
  };
  const std::string pods = "/api/v1/namespaces/" + ns_ + "/pods";
  for (;;) {
    WatchEnd end = co_await client_.watch(pods, resource_version_, on_event, selector_);
    if (end == WatchEnd::stopped) co_return;
    ++relists_;
    resource_version_ = co_await list_and_reconcile();
  }
}

asio::awaitable<bool> PodWatcher::next_change(std::chrono::nanoseconds at_most) {
  changed_.expires_after(at_most);
  auto [ec] = co_await changed_.async_wait(use_tuple);
  co_return ec == asio::error::operation_aborted;  // cancelled by a change (or another waiter)
}

PodObservations PodWatcher::snapshot() const { return obs_; }

PodWatcher::Counts PodWatcher::counts() const {
  Counts c;
  c.last_change = last_change_;
  for (const auto& [uid, p] : obs_.pods) {
    ++c.pods;
    if (!p.live()) continue;
    ++c.live;
    if (p.is_bound()) ++c.bound;
    if (p.phase == "Running") ++c.running;
  }
  return c;
}

}  // namespace faultline::harness
