// The scheduling decision, table-style: each filter, host ports under hostNetwork, the init and
// sidecar request rule, GPUs, the score's tie-break and the FailedScheduling text.
#include "tests/devcluster/scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Node(const std::string& name, const std::string& cpu = "8", const std::string& memory = "32Gi",
          const std::string& gpus = "4", json labels = json::object()) {
  labels["kubernetes.io/hostname"] = name;
  json allocatable = {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}};
  if (!gpus.empty()) {
    allocatable[kGpuResource] = gpus;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"allocatable", allocatable}, {"capacity", allocatable}}}};
}

json Container(const std::string& name, json requests = json::object(), json limits = json::object()) {
  json container = {{"name", name}, {"image", "busybox"}};
  if (!requests.empty()) {
    container["resources"]["requests"] = requests;
  }
  if (!limits.empty()) {
    container["resources"]["limits"] = limits;
  }
  return container;
}

json Pod(const std::string& name, json containers, const std::string& node = "") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"containers", containers}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
  }
  return pod;
}

// A Pod whose one container exposes `ports` ({containerPort, hostPort?, protocol?, hostIP?}).
json PortPod(const std::string& name, json ports, bool host_network, const std::string& node = "") {
  json container = Container("main");
  container["ports"] = ports;
  json pod = Pod(name, json::array({container}), node);
  if (host_network) {
    pod["spec"]["hostNetwork"] = true;
  }
  return pod;
}

Resources Requests(const json& pod) {
  std::string error;
  const auto requests = PodRequests(pod, error);
  EXPECT_TRUE(requests.has_value()) << error;
  return requests.value_or(Resources{});
}

TEST(SchedulerTest, LimitsStandInForAbsentRequestsPerResource) {
  const json pod = Pod("p", json::array({Container("a", {{"cpu", "250m"}}, {{"cpu", "1"}, {"memory", "1Gi"}}),
                                         Container("b", {}, {{kGpuResource, "2"}, {"cpu", "0.5"}})}));
  EXPECT_EQ(Requests(pod), (Resources{750, 1 << 30, {{kGpuResource, 2}}}));
}

struct InitCase {
  const char* name;
  json init_containers;
  Resources want;
};

TEST(SchedulerTest, InitContainersNeedTheLargerOfTheirPeakAndTheRunningPodWhileSidecarsAdd) {
  const json main_container = Container("main", {{"cpu", "1"}, {"memory", "1Gi"}});
  const json big_init = Container("migrate", {{"cpu", "4"}, {"memory", "512Mi"}});
  json sidecar = Container("sidecar", {{"cpu", "500m"}, {"memory", "256Mi"}, {kGpuResource, "1"}});
  sidecar["restartPolicy"] = "Always";
  const std::vector<InitCase> cases = {
      {"no init containers", json::array(), {1000, 1 << 30, {}}},
      {"an init container larger in cpu only", json::array({big_init}), {4000, 1 << 30, {}}},
      {"a sidecar adds to the regular containers", json::array({sidecar}),
       {1500, (1 << 30) + (256 << 20), {{kGpuResource, 1}}}},
      // The init container after the sidecar runs beside it: 4 + 0.5 cpu.
      {"sidecar then init", json::array({sidecar, big_init}), {4500, (1 << 30) + (256 << 20), {{kGpuResource, 1}}}},
      // Before the sidecar starts, the init container runs alone.
      {"init then sidecar", json::array({big_init, sidecar}), {4000, (1 << 30) + (256 << 20), {{kGpuResource, 1}}}},
  };
  for (const InitCase& c : cases) {
    json pod = Pod("p", json::array({main_container}));
    pod["spec"]["initContainers"] = c.init_containers;
    EXPECT_EQ(Requests(pod), c.want) << c.name;
  }
}

