// A devcluster Node as its node agent registers it: name, capacity and labels.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ringleader::devcluster {

// The RDMA resource devcluster's Nodes advertise: the name the RDMA shared device plugin (and the
// NVIDIA Network Operator's examples) give it.
inline constexpr const char* kRdmaResource = "rdma/rdma_shared_device_a";

// A Node whose capacity and allocatable are these. Its GPUs and RDMA devices are named devices
// the node agent allocates to containers (docs/devcluster.md).
struct NodeConfig {
  std::string name;
  std::string cpu = "8";        // a quantity: "8", "500m"
  std::string memory = "32Gi";  // a quantity
  int gpus = 4;                 // nvidia.com/gpu; 0 leaves the resource out
  int rdma = 0;                 // kRdmaResource; 0 leaves the resource out
  std::map<std::string, std::string> labels = {};  // besides kubernetes.io/hostname (always set)
};

// "node-a" and "node-b" with the NodeConfig defaults.
inline std::vector<NodeConfig> DefaultNodes() {
  return {NodeConfig{.name = "node-a"}, NodeConfig{.name = "node-b"}};
}

}  // namespace ringleader::devcluster
