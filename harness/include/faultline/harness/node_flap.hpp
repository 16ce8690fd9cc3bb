#pragma once
// The workload's nodeFlap step: deletes the KWOK nodes with the most pods in flight (allocated by
// the scheduler but not bound yet, or bound but not Running yet), waits downFor, creates them again
// and waits until they are Ready.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "faultline/faults/clock.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/workload.hpp"

namespace faultline::harness {

struct PodsInFlight {
  std::uint64_t allocated = 0;  // YuniKorn holds an allocation on the node; the pod is not bound yet
  std::uint64_t bound = 0;      // bound to the node, not Running yet
  std::uint64_t total() const { return allocated + bound; }
};

// Pods in flight per node, from the pod watch and (on YuniKorn) the scheduler's allocations.
std::map<std::string, PodsInFlight> pods_in_flight(const PodObservations& pods,
                                                   const std::optional<YunikornSnapshot>& yunikorn);

// Up to `count` of the `candidates` that have pods in flight, most first (ties in name order).
std::vector<std::string> pick_flap_nodes(const std::map<std::string, PodsInFlight>& in_flight,
                                         const std::set<std::string>& candidates, std::uint64_t count);

struct NodeFlapContext {
  KubeClient& client;
  const PodWatcher& pods;
  std::string yunikorn_url;  // empty: no scheduler allocations to read (kube-scheduler)
  const schema::NodePool& pool;
  const faults::Clock& clock;
  ProgressFn progress;
};

// Carries out one nodeFlap step. Never throws: a step that could not be carried out (no node had
// pods in flight within 30 s, a delete or create failed, the nodes did not come back Ready) has an
// error in its record.
boost::asio::awaitable<StepRecord> run_node_flap(const schema::Phase& step, NodeFlapContext context);

}  // namespace faultline::harness
