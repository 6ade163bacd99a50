// The Node, its status and its Lease as the kubelet's node status and lease controllers write them.
#include "tests/devcluster/kubelet/node_status.h"

#include <sys/utsname.h>

#include <cstdio>

#include "operator/api/trainingjob.h"
#include "tests/devcluster/kubelet/device_allocator.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

// The kubelet's node conditions: type, status, reason, message (pkg/kubelet/nodestatus).
struct ConditionText {
  const char* type;
  const char* status;
  const char* reason;
  const char* message;
};
constexpr ConditionText kConditions[] = {
    {"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
    {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
    {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
    {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
};

const json* FindCondition(const json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) {
    return nullptr;
  }
  for (const json& condition : status["conditions"]) {
    if (condition.is_object() && condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

std::string KernelVersion() {
  utsname name{};
  return ::uname(&name) == 0 ? std::string(name.release) : "";
}

}  // namespace

json NodeLabels(const NodeConfig& config) {
  json labels = {{"kubernetes.io/hostname", config.name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"}};
  for (const auto& [key, value] : config.labels) {
    labels[key] = value;
  }
  return labels;
}

json NodeObject(const NodeConfig& config) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", config.name}, {"labels", NodeLabels(config)}}}};
}

json NodeStatus(const NodeConfig& config, int kubelet_port, const json& previous, const std::string& now) {
  json capacity = {{"cpu", config.cpu}, {"memory", config.memory}, {"pods", "110"}};
  if (config.gpus > 0) {
    capacity[kGpuResource] = std::to_string(config.gpus);
  }
  if (config.rdma > 0) {
    capacity[kRdmaResource] = std::to_string(config.rdma);
  }
  json conditions = json::array();
  for (const ConditionText& text : kConditions) {
    const json* old = FindCondition(previous, text.type);
    const bool same = old != nullptr && old->value("status", "") == text.status;
    conditions.push_back({{"type", text.type},
                          {"status", text.status},
                          {"reason", text.reason},
                          {"message", text.message},
                          {"lastHeartbeatTime", now},
                          {"lastTransitionTime", same ? old->value("lastTransitionTime", now) : now}});
  }
  return {{"capacity", capacity},
          {"allocatable", capacity},
          {"conditions", conditions},
          {"addresses", json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                     {{"type", "Hostname"}, {"address", config.name}}})},
          {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", kubelet_port}}}}},
          {"nodeInfo",
           {{"machineID", config.name},
            {"systemUUID", config.name},
            {"bootID", config.name},
            {"kernelVersion", KernelVersion()},
            {"osImage", "devcluster node agent (a kubelet stand-in)"},
            {"containerRuntimeVersion", "devcluster://1"},
            {"kubeletVersion", kKubeletVersion},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"}}}};
}

json NodeLease(const std::string& node, const std::string& node_uid, const std::string& renew_time) {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", node}, {"namespace", kNodeLeaseNamespace}}},
                {"spec",
                 {{"holderIdentity", node},
                  {"leaseDurationSeconds", kNodeLeaseDurationSeconds},
                  {"renewTime", renew_time}}}};
  if (!node_uid.empty()) {
    lease["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node_uid}}});
  }
  return lease;
}

std::string FormatMicroTime(std::chrono::system_clock::time_point time) {
  using std::chrono::duration_cast;
  using std::chrono::floor;
  using std::chrono::microseconds;
  using std::chrono::seconds;
  std::string whole = api::FormatTime(time);
  const auto micros = duration_cast<microseconds>(time - floor<seconds>(time)).count();
  // Room for any long long: GCC's -Wformat-truncation at -O2 cannot see micros < 10^6.
  char fraction[24];
  std::snprintf(fraction, sizeof(fraction), ".%06lld", static_cast<long long>(micros));
  whole.insert(whole.size() - 1, fraction);
  return whole;
}

std::string NodeNotSchedulableReason(const json& node) {
  const std::string name = node.contains("metadata") ? node["metadata"].value("name", "") : "";
  const json status = node.value("status", json::object());
  const json* ready = FindCondition(status, "Ready");
  if (ready == nullptr || ready->value("status", "") != "True") {
    return "Node " + name + " is not Ready" +
           (ready == nullptr ? " (no Ready condition yet)" : " (Ready=" + ready->value("status", "") + ")");
  }
  const json spec = node.value("spec", json::object());
  for (const json& taint : spec.value("taints", json::array())) {
    const std::string key = taint.is_object() ? taint.value("key", "") : "";
    if (key == "node.kubernetes.io/not-ready" || key == "node.kubernetes.io/unreachable") {
      return "Node " + name + " still has the " + key + " taint";
    }
  }
  return "";
}

}  // namespace ringleader::devcluster::kubelet
