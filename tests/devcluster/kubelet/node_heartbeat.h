// A node agent's side of node health, as the kubelet's: register the Node (create, or bring an
// existing one's labels up to date), post its status, then renew its Lease in kube-node-lease so
// that the node lifecycle controller keeps it Ready and untainted. Failures are retried with
// backoff on the heartbeat's own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "tests/devcluster/node_config.h"

namespace ringleader::devcluster::kubelet {

struct HeartbeatOptions {
  // The kubelet renews every quarter of the 40 s lease.
  std::chrono::milliseconds lease_renew_interval{10000};
  // Re-posts the status (fresh lastHeartbeatTime, Ready again after the controller marked it
  // Unknown) this often.
  std::chrono::milliseconds status_interval{60000};
};

class NodeHeartbeat {
 public:
  // Starts the thread. `client` (authenticated as system:node:<name>) must outlive it.
  NodeHeartbeat(kube::Client& client, NodeConfig node, int kubelet_port, HeartbeatOptions options = {});
  NodeHeartbeat(const NodeHeartbeat&) = delete;
  NodeHeartbeat& operator=(const NodeHeartbeat&) = delete;
  ~NodeHeartbeat();

  // Ends the thread; the Node and its Lease stay (the Lease then expires). Idempotent.
  void Stop();
  // Whether the Node exists with this agent's status posted.
  bool Registered() const;
  // The last failure ("registering Node node-a: ..."), "" after a success.
  std::string LastError() const;

 private:
  void Run(std::stop_token stop);
  void Register();
  void PostStatus();
  void RenewLease();

  kube::Client& client_;
  const NodeConfig node_;
  const int kubelet_port_;
  const HeartbeatOptions options_;
  std::string node_uid_;
  nlohmann::json last_status_ = nlohmann::json::object();
  mutable std::mutex mu_;  // guards registered_ and last_error_
  bool registered_ = false;
  std::string last_error_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

// Waits until the scheduler may place Pods on every Node in `nodes` (NodeNotSchedulableReason is
// ""), reading them through `client` (one that may get Nodes: the admin's). Throws
// std::runtime_error naming each Node that is not, and why, when `deadline` passes.
void WaitForNodesReady(kube::Client& client, const std::vector<std::string>& nodes,
                       std::chrono::steady_clock::time_point deadline);

}  // namespace ringleader::devcluster::kubelet
