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

bool has_deletion_timestamp(const json::value& pod) {
    return !field(pod, {"metadata", "deletionTimestamp"}).empty();
}

}  // namespace

PodWatcher::PodWatcher(KubeClient& client, std::string ns, std::string labelSelector)
    : client_(client), ns_(std::move(ns)), selector_(std::move(labelSelector)) {}

PodWatcher::~PodWatcher() { stop(); }

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
    p.queueLabel = field(pod, {"metadata", "labels", "queue"});
    p.applicationId = field(pod, {"metadata", "labels", "applicationId"});
    p.schedulerName = field(pod, {"spec", "schedulerName"});
    p.nodeName = field(pod, {"spec", "nodeName"});
    p.phase = field(pod, {"status", "phase"});
    if (!p.nodeName.empty() && !p.bound) p.bound = now;
    if (p.phase == "Running" && !p.running) p.running = now;
    if ((type == "DELETED" || has_deletion_timestamp(pod)) && !p.deleted) p.deleted = now;
    if (type == "DELETED") p.gone = true;
}

void PodWatcher::start() {
    resourceVersion_ = list_and_reconcile();
    {
        std::lock_guard lock(mutex_);
        obs_.watched = true;
    }
    thread_ = std::thread([this] { run(); });
}

void PodWatcher::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

void PodWatcher::mark_deleted_by_harness(const std::string& uid) {
    std::lock_guard lock(mutex_);
    obs_.deletedByHarness.insert(uid);
}

std::string PodWatcher::list_and_reconcile() {
    ListResult list = client_.list("/api/v1/namespaces/" + ns_ + "/pods", selector_);
    WallTime now = WallClock::now();
    std::lock_guard lock(mutex_);
    std::set<std::string> present;
    for (const auto& item : list.items) {
        present.insert(field(item, {"metadata", "uid"}));
        apply(obs_, "ADDED", item, now);
    }
    // Pods we knew that the list no longer has were deleted while we were not watching.
    for (auto& [uid, p] : obs_.pods) {
        if (!present.contains(uid) && !p.gone) {
            if (!p.deleted) p.deleted = now;
            p.gone = true;
        }
    }
    lastChange_ = now;
    return list.resourceVersion;
}

void PodWatcher::run() {
    auto on_event = [this](const WatchEvent& ev) {
        if (ev.type == "BOOKMARK") return;
        std::lock_guard lock(mutex_);
        WallTime now = WallClock::now();
        apply(obs_, ev.type, ev.object, now);
        lastChange_ = now;
    };
    try {
        while (!stop_) {
            WatchEnd end = client_.watch("/api/v1/namespaces/" + ns_ + "/pods", resourceVersion_, on_event, stop_,
                                         selector_);
            if (end == WatchEnd::stopped) break;
            ++relists_;
            resourceVersion_ = list_and_reconcile();
        }
    } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        error_ = std::string("pod watch failed: ") + e.what();
    }
}

PodObservations PodWatcher::snapshot() const {
    std::lock_guard lock(mutex_);
    return obs_;
}

PodWatcher::Counts PodWatcher::counts() const {
    std::lock_guard lock(mutex_);
    Counts c;
    c.lastChange = lastChange_;
    for (const auto& [uid, p] : obs_.pods) {
        ++c.pods;
        if (!p.live()) continue;
        ++c.live;
        if (p.isBound()) ++c.bound;
        if (p.phase == "Running") ++c.running;
    }
    return c;
}

std::string PodWatcher::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

}  // namespace faultline::harness
