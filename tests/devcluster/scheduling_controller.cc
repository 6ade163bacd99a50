// Node objects, the scheduling pass and its thread.
#include "tests/devcluster/scheduling_controller.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <tuple>
#include <utility>

#include "tests/devcluster/coscheduling.h"
#include "tests/devcluster/json_field.h"
#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/scheduler.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// Store keys (group "/" plural) of the core resources involved.
constexpr const char* kNodesKey = "/nodes";
constexpr const char* kPodsKey = "/pods";
constexpr const char* kEventsKey = "/events";
constexpr const char* kCustomResourceDefinitionsKey = "apiextensions.k8s.io/customresourcedefinitions";
constexpr const char* kDefaultScheduler = "default-scheduler";

std::string Str(const json& object, const char* a, const char* b) {
  if (!object.contains(a) || !object[a].is_object()) {
    return "";
  }
  const json& inner = object[a];
  return inner.contains(b) && inner[b].is_string() ? inner[b].get<std::string>() : "";
}

// Not yet bound, not being deleted, not finished: a Pod some scheduler may still place.
bool Unbound(const json& pod) {
  const std::string phase = Str(pod, "status", "phase");
  return Str(pod, "spec", "nodeName").empty() && !pod["metadata"].contains("deletionTimestamp") &&
         phase != "Succeeded" && phase != "Failed";
}

bool Gated(const json& pod) {
  const json& gates = Field(pod, {"spec", "schedulingGates"});
  return gates.is_array() && !gates.empty();
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

// Sets the PodScheduled condition (`reason` and `message` only when not scheduled);
// lastTransitionTime moves only when the status does, and is kept as it was otherwise, null
// included (the SchedulingGated condition kube-apiserver writes at create has none).
void SetScheduledCondition(json& pod, bool scheduled, const std::string& reason, const std::string& message,
                           const std::string& now) {
  json condition = {{"type", "PodScheduled"}, {"status", scheduled ? "True" : "False"}, {"lastProbeTime", nullptr}};
  if (!scheduled) {
    condition["reason"] = reason;
    condition["message"] = message;
  }
  const json* old = FindCondition(pod, "PodScheduled");
  const bool unchanged = old != nullptr && old->value("status", "") == condition["status"];
  condition["lastTransitionTime"] =
      unchanged && old->contains("lastTransitionTime") ? (*old)["lastTransitionTime"] : json(now);
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

// `scheduler` is the profile that decided: its name is the Event's reporting component.
json SchedulerEvent(const json& pod, const std::string& type, const std::string& reason, const std::string& message,
                    const std::string& now, const std::string& scheduler) {
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
          {"source", {{"component", scheduler}}},
          {"reportingComponent", scheduler},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1}};
}

// One turn of the scheduling queue: a lone Pod, or every pending Pod of one PodGroup.
struct Turn {
  std::tuple<std::string, std::string, std::string> order;  // (timestamp, namespace, first Pod's name)
  std::vector<std::size_t> pods;                            // indices into the pass's cluster
  std::string scheduler;
  const json* pod_group = nullptr;  // set for a gang
  bool pod_group_missing = false;   // a lone Pod labelled into a PodGroup that does not exist
};

// Binds `pod` to `node`, recording the Event.
void Bind(json& pod, const std::string& node, const Turn& turn, const std::string& now,
          std::vector<SchedulingAction>& actions) {
  const std::string key = pod["metadata"].value("namespace", "") + "/" + pod["metadata"].value("name", "");
  pod["spec"]["nodeName"] = node;
  SetScheduledCondition(pod, true, "", "", now);
  actions.push_back(
      {pod, SchedulerEvent(pod, "Normal", "Scheduled", "Successfully assigned " + key + " to " + node, now, turn.scheduler)});
}

// Marks `pod` unschedulable with `message` unless it already says so.
void Refuse(json& pod, const std::string& message, const Turn& turn, const std::string& now,
            std::vector<SchedulingAction>& actions) {
  const json* old = FindCondition(pod, "PodScheduled");
  if (old != nullptr && old->value("status", "") == "False" && old->value("reason", "") == "Unschedulable" &&
      old->value("message", "") == message) {
    return;
  }
  SetScheduledCondition(pod, false, "Unschedulable", message, now);
  actions.push_back({pod, SchedulerEvent(pod, "Warning", "FailedScheduling", message, now, turn.scheduler)});
}

