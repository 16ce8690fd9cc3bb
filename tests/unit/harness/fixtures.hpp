#pragma once
// Observations shaped like a small YUNIKORN-3355 run: four pods of app burst-1 in root.default,
// YuniKorn books all four, but burst-00002's bind failed and it stayed Pending with no node.
#include <string>

#include "faultline/harness/observations.hpp"
#include "faultline/harness/yunikorn_rest.hpp"
#include "faultline/net/certs.hpp"

namespace faultline::harness::testing {

inline std::string read_data(const std::string& name) {
  return net::read_file(std::string(FAULTLINE_TEST_DATA_DIR) + "/harness/" + name);  // throws when missing
}

inline PodState make_pod(int index, const std::string& node, const std::string& phase) {
  PodState p;
  p.ns = "faultline";
  p.name = "burst-0000" + std::to_string(index);
  p.uid = "5b1c0c1e-000" + std::to_string(index) + "-4d6a-9a51-00000000000" + std::to_string(index);
  p.queue_label = "root.default";
  p.application_id = "burst-1";
  p.scheduler_name = "yunikorn";
  p.node_name = node;
  p.phase = phase;
  p.created = WallTime{} + std::chrono::seconds(index);
  if (!node.empty()) p.bound = *p.created + std::chrono::milliseconds(300);
  if (phase == "Running") p.running = *p.created + std::chrono::milliseconds(600);
  return p;
}

inline void put(Observations& obs, PodState p) { obs.pods.pods[p.uid] = std::move(p); }

// The 3355 end state: YuniKorn books 4 pods, only 3 are bound.
inline Observations observations_3355() {
  Observations obs;
  obs.scheduler = "yunikorn";
  obs.harness_user_agent = "faultline-harness";
  obs.pods.watched = true;
  put(obs, make_pod(1, "kwok-node-0", "Running"));
  put(obs, make_pod(2, "", "Pending"));
  put(obs, make_pod(3, "kwok-node-0", "Running"));
  put(obs, make_pod(4, "kwok-node-1", "Running"));
  obs.live_nodes = std::vector<std::string>{"kwok-node-0", "kwok-node-1"};
  YunikornSnapshot yk;
  yk.queues = decode_queues(read_data("yunikorn-3355/queues.json"));
  yk.applications = decode_applications(read_data("yunikorn-3355/applications.json"));
  yk.nodes = decode_nodes(read_data("yunikorn-3355/nodes.json"));
  obs.yunikorn = yk;
  auto audit = audit::decode_lines(read_data("yunikorn-3355/audit.jsonl"));
  if (audit.malformed > 0) throw std::runtime_error("yunikorn-3355/audit.jsonl: " + audit.first_error);
  obs.audit = std::move(audit.records);
  return obs;
}

// The same data after a healthy run: burst-00002 was bound too.
inline Observations observations_healthy() {
  Observations obs = observations_3355();
  put(obs, make_pod(2, "kwok-node-1", "Running"));
  return obs;
}

}  // namespace faultline::harness::testing
