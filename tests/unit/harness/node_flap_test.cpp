// Which nodes a nodeFlap step takes away: those with the most pods in flight.
#include "faultline/harness/node_flap.hpp"

#include <gtest/gtest.h>

namespace faultline::harness {
namespace {

PodState pod(const std::string& uid, const std::string& node, const std::string& phase) {
  PodState p;
  p.uid = uid;
  p.name = "burst-" + uid;
  p.node_name = node;
  p.phase = phase;
  return p;
}

YkAllocation allocation(const std::string& pod_uid) {
  YkAllocation a;
  a.allocation_key = pod_uid;
  return a;
}

TEST(PodsInFlight, CountsAllocatedButUnboundAndBoundButNotRunning) {
  PodObservations pods;
  pods.pods["a"] = pod("a", "", "Pending");    // allocated on n1 by YuniKorn, bind in flight
  pods.pods["b"] = pod("b", "n1", "Pending");  // bound, not Running yet
  pods.pods["c"] = pod("c", "n1", "Running");  // done: not in flight
  pods.pods["d"] = pod("d", "n2", "Pending");  // bound, not Running yet
  pods.pods["e"] = pod("e", "n2", "Pending");  // deleted: not in flight
  pods.pods["e"].deleted = WallTime{};
  YunikornSnapshot yk;
  yk.nodes = {{"n1", {allocation("a"), allocation("b"), allocation("c")}}, {"n3", {allocation("unknown-pod")}}};
  auto in_flight = pods_in_flight(pods, yk);
  EXPECT_EQ(in_flight["n1"].allocated, 1u);  // a (b and c are bound: counted as bound or not at all)
  EXPECT_EQ(in_flight["n1"].bound, 1u);      // b
  EXPECT_EQ(in_flight["n2"].bound, 1u);      // d
  EXPECT_EQ(in_flight["n3"].total(), 0u);    // an allocation of no pod of the workload
  // Without YuniKorn (kube-scheduler) only the bound pods count.
  EXPECT_EQ(pods_in_flight(pods, std::nullopt)["n1"].total(), 1u);
}

TEST(PickFlapNodes, MostInFlightFirstOnlyWorkloadNodesAtMostCount) {
  std::map<std::string, PodsInFlight> in_flight{{"kwok-node-0", {0, 1}}, {"kwok-node-1", {3, 2}},
                                                {"kwok-node-2", {0, 0}}, {"kwok-node-3", {1, 0}},
                                                {"kwok-node-4", {2, 3}}, {"other-node", {9, 9}}};
  std::set<std::string> candidates{"kwok-node-0", "kwok-node-1", "kwok-node-2", "kwok-node-3", "kwok-node-4"};
  EXPECT_EQ(pick_flap_nodes(in_flight, candidates, 2), (std::vector<std::string>{"kwok-node-1", "kwok-node-4"}));
  // Asked for more than have pods in flight: only those (ties in name order).
  EXPECT_EQ(pick_flap_nodes(in_flight, candidates, 10),
            (std::vector<std::string>{"kwok-node-1", "kwok-node-4", "kwok-node-0", "kwok-node-3"}));
  EXPECT_TRUE(pick_flap_nodes({}, candidates, 5).empty());
}

}  // namespace
}  // namespace faultline::harness
