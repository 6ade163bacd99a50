// NodeHeartbeat: registration, status posts and Lease renewals on one thread.
#include "tests/devcluster/kubelet/node_heartbeat.h"

#include <algorithm>
#include <stdexcept>

#include "operator/api/trainingjob.h"
#include "tests/devcluster/kubelet/node_status.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

kube::Resource Nodes() { return {"", "v1", "nodes", false}; }

constexpr milliseconds kFirstHeartbeatRetry{200};
constexpr milliseconds kLastHeartbeatRetry{5000};

}  // namespace

NodeHeartbeat::NodeHeartbeat(kube::Client& client, NodeConfig node, int kubelet_port, HeartbeatOptions options)
    : client_(client), node_(std::move(node)), kubelet_port_(kubelet_port), options_(options) {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

NodeHeartbeat::~NodeHeartbeat() { Stop(); }

void NodeHeartbeat::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool NodeHeartbeat::Registered() const {
  std::lock_guard lock(mu_);
  return registered_;
}

std::string NodeHeartbeat::LastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void NodeHeartbeat::Run(std::stop_token stop) {
  milliseconds retry = kFirstHeartbeatRetry;
  auto next_status = std::chrono::steady_clock::now() + options_.status_interval;
  while (!stop.stop_requested()) {
    milliseconds wait = options_.lease_renew_interval;
    std::string step = "registering";
    try {
      if (!Registered()) {
        Register();
        step = "posting the status of";
        PostStatus();
        next_status = std::chrono::steady_clock::now() + options_.status_interval;
        std::lock_guard lock(mu_);
        registered_ = true;
      }
      step = "renewing the Lease of";
      RenewLease();
      if (std::chrono::steady_clock::now() >= next_status) {
        step = "posting the status of";
        PostStatus();
        next_status = std::chrono::steady_clock::now() + options_.status_interval;
      }
      retry = kFirstHeartbeatRetry;
      std::lock_guard lock(mu_);
      last_error_.clear();
    } catch (const std::exception& e) {
      wait = retry;
      retry = std::min(retry * 2, kLastHeartbeatRetry);
      std::lock_guard lock(mu_);
      last_error_ = step + " Node " + node_.name + ": " + e.what();
    }
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, wait, [] { return false; });
  }
}

void NodeHeartbeat::Register() {
  try {
    node_uid_ = client_.Create(Nodes(), "", NodeObject(node_))["metadata"].value("uid", "");
    return;
  } catch (const kube::ApiError& e) {
    if (!kube::IsAlreadyExists(e)) {
      throw;
    }
  }
  // A Node of this name is left from an earlier agent: ours now, with our labels (its taints are
  // the control plane's, and NodeRestriction forbids a node to touch them).
  for (int attempt = 0;; ++attempt) {
    json existing = client_.Get(Nodes(), "", node_.name);
    node_uid_ = existing["metadata"].value("uid", "");
    json& labels = existing["metadata"]["labels"];
    const json wanted = NodeLabels(node_);
    bool changed = false;
    for (const auto& [key, value] : wanted.items()) {
      if (!labels.is_object() || !labels.contains(key) || labels[key] != value) {
        labels[key] = value;
        changed = true;
      }
    }
    if (!changed) {
      return;
    }
    try {
      client_.Update(Nodes(), "", existing);
      return;
    } catch (const kube::ApiError& e) {
      if (!kube::IsConflict(e) || attempt >= 5) {
        throw;
      }
    }
  }
}

void NodeHeartbeat::PostStatus() {
  json status = NodeStatus(node_, kubelet_port_, last_status_, api::FormatTime(std::chrono::system_clock::now()));
  client_.PatchStatus(Nodes(), "", node_.name, kube::PatchType::kMerge, {{"status", status}});
  last_status_ = std::move(status);
}

void NodeHeartbeat::RenewLease() {
  json lease = NodeLease(node_.name, node_uid_, FormatMicroTime(std::chrono::system_clock::now()));
  try {
    const json current = client_.Get(kube::Leases(), kNodeLeaseNamespace, node_.name);
    lease["metadata"]["resourceVersion"] = current["metadata"].value("resourceVersion", "");
    client_.Update(kube::Leases(), kNodeLeaseNamespace, lease);
  } catch (const kube::ApiError& e) {
    if (!kube::IsNotFound(e)) {
      throw;
    }
    client_.Create(kube::Leases(), kNodeLeaseNamespace, lease);
  }
}

void WaitForNodesReady(kube::Client& client, const std::vector<std::string>& nodes,
                       std::chrono::steady_clock::time_point deadline) {
  while (true) {
    std::string problems;
    for (const std::string& name : nodes) {
      std::string problem;
      try {
        problem = NodeNotSchedulableReason(client.Get(Nodes(), "", name));
      } catch (const kube::ApiError& e) {
        problem = kube::IsNotFound(e) ? "Node " + name + " is not registered" : "Node " + name + ": " + e.what();
      }
      if (!problem.empty()) {
        problems += (problems.empty() ? "" : "; ") + problem;
      }
    }
    if (problems.empty()) {
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("Nodes not ready in time: " + problems);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

}  // namespace ringleader::devcluster::kubelet
