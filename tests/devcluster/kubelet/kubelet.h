// devcluster's node agent, a stand-in for the kubelet: one per Node, a client of the API server
// (as system:node:<name>, so the Node authorizer and NodeRestriction hold it to its own Node and
// Pods) and of nothing else. It registers its Node and keeps its Lease (NodeHeartbeat), watches
// the Pods bound to it, admits them through the device manager's rules (NodeDevices), runs each as
// local processes (PodWorker) in a network namespace of its own on the cluster's shared PodNetwork
// with the cluster DNS hosts file as /etc/hosts, writes their status through pods/status
// (PodStatusWriter), ends graceful deletions as the kubelet does, and serves pods/log (LogServer)
// and port-forward (kubelet-streaming in front of it, StreamingFront) on its kubelet endpoint. Without a PodNetwork every Pod runs in this machine's network
// namespace at the Node's 127.0.N.1 address, with mount paths rewritten to host paths.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "tests/devcluster/kubelet/api_volumes.h"
#include "tests/devcluster/kubelet/container_spec.h"
#include "tests/devcluster/kubelet/device_allocator.h"
#include "tests/devcluster/kubelet/log_server.h"
#include "tests/devcluster/kubelet/node_heartbeat.h"
#include "tests/devcluster/kubelet/object_feed.h"
#include "tests/devcluster/kubelet/pod_network.h"
#include "tests/devcluster/kubelet/pod_status_writer.h"
#include "tests/devcluster/kubelet/streaming_front.h"
#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster::kubelet {

class PodWorker;

struct KubeletOptions {
  std::filesystem::path root_dir;  // Pods' volumes and logs: <root>/pods/<ns>_<name>_<uid>
  ImageMap images;
  // Network and mount namespaces for the Pods when the agent is given a PodNetwork; false runs
  // them as without one.
  bool isolate = true;
  // N of the Node's 127.0.N.1, the address its Pods get without a PodNetwork: its place in the
  // cluster's list of Nodes, from 1.
  int fallback_node_number = 1;
  // Where this agent's Pods reach the API server, given to every container as the `kubernetes`
  // Service's environment (KUBERNETES_SERVICE_HOST/PORT): a real kubelet names the Service's
  // ClusterIP, which kube-proxy routes; here, standing in for both, the agent names an address
  // the Pod's namespace reaches. "" gives none.
  std::string api_server_host;
  int api_server_port = 0;
  // kubelet-streaming, the front of the kubelet endpoint; "" = DefaultStreamingProgram().
  std::filesystem::path streaming_program = {};
  std::chrono::milliseconds max_grace{5000};
  std::chrono::milliseconds restart_backoff{1000};
  HeartbeatOptions heartbeat = {};
  // Called with (namespace, Pod name, network namespace, address) once a Pod has its network and
  // before its containers start: end-to-end tests break routes here.
  std::function<void(const std::string&, const std::string&, const std::string&, const std::string&)>
      on_pod_network_for_test = {};
};

class Kubelet {
 public:
  // `api` authenticates as system:node:<node.name>. `network` is the cluster's Pod network
  // (shared by every Node's agent, owned by the caller and outliving this), or null; `hosts_file`
  // is the cluster DNS file (ClusterDns) that isolated Pods see as /etc/hosts. Starts the log
  // server, the heartbeat (registration is retried until it succeeds), the Pod watch and the sync
  // loop, and returns without waiting for any of them. Throws std::runtime_error naming what failed
  // (the log server's port, the Node's network namespace) and kube::ConfigError for unusable TLS
  // material in `api`.
  Kubelet(const kube::Config& api, NodeConfig node, PodNetwork* network, std::filesystem::path hosts_file,
          KubeletOptions options);
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;
  ~Kubelet();

  // Stops every Pod's containers and every loop, and removes the Pods' network namespaces; the
  // Node, its Pods and their last status stay in the API. Idempotent.
  void Stop();

  const std::string& node_name() const { return node_.name; }
  // The kubelet endpoint's port (the Node's daemonEndpoints.kubeletEndpoint.Port).
  int port() const;
  // Whether the Node is registered with this agent's status (NodeHeartbeat::Registered).
  bool Registered() const;
  // The last failure of the heartbeat or the status writer, "" when none: for test diagnostics.
  std::string LastError() const;
  // Where the Pod's container logs are: <root>/pods/<namespace>_<name>_<uid>/logs/<container>.log
  // (container_log.h).
  std::filesystem::path PodDir(const std::string& ns, const std::string& name, const std::string& uid) const;

 private:
  struct Running;

  void Run(std::stop_token stop);
  void Pass();
  void Wake();
  // A newly admitted Pod's record and network; Pass writes its first status, then StartWorker
  // runs it.
  std::unique_ptr<Running> Admit(const nlohmann::json& pod, const Admission& admission);
  void StartWorker(Running& running, const nlohmann::json& pod);
  VolumeSources SourcesFor(const nlohmann::json& pod);
  LogReply ServeLog(const std::string& ns, const std::string& pod, const std::string& container,
                    const std::map<std::string, std::string>& query);
  std::optional<PodAddress> PodAddressOf(const std::string& ns, const std::string& pod) const;

  const NodeConfig node_;
  KubeletOptions options_;
  PodNetwork* network_;  // null: the fallback
  std::filesystem::path hosts_file_;
  Endpoint node_endpoint_;  // the Node's namespace and address (hostNetwork Pods run there)
  std::unique_ptr<kube::Client> client_;
  std::shared_ptr<kube::Transport> transport_;  // for the TokenRequest subresource
  std::shared_ptr<kube::TokenSource> token_;
  NodeDevices devices_;

  std::unique_ptr<LogServer> log_server_;
  std::unique_ptr<StreamingFront> streaming_;
  std::unique_ptr<NodeHeartbeat> heartbeat_;
  std::unique_ptr<ObjectFeed> pods_feed_;
  std::unique_ptr<PodStatusWriter> status_;

  // Written by the sync thread only, under mu_; read under mu_ by the log server's threads.
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Running>> pods_;  // by uid
  std::vector<std::unique_ptr<Running>> stopping_;
  // Sync thread only.
  std::set<std::string> rejected_;  // uids refused at admission: never admitted again
  std::set<std::string> deleted_;   // uids whose DELETE was sent
  std::vector<std::filesystem::path> mount_points_;  // created on the host by stopped Pods' containers

  std::mutex wake_mu_;
  std::condition_variable_any wake_;
  bool woken_ = false;
  std::atomic<bool> stopped_{false};
  std::jthread thread_;
};

}  // namespace ringleader::devcluster::kubelet
