// The filters, the score and the FailedScheduling message.
#include "tests/devcluster/scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "operator/api/quantity.h"
#include "tests/devcluster/json_field.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// kube-scheduler's reasons, word for word.
constexpr const char* kUnschedulable = "node(s) were unschedulable";
constexpr const char* kSelectorMismatch = "node(s) didn't match Pod's node affinity/selector";
constexpr const char* kPortsTaken = "node(s) didn't have free ports for the requested pod ports";
constexpr const char* kTooManyPods = "Too many pods";

// What a container without requests counts as when scoring (kube-scheduler's non-zero defaults).
constexpr std::int64_t kDefaultMilliCpu = 100;
constexpr std::int64_t kDefaultMemory = 200 << 20;


std::string StringField(const json& object, std::initializer_list<const char*> path) {
  const json& value = Field(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

// A quantity's text: Kubernetes quantities arrive as strings, hand-written JSON may use numbers.
std::string QuantityText(const json& value) {
  if (value.is_string()) {
    return value.get<std::string>();
  }
  return value.is_number() ? value.dump() : "";
}

// cpu in millicores: "500m", "2", "0.5" (as 0.5e3 millicores) or "1k".
std::optional<std::int64_t> MilliCpu(const std::string& text) {
  if (!text.empty() && text.back() == 'm') {
    return api::ParseIntegerQuantity(std::string_view(text).substr(0, text.size() - 1));
  }
  if (text.find_first_of("eE") == std::string::npos && !text.empty() &&
      (text.back() >= '0' && text.back() <= '9')) {
    return api::ParseIntegerQuantity(text + "e3");
  }
  const std::optional<std::int64_t> cores = api::ParseIntegerQuantity(text);
  if (!cores || *cores > std::numeric_limits<std::int64_t>::max() / 1000) {
    return std::nullopt;
  }
  return *cores * 1000;
}

// The resources in a requests/limits/allocatable/overhead map; pods and ephemeral-storage are
// left to their own checks. `cpu` and `memory` say whether the map names them.
struct ParsedList {
  Resources resources;
  bool cpu = false;
  bool memory = false;
};

bool ParseList(const json& list, ParsedList& out, std::string& error) {
  if (!list.is_object()) {
    return true;
  }
  for (const auto& [name, value] : list.items()) {
    if (name == "pods" || name == "ephemeral-storage") {
      continue;
    }
    const std::string text = QuantityText(value);
    const std::optional<std::int64_t> parsed =
        name == "cpu" ? MilliCpu(text) : api::ParseIntegerQuantity(text);
    if (!parsed) {
      error = "invalid quantity for " + name + ": \"" + text + "\"";
      return false;
    }
    if (name == "cpu") {
      out.resources.milli_cpu = *parsed;
      out.cpu = true;
    } else if (name == "memory") {
      out.resources.memory = *parsed;
      out.memory = true;
    } else if (*parsed != 0) {  // none of a resource is the same as not naming it
      out.resources.scalar[name] = *parsed;
    }
  }
  return true;
}

Resources Add(const Resources& a, const Resources& b) {
  Resources out{a.milli_cpu + b.milli_cpu, a.memory + b.memory, a.scalar};
  for (const auto& [name, value] : b.scalar) {
    out.scalar[name] += value;
  }
  return out;
}

Resources Max(const Resources& a, const Resources& b) {
  Resources out{std::max(a.milli_cpu, b.milli_cpu), std::max(a.memory, b.memory), a.scalar};
  for (const auto& [name, value] : b.scalar) {
    out.scalar[name] = std::max(out.scalar[name], value);
  }
  return out;
}

std::int64_t Scalar(const Resources& resources, const std::string& name) {
  const auto it = resources.scalar.find(name);
  return it == resources.scalar.end() ? 0 : it->second;
}

// One container's requests: limits where requests are absent; with `non_zero`, the scoring
// defaults for cpu and memory that neither names.
std::optional<Resources> ContainerRequests(const json& container, bool non_zero, std::string& error) {
  ParsedList requests;
  ParsedList limits;
  if (!ParseList(Field(container, {"resources", "requests"}), requests, error) ||
      !ParseList(Field(container, {"resources", "limits"}), limits, error)) {
    return std::nullopt;
  }
  Resources out = requests.resources;
  if (!requests.cpu && limits.cpu) {
    out.milli_cpu = limits.resources.milli_cpu;
  }
  if (!requests.memory && limits.memory) {
    out.memory = limits.resources.memory;
  }
  for (const auto& [name, value] : limits.resources.scalar) {
    out.scalar.emplace(name, value);  // only where requests do not name it
  }
  if (non_zero) {
    if (!requests.cpu && !limits.cpu) {
      out.milli_cpu = kDefaultMilliCpu;
    }
    if (!requests.memory && !limits.memory) {
      out.memory = kDefaultMemory;
    }
  }
  return out;
}

bool IsSidecar(const json& init_container) { return StringField(init_container, {"restartPolicy"}) == "Always"; }

std::optional<Resources> ComputeRequests(const json& pod, bool non_zero, std::string& error) {
  Resources regular;
  const json& containers = Field(pod, {"spec", "containers"});
  if (containers.is_array()) {
    for (const json& container : containers) {
      const auto requests = ContainerRequests(container, non_zero, error);
      if (!requests) {
        return std::nullopt;
      }
      regular = Add(regular, *requests);
    }
  }
  Resources sidecars;   // the restartable init containers started so far
  Resources init_peak;  // the most any step of initialisation needs at once
  const json& init_containers = Field(pod, {"spec", "initContainers"});
  if (init_containers.is_array()) {
    for (const json& container : init_containers) {
      const auto requests = ContainerRequests(container, non_zero, error);
      if (!requests) {
        return std::nullopt;
      }
      if (IsSidecar(container)) {
        regular = Add(regular, *requests);
        sidecars = Add(sidecars, *requests);
        init_peak = Max(init_peak, sidecars);
      } else {
        init_peak = Max(init_peak, Add(*requests, sidecars));
      }
    }
  }
  ParsedList overhead;
  if (!ParseList(Field(pod, {"spec", "overhead"}), overhead, error)) {
    return std::nullopt;
  }
  return Add(Max(regular, init_peak), overhead.resources);
}

bool Occupies(const json& pod, const std::string& node) {
  const std::string phase = StringField(pod, {"status", "phase"});
  return StringField(pod, {"spec", "nodeName"}) == node && phase != "Succeeded" && phase != "Failed";
}

// (hostIP, protocol, port) of each host port the Pod's containers and sidecars take.
using HostPort = std::tuple<std::string, std::string, std::int64_t>;

std::vector<HostPort> HostPorts(const json& pod) {
  const bool host_network = Field(pod, {"spec", "hostNetwork"}) == true;
  std::vector<HostPort> out;
  auto collect = [&](const json& container) {
    const json& ports = Field(container, {"ports"});
    if (!ports.is_array()) {
      return;
    }
    for (const json& port : ports) {
      std::int64_t host_port = port.value("hostPort", std::int64_t{0});
      if (host_port <= 0 && host_network) {
        host_port = port.value("containerPort", std::int64_t{0});  // what API defaulting does
      }
      if (host_port <= 0) {
        continue;
      }
      std::string ip = port.value("hostIP", std::string());
      std::string protocol = port.value("protocol", std::string());
      out.emplace_back(ip.empty() ? "0.0.0.0" : ip, protocol.empty() ? "TCP" : protocol, host_port);
    }
  };
  const json& containers = Field(pod, {"spec", "containers"});
  if (containers.is_array()) {
    for (const json& container : containers) {
      collect(container);
    }
  }
  // Sidecars hold their ports while the Pod runs (kube-scheduler counts them since 1.33).
  const json& init_containers = Field(pod, {"spec", "initContainers"});
  if (init_containers.is_array()) {
    for (const json& container : init_containers) {
      if (IsSidecar(container)) {
        collect(container);
      }
    }
  }
  return out;
}

bool PortsConflict(const HostPort& a, const HostPort& b) {
  const auto& [ip_a, protocol_a, port_a] = a;
  const auto& [ip_b, protocol_b, port_b] = b;
  return port_a == port_b && protocol_a == protocol_b &&
         (ip_a == ip_b || ip_a == "0.0.0.0" || ip_b == "0.0.0.0");
}

bool SelectorMatches(const json& pod, const json& node) {
  const json& selector = Field(pod, {"spec", "nodeSelector"});
  if (!selector.is_object()) {
    return true;
  }
  const json& labels = Field(node, {"metadata", "labels"});
  for (const auto& [key, value] : selector.items()) {
    if (!labels.is_object() || !labels.contains(key) || labels[key] != value) {
      return false;
    }
  }
  return true;
}

struct NodeState {
  std::string name;
  Resources allocatable;
  std::optional<std::int64_t> max_pods;
  Resources requested;           // by the Pods on it
  Resources non_zero_requested;  // the same with scoring defaults, for the score
  std::int64_t pod_count = 0;
  std::vector<HostPort> ports;
};

// 0..100 per resource, averaged over cpu and memory: the share left free after placing the Pod.
std::int64_t LeastAllocatedScore(const NodeState& node, const Resources& pod) {
  auto share = [](std::int64_t capacity, std::int64_t requested) -> std::int64_t {
    if (capacity <= 0 || requested > capacity) {
      return 0;
    }
    return (capacity - requested) * 100 / capacity;
  };
  return (share(node.allocatable.milli_cpu, node.non_zero_requested.milli_cpu + pod.milli_cpu) +
          share(node.allocatable.memory, node.non_zero_requested.memory + pod.memory)) /
         2;
}

}  // namespace

std::optional<Resources> PodRequests(const json& pod, std::string& error) {
  return ComputeRequests(pod, false, error);
}

ScheduleResult Schedule(const json& pod, const std::vector<json>& nodes, const std::vector<json>& pods) {
  if (nodes.empty()) {
    return {"", "no nodes available to schedule pods"};
  }
  std::string error;
  const std::optional<Resources> wanted = PodRequests(pod, error);
  const std::optional<Resources> wanted_non_zero = ComputeRequests(pod, true, error);
  if (!wanted || !wanted_non_zero) {
    return {"", "Pod has an " + error};
  }
  const std::vector<HostPort> wanted_ports = HostPorts(pod);

  std::map<std::string, int> reasons;  // reason -> how many nodes gave it
  std::string best;
  std::int64_t best_score = -1;
  std::vector<const json*> sorted_nodes;
  for (const json& node : nodes) {
    sorted_nodes.push_back(&node);
  }
  std::sort(sorted_nodes.begin(), sorted_nodes.end(), [](const json* a, const json* b) {
    return StringField(*a, {"metadata", "name"}) < StringField(*b, {"metadata", "name"});
  });
  for (const json* node_ptr : sorted_nodes) {
    const json& node = *node_ptr;
    NodeState state;
    state.name = StringField(node, {"metadata", "name"});
    ParsedList allocatable;
    if (!ParseList(Field(node, {"status", "allocatable"}), allocatable, error)) {
      return {"", "Node " + state.name + " has an " + error};
    }
    state.allocatable = allocatable.resources;
    const json& max_pods = Field(node, {"status", "allocatable", "pods"});
    if (!max_pods.is_null()) {
      state.max_pods = api::ParseIntegerQuantity(QuantityText(max_pods));
    }
    for (const json& other : pods) {
      if (!Occupies(other, state.name)) {
        continue;
      }
      std::string ignored;  // a Pod already bound with a bad quantity counts as requesting nothing
      state.requested = Add(state.requested, PodRequests(other, ignored).value_or(Resources{}));
      state.non_zero_requested =
          Add(state.non_zero_requested, ComputeRequests(other, true, ignored).value_or(Resources{}));
      ++state.pod_count;
      const std::vector<HostPort> taken = HostPorts(other);
      state.ports.insert(state.ports.end(), taken.begin(), taken.end());
    }

    // The filters in kube-scheduler's order; a node is rejected by the first that fails.
    if (Field(node, {"spec", "unschedulable"}) == true) {
      ++reasons[kUnschedulable];
      continue;
    }
    if (!SelectorMatches(pod, node)) {
      ++reasons[kSelectorMismatch];
      continue;
    }
    const bool port_conflict = std::any_of(wanted_ports.begin(), wanted_ports.end(), [&](const HostPort& want) {
      return std::any_of(state.ports.begin(), state.ports.end(),
                         [&](const HostPort& have) { return PortsConflict(want, have); });
    });
    if (port_conflict) {
      ++reasons[kPortsTaken];
      continue;
    }
    std::vector<std::string> insufficient;
    if (state.max_pods && state.pod_count + 1 > *state.max_pods) {
      insufficient.push_back(kTooManyPods);
    }
    if (wanted->milli_cpu > 0 && state.requested.milli_cpu + wanted->milli_cpu > state.allocatable.milli_cpu) {
      insufficient.push_back("Insufficient cpu");
    }
    if (wanted->memory > 0 && state.requested.memory + wanted->memory > state.allocatable.memory) {
      insufficient.push_back("Insufficient memory");
    }
    for (const auto& [name, want] : wanted->scalar) {
      if (want > 0 && Scalar(state.requested, name) + want > Scalar(state.allocatable, name)) {
        insufficient.push_back("Insufficient " + name);
      }
    }
    if (!insufficient.empty()) {
      for (const std::string& reason : insufficient) {
        ++reasons[reason];
      }
      continue;
    }
    const std::int64_t score = LeastAllocatedScore(state, *wanted_non_zero);
    if (score > best_score) {  // strictly greater: ties keep the earlier name
      best_score = score;
      best = state.name;
    }
  }
  if (!best.empty()) {
    return {best, ""};
  }
  // As FitError formats it: "<count> <reason>" sorted as strings, joined by ", ".
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reasons) {
    parts.push_back(std::to_string(count) + " " + reason);
  }
  std::sort(parts.begin(), parts.end());
  std::string message = "0/" + std::to_string(nodes.size()) + " nodes are available: ";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    message += (i == 0 ? "" : ", ") + parts[i];
  }
  return {"", message + "."};
}

}  // namespace ringleader::devcluster
