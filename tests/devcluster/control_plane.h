// The real Kubernetes control plane under devcluster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, built by scripts/setup from their Go modules
// (tests/controlplane) and run here as child processes with their own certificates and tokens.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ringleader::testing {
class ChildProcess;
}  // namespace ringleader::testing

namespace ringleader::devcluster {

// Where scripts/setup puts the control plane's programs.
std::filesystem::path DefaultControlPlaneBinDir();

struct ControlPlaneOptions {
  std::filesystem::path dir;  // certificates, tokens, etcd's data, the components' logs, audit.log
  std::filesystem::path bin_dir = DefaultControlPlaneBinDir();
  // Each gets a token as user system:node:<name> in group system:nodes (the Node authorizer and
  // NodeRestriction then hold its agent to its own Node and Pods, as they hold a kubelet).
  std::vector<std::string> node_names;
  // --feature-gates for every component, after GenericWorkload=true and
  // TopologyAwareWorkloadScheduling=true, which every control plane runs with (kube-apiserver
  // serves scheduling.k8s.io/v1beta1 too) for Kubernetes' own gang scheduling.
  std::vector<std::string> feature_gates;
  // More addresses for the API server's serving certificate, besides 127.0.0.1 and the
  // `kubernetes` Service's names: where a relay (tcp_relay.h) lets Pods reach it.
  std::vector<std::string> extra_serving_addresses;
  // More kube-apiserver flags ("--runtime-config=...").
  std::vector<std::string> extra_apiserver_args;
  std::chrono::seconds start_timeout{180};
};

class ControlPlane {
 public:
  // Starts etcd, then kube-apiserver (waits for /readyz), then the controller manager and the
  // scheduler. Throws std::runtime_error naming the component that failed, with its log's tail.
  static std::unique_ptr<ControlPlane> Start(const ControlPlaneOptions& options);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  std::string url() const;  // https://127.0.0.1:PORT
  int port() const { return port_; }
  std::string ca_pem() const { return ca_pem_; }
  // A cluster-admin (group system:masters) token.
  std::string admin_token() const { return admin_token_; }
  // The token of a Node named in ControlPlaneOptions::node_names.
  std::string node_token(const std::string& node) const;
  // The API server's serving certificate and key (PEM; the certificate names 127.0.0.1), for a
  // proxy in front of it that clients verify with the same CA.
  std::string serving_cert_pem() const { return serving_cert_pem_; }
  std::string serving_key_pem() const { return serving_key_pem_; }
  // The API server's audit log: one JSON audit.k8s.io/v1 Event per line, level Metadata.
  std::filesystem::path audit_log() const;
  // The components' processes by name ("etcd", "kube-apiserver", ...), for tests that check they
  // run.
  std::map<std::string, int> pids() const;

  // SIGTERM to every component (scheduler and controller manager first, etcd last); idempotent.
  void Stop();

 private:
  ControlPlane() = default;
  void StartComponent(const std::string& name, const std::vector<std::string>& args);
  void WaitUntilReady(const std::chrono::steady_clock::time_point deadline);

  ControlPlaneOptions options_;
  int port_ = 0;
  std::string ca_pem_;
  std::string serving_cert_pem_;
  std::string serving_key_pem_;
  std::string admin_token_;
  std::map<std::string, std::string> node_tokens_;
  // In start order; stopped in reverse.
  std::vector<std::pair<std::string, std::unique_ptr<testing::ChildProcess>>> components_;
};

}  // namespace ringleader::devcluster
