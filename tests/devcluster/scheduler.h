// devcluster's scheduling decision, pure: kube-scheduler's NodeUnschedulable, NodeSelector,
// NodePorts and NodeResourcesFit filters and a least-allocated score over core/v1 JSON objects.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringleader::devcluster {

// The resources the scheduler accounts for: cpu in millicores, memory in bytes, and every other
// resource but pods and ephemeral-storage (kube-scheduler's scalar resources: extended resources
// such as nvidia.com/gpu and RDMA devices, hugepages) as whole units, absent meaning 0.
struct Resources {
  std::int64_t milli_cpu = 0;
  std::int64_t memory = 0;
  std::map<std::string, std::int64_t> scalar = {};

  bool operator==(const Resources&) const = default;
};

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// A Pod's effective requests as Kubernetes computes them, per resource: limits stand in for
// absent requests; restartable (sidecar) init containers add to the regular containers' sum; an
// ordinary init container needs itself plus the sidecars started before it; the Pod needs the
// larger of the two (so GPUs an init container uses cost nothing extra), plus spec.overhead. nullopt with `error` set when a quantity does not parse.
std::optional<Resources> PodRequests(const nlohmann::json& pod, std::string& error);

struct ScheduleResult {
  std::string node;     // the chosen node; "" when none fits
  std::string message;  // when none fits: "0/2 nodes are available: ..." as FailedScheduling says
};

// Picks a node for `pod` among `nodes` (core/v1 Node objects), given `pods`: every Pod in the
// cluster (those with spec.nodeName that are not Succeeded or Failed occupy their node; others
// are ignored). Among the nodes that pass every filter the one with the most free cpu and memory
// (kube-scheduler's LeastAllocated) wins, ties going to the first name.
ScheduleResult Schedule(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes,
                        const std::vector<nlohmann::json>& pods);

}  // namespace ringleader::devcluster
