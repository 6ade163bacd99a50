// devcluster: an in-process Kubernetes API server over HTTPS for tests and the demo. Real
// kubectl and the operator's client talk to it as to a cluster: discovery, OpenAPI, CRDs and
// custom resources, CRUD, patches, watch, Tables, garbage collection and fault injection.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/devcluster/faults.h"
#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster {

struct Options {
  std::string listen_host = "127.0.0.1";
  int port = 0;                              // 0 picks a free port
  std::string data_dir;                      // where ca.crt, token and kubeconfig are written ("" = none)
  std::size_t max_body_bytes = 3 << 20;      // larger request bodies get 413
  std::size_t watch_history = 10000;         // events kept for watch resume; older RVs get 410
  std::chrono::milliseconds bookmark_interval{10000};  // for watches with allowWatchBookmarks
  std::vector<NodeConfig> nodes = DefaultNodes();      // served as Nodes from the start
  // Bind every Pod without spec.nodeName to a node as kube-scheduler would, or mark it
  // PodScheduled=False with a FailedScheduling Event. Off by default: a bind changes the Pod's
  // resourceVersion, so clients updating Pods they just created would otherwise get 409s.
  bool schedule_pods = false;
  // Run bound Pods as local processes (the kubelet, tests/devcluster/kubelet): each container's
  // image names a program in `images` (by image, or by repository without the tag). Implies
  // schedule_pods. As root the Nodes and Pods get network namespaces named from network_prefix.
  bool run_pods = false;
  std::map<std::string, std::string> images = {};
  std::string pods_dir = {};  // the kubelet's root: pods/, hosts; "" = data_dir + "/kubelet"
  std::string network_prefix = "rl";
  // Append a JSON line per request (user, RBAC attributes, decision) to this file ("" = none).
  std::string audit_log = {};
  // Called with (namespace, Pod name, network namespace, address) before a Pod's containers
  // start (kubelet::KubeletOptions::on_pod_network_for_test).
  std::function<void(const std::string&, const std::string&, const std::string&, const std::string&)>
      on_pod_network_for_test = {};
};

class Server;
namespace kubelet {
class PodNetwork;
}  // namespace kubelet

class DevCluster {
 public:
  // Generates the CA and token, starts serving and writes the client files. Throws
  // std::runtime_error naming the problem (port in use, unwritable data dir, TLS failure).
  static std::unique_ptr<DevCluster> Start(const Options& options);

  DevCluster(const DevCluster&) = delete;
  DevCluster& operator=(const DevCluster&) = delete;
  ~DevCluster();

  std::string url() const;              // https://127.0.0.1:PORT
  std::string kubeconfig_path() const;  // "" when Options::data_dir was empty
  std::string ca_pem() const;
  std::string token() const;
  Faults& faults();
  // The Pods' network when run_pods made one (root), for tests that break a route; else null.
  kubelet::PodNetwork* pod_network();

  // Ends every watch, stops listening and waits for handlers to finish. Idempotent.
  void Stop();

 private:
  explicit DevCluster(std::unique_ptr<Server> server);
  std::unique_ptr<Server> server_;
};

}  // namespace ringleader::devcluster
