// devcluster: the real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler; control_plane.h) plus the one part that cannot run here for real, a node agent
// per Node (the kubelet stand-in, kubelet/), cluster DNS for the Pods as a hosts file, and a fault
// proxy in front of the API server for reliability tests, and Kueue on request. Real kubectl and the operator's client
// talk to it as to any cluster.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/devcluster/faults.h"
#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster {

struct Options {
  // Where the control plane's files, the kubeconfig, ca.crt and token go; "" makes a temporary
  // directory that Stop() removes.
  std::string data_dir;
  std::vector<NodeConfig> nodes = DefaultNodes();
  // Start a node agent per Node: it registers the Node (Ready, with its capacity), and runs the
  // Pods the real scheduler binds there as local processes: each container's image names a
  // program in `images` (by image, or by repository without the tag). As root the Nodes and Pods
  // get network namespaces named from network_prefix. Without it no Node exists and Pods stay
  // Pending, which is all an API-only test needs.
  bool run_pods = false;
  std::map<std::string, std::string> images = {};
  std::string pods_dir = {};  // the agents' root: pods/, hosts; "" = data_dir + "/kubelet"
  std::string network_prefix = "rl";
  // --feature-gates for every control-plane component.
  std::vector<std::string> feature_gates = {};
  // Called with (namespace, Pod name, network namespace, address) before a Pod's containers
  // start (kubelet::KubeletOptions::on_pod_network_for_test).
  std::function<void(const std::string&, const std::string&, const std::string&, const std::string&)>
      on_pod_network_for_test = {};
  // Start Kueue (scripts/build-kueue) against the control plane once the Nodes are ready: its
  // CRDs, its manager and its webhooks (kueue.h). It manages Pods in namespaces labelled
  // kKueueManagedNamespaceLabel only.
  bool kueue = false;
  bool kueue_wait_for_pods_ready = true;  // KueueOptions::wait_for_pods_ready
};

class ControlPlane;
class FaultProxy;
class Kueue;
class TcpRelay;
namespace kubelet {
class ClusterDns;
class Kubelet;
class PodNetwork;
}  // namespace kubelet

class DevCluster {
 public:
  // Starts the control plane, the fault proxy and (with run_pods) the node agents, waits until
  // every Node is Ready and schedulable, and writes the client files. Throws std::runtime_error
  // naming the part that failed.
  static std::unique_ptr<DevCluster> Start(const Options& options);

  DevCluster(const DevCluster&) = delete;
  DevCluster& operator=(const DevCluster&) = delete;
  ~DevCluster();

  // The API server itself (what the kubeconfig names): https://127.0.0.1:PORT.
  std::string url() const;
  // The fault proxy in front of it (same CA and tokens): clients under a reliability test
  // connect here, and faults() decides what they get.
  std::string proxy_url() const;
  std::string kubeconfig_path() const;
  std::string ca_pem() const;
  std::string token() const;  // cluster-admin
  Faults& faults();
  // The API server's audit log (audit.k8s.io/v1 Events, one JSON object per line).
  std::filesystem::path audit_log() const;
  ControlPlane& control_plane() { return *control_plane_; }
  // The Pods' network when run_pods made one (root), for tests that break a route; else null.
  kubelet::PodNetwork* pod_network();
  // Kueue when Options::kueue started it; else null.
  Kueue* kueue() { return kueue_.get(); }

  // Stops the node agents (their Pods' processes), Kueue, the proxy and the control plane.
  // Idempotent.
  void Stop();

 private:
  DevCluster();
  void StartPodNetwork();
  void StartNodeAgents();
  void WaitForSchedulableNodes(std::chrono::steady_clock::time_point deadline);

  Options options_;
  std::filesystem::path dir_;
  bool owns_dir_ = false;
  std::string kubeconfig_path_;
  std::unique_ptr<ControlPlane> control_plane_;
  std::unique_ptr<FaultProxy> proxy_;
  std::unique_ptr<kubelet::PodNetwork> network_;
  std::unique_ptr<TcpRelay> api_relay_;  // the Pods' way to the API server, with network_
  std::unique_ptr<kubelet::ClusterDns> dns_;
  std::vector<std::unique_ptr<kubelet::Kubelet>> agents_;
  std::unique_ptr<Kueue> kueue_;
};

}  // namespace ringleader::devcluster
