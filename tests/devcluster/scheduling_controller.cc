// Node objects, the scheduling pass and its thread.
#include "tests/devcluster/scheduling_controller.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <tuple>

#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/scheduler.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// Store keys (group "/" plural) of the core resources involved.
constexpr const char* kNodesKey = "/nodes";
constexpr const char* kPodsKey = "/pods";
constexpr const char* kEventsKey = "/events";
constexpr const char* kSchedulerName = "default-scheduler";

std::string Str(const json& object, const char* a, const char* b) {
  if (!object.contains(a) || !object[a].is_object()) {
    return "";
  }
  const json& inner = object[a];
  return inner.contains(b) && inner[b].is_string() ? inner[b].get<std::string>() : "";
}

bool Pending(const json& pod) {
  const std::string scheduler = Str(pod, "spec", "schedulerName");
  const std::string phase = Str(pod, "status", "phase");
  return Str(pod, "spec", "nodeName").empty() && !pod["metadata"].contains("deletionTimestamp") &&
         (scheduler.empty() || scheduler == kSchedulerName) && phase != "Succeeded" && phase != "Failed";
}

const json* FindCondition(const json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions") || !pod["status"]["conditions"].is_array()) {
    return nullptr;
  }
  for (const json& condition : pod["status"]["conditions"]) {
    if (condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

// Sets the PodScheduled condition; lastTransitionTime moves only when the status does.
void SetScheduledCondition(json& pod, bool scheduled, const std::string& message, const std::string& now) {
  json condition = {{"type", "PodScheduled"}, {"status", scheduled ? "True" : "False"}, {"lastProbeTime", nullptr}};
  if (!scheduled) {
    condition["reason"] = "Unschedulable";
    condition["message"] = message;
  }
  const json* old = FindCondition(pod, "PodScheduled");
  condition["lastTransitionTime"] =
      old != nullptr && old->value("status", "") == condition["status"] ? old->value("lastTransitionTime", now) : now;
  json& status = pod["status"];
  if (!status.contains("phase")) {
    status["phase"] = "Pending";
  }
  json kept = json::array();
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& other : status["conditions"]) {
      if (other.value("type", "") != "PodScheduled") {
        kept.push_back(other);
      }
    }
  }
  kept.push_back(std::move(condition));
  status["conditions"] = std::move(kept);
}

json SchedulerEvent(const json& pod, const std::string& type, const std::string& reason, const std::string& message,
                    const std::string& now) {
  const json& meta = pod["metadata"];
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"namespace", meta.value("namespace", "")}}},
          {"involvedObject",
           {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"namespace", meta.value("namespace", "")},
            {"name", meta.value("name", "")},
            {"uid", meta.value("uid", "")}}},
          {"type", type},
          {"reason", reason},
          {"message", message},
          {"source", {{"component", kSchedulerName}}},
          {"reportingComponent", kSchedulerName},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1}};
}

}  // namespace

json NodeObject(const NodeConfig& config, const std::string& now) {
  json labels = {{"kubernetes.io/hostname", config.name}, {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"}};
  for (const auto& [key, value] : config.labels) {
    labels[key] = value;
  }
  json resources = {{"cpu", config.cpu}, {"memory", config.memory}, {"pods", "110"}};
  if (config.gpus > 0) {
    resources[kGpuResource] = std::to_string(config.gpus);
  }
  if (config.rdma > 0) {
    resources[kRdmaResource] = std::to_string(config.rdma);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", config.name}, {"labels", labels}}},
          {"spec", json::object()},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions", json::array({{{"type", "Ready"},
                                          {"status", "True"},
                                          {"reason", "KubeletReady"},
                                          {"message", "kubelet is posting ready status"},
                                          {"lastHeartbeatTime", now},
                                          {"lastTransitionTime", now}}})},
            {"addresses", json::array({{{"type", "Hostname"}, {"address", config.name}}})},
            {"nodeInfo",
             {{"kubeletVersion", "v1.32.0-devcluster"},
              {"operatingSystem", "linux"},
              {"architecture", "amd64"},
              {"containerRuntimeVersion", "devcluster://0"}}}}}};
}

