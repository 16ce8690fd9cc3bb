#pragma once
// The pod observer: lists, then watches the workload's pods and records each one's history
// (first seen, bound to which node and when, Running, deleted). Relists after a 410 and treats
// pods missing from the relist as deleted while the watch was down.
#include <atomic>
#include <boost/json/value.hpp>
#include <mutex>
#include <string>
#include <thread>

#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/observations.hpp"

namespace faultline::harness {

class PodWatcher {
public:
    struct Counts {
        std::int64_t pods = 0;
        std::int64_t live = 0;
        std::int64_t bound = 0;    // live and bound
        std::int64_t running = 0;  // live and Running
        WallTime lastChange{};
    };

    PodWatcher(KubeClient& client, std::string ns, std::string labelSelector);
    ~PodWatcher();
    PodWatcher(const PodWatcher&) = delete;
    PodWatcher& operator=(const PodWatcher&) = delete;

    void start();  // the first list happens here (throws on failure); the watch runs on a thread
    void stop();
    void mark_deleted_by_harness(const std::string& uid);

    PodObservations snapshot() const;
    Counts counts() const;
    std::string error() const;  // why the watch thread gave up, empty while healthy
    std::int64_t relists() const { return relists_.load(); }

    // Applies one pod object as seen at `now` (exposed for unit tests of the history rules).
    static void apply(PodObservations& obs, const std::string& type, const boost::json::value& pod, WallTime now);

private:
    std::string list_and_reconcile();
    void run();

    KubeClient& client_;
    std::string ns_;
    std::string selector_;
    mutable std::mutex mutex_;
    PodObservations obs_;
    WallTime lastChange_{};
    std::string error_;
    std::atomic<bool> stop_{false};
    std::atomic<std::int64_t> relists_{0};
    std::string resourceVersion_;
    std::thread thread_;
};

}  // namespace faultline::harness
