// The PodStatus the node agent writes: what it owns replaced, what others own kept, and the
// kubelet's conditions with their reasons.
#include "tests/devcluster/kubelet/pod_status.h"

#include <gtest/gtest.h>

#include "tests/devcluster/kubelet/status_condition.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

PodView Running() {
  PodView view;
  view.phase = "Running";
  view.pod_ip = "10.200.0.5";
  view.host_ip = "10.200.0.2";
  view.start_time = "2026-01-01T00:00:00Z";
  view.initialized = true;
  ContainerView sidecar;
  sidecar.name = "sidecar";
  sidecar.phase = ContainerPhase::kRunning;
  sidecar.started = true;
  sidecar.ready = true;
  ContainerView trainer;
  trainer.name = "trainer";
  trainer.phase = ContainerPhase::kRunning;
  trainer.started = true;
  view.init_containers = {sidecar};
  view.containers = {trainer};
  return view;
}

TEST(PodStatusTest, FieldsOthersOwnStayAndTheKubeletsAreReplaced) {
  const json old = json::parse(R"({"phase": "Pending", "qosClass": "BestEffort", "reason": "Old",
      "conditions": [{"type": "PodScheduled", "status": "True"},
                     {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]})");
  const json status = BuildPodStatus(Running(), old, "2026-01-01T00:00:05Z");
  EXPECT_EQ(status["qosClass"], "BestEffort");
  EXPECT_FALSE(status.contains("reason"));
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["podIPs"], json::parse(R"([{"ip": "10.200.0.5"}])"));
  EXPECT_EQ(status["hostIP"], "10.200.0.2");
  EXPECT_EQ(ConditionOf(status, "PodScheduled")["status"], "True");
  EXPECT_EQ(ConditionOf(status, "DisruptionTarget")["reason"], "EvictionByEvictionAPI");
}

TEST(PodStatusTest, ReadinessWaitsOnEveryUnreadyContainerAndNamesThem) {
  const json status = BuildPodStatus(Running(), json::object(), "t0");
  EXPECT_EQ(ConditionOf(status, "PodReadyToStartContainers")["status"], "True");
  EXPECT_EQ(ConditionOf(status, "Initialized")["status"], "True");
  EXPECT_EQ(ConditionOf(status, "Ready")["status"], "False");
  EXPECT_EQ(ConditionOf(status, "Ready")["reason"], "ContainersNotReady");
  EXPECT_EQ(ConditionOf(status, "Ready")["message"], "containers with unready status: [trainer]");
  PodView ready = Running();
  ready.containers[0].ready = true;
  const json later = BuildPodStatus(ready, status, "t1");
  EXPECT_EQ(ConditionOf(later, "ContainersReady")["status"], "True");
  EXPECT_EQ(ConditionOf(later, "Ready")["lastTransitionTime"], "t1");
  EXPECT_EQ(ConditionOf(later, "Initialized")["lastTransitionTime"], "t0");
}

TEST(PodStatusTest, ACompletedPodSaysSoAndItsSandboxIsGone) {
  PodView done = Running();
  done.phase = "Succeeded";
  const json status = BuildPodStatus(done, json::object(), "t0");
  EXPECT_EQ(ConditionOf(status, "Ready")["reason"], "PodCompleted");
  EXPECT_EQ(ConditionOf(status, "Initialized")["reason"], "PodCompleted");
  EXPECT_EQ(ConditionOf(status, "PodReadyToStartContainers")["status"], "False");
}

TEST(PodStatusTest, APodWaitingOnInitContainersNamesThem) {
  PodView waiting;
  waiting.pod_ip = "10.200.0.5";
  ContainerView preflight;
  preflight.name = "preflight";
  waiting.init_containers = {preflight};
  const json status = BuildPodStatus(waiting, json::object(), "t0");
  EXPECT_EQ(status["phase"], "Pending");
  EXPECT_EQ(ConditionOf(status, "Initialized")["reason"], "ContainersNotInitialized");
  EXPECT_EQ(ConditionOf(status, "Initialized")["message"], "containers with incomplete status: [preflight]");
  EXPECT_EQ(status["initContainerStatuses"][0]["state"]["waiting"]["reason"], "PodInitializing");
}

// A container the runtime could not start has no start time: an empty startedAt made the API
// server refuse every status write of the Pod ("parsing time \"\""), so it stayed ContainerCreating.
TEST(PodStatusTest, AContainerThatNeverStartedHasNoStartTime) {
  PodView view = Running();
  view.containers[0].phase = ContainerPhase::kTerminated;
  view.containers[0].terminated = TerminatedState{128, "StartError", "exec: no such file", "", "t1"};
  const json status = BuildPodStatus(view, json::object(), "t0");
  const json terminated = status["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["reason"], "StartError");
  EXPECT_EQ(terminated["finishedAt"], "t1");
  EXPECT_FALSE(terminated.contains("startedAt"));
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
