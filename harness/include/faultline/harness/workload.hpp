#pragma once
// The scenario's workload made real: KWOK fake nodes, then phases of pods at a rate and
// concurrency, all through the apiserver as the harness's own identity. The steps are coroutines on
// the client's (single-threaded) executor; a phase's concurrency is that many coroutines.
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/token_bucket.hpp"

namespace faultline::harness {

// Every pod the harness creates carries this label; the watch and the cleanup select on it.
inline constexpr const char* kWorkloadLabel = "faultline.io/workload";
inline constexpr const char* kPhaseLabel = "faultline.io/phase";

std::string node_name(std::uint64_t index);  // kwok-node-<index>, like the local stack's nodes
// A KWOK node as the KWOK docs recommend: annotation kwok.x-k8s.io/node=fake, label type=kwok,
// taint kwok.x-k8s.io/node=fake:NoSchedule, capacity == allocatable.
boost::json::value make_node(const std::string& name, const std::map<std::string, std::string>& capacity);
// The one test of "this node is Ready": a condition Ready with status True.
bool node_ready(const boost::json::value& node);
// The names of the KWOK nodes (label type=kwok) that are Ready now.
boost::asio::awaitable<std::set<std::string>> ready_kwok_nodes(KubeClient& client);
// The scheduler a phase's pods ask for: the template's, except that the two well-known names
// (yunikorn, default-scheduler) and an empty one mean "the scheduler under test".
std::string pod_scheduler_name(const schema::PodTemplate& t, const std::string& scheduler_under_test);
// A pod of a phase: template labels/requests, the KWOK toleration and node selector.
boost::json::value make_pod(const std::string& ns, const std::string& name, const schema::Phase& phase,
                            const std::string& scheduler_name);
std::string pod_name(const std::string& phase, std::uint64_t index);  // <phase>-00001
// Object `index` (from 1) of an objects step: its template with "{i}" in metadata.name replaced by
// the index, metadata.namespace set to `ns` when the template has none, and the workload and phase
// labels added.
boost::json::value make_object(const schema::ObjectStep& step, const std::string& phase, const std::string& ns,
                               std::uint64_t index);
// The collection an objects step creates in: /apis/apps/v1/namespaces/<ns>/daemonsets.
std::string object_collection(const schema::ObjectStep& step, const std::string& workload_namespace);

struct PhaseResult {
  std::string name;
  std::uint64_t requested = 0;
  std::uint64_t created = 0;
  std::uint64_t failed = 0;         // creations (and, for a churn, deletions) that failed
  std::uint64_t deleted = 0;        // churn: pods deleted at the end of their lifetime
  std::uint64_t most_alive = 0;     // churn: the most pods of this step alive at once
  std::uint64_t left_alive = 0;     // churn: pods younger than their lifetime when it ended
  std::vector<std::string> errors;  // the first few failures
  WallTime started{};
  WallTime finished{};
  double seconds = 0;  // first creation start to last creation end
  double rate() const { return seconds > 0 ? static_cast<double>(created) / seconds : 0; }
};

struct NodesResult {
  std::uint64_t created = 0;
  std::uint64_t existing = 0;  // already there (409), e.g. from an earlier run on this stack
  double seconds = 0;
};

// Progress sink: called with a one-line status, `final` on the last call of a step.
using ProgressFn = std::function<void(const std::string& line, bool final)>;

class Workload {
 public:
  // Deadlines and phase timings read `clock`.
  Workload(KubeClient& client, const schema::Workload& spec, std::string scheduler_under_test, ProgressFn progress,
           const faults::Clock& clock = real_clock());

  boost::asio::awaitable<void> ensure_namespace();
  // Deletes pods left by earlier runs (label faultline.io/workload) and waits until they are gone.
  boost::asio::awaitable<std::uint64_t> delete_leftover_pods(std::chrono::seconds timeout);
  boost::asio::awaitable<NodesResult> create_nodes(unsigned concurrency);
  boost::asio::awaitable<void> wait_nodes_ready(std::chrono::seconds timeout);
  // Told the UID of every pod the harness deletes (a churn), before the delete is sent.
  void on_delete(std::function<void(const std::string& uid)> fn) { on_delete_ = std::move(fn); }
  // Creates the phase's pods (a churn also deletes each `lifetime` after its creation), or an objects
  // step's objects. before_first runs once, just
  // before the first creation (arming faults). status() is appended to progress lines (e.g. "bound 120").
  boost::asio::awaitable<PhaseResult> run_phase(const schema::Phase& phase,
                                                std::function<boost::asio::awaitable<void>()> before_first,
                                                std::function<std::string()> status);

 private:
  KubeClient& client_;
  const schema::Workload& spec_;
  std::string scheduler_;
  ProgressFn progress_;
  const faults::Clock& clock_;
  std::function<void(const std::string&)> on_delete_;
};

}  // namespace faultline::harness
