// devcluster's kubelet: runs the Pods bound to devcluster's simulated Nodes as local processes
// (PodWorker), each Node and each Pod without hostNetwork in its own network namespace on one
// bridge (PodNetwork), cluster DNS names in a shared hosts file, and Pod status written back to
// the store; a Node's GPUs and RDMA devices go to containers as the device plugin and the kubelet's
// device manager hand them out (NodeDevices). Without root: every Pod runs in this machine's network namespace, at its Node's
// 127.0.N.1 address, with mount paths rewritten to host paths.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/devcluster/node_config.h"
#include "tests/devcluster/kubelet/container_spec.h"
#include "tests/devcluster/kubelet/device_allocator.h"
#include "tests/devcluster/kubelet/pod_network.h"
#include "tests/devcluster/kubelet/pod_status.h"
#include "tests/devcluster/store.h"

namespace ringleader::devcluster::kubelet {

class HostsFile;
class PodWorker;

struct KubeletOptions {
  std::filesystem::path root_dir;  // Pods' volumes and logs, and the hosts file
  ImageMap images;
  std::string network_prefix = "rl";  // names of the network namespaces (PodNetwork)
  bool isolate = true;                // network and mount namespaces where the machine allows (root)
  std::chrono::milliseconds max_grace{5000};
  std::chrono::milliseconds restart_backoff{1000};
  // Called with (namespace, Pod name, network namespace, address) once a Pod has its network and
  // before its containers start: end-to-end tests break routes here.
  std::function<void(const std::string&, const std::string&, const std::string&, const std::string&)>
      on_pod_network_for_test;
  // Called with (namespace, name, uid) once a Pod being deleted (metadata.deletionTimestamp) has
  // its containers stopped and its final status written: the DELETE with gracePeriodSeconds 0
  // and the uid as precondition that a kubelet sends. Null: the kubelet removes the Pod from the
  // store itself (finalizers permitting).
  std::function<void(const std::string&, const std::string&, const std::string&)> delete_pod;
};

class Kubelet {
 public:
  // Builds the network (removing what a crashed run left) and starts the sync thread. Throws
  // std::runtime_error naming what failed.
  Kubelet(Store& store, const std::vector<NodeConfig>& nodes, KubeletOptions options);
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;
  ~Kubelet();

  // Stops every Pod's containers and removes the network; idempotent.
  void Stop();

  // The network, for tests that inject faults; null without isolation.
  PodNetwork* network() { return network_.get(); }
  // Where the Pod's container logs are: <root>/pods/<namespace>_<name>_<uid>/logs/<container>.log
  // (container_log.h).
  std::filesystem::path PodDir(const std::string& ns, const std::string& name, const std::string& uid) const;

 private:
  struct Running;

  void Run();
  void Pass();
  void WriteStatus(const std::string& ns, const std::string& name, const std::string& uid, const PodView& view);
  // The kubelet's rejectPod: phase Failed, the reason, "Pod was rejected: <message>", an Event.
  void Reject(const nlohmann::json& pod, const Admission& admission);
  // The last step of a graceful deletion (KubeletOptions::delete_pod).
  void DeletePod(const std::string& ns, const std::string& name, const std::string& uid);

  Store& store_;
  KubeletOptions options_;
  std::unique_ptr<PodNetwork> network_;
  std::map<std::string, Endpoint> nodes_;  // node name -> its namespace and address
  std::map<std::string, NodeDevices> devices_;  // node name -> its GPUs and RDMA devices
  std::unique_ptr<HostsFile> hosts_;
  std::map<std::string, std::unique_ptr<Running>> pods_;  // by uid
  std::vector<std::unique_ptr<Running>> stopping_;
  std::vector<std::filesystem::path> mount_points_;  // created on the host by stopped Pods' containers
  std::atomic<bool> stopping_all_{false};
  std::atomic<bool> pod_finished_{false};  // a worker ended: the sync loop has a Pod to finish
  std::thread thread_;
};

}  // namespace ringleader::devcluster::kubelet
