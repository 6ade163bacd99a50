// The device manager's rule, table-style: a regular init container's devices reused by the app
// containers, a native sidecar keeping its own, app containers and Pods disjoint, devices freed
// when a Pod ends, a refusal worded as the kubelet's, and the env the process sees.
#include "tests/devcluster/kubelet/device_allocator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>


namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json Container(const std::string& name, int gpus, int rdma = 0, bool sidecar = false) {
  json container = {{"name", name}, {"image", "trainer"}};
  if (gpus > 0) {
    container["resources"]["limits"][kGpuResource] = std::to_string(gpus);
  }
  if (rdma > 0) {
    container["resources"]["limits"][kRdmaResource] = std::to_string(rdma);
  }
  if (sidecar) {
    container["restartPolicy"] = "Always";
  }
  return container;
}

json Pod(const std::string& uid, json init_containers, json containers) {
  return {{"metadata", {{"name", "pod-" + uid}, {"namespace", "default"}, {"uid", uid}}},
          {"spec", {{"initContainers", std::move(init_containers)}, {"containers", std::move(containers)}}}};
}

NodeDevices FourGpusTwoRdma() { return NodeDevices(NodeDeviceInventory(NodeConfig{.name = "node-a", .rdma = 2})); }

using Ids = std::vector<std::string>;

struct ReuseCase {
  const char* name;
  json init_containers;
  json containers;
  // container -> its GPU IDs; containers without GPUs are absent
  std::map<std::string, Ids> want;
};

TEST(DeviceAllocatorTest, RegularInitContainersLendTheirDevicesOnAndSidecarsKeepTheirs) {
  const std::vector<ReuseCase> cases = {
      {"the trainers get exactly the devices the preflight had",
       json::array({Container("sidecar", 0, 0, true), Container("preflight", 2)}),
       json::array({Container("trainer", 2)}),
       {{"preflight", {"0", "1"}}, {"trainer", {"0", "1"}}}},
      {"app containers split the init container's devices and never share one",
       json::array({Container("preflight", 4)}),
       json::array({Container("trainer-0", 2), Container("trainer-1", 2)}),
       {{"preflight", {"0", "1", "2", "3"}}, {"trainer-0", {"0", "1"}}, {"trainer-1", {"2", "3"}}}},
      {"a later init container reuses an earlier one's",
       json::array({Container("first", 1), Container("second", 2)}),
       json::array({Container("main", 2)}),
       {{"first", {"0"}}, {"second", {"0", "1"}}, {"main", {"0", "1"}}}},
      {"an app container wanting more than was reusable takes free ones for the rest",
       json::array({Container("preflight", 1)}),
       json::array({Container("main", 3)}),
       {{"preflight", {"0"}}, {"main", {"0", "1", "2"}}}},
      {"a sidecar's devices are its own: the app container gets others",
       json::array({Container("sidecar", 1, 0, true)}),
       json::array({Container("main", 2)}),
       {{"sidecar", {"0"}}, {"main", {"1", "2"}}}},
      {"a sidecar after an init container takes its devices out of reuse",
       json::array({Container("preflight", 2), Container("sidecar", 1, 0, true)}),
       json::array({Container("main", 2)}),
       {{"preflight", {"0", "1"}}, {"sidecar", {"0"}}, {"main", {"1", "2"}}}},
      {"without init containers every app container gets its own",
       json::array(),
       json::array({Container("a", 1), Container("b", 1), Container("c", 0)}),
       {{"a", {"0"}}, {"b", {"1"}}}},
  };
  for (const ReuseCase& c : cases) {
    NodeDevices node = FourGpusTwoRdma();
    const Admission admission = node.Allocate(Pod("p", c.init_containers, c.containers));
    ASSERT_TRUE(admission.admitted) << c.name << ": " << admission.message;
    std::map<std::string, Ids> got;
    for (const auto& [container, devices] : admission.devices) {
      got[container] = devices.at(kGpuResource);
    }
    EXPECT_EQ(got, c.want) << c.name;
  }
}

TEST(DeviceAllocatorTest, EachResourceFollowsTheRuleOnItsOwn) {
  NodeDevices node = FourGpusTwoRdma();
  const Admission admission = node.Allocate(Pod("p", json::array({Container("preflight", 2, 2)}),
                                                json::array({Container("a", 1, 1), Container("b", 1, 1)})));
  ASSERT_TRUE(admission.admitted) << admission.message;
  EXPECT_EQ(admission.devices.at("preflight").at(kRdmaResource), (Ids{"0", "1"}));
  EXPECT_EQ(admission.devices.at("a").at(kRdmaResource), (Ids{"0"}));
  EXPECT_EQ(admission.devices.at("b").at(kRdmaResource), (Ids{"1"}));
  EXPECT_EQ(admission.devices.at("b").at(kGpuResource), (Ids{"1"}));
}

