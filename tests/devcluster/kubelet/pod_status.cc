// BuildPodStatus: a PodView as core/v1 PodStatus JSON.
#include "tests/devcluster/kubelet/pod_status.h"

#include <algorithm>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json TerminatedJson(const TerminatedState& state) {
  json out = {{"exitCode", state.exit_code},
              {"reason", state.reason},
              {"startedAt", state.started_at},
              {"finishedAt", state.finished_at}};
  if (!state.message.empty()) {
    out["message"] = state.message;
  }
  return out;
}

json ContainerStatusJson(const ContainerView& view) {
  json state;
  switch (view.phase) {
    case ContainerPhase::kWaiting: {
      json waiting = {{"reason", view.waiting_reason}};
      if (!view.waiting_message.empty()) {
        waiting["message"] = view.waiting_message;
      }
      state = {{"waiting", waiting}};
      break;
    }
    case ContainerPhase::kRunning:
      state = {{"running", {{"startedAt", view.started_at}}}};
      break;
    case ContainerPhase::kTerminated:
      state = {{"terminated", TerminatedJson(view.terminated.value_or(TerminatedState{}))}};
      break;
  }
  json out = {{"name", view.name},   {"image", view.image},        {"imageID", ""},
              {"ready", view.ready}, {"started", view.started},    {"restartCount", view.restarts},
              {"state", state},      {"lastState", json::object()}};
  if (view.last_terminated) {
    out["lastState"] = {{"terminated", TerminatedJson(*view.last_terminated)}};
  }
  return out;
}

const json* OldCondition(const json& old_status, const std::string& type) {
  if (!old_status.is_object() || !old_status.contains("conditions") || !old_status["conditions"].is_array()) {
    return nullptr;
  }
  for (const json& condition : old_status["conditions"]) {
    if (condition.is_object() && condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

json Condition(const json& old_status, const std::string& type, bool value, const std::string& reason,
               const std::string& now) {
  const std::string status = value ? "True" : "False";
  const json* old = OldCondition(old_status, type);
  const bool same = old != nullptr && old->value("status", "") == status;
  json out = {{"type", type},
              {"status", status},
              {"lastProbeTime", nullptr},
              {"lastTransitionTime", same ? old->value("lastTransitionTime", now) : now}};
  if (!value && !reason.empty()) {
    out["reason"] = reason;
  }
  return out;
}

}  // namespace

json BuildPodStatus(const PodView& view, const json& old_status, const std::string& now) {
  json status = {{"phase", view.phase}};
  if (!view.reason.empty()) {
    status["reason"] = view.reason;
  }
  if (!view.message.empty()) {
    status["message"] = view.message;
  }
  if (!view.pod_ip.empty()) {
    status["podIP"] = view.pod_ip;
    status["podIPs"] = json::array({{{"ip", view.pod_ip}}});
  }
  if (!view.host_ip.empty()) {
    status["hostIP"] = view.host_ip;
    status["hostIPs"] = json::array({{{"ip", view.host_ip}}});
  }
  if (!view.start_time.empty()) {
    status["startTime"] = view.start_time;
  }
  const auto all_ready = [](const std::vector<ContainerView>& containers) {
    return std::all_of(containers.begin(), containers.end(), [](const ContainerView& c) { return c.ready; });
  };
  // Sidecars (init containers that keep running) count towards readiness, as in Kubernetes.
  std::vector<ContainerView> running_sidecars;
  for (const ContainerView& init : view.init_containers) {
    if (init.phase == ContainerPhase::kRunning) {
      running_sidecars.push_back(init);
    }
  }
  const bool running = view.phase == "Running";
  const bool ready = running && all_ready(view.containers) && all_ready(running_sidecars);
  json conditions = json::array();
  if (const json* scheduled = OldCondition(old_status, "PodScheduled")) {
    conditions.push_back(*scheduled);
  }
  // Conditions the kubelet does not own (DisruptionTarget from an eviction, readiness gates) stay.
  if (old_status.is_object() && old_status.contains("conditions") && old_status["conditions"].is_array()) {
    for (const json& condition : old_status["conditions"]) {
      const std::string type = condition.is_object() ? condition.value("type", "") : "";
      if (type != "PodScheduled" && type != "Initialized" && type != "ContainersReady" && type != "Ready" &&
          type != "PodReadyToStartContainers") {
        conditions.push_back(condition);
      }
    }
  }
  conditions.push_back(Condition(old_status, "Initialized", view.initialized, "ContainersNotInitialized", now));
  conditions.push_back(Condition(old_status, "ContainersReady", ready, "ContainersNotReady", now));
  conditions.push_back(Condition(old_status, "Ready", ready, "ContainersNotReady", now));
  status["conditions"] = std::move(conditions);
  json init_statuses = json::array();
  for (const ContainerView& init : view.init_containers) {
    init_statuses.push_back(ContainerStatusJson(init));
  }
  json statuses = json::array();
  for (const ContainerView& container : view.containers) {
    statuses.push_back(ContainerStatusJson(container));
  }
  if (!init_statuses.empty()) {
    status["initContainerStatuses"] = std::move(init_statuses);
  }
  status["containerStatuses"] = std::move(statuses);
  return status;
}

}  // namespace ringleader::devcluster::kubelet
