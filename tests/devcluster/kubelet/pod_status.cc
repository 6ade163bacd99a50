// BuildPodStatus: a PodView as core/v1 PodStatus JSON.
#include "tests/devcluster/kubelet/pod_status.h"

#include <utility>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json TerminatedJson(const TerminatedState& state) {
  json out = {{"exitCode", state.exit_code}, {"reason", state.reason}, {"finishedAt", state.finished_at}};
  // A container that never started (StartError) has no start time; "" is no time to the API.
  if (!state.started_at.empty()) {
    out["startedAt"] = state.started_at;
  }
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
               const std::string& message, const std::string& now) {
  const std::string status = value ? "True" : "False";
  const json* old = OldCondition(old_status, type);
  const bool same = old != nullptr && old->value("status", "") == status;
  json out = {{"type", type},
              {"status", status},
              {"lastProbeTime", nullptr},
              {"lastTransitionTime", same ? old->value("lastTransitionTime", now) : now}};
  if (!reason.empty()) {
    out["reason"] = reason;
  }
  if (!message.empty()) {
    out["message"] = message;
  }
  return out;
}

// "containers with unready status: [a b]", as the kubelet lists the containers a condition waits on.
std::string Waiting(const char* what, const std::vector<std::string>& names) {
  std::string listed;
  for (const std::string& name : names) {
    listed += (listed.empty() ? "" : " ") + name;
  }
  return std::string("containers with ") + what + " status: [" + listed + "]";
}

bool OwnedByKubelet(const std::string& type) {
  return type == "Initialized" || type == "ContainersReady" || type == "Ready" || type == "PodReadyToStartContainers";
}

}  // namespace

json BuildPodStatus(const PodView& view, const json& old_status, const std::string& now) {
  // What others own (qosClass from the API server, nominatedNodeName, resource claims) stays.
  json status = old_status.is_object() ? old_status : json::object();
  status["phase"] = view.phase;
  for (const auto& [field, value] : {std::pair<const char*, const std::string&>{"reason", view.reason},
                                     std::pair<const char*, const std::string&>{"message", view.message}}) {
    if (value.empty()) {
      status.erase(field);
    } else {
      status[field] = value;
    }
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
  // Sidecars (init containers that keep running) count towards readiness, as in Kubernetes.
  std::vector<std::string> unready;
  for (const ContainerView& init : view.init_containers) {
    if (init.phase == ContainerPhase::kRunning && !init.ready) {
      unready.push_back(init.name);
    }
  }
  for (const ContainerView& container : view.containers) {
    if (!container.ready) {
      unready.push_back(container.name);
    }
  }
  std::vector<std::string> uninitialized;
  for (const ContainerView& init : view.init_containers) {
    const bool done = init.started || (init.terminated && init.terminated->exit_code == 0);
    if (!done) {
      uninitialized.push_back(init.name);
    }
  }
  const bool succeeded = view.phase == "Succeeded";
  const bool terminal = succeeded || view.phase == "Failed";
  const bool ready = view.phase == "Running" && unready.empty();
  // The kubelet's reasons: a Pod that completed says so; otherwise the containers it waits on.
  const std::string not_ready_reason = succeeded ? "PodCompleted" : "ContainersNotReady";
  const std::string not_ready_message = succeeded || ready ? "" : Waiting("unready", unready);
  json conditions = json::array();
  if (const json* scheduled = OldCondition(old_status, "PodScheduled")) {
    conditions.push_back(*scheduled);
  }
  // Conditions the kubelet does not own (DisruptionTarget from an eviction, readiness gates) stay.
  if (old_status.is_object() && old_status.contains("conditions") && old_status["conditions"].is_array()) {
    for (const json& condition : old_status["conditions"]) {
      const std::string type = condition.is_object() ? condition.value("type", "") : "";
      if (type != "PodScheduled" && !OwnedByKubelet(type)) {
        conditions.push_back(condition);
      }
    }
  }
  // The sandbox (here: the Pod's network) is up from admission until the Pod has ended.
  const bool sandbox = !view.pod_ip.empty() && !terminal;
  conditions.push_back(Condition(old_status, "PodReadyToStartContainers", sandbox, "", "", now));
  conditions.push_back(Condition(old_status, "Initialized", view.initialized,
                                 view.initialized ? (succeeded ? "PodCompleted" : "") : "ContainersNotInitialized",
                                 view.initialized ? "" : Waiting("incomplete", uninitialized), now));
  conditions.push_back(
      Condition(old_status, "ContainersReady", ready, ready ? "" : not_ready_reason, not_ready_message, now));
  conditions.push_back(Condition(old_status, "Ready", ready, ready ? "" : not_ready_reason, not_ready_message, now));
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
  } else {
    status.erase("initContainerStatuses");
  }
  status["containerStatuses"] = std::move(statuses);
  return status;
}

}  // namespace ringleader::devcluster::kubelet
