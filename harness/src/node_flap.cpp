#include "faultline/harness/node_flap.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>

#include "faultline/harness/async.hpp"
#include "faultline/harness/poll.hpp"
#include "faultline/harness/services.hpp"

#include "faultline/harness/gcc12_coroutine_frames.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr seconds kSelectWithin{30};  // a flap waits this long for nodes with pods in flight
constexpr seconds kReadyWithin{120};  // and for the nodes it created again to be Ready
constexpr milliseconds kPoll{250};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string seconds_text(faults::Clock::duration d) {
  return fmt::format("{:.1f}s", std::chrono::duration<double>(d).count());
}

}  // namespace

std::map<std::string, PodsInFlight> pods_in_flight(const PodObservations& pods,
                                                   const std::optional<YunikornSnapshot>& yunikorn) {
  std::map<std::string, PodsInFlight> out;
  for (const auto& [uid, p] : pods.pods)
    if (p.live() && p.is_bound() && p.phase != "Running") ++out[p.node_name].bound;
  if (!yunikorn) return out;
  for (const auto& node : yunikorn->nodes)
    for (const auto& a : node.allocations) {
      auto pod = pods.pods.find(a.allocation_key);  // the k8shim's allocation key is the pod UID
      if (pod != pods.pods.end() && pod->second.live() && !pod->second.is_bound()) ++out[node.id].allocated;
    }
  return out;
}

std::vector<std::string> pick_flap_nodes(const std::map<std::string, PodsInFlight>& in_flight,
                                         const std::set<std::string>& candidates, std::uint64_t count) {
  std::vector<std::pair<std::uint64_t, std::string>> ranked;
  for (const auto& [node, n] : in_flight)
    if (n.total() > 0 && candidates.contains(node)) ranked.emplace_back(n.total(), node);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(ranked[i].second);
  return out;
}

asio::awaitable<StepRecord> run_node_flap(const schema::Phase& step, NodeFlapContext ctx) {
  StepRecord record;
  record.name = step.name;
  record.kind = "nodeFlap";
  record.started = WallClock::now();
  const schema::NodeFlap& flap = *step.node_flap;
  try {
    std::set<std::string> candidates;
    for (std::uint64_t i = 0; i < ctx.pool.count; ++i) candidates.insert(node_name(i));
    std::vector<std::string> nodes;
    std::map<std::string, PodsInFlight> in_flight;
    const auto picked = [&]() -> asio::awaitable<bool> {
      std::optional<YunikornSnapshot> yunikorn;
      if (!ctx.yunikorn_url.empty()) yunikorn = co_await take_yunikorn_snapshot(ctx.yunikorn_url);
      in_flight = pods_in_flight(ctx.pods.snapshot(), yunikorn);
      nodes = pick_flap_nodes(in_flight, candidates, flap.nodes);
      co_return !nodes.empty();
    };
    co_await poll_until(ctx.clock, {kSelectWithin, kPoll}, picked, [] {
      return "no node had pods in flight (allocated or bound, not Running) within " +
             std::to_string(kSelectWithin.count()) + "s: nothing to flap";
    });
    PodsInFlight held;
    for (const auto& n : nodes) {
      held.allocated += in_flight[n].allocated;
      held.bound += in_flight[n].bound;
    }
    record.target = joined(nodes);
    record.started = WallClock::now();
    const auto t0 = ctx.clock.now();
    ctx.progress(
        fmt::format("node flap {}: deleting {} nodes holding {} pods in flight", step.name, nodes.size(), held.total()),
        true);
    for (const auto& n : nodes) {
      const std::string path = "/api/v1/nodes/" + n;
      if (!co_await ctx.client.remove(path)) throw std::runtime_error("delete node " + n + ": it was already gone");
    }
    record.detail = fmt::format(
        "deleted {} of the {} nodes asked for, holding {} pods in flight ({} allocated and not bound, {} bound and "
        "not Running)",
        nodes.size(), flap.nodes, held.total(), held.allocated, held.bound);
    co_await sleep_for(flap.down_for);
    for (const auto& n : nodes) {
      json::value node = make_node(n, ctx.pool.capacity);
      co_await ctx.client.create("/api/v1/nodes", std::move(node));
    }
    record.detail += "; created again after " + seconds_text(ctx.clock.now() - t0);
    const auto all_ready = [&]() -> asio::awaitable<bool> {
      const std::set<std::string> ready = co_await ready_kwok_nodes(ctx.client);
      co_return std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return ready.contains(n); });
    };
    co_await poll_until(ctx.clock, {kReadyWithin, kPoll}, all_ready, [] {
      return "the nodes created again were not all Ready within " + std::to_string(kReadyWithin.count()) + "s";
    });
    record.recovered = WallClock::now();
    record.detail += ", Ready " + seconds_text(ctx.clock.now() - t0) + " after the delete";
    ctx.progress("node flap " + step.name + ": " + record.detail, true);
  } catch (const std::exception& e) {
    record.error = "node flap " + step.name + ": " + e.what();
    ctx.progress(record.error, true);
  }
  co_return record;
}

}  // namespace faultline::harness
