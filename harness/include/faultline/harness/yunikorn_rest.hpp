#pragma once
// Decoding YuniKorn's REST API (v1.9.0 webservice dao shapes).
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/harness/observations.hpp"

namespace faultline::harness {

struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// GET /ws/v1/partition/default/queues: one PartitionQueueDAOInfo tree; returned flattened.
std::vector<YkQueue> decode_queues(std::string_view json);
// GET /ws/v1/partition/default/applications/active: an array of ApplicationDAOInfo.
std::vector<YkApplication> decode_applications(std::string_view json);
// GET /ws/v1/partition/default/nodes: an array of NodeDAOInfo.
std::vector<YkNode> decode_nodes(std::string_view json);

}  // namespace faultline::harness