TEST(DeviceAllocatorTest, TwoPodsOnOneNodeNeverShareADeviceAndAnEndedPodFreesItsOwn) {
  NodeDevices node = FourGpusTwoRdma();
  const json job_pod_0 = Pod("uid-0", json::array({Container("preflight", 2)}), json::array({Container("trainer", 2)}));
  const json job_pod_1 = Pod("uid-1", json::array({Container("preflight", 2)}), json::array({Container("trainer", 2)}));
  const Admission first = node.Allocate(job_pod_0);
  const Admission second = node.Allocate(job_pod_1);
  ASSERT_TRUE(first.admitted && second.admitted) << second.message;
  EXPECT_EQ(first.devices.at("trainer").at(kGpuResource), (Ids{"0", "1"}));
  EXPECT_EQ(second.devices.at("preflight").at(kGpuResource), (Ids{"2", "3"}));
  EXPECT_EQ(second.devices.at("trainer").at(kGpuResource), (Ids{"2", "3"}));

  // Asked again (the kubelet's next pass), a Pod keeps what it holds.
  EXPECT_EQ(node.Allocate(job_pod_0).devices, first.devices);

  const json third = Pod("uid-2", json::array(), json::array({Container("main", 1)}));
  const Admission refused = node.Allocate(third);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(refused.message,
            "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
            "Available: 0, which is unexpected");

  node.Retain({"uid-1"});  // uid-0 finished or was deleted
  EXPECT_EQ(node.InUse(kGpuResource), (std::set<std::string>{"2", "3"}));
  const Admission after = node.Allocate(third);
  ASSERT_TRUE(after.admitted) << after.message;
  EXPECT_EQ(after.devices.at("main").at(kGpuResource), (Ids{"0"}));
}

TEST(DeviceAllocatorTest, ARefusedPodHoldsNothing) {
  NodeDevices node = FourGpusTwoRdma();
  // The preflight fits; the sidecar's own device plus the trainer's four do not.
  const Admission refused =
      node.Allocate(Pod("p", json::array({Container("sidecar", 1, 0, true), Container("preflight", 3)}),
                        json::array({Container("t", 4)})));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.message,
            "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
            "Available: 0, which is unexpected");
  EXPECT_TRUE(node.InUse(kGpuResource).empty());
  const Admission rdma = node.Allocate(Pod("q", json::array(), json::array({Container("t", 0, 3)})));
  EXPECT_EQ(rdma.message,
            "Allocate failed due to requested number of devices unavailable for rdma/rdma_shared_device_a. "
            "Requested: 3, Available: 2, which is unexpected");
}

TEST(DeviceAllocatorTest, ResourcesTheNodeHasNoDevicesForAreNotTheDevicePluginsAndLimitsWin) {
  NodeDevices node(NodeDeviceInventory(NodeConfig{.name = "cpu-only", .gpus = 0}));
  json container = Container("main", 2);
  container["resources"]["requests"] = {{"cpu", "1"}, {"example.com/foo", "1"}};
  const Admission admission = node.Allocate(Pod("p", json::array(), json::array({container})));
  EXPECT_TRUE(admission.admitted);
  EXPECT_TRUE(admission.devices.empty());

  NodeDevices gpus = FourGpusTwoRdma();
  container["resources"]["requests"][kGpuResource] = "1";  // limits say 2
  EXPECT_EQ(gpus.Allocate(Pod("p", json::array(), json::array({container}))).devices.at("main").at(kGpuResource),
            (Ids{"0", "1"}));
}

TEST(DeviceAllocatorTest, TheProcessSeesGpusAsTheNvidiaRuntimeShowsThemAndOtherDevicesByName) {
  const std::map<std::string, std::string> env =
      DeviceEnvironment({{kGpuResource, {"2", "3"}}, {kRdmaResource, {"1"}}});
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"NVIDIA_VISIBLE_DEVICES", "2,3"},
                                                     {"RINGLEADER_DEVCLUSTER_DEVICES_RDMA_RDMA_SHARED_DEVICE_A", "1"}}));
  EXPECT_TRUE(DeviceEnvironment({}).empty());
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