std::vector<SchedulingAction> PlanScheduling(const std::vector<json>& nodes, const std::vector<json>& pods,
                                             const std::string& now) {
  std::vector<json> cluster = pods;  // binds made in this pass are seen by the Pods after them
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (Pending(cluster[i])) {
      pending.push_back(i);
    }
  }
  // Oldest first, as kube-scheduler's queue pops equal-priority Pods.
  auto order = [&](std::size_t i) {
    const json& meta = cluster[i]["metadata"];
    return std::make_tuple(meta.value("creationTimestamp", ""), meta.value("namespace", ""), meta.value("name", ""));
  };
  std::sort(pending.begin(), pending.end(), [&](std::size_t a, std::size_t b) { return order(a) < order(b); });

  std::vector<SchedulingAction> actions;
  for (std::size_t i : pending) {
    json& pod = cluster[i];
    const ScheduleResult result = Schedule(pod, nodes, cluster);
    const std::string key = pod["metadata"].value("namespace", "") + "/" + pod["metadata"].value("name", "");
    if (!result.node.empty()) {
      pod["spec"]["nodeName"] = result.node;
      SetScheduledCondition(pod, true, "", now);
      actions.push_back({pod, SchedulerEvent(pod, "Normal", "Scheduled",
                                             "Successfully assigned " + key + " to " + result.node, now)});
      continue;
    }
    const json* old = FindCondition(pod, "PodScheduled");
    if (old != nullptr && old->value("status", "") == "False" && old->value("message", "") == result.message) {
      continue;  // already says so
    }
    SetScheduledCondition(pod, false, result.message, now);
    actions.push_back({pod, SchedulerEvent(pod, "Warning", "FailedScheduling", result.message, now)});
  }
  return actions;
}

SchedulingController::SchedulingController(Store& store) : store_(store), thread_([this] { Run(); }) {}

SchedulingController::~SchedulingController() { Stop(); }

void SchedulingController::Stop() {
  stopping_ = true;
  store_.Wake();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void SchedulingController::Run() {
  std::uint64_t seen = 0;
  while (!stopping_) {
    try {
      Pass();
    } catch (const std::exception&) {
      // A malformed object in the store; the next change brings another pass.
    }
    // Any change may free a node or add one; the pass itself decides what is left to do.
    const Store::Batch batch = store_.WaitForEvents(seen, std::chrono::steady_clock::now() + std::chrono::seconds(1),
                                                    [this] { return stopping_.load(); });
    seen = batch.rv;
  }
}

void SchedulingController::Pass() {
  const std::string now = FormatTime(std::chrono::system_clock::now());
  auto plan = [&](const Store::Txn& txn) {
    std::vector<json> nodes;
    for (const json* node : txn.List(kNodesKey, "")) {
      nodes.push_back(*node);
    }
    std::vector<json> pods;
    for (const json* pod : txn.List(kPodsKey, "")) {
      pods.push_back(*pod);
    }
    return PlanScheduling(nodes, pods, now);
  };
  // Planned under a read lock first, so that a pass with nothing to do does not wake watches.
  bool work = false;
  store_.Read([&](const Store::Txn& txn) { work = !plan(txn).empty(); });
  if (!work) {
    return;
  }
  store_.Write([&](Store::Txn& txn) {
    for (SchedulingAction& action : plan(txn)) {
      txn.Put(kPodsKey, std::move(action.pod));
      if (!action.event.is_null()) {
        json& meta = action.event["metadata"];
        meta["name"] = GenerateName(action.event["involvedObject"].value("name", "") + ".");
        meta["uid"] = NewUid();
        meta["creationTimestamp"] = now;
        txn.Put(kEventsKey, std::move(action.event));
      }
    }
  });
}

}  // namespace ringleader::devcluster