// The Turns of the pass, in queue order.
std::vector<Turn> Queue(std::vector<json>& cluster, const std::vector<json>* pod_groups) {
  std::map<std::pair<std::string, std::string>, const json*> groups;  // (namespace, name)
  if (pod_groups != nullptr) {
    for (const json& group : *pod_groups) {
      groups[{Str(group, "metadata", "namespace"), Str(group, "metadata", "name")}] = &group;
    }
  }
  std::vector<Turn> turns;
  std::map<std::pair<std::string, std::string>, std::size_t> gang_turns;  // (namespace, group) -> turn
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    json& pod = cluster[i];
    if (!Unbound(pod)) {
      continue;
    }
    if (Gated(pod)) {
      continue;  // kube-scheduler never tries it; its condition is kube-apiserver's, written at create
    }
    std::string scheduler = Str(pod, "spec", "schedulerName");
    scheduler = scheduler.empty() ? kDefaultScheduler : scheduler;
    const bool coscheduling = scheduler == kSchedulerPluginsName && pod_groups != nullptr;
    if (scheduler != kDefaultScheduler && !coscheduling) {
      continue;  // another scheduler's Pod
    }
    const std::string ns = Str(pod, "metadata", "namespace");
    const std::string name = Str(pod, "metadata", "name");
    const std::string group_name = coscheduling ? PodGroupName(pod) : "";
    const auto group = groups.find({ns, group_name});
    if (group_name.empty() || group == groups.end()) {
      // Without a PodGroup the plugin's queue sort falls back to the Pod's own time.
      turns.push_back({{Str(pod, "metadata", "creationTimestamp"), ns, name}, {i}, scheduler, nullptr,
                       !group_name.empty()});
      continue;
    }
    const auto [at, added] = gang_turns.emplace(std::make_pair(ns, group_name), turns.size());
    const std::tuple<std::string, std::string, std::string> order = {
        Str(*group->second, "metadata", "creationTimestamp"), ns, name};
    if (added) {
      turns.push_back({order, {}, scheduler, group->second, false});
    }
    Turn& turn = turns[at->second];
    turn.pods.push_back(i);
    turn.order = std::min(turn.order, order);
  }
  auto name_of = [&](std::size_t i) { return Str(cluster[i], "metadata", "name"); };
  for (Turn& turn : turns) {
    std::sort(turn.pods.begin(), turn.pods.end(), [&](std::size_t a, std::size_t b) { return name_of(a) < name_of(b); });
  }
  // Oldest first, as kube-scheduler's queue pops equal-priority Pods.
  std::stable_sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.order < b.order; });
  return turns;
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
                                             const std::string& now, const std::vector<json>* pod_groups) {
  std::vector<json> cluster = pods;  // binds made in this pass are seen by the Pods after them
  std::vector<SchedulingAction> actions;
  for (const Turn& turn : Queue(cluster, pod_groups)) {
    if (turn.pod_group != nullptr) {
      const GangDecision decision = PlanGang(*turn.pod_group, turn.pods, nodes, cluster);
      for (const auto& [i, node] : decision.bind) {
        Bind(cluster[i], node, turn, now, actions);
      }
      for (const auto& [i, message] : decision.refuse) {
        Refuse(cluster[i], message, turn, now, actions);
      }
      continue;
    }
    json& pod = cluster[turn.pods.front()];
    const ScheduleResult result = Schedule(pod, nodes, cluster);
    if (turn.pod_group_missing) {
      Refuse(pod, nodes.empty() ? result.message : PodGroupNotFoundMessage(result.node.empty() ? result.message : ""),
             turn, now, actions);
    } else if (!result.node.empty()) {
      Bind(pod, result.node, turn, now, actions);
    } else {
      Refuse(pod, result.message, turn, now, actions);
    }
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
    // scheduler-plugins counts as installed exactly when its PodGroup CRD is served.
    if (!ServesPodGroups(txn.Get(kCustomResourceDefinitionsKey, "", kPodGroupCrdName))) {
      return PlanScheduling(nodes, pods, now);
    }
    std::vector<json> pod_groups;
    for (const json* group : txn.List(kPodGroupsKey, "")) {
      pod_groups.push_back(*group);
    }
    return PlanScheduling(nodes, pods, now, &pod_groups);
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
