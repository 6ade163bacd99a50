// Kueue (sigs.k8s.io/kueue, built by scripts/build-kueue) on devcluster's real control plane: its
// CRDs applied, its manager run as a process with a configuration file, and its admission and
// conversion webhooks reached on loopback over TLS, since devcluster routes no Services.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

namespace ringleader::testing {
class ChildProcess;
}  // namespace ringleader::testing

namespace ringleader::devcluster {

// Where scripts/build-kueue puts the manager and the manifests of the same release.
std::filesystem::path DefaultKueueDir();

// Kueue manages Pods only in namespaces with this label (managedJobsNamespaceSelector).
inline constexpr const char* kKueueManagedNamespaceLabel = "kueue-managed";
inline constexpr const char* kKueueManagedNamespaceValue = "true";

struct KueueOptions {
  std::filesystem::path dir;  // its configuration, certificates and log (kueue.log)
  std::filesystem::path kueue_dir = DefaultKueueDir();  // bin/kueue, manifests/
  std::string api_server_url;                           // https://127.0.0.1:PORT
  std::string ca_pem;                                   // the API server's CA
  std::string kubeconfig_path;                          // cluster-admin
  std::string token;                                    // the same cluster-admin's token
  // waitForPodsReady as docs/kueue.md recommends it (blockAdmission, 5 min timeout): an admitted
  // group whose Pods do not all become Ready is evicted and requeued.
  bool wait_for_pods_ready = true;
  std::chrono::seconds start_timeout{90};
};

class Kueue {
 public:
  // Applies the CRDs (the multi-version ones converted by the manager's /convert), starts the
  // manager, installs its webhook configurations with loopback URLs, and returns once its webhooks
  // answer the API server. Throws std::runtime_error naming the step that failed, with the tail
  // of Kueue's log where it ran.
  static std::unique_ptr<Kueue> Start(const KueueOptions& options);
  ~Kueue();
  Kueue(const Kueue&) = delete;
  Kueue& operator=(const Kueue&) = delete;

  std::filesystem::path log() const { return options_.dir / "kueue.log"; }
  int webhook_port() const { return webhook_port_; }
  int pid() const;

  // SIGTERM, then SIGKILL after 10 s. The CRDs and webhook configurations stay; idempotent.
  void Stop();

 private:
  Kueue() = default;
  void WaitForWebhooks(std::chrono::steady_clock::time_point deadline);

  KueueOptions options_;
  int webhook_port_ = 0;
  int health_port_ = 0;
  std::unique_ptr<testing::ChildProcess> process_;
};

}  // namespace ringleader::devcluster
