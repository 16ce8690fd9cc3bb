#include "faultline/harness/yunikorn_rest.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"

namespace faultline::harness {
namespace {

using testing::read_data;

TEST(YunikornRest, QueueTreeIsFlattenedWithLeafAllocations) {
  auto queues = decode_queues(read_data("yunikorn-3355/queues.json"));
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].name, "root");
  EXPECT_FALSE(queues[0].leaf);
  EXPECT_EQ(queues[1].name, "root.default");
  EXPECT_TRUE(queues[1].leaf);
  EXPECT_EQ(queues[1].allocated.at("pods"), 4);
  EXPECT_EQ(queues[1].allocated.at("memory"), 67108864);
}

TEST(YunikornRest, ApplicationsCarryAllocationsWithPodNames) {
  auto apps = decode_applications(read_data("yunikorn-3355/applications.json"));
  ASSERT_EQ(apps.size(), 1u);
  EXPECT_EQ(apps[0].id, "burst-1");
  EXPECT_EQ(apps[0].queue, "root.default");
  EXPECT_EQ(apps[0].state, "Running");
  ASSERT_EQ(apps[0].allocations.size(), 4u);
  EXPECT_EQ(apps[0].allocations[1].allocation_key, "5b1c0c1e-0002-4d6a-9a51-000000000002");
  EXPECT_EQ(apps[0].allocations[1].pod_name, "burst-00002");
  EXPECT_EQ(apps[0].allocations[1].node_id, "kwok-node-1");
  EXPECT_EQ(apps[0].allocations[1].resource.at("pods"), 1);
}

TEST(YunikornRest, NodesCarryTheirAllocations) {
  auto nodes = decode_nodes(read_data("yunikorn-3355/nodes.json"));
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].id, "kwok-node-1");
  ASSERT_EQ(nodes[1].allocations.size(), 2u);
  EXPECT_EQ(nodes[1].allocations[0].application_id, "burst-1");
}

TEST(YunikornRest, EmptyApplicationListIsValid) { EXPECT_TRUE(decode_applications("[]").empty()); }

TEST(YunikornRest, ErrorsNameTheEndpoint) {
  EXPECT_THROW(decode_queues("{not json"), DecodeError);
  try {
    decode_applications(R"({"status_code":404,"message":"Partition not found"})");
    FAIL() << "an error object is not an application list";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("applications"), std::string::npos);
  }
}

}  // namespace
}  // namespace faultline::harness
