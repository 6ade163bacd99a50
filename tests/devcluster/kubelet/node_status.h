// The objects a node agent writes about its Node, as the kubelet writes them: the Node it
// registers, the status it posts (capacity, conditions, addresses, its endpoint) and the Lease it
// renews. Pure: the NodeHeartbeat (node_heartbeat.h) sends them.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster::kubelet {

// The version the stand-in reports as its kubeletVersion: the control plane's.
inline constexpr const char* kKubeletVersion = "v1.37.2";
// Where Node Leases live, and how long one holds (the kubelet's nodeLeaseDurationSeconds).
inline constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
inline constexpr int kNodeLeaseDurationSeconds = 40;

// The labels the kubelet puts on its Node: kubernetes.io/hostname, kubernetes.io/os=linux,
// kubernetes.io/arch=amd64 (and their beta.kubernetes.io twins), then the config's own, which may
// override them. NodeRestriction refuses other kubernetes.io and k8s.io labels from a node.
nlohmann::json NodeLabels(const NodeConfig& config);

// The Node to create: name and NodeLabels. No spec: the API server adds the not-ready taint, and
// the node lifecycle controller removes it once the Node is Ready.
nlohmann::json NodeObject(const NodeConfig& config);

// The Node's status: capacity = allocatable (cpu, memory, pods "110", nvidia.com/gpu when the
// Node has GPUs, kRdmaResource when it has RDMA devices), Ready=True and the three pressure
// conditions False with the kubelet's reasons and messages, InternalIP 127.0.0.1 (where the API
// server reaches `kubelet_port` for pods/log) and Hostname addresses, the kubelet endpoint and
// nodeInfo. A condition's lastTransitionTime is kept from `previous` (an earlier status) while its
// status is unchanged. `now` is RFC 3339.
nlohmann::json NodeStatus(const NodeConfig& config, int kubelet_port, const nlohmann::json& previous,
                          const std::string& now);

// The Node's Lease in kube-node-lease, held by the Node, renewed at `renew_time` (MicroTime), owned
// by the Node (uid `node_uid`, "" for none) so that it goes with it.
nlohmann::json NodeLease(const std::string& node, const std::string& node_uid, const std::string& renew_time);

// RFC 3339 with microseconds, as metav1.MicroTime serialises (Lease renewTime).
std::string FormatMicroTime(std::chrono::system_clock::time_point time);

// Why the scheduler would not place Pods on `node` yet ("" when it would): Ready is not True, or
// a node.kubernetes.io/not-ready or /unreachable taint is still on it.
std::string NodeNotSchedulableReason(const nlohmann::json& node);

}  // namespace ringleader::devcluster::kubelet
