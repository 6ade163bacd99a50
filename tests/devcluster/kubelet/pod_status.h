// What devcluster's kubelet knows about a Pod, and the core/v1 PodStatus it writes for it: the
// phase, podIP, conditions and per-container states that the operator and kubectl read.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ringleader::devcluster::kubelet {

enum class ContainerPhase { kWaiting, kRunning, kTerminated };

struct TerminatedState {
  int exit_code = 0;
  std::string reason;   // "Completed", "Error", "OOMKilled"-style CamelCase
  std::string message;  // the log tail, under FallbackToLogsOnError
  std::string started_at;
  std::string finished_at;
};

struct ContainerView {
  std::string name;
  std::string image;
  ContainerPhase phase = ContainerPhase::kWaiting;
  std::string waiting_reason = "PodInitializing";
  std::string waiting_message;
  std::string started_at;                          // while running
  std::optional<TerminatedState> terminated;       // the current state, when kTerminated
  std::optional<TerminatedState> last_terminated;  // the run before a restart
  bool ready = false;
  bool started = false;  // the startup probe passed (or there is none) and it runs
  int restarts = 0;
};

struct PodView {
  std::string phase = "Pending";  // Pending, Running, Succeeded, Failed
  std::string reason;
  std::string message;
  std::string pod_ip;
  std::string host_ip;
  std::string start_time;
  bool initialized = false;  // every init container completed or, for sidecars, started
  std::vector<ContainerView> init_containers;
  std::vector<ContainerView> containers;
};

// The Pod's new status: `old_status` with the fields the kubelet owns replaced (phase, reason,
// message, podIP(s), hostIP(s), startTime, container statuses, and the conditions
// PodReadyToStartContainers, Initialized, ContainersReady and Ready with the kubelet's reasons and
// messages). What others own stays: qosClass, PodScheduled and any other condition
// (DisruptionTarget, readiness gates). A condition's lastTransitionTime moves only when its status
// changes.
nlohmann::json BuildPodStatus(const PodView& view, const nlohmann::json& old_status, const std::string& now);

}  // namespace ringleader::devcluster::kubelet
