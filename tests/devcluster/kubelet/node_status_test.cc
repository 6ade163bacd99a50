// The Node, its status and its Lease as the node agent writes them, and when a Node counts as
// schedulable.
#include "tests/devcluster/kubelet/node_status.h"

#include <gtest/gtest.h>

#include "tests/devcluster/kubelet/status_condition.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

NodeConfig GpuNode() {
  NodeConfig node;
  node.name = "node-a";
  node.cpu = "16";
  node.memory = "64Gi";
  node.gpus = 8;
  node.rdma = 2;
  node.labels = {{"nvidia.com/gpu.product", "H100"}, {"kubernetes.io/arch", "arm64"}};
  return node;
}

TEST(NodeStatusTest, TheNodeCarriesTheKubeletsLabelsAndTheConfigsOwnOverThem) {
  const json node = NodeObject(GpuNode());
  EXPECT_EQ(node["metadata"]["name"], "node-a");
  const json& labels = node["metadata"]["labels"];
  EXPECT_EQ(labels["kubernetes.io/hostname"], "node-a");
  EXPECT_EQ(labels["kubernetes.io/os"], "linux");
  EXPECT_EQ(labels["kubernetes.io/arch"], "arm64");
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "H100");
  EXPECT_FALSE(node.contains("spec")) << "the taints are the control plane's";
}

TEST(NodeStatusTest, CapacityEqualsAllocatableAndListsDevicesOnlyWhenTheNodeHasThem) {
  const json status = NodeStatus(GpuNode(), 10250, json::object(), "2026-01-01T00:00:00Z");
  EXPECT_EQ(status["capacity"], status["allocatable"]);
  EXPECT_EQ(status["capacity"], (json{{"cpu", "16"},
                                      {"memory", "64Gi"},
                                      {"pods", "110"},
                                      {"nvidia.com/gpu", "8"},
                                      {kRdmaResource, "2"}}));
  NodeConfig plain;
  plain.name = "node-b";
  plain.gpus = 0;
  const json cpu_only = NodeStatus(plain, 10250, json::object(), "2026-01-01T00:00:00Z");
  EXPECT_FALSE(cpu_only["capacity"].contains("nvidia.com/gpu"));
  EXPECT_FALSE(cpu_only["capacity"].contains(kRdmaResource));
}

TEST(NodeStatusTest, ReadyAndNoPressureWithTheKubeletsWordsAddressesAndEndpoint) {
  const json status = NodeStatus(GpuNode(), 41234, json::object(), "2026-01-01T00:00:00Z");
  EXPECT_EQ(ConditionOf(status, "Ready")["status"], "True");
  EXPECT_EQ(ConditionOf(status, "Ready")["reason"], "KubeletReady");
  EXPECT_EQ(ConditionOf(status, "Ready")["message"], "kubelet is posting ready status");
  for (const char* pressure : {"MemoryPressure", "DiskPressure", "PIDPressure"}) {
    EXPECT_EQ(ConditionOf(status, pressure)["status"], "False") << pressure;
  }
  EXPECT_EQ(status["addresses"], json::parse(R"([{"type":"InternalIP","address":"127.0.0.1"},
                                                 {"type":"Hostname","address":"node-a"}])"));
  EXPECT_EQ(status["daemonEndpoints"]["kubeletEndpoint"]["Port"], 41234);
  EXPECT_EQ(status["nodeInfo"]["kubeletVersion"], "v1.37.2");
  EXPECT_EQ(status["nodeInfo"]["operatingSystem"], "linux");
}

TEST(NodeStatusTest, ATransitionTimeStaysWhileTheConditionsStatusDoesNot) {
  const json first = NodeStatus(GpuNode(), 1, json::object(), "2026-01-01T00:00:00Z");
  json previous = first;
  const json again = NodeStatus(GpuNode(), 1, previous, "2026-01-01T00:01:00Z");
  EXPECT_EQ(ConditionOf(again, "Ready")["lastTransitionTime"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(ConditionOf(again, "Ready")["lastHeartbeatTime"], "2026-01-01T00:01:00Z");
  for (json& condition : previous["conditions"]) {
    if (condition["type"] == "Ready") {
      condition["status"] = "Unknown";  // the node lifecycle controller's, after missed renewals
    }
  }
  EXPECT_EQ(ConditionOf(NodeStatus(GpuNode(), 1, previous, "2026-01-01T00:02:00Z"), "Ready")["lastTransitionTime"],
            "2026-01-01T00:02:00Z");
}

TEST(NodeStatusTest, TheLeaseIsHeldByTheNodeForFortySecondsAndOwnedByIt) {
  const json lease = NodeLease("node-a", "uid-1", "2026-01-01T00:00:00.123456Z");
  EXPECT_EQ(lease["metadata"]["namespace"], "kube-node-lease");
  EXPECT_EQ(lease["metadata"]["name"], "node-a");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "node-a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(lease["spec"]["renewTime"], "2026-01-01T00:00:00.123456Z");
  EXPECT_EQ(lease["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_FALSE(NodeLease("node-a", "", "t")["metadata"].contains("ownerReferences"));
}

TEST(NodeStatusTest, MicroTimeHasSixFractionalDigits) {
  const auto time = std::chrono::sys_days{std::chrono::year{2026} / 1 / 2} + std::chrono::hours(3) +
                    std::chrono::microseconds(4'000'005);
  EXPECT_EQ(FormatMicroTime(std::chrono::time_point_cast<std::chrono::system_clock::duration>(time)),
            "2026-01-02T03:00:04.000005Z");
}

TEST(NodeStatusTest, ANodeIsSchedulableOnceReadyAndUntainted) {
  json node = {{"metadata", {{"name", "node-a"}}},
               {"status", NodeStatus(GpuNode(), 1, json::object(), "2026-01-01T00:00:00Z")},
               {"spec", {{"taints", {{{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}}}}}}};
  EXPECT_EQ(NodeNotSchedulableReason(node), "Node node-a still has the node.kubernetes.io/not-ready taint");
  node["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}});
  EXPECT_EQ(NodeNotSchedulableReason(node), "");
  node["status"].erase("conditions");
  EXPECT_EQ(NodeNotSchedulableReason(node), "Node node-a is not Ready (no Ready condition yet)");
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
