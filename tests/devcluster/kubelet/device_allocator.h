// devcluster's kubelet as the device plugin: a Node's named devices (GPUs, RDMA devices) handed to
// containers by the kubelet device manager's rule, and shown to each process as the NVIDIA
// runtime shows GPUs. Pure: no I/O, no threads; the Kubelet holds one per Node.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster::kubelet {

// The NVIDIA device plugin's resource.
inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// The devices a Node advertises: resource name -> device IDs, in the order they are handed out.
using DeviceInventory = std::map<std::string, std::vector<std::string>>;
// One container's devices: resource name -> device IDs, sorted as in the inventory.
using ContainerDevices = std::map<std::string, std::vector<std::string>>;
// One Pod's devices by container name; containers that got none are absent.
using PodDevices = std::map<std::string, ContainerDevices>;

// The NVIDIA device plugin's IDs under --device-id-strategy=index ("0", "1", ...; what
// NVIDIA_VISIBLE_DEVICES accepts besides GPU UUIDs) for `config.gpus`, and the same indices for
// `config.rdma` devices of kRdmaResource.
DeviceInventory NodeDeviceInventory(const NodeConfig& config);

// The environment the runtime gives a container for its devices: NVIDIA_VISIBLE_DEVICES for
// nvidia.com/gpu (the NVIDIA device plugin's envvar strategy), and for any other resource
// RINGLEADER_DEVCLUSTER_DEVICES_<NAME>, NAME the resource name upper-cased with every character
// other than a letter or digit made '_' (rdma/rdma_shared_device_a ->
// RINGLEADER_DEVCLUSTER_DEVICES_RDMA_RDMA_SHARED_DEVICE_A). Values are the IDs joined by ','.
std::map<std::string, std::string> DeviceEnvironment(const ContainerDevices& devices);

struct Admission {
  bool admitted = false;
  PodDevices devices;  // when admitted
  // When refused, as the kubelet words it: reason UnexpectedAdmissionError and the message
  // "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu.
  // Requested: 2, Available: 1, which is unexpected".
  std::string reason;
  std::string message;
};

// The devices of one Node and the Pods (by metadata.uid) holding them.
class NodeDevices {
 public:
  explicit NodeDevices(DeviceInventory inventory);

  // Allocates for every container of `pod` in the kubelet's order, init containers first, each
  // container's `resources.limits` (requests where a limit is absent) for every resource the
  // inventory has; other resources are not the device plugin's and are skipped. The rule of
  // pkg/kubelet/cm/devicemanager (devicesToReuse):
  //  - a container takes devices the Pod may reuse first, then the Node's free ones, lowest first;
  //  - a regular init container's devices become reusable by the containers after it;
  //  - a restartable init container (native sidecar) keeps its devices: none become reusable,
  //    and the reusable ones it took are reusable no more;
  //  - an app container's devices are its own (app containers never share one);
  //  - another Pod's devices are never free.
  // A Pod that already holds devices gets the same ones again. When any container cannot get
  // its devices the Pod is refused and holds none.
  Admission Allocate(const nlohmann::json& pod);

  // Frees the devices of every Pod whose uid is not in `active` (finished, deleted or refused
  // Pods), as the device manager's UpdateAllocatedDevices does.
  void Retain(const std::set<std::string>& active);

  // The IDs of `resource` some Pod holds.
  std::set<std::string> InUse(const std::string& resource) const;

 private:
  DeviceInventory inventory_;
  std::map<std::string, PodDevices> pods_;  // by uid
};

}  // namespace ringleader::devcluster::kubelet
