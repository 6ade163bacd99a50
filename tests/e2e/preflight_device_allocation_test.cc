// The preflight container is handed the trainer's own devices: devcluster's node agent plays the
// NVIDIA device plugin (NVIDIA_VISIBLE_DEVICES per container, an init container's devices reused
// by the app containers that ask for the same resource, as the kubelet's device manager does), and
// the real kube-scheduler counts the Node's GPUs from its status and a Pod's request as
// max(largest init container, sum of app containers). This shows the allocation only: devcluster
// has no GPU, so the preflight runs Gloo and never touches the devices it is handed (the preflight
// on a real GPU, with NCCL, is tests/gpu/device_check.sh's).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/audit_log.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The device IDs after "devices: " in a log (comma-separated), or empty when none is printed.
std::set<std::string> DevicesIn(const std::string& log) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("devices: ([^ \\n]+)"))) {
    return {};
  }
  std::set<std::string> ids;
  std::stringstream list(match[1].str());
  for (std::string id; std::getline(list, id, ',');) {
    ids.insert(id);
  }
  return ids;
}

std::string Show(const std::set<std::string>& ids) {
  std::string text;
  for (const std::string& id : ids) {
    text += (text.empty() ? "" : ",") + id;
  }
  return "{" + text + "}";
}

TEST(PreflightDeviceAllocationTest, EachPodsPreflightIsHandedExactlyTheGpusItsTrainerGetsOnAShared4GpuNode) {
  std::string why;
  if (!EndToEnd::Supported(&why)) {
    GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
  }
  // One node with 4 GPUs for two Pods of 2: they fit only if the preflight's 2 GPUs and the
  // trainer's 2 count once (max(init, sum)), not 4 per Pod.
  EndToEnd bed([](devcluster::Options& options) {
    devcluster::NodeConfig node;
    node.name = "node-a";
    node.gpus = 4;
    options.nodes = {node};
  });
  const CommandOutput applied =
      bed.Apply("gpus", JobYaml({.name = "gpus", .replicas = 2, .steps = 10, .gpus_per_replica = 2}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed.WaitForJob("gpus", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed.Diagnostics();

  std::set<std::string> all;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string pod = "gpus-" + std::to_string(rank);
    EXPECT_EQ(bed.Get("pod", pod)["spec"].value("nodeName", ""), "node-a");
    const std::string preflight_log = bed.PodLog(pod, "ringleader-preflight");
    const std::string trainer_log = bed.PodLog(pod, "trainer");
    const std::set<std::string> handed = DevicesIn(preflight_log);
    const std::set<std::string> used = DevicesIn(trainer_log);
    EXPECT_EQ(handed.size(), 2u) << pod << " preflight:\n" << preflight_log;
    EXPECT_EQ(handed, used) << pod << ": the preflight was handed " << Show(handed) << ", the trainer got "
                            << Show(used);
    for (const std::string& id : used) {
      EXPECT_TRUE(all.insert(id).second) << "GPU " << id << " was given to both Pods";
    }
    // The native sidecar holds no GPU: its container asks for none, so the runtime shows none.
    const json sidecar = bed.Get("pod", pod)["spec"]["initContainers"][0];
    EXPECT_EQ(sidecar.value("name", ""), "ringleader-sidecar");
    EXPECT_FALSE(sidecar.value("/resources/limits"_json_pointer, json::object()).contains("nvidia.com/gpu"));
  }
  EXPECT_EQ(all.size(), 4u);
  // What the scheduler counted: the Node's GPUs as its agent registered them, and both Pods bound
  // by kube-scheduler itself.
  const json node = bed.Get("node", "node-a");
  EXPECT_EQ(node["status"]["allocatable"].value("nvidia.com/gpu", ""), "4") << node.dump(2);
  const std::vector<AuditedRequest> audited = ReadAuditLog(bed.cluster().audit_log());
  for (const char* pod : {"gpus-0", "gpus-1"}) {
    EXPECT_TRUE(std::any_of(audited.begin(), audited.end(), [&](const AuditedRequest& request) {
      return request.verb == "create" && request.resource == "pods" && request.subresource == "binding" &&
             request.name == pod && request.user == "system:kube-scheduler" && request.code == 201;
    })) << pod << " was not bound by kube-scheduler";
  }
}

}  // namespace
}  // namespace ringleader::testing