TEST(SchedulerTest, OverheadAddsToThePod) {
  json pod = Pod("p", json::array({Container("main", {{"cpu", "1"}})}));
  pod["spec"]["overhead"] = {{"cpu", "100m"}, {"memory", "64Mi"}};
  EXPECT_EQ(Requests(pod), (Resources{1100, 64 << 20, {}}));
}

TEST(SchedulerTest, AnUnparsableQuantityIsNamed) {
  const json pod = Pod("p", json::array({Container("main", {{"memory", "lots"}})}));
  std::string error;
  EXPECT_FALSE(PodRequests(pod, error).has_value());
  EXPECT_EQ(error, "invalid quantity for memory: \"lots\"");
  EXPECT_EQ(Schedule(pod, {Node("node-a")}, {}).message, "Pod has an invalid quantity for memory: \"lots\"");
}

struct PortCase {
  const char* name;
  json existing_ports;
  bool existing_host_network;
  json wanted_ports;
  bool wanted_host_network;
  bool conflict;
};

TEST(SchedulerTest, NodePortsMatchProtocolAndHostIpWithTheWildcardConflictingWithAll) {
  const std::vector<PortCase> cases = {
      {"same hostPort", json::array({{{"containerPort", 80}, {"hostPort", 8080}}}), false,
       json::array({{{"containerPort", 81}, {"hostPort", 8080}}}), false, true},
      {"different hostPort", json::array({{{"containerPort", 80}, {"hostPort", 8080}}}), false,
       json::array({{{"containerPort", 80}, {"hostPort", 8081}}}), false, false},
      {"containerPort alone takes no host port", json::array({{{"containerPort", 80}}}), false,
       json::array({{{"containerPort", 80}}}), false, false},
      {"TCP and UDP do not collide", json::array({{{"containerPort", 53}, {"hostPort", 53}}}), false,
       json::array({{{"containerPort", 53}, {"hostPort", 53}, {"protocol", "UDP"}}}), false, false},
      {"distinct host IPs do not collide",
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.1"}}}), false,
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.2"}}}), false, false},
      {"the same host IP collides",
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.1"}}}), false,
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.1"}}}), false, true},
      {"a wildcard wanted collides with a specific IP",
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.1"}}}), false,
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "0.0.0.0"}}}), false, true},
      {"a specific IP wanted collides with an empty hostIP",
       json::array({{{"containerPort", 80}, {"hostPort", 80}}}), false,
       json::array({{{"containerPort", 80}, {"hostPort", 80}, {"hostIP", "10.0.0.1"}}}), false, true},
      {"hostNetwork: containerPorts are host ports", json::array({{{"containerPort", 29500}}}), true,
       json::array({{{"containerPort", 29500}}}), true, true},
      {"hostNetwork Pod against a hostPort", json::array({{{"containerPort", 1}, {"hostPort", 29500}}}), false,
       json::array({{{"containerPort", 29500}}}), true, true},
      {"hostNetwork Pods on different ports", json::array({{{"containerPort", 29500}}}), true,
       json::array({{{"containerPort", 29501}}}), true, false},
  };
  for (const PortCase& c : cases) {
    const json existing = PortPod("existing", c.existing_ports, c.existing_host_network, "node-a");
    const json wanted = PortPod("wanted", c.wanted_ports, c.wanted_host_network);
    const ScheduleResult result = Schedule(wanted, {Node("node-a")}, {existing});
    if (c.conflict) {
      EXPECT_EQ(result.node, "") << c.name;
      EXPECT_EQ(result.message,
                "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.")
          << c.name;
    } else {
      EXPECT_EQ(result.node, "node-a") << c.name << ": " << result.message;
    }
  }
}

TEST(SchedulerTest, SidecarHostPortsCountButOrdinaryInitContainersDoNot) {
  json existing = Pod("existing", json::array({Container("main")}), "node-a");
  existing["spec"]["hostNetwork"] = true;
  json sidecar = Container("sidecar");
  sidecar["restartPolicy"] = "Always";
  sidecar["ports"] = json::array({{{"containerPort", 9400}}});
  existing["spec"]["initContainers"] = json::array({sidecar});
  const json wanted = PortPod("wanted", json::array({{{"containerPort", 9400}}}), true);
  EXPECT_EQ(Schedule(wanted, {Node("node-a")}, {existing}).node, "");

  existing["spec"]["initContainers"][0].erase("restartPolicy");
  EXPECT_EQ(Schedule(wanted, {Node("node-a")}, {existing}).node, "node-a");
}

