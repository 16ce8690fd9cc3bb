#pragma once
// What the harness saw during a run: the raw material every check is a pure function of.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "faultline/audit/record.hpp"

namespace faultline::harness {

using WallClock = std::chrono::system_clock;
using WallTime = WallClock::time_point;

// One pod of the workload, as the pod watch saw it over the whole run.
struct PodState {
  std::string ns;
  std::string name;
  std::string uid;
  std::string queue_label;     // label `queue` (YuniKorn's queue selector), may be empty
  std::string application_id;  // label `applicationId`, may be empty
  std::string scheduler_name;  // spec.schedulerName
  std::string node_name;       // last spec.nodeName seen
  std::string phase;           // last status.phase seen
  std::optional<WallTime> created;
  std::optional<WallTime> bound;    // first time spec.nodeName was non-empty
  std::optional<WallTime> running;  // first time phase was Running
  std::optional<WallTime> deleted;  // DELETED event or deletionTimestamp first seen
  bool gone = false;                // a DELETED watch event arrived (object no longer exists)

  bool live() const { return !deleted.has_value(); }
  bool is_bound() const { return !node_name.empty(); }
};

struct PodObservations {
  bool watched = false;                      // the watch ran and delivered its initial list
  std::map<std::string, PodState> pods;      // by UID
  std::set<std::string> deleted_by_harness;  // UIDs the harness itself deleted
};

// YuniKorn REST API (v1.9.0 dao shapes), reduced to what the checks need.
struct YkAllocation {
  std::string allocation_key;  // the k8shim uses the pod UID
  std::string application_id;
  std::string node_id;
  std::string pod_name;  // allocation tag kubernetes.io/meta/podName when present
  std::map<std::string, std::int64_t> resource;
};

struct YkApplication {
  std::string id;
  std::string queue;
  std::string state;
  std::vector<YkAllocation> allocations;
};

struct YkQueue {
  std::string name;  // full path, e.g. root.default
  bool leaf = false;
  std::map<std::string, std::int64_t> allocated;
};

struct YkNode {
  std::string id;
  std::vector<YkAllocation> allocations;
};

struct YunikornSnapshot {
  WallTime at{};
  std::vector<YkQueue> queues;  // flattened tree, parents before children
  std::vector<YkApplication> applications;
  std::vector<YkNode> nodes;
};

// One line of the proxy's audit log (docs/proxy.md, "Audit record"), decoded with the proxy's own codec.
using AuditRecord = audit::Record;

struct Observations {
  std::string scheduler;           // "yunikorn" or "kube-scheduler"
  std::string harness_user_agent;  // deletes from this agent are the harness's own
  PodObservations pods;
  std::optional<std::vector<std::string>> live_nodes;  // node names listed at the end
  std::optional<YunikornSnapshot> yunikorn;            // final snapshot (after settle)
  std::optional<std::vector<AuditRecord>> audit;       // nullopt: no proxy audit collected
};

}  // namespace faultline::harness