TEST(SchedulerTest, FinishedPodsAndPodsElsewhereHoldNoPorts) {
  const json wanted = PortPod("wanted", json::array({{{"containerPort", 29500}}}), true);
  json done = PortPod("done", json::array({{{"containerPort", 29500}}}), true, "node-a");
  done["status"]["phase"] = "Succeeded";
  const json pending = PortPod("pending", json::array({{{"containerPort", 29500}}}), true);
  const json elsewhere = PortPod("elsewhere", json::array({{{"containerPort", 29500}}}), true, "node-b");
  EXPECT_EQ(Schedule(wanted, {Node("node-a")}, {done, pending, elsewhere}).node, "node-a");
}

TEST(SchedulerTest, NodeSelectorNeedsEveryLabel) {
  json pod = Pod("p", json::array({Container("main")}));
  pod["spec"]["nodeSelector"] = {{"gpu", "h100"}, {"zone", "a"}};
  const std::vector<json> nodes = {Node("node-a", "8", "32Gi", "4", {{"gpu", "h100"}}),
                                   Node("node-b", "8", "32Gi", "4", {{"gpu", "h100"}, {"zone", "a"}}),
                                   Node("node-c", "8", "32Gi", "4", {{"gpu", "a100"}, {"zone", "a"}})};
  EXPECT_EQ(Schedule(pod, nodes, {}).node, "node-b");
  pod["spec"]["nodeSelector"]["zone"] = "b";
  EXPECT_EQ(Schedule(pod, nodes, {}).message,
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.");
}

TEST(SchedulerTest, UnschedulableNodesAreSkipped) {
  json cordoned = Node("node-a");
  cordoned["spec"]["unschedulable"] = true;
  const json pod = Pod("p", json::array({Container("main")}));
  EXPECT_EQ(Schedule(pod, {cordoned, Node("node-b")}, {}).node, "node-b");
  EXPECT_EQ(Schedule(pod, {cordoned}, {}).message, "0/1 nodes are available: 1 node(s) were unschedulable.");
}

TEST(SchedulerTest, ResourcesFitCountsWhatBoundPodsRequest) {
  const std::vector<json> nodes = {Node("node-a", "4", "8Gi"), Node("node-b", "4", "8Gi")};
  const std::vector<json> bound = {Pod("a1", json::array({Container("m", {{"cpu", "3"}})}), "node-a"),
                                   Pod("b1", json::array({Container("m", {{"memory", "7Gi"}})}), "node-b")};
  const json small = Pod("p", json::array({Container("m", {{"cpu", "1"}, {"memory", "1Gi"}})}));
  EXPECT_EQ(Schedule(small, nodes, bound).node, "node-a");  // fits both; node-a has more left over
  const json cpu_heavy = Pod("p", json::array({Container("m", {{"cpu", "1500m"}})}));
  EXPECT_EQ(Schedule(cpu_heavy, nodes, bound).node, "node-b");
  const json both = Pod("p", json::array({Container("m", {{"cpu", "2"}, {"memory", "2Gi"}})}));
  EXPECT_EQ(Schedule(both, nodes, bound).message,
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.");
  const json huge = Pod("p", json::array({Container("m", {{"cpu", "5"}, {"memory", "9Gi"}})}));
  EXPECT_EQ(Schedule(huge, nodes, {}).message,
            "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.");
}

TEST(SchedulerTest, GpusAreWholeAndNodesWithoutThemHaveNone) {
  const std::vector<json> nodes = {Node("cpu-only", "8", "32Gi", ""), Node("gpu-node", "8", "32Gi", "4")};
  const json three = Pod("p", json::array({Container("m", {}, {{kGpuResource, "3"}})}));
  EXPECT_EQ(Schedule(three, nodes, {}).node, "gpu-node");
  const std::vector<json> bound = {Pod("b", json::array({Container("m", {}, {{kGpuResource, "2"}})}), "gpu-node")};
  EXPECT_EQ(Schedule(three, nodes, bound).message, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  const json two = Pod("p", json::array({Container("m", {{kGpuResource, "2"}})}));
  EXPECT_EQ(Schedule(two, nodes, bound).node, "gpu-node");
}

// The preflight's shape: a regular init container asks for what the trainers ask for together.
TEST(SchedulerTest, DevicesOfAnInitContainerCostNothingBeyondTheAppContainersSum) {
  constexpr const char* kRdma = "rdma/rdma_shared_device_a";
  const json trainer = Container("trainer", {}, {{kGpuResource, "2"}, {kRdma, "1"}});
  json pod = Pod("p", json::array({trainer, trainer}));
  pod["spec"]["initContainers"] =
      json::array({Container("preflight", {}, {{kGpuResource, "4"}, {kRdma, "2"}})});
  EXPECT_EQ(Requests(pod), (Resources{0, 0, {{kGpuResource, 4}, {kRdma, 2}}}));
  json node = Node("node-a");  // 4 GPUs
  EXPECT_EQ(Schedule(pod, {node}, {}).message, "0/1 nodes are available: 1 Insufficient " + std::string(kRdma) + ".");
  node["status"]["allocatable"][kRdma] = "2";
  EXPECT_EQ(Schedule(pod, {node}, {}).node, "node-a");
  pod["spec"]["initContainers"][0]["resources"]["limits"][kGpuResource] = "5";
  EXPECT_EQ(Schedule(pod, {node}, {}).message, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST(SchedulerTest, TooManyPodsWhenTheNodeIsFull) {
  json node = Node("node-a");
  node["status"]["allocatable"]["pods"] = "1";
  const json pod = Pod("p", json::array({Container("main")}));
  EXPECT_EQ(Schedule(pod, {node}, {Pod("there", json::array({Container("m")}), "node-a")}).message,
            "0/1 nodes are available: 1 Too many pods.");
}

TEST(SchedulerTest, LeastAllocatedWinsAndTiesGoToTheFirstName) {
  const std::vector<json> nodes = {Node("node-b"), Node("node-a")};
  const json pod = Pod("p", json::array({Container("m", {{"cpu", "1"}})}));
  EXPECT_EQ(Schedule(pod, nodes, {}).node, "node-a");
  // A Pod without requests still counts (100m, 200Mi) when scoring, so the next one spreads.
  const std::vector<json> bound = {Pod("x", json::array({Container("m")}), "node-a")};
  EXPECT_EQ(Schedule(pod, nodes, bound).node, "node-b");
}

TEST(SchedulerTest, ReasonsAreCountedPerNodeAndSortedAsKubeSchedulerPrintsThem) {
  const json existing = PortPod("existing", json::array({{{"containerPort", 29500}}}), true, "node-a");
  json pod = PortPod("wanted", json::array({{{"containerPort", 29500}}}), true);
  pod["spec"]["nodeSelector"] = {{"pool", "train"}};
  const std::vector<json> nodes = {Node("node-a", "8", "32Gi", "4", {{"pool", "train"}}), Node("node-b"),
                                   Node("node-c", "8", "32Gi", "4", {{"pool", "train"}})};
  pod["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", "10"}};
  EXPECT_EQ(Schedule(pod, nodes, {existing}).message,
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports for the requested pod "
            "ports, 1 node(s) didn't match Pod's node affinity/selector.");
  EXPECT_EQ(Schedule(pod, {}, {}).message, "no nodes available to schedule pods");
}

}  // namespace
}  // namespace ringleader::devcluster
