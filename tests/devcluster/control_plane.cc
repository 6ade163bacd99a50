// ControlPlane: writes the components' certificates, tokens, kubeconfigs and audit policy, starts
// them with the flags a small kubeadm-like cluster uses, and waits until the API server is ready
// and the controller manager has made the default ServiceAccount (Pods are refused before it).
#include "tests/devcluster/control_plane.h"

#include <openssl/rand.h>
#include <signal.h>

#include <sstream>
#include <stdexcept>
#include <thread>

#include "operator/kube/transport.h"
#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/tls.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster {
namespace {

std::string RandomToken() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("control plane: RAND_bytes failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token += kHex[byte >> 4];
    token += kHex[byte & 15];
  }
  return token;
}

std::string Tail(const std::filesystem::path& log, std::size_t bytes = 3000) {
  const std::string text = testing::ReadLog(log);
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string joined;
  for (const std::string& item : items) {
    joined += (joined.empty() ? "" : separator) + item;
  }
  return joined;
}

// Everything at Metadata: who did what to which object, and the answer's code, which is what the
// tests read (RBAC decisions, the operator's writes); request and response bodies stay out.
constexpr const char* kAuditPolicy =
    "apiVersion: audit.k8s.io/v1\n"
    "kind: Policy\n"
    "omitStages: [RequestReceived]\n"
    "rules:\n"
    "- level: Metadata\n";

}  // namespace

std::filesystem::path DefaultControlPlaneBinDir() { return RINGLEADER_CONTROL_PLANE_BIN_DIR; }

std::unique_ptr<ControlPlane> ControlPlane::Start(const ControlPlaneOptions& options) {
  std::unique_ptr<ControlPlane> plane(new ControlPlane());
  plane->options_ = options;
  for (const char* program : {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
    if (!std::filesystem::exists(options.bin_dir / program)) {
      throw std::runtime_error("control plane: " + (options.bin_dir / program).string() +
                               " is missing; scripts/setup builds it");
    }
  }
  const std::filesystem::path& dir = options.dir;
  std::filesystem::create_directories(dir / "etcd");

  // The API server's certificate also names the in-cluster Service, as a real one does, and the
  // addresses Pods reach it at.
  std::vector<std::string> serving_names = {"127.0.0.1",          "localhost",
                                            "kubernetes",         "kubernetes.default",
                                            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
                                            "10.96.0.1"};
  serving_names.insert(serving_names.end(), options.extra_serving_addresses.begin(),
                       options.extra_serving_addresses.end());
  const Certificates certs = GenerateCertificates(serving_names);
  plane->ca_pem_ = certs.ca_cert_pem;
  plane->serving_cert_pem_ = certs.server_cert_pem;
  plane->serving_key_pem_ = certs.server_key_pem;
  WritePrivateFile(dir / "ca.crt", certs.ca_cert_pem);
  WritePrivateFile(dir / "apiserver.crt", certs.server_cert_pem);
  WritePrivateFile(dir / "apiserver.key", certs.server_key_pem);
  const SigningKey service_accounts = GenerateSigningKey();
  WritePrivateFile(dir / "service-account.key", service_accounts.private_key_pem);
  WritePrivateFile(dir / "service-account.pub", service_accounts.public_key_pem);

  plane->admin_token_ = RandomToken();
  const std::string controller_manager_token = RandomToken();
  const std::string scheduler_token = RandomToken();
  std::ostringstream tokens;
  tokens << plane->admin_token_ << ",devcluster-admin,devcluster-admin,\"system:masters\"\n"
         << controller_manager_token << ",system:kube-controller-manager,system:kube-controller-manager\n"
         << scheduler_token << ",system:kube-scheduler,system:kube-scheduler\n";
  for (const std::string& node : options.node_names) {
    const std::string token = RandomToken();
    plane->node_tokens_[node] = token;
    tokens << token << ",system:node:" << node << ",system:node:" << node << ",\"system:nodes\"\n";
  }
  WritePrivateFile(dir / "tokens.csv", tokens.str());
  WritePrivateFile(dir / "audit-policy.yaml", kAuditPolicy);

  const std::vector<int> ports = testing::FreePorts(3);
  const std::string etcd_client = "http://127.0.0.1:" + std::to_string(ports[0]);
  const std::string etcd_peer = "http://127.0.0.1:" + std::to_string(ports[1]);
  plane->port_ = ports[2];
  WritePrivateFile(dir / "controller-manager.kubeconfig",
            KubeconfigYaml(plane->url(), certs.ca_cert_pem, controller_manager_token));
  WritePrivateFile(dir / "scheduler.kubeconfig", KubeconfigYaml(plane->url(), certs.ca_cert_pem, scheduler_token));
  // Kubernetes' own gang scheduling (the Workload API's PodGroups and kube-scheduler's
  // GangScheduling plugin) and its topology-aware placement, off by default in 1.37; the options'
  // gates come after, so a test may turn them off again.
  std::vector<std::string> all_gates = {"GenericWorkload=true", "TopologyAwareWorkloadScheduling=true"};
  all_gates.insert(all_gates.end(), options.feature_gates.begin(), options.feature_gates.end());
  const std::vector<std::string> gates = {"--feature-gates=" + Join(all_gates, ",")};

  plane->StartComponent("etcd", {"--name=devcluster", "--data-dir=" + (dir / "etcd").string(),
                                 "--listen-client-urls=" + etcd_client, "--advertise-client-urls=" + etcd_client,
                                 "--listen-peer-urls=" + etcd_peer, "--initial-advertise-peer-urls=" + etcd_peer,
                                 "--initial-cluster=devcluster=" + etcd_peer,
                                 // A test cluster's data dies with it: no fsync, no durability cost.
                                 "--unsafe-no-fsync", "--log-level=warn"});

  std::vector<std::string> apiserver = {
      "--etcd-servers=" + etcd_client,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      "--secure-port=" + std::to_string(plane->port_),
      "--tls-cert-file=" + (dir / "apiserver.crt").string(),
      "--tls-private-key-file=" + (dir / "apiserver.key").string(),
      "--client-ca-file=" + (dir / "ca.crt").string(),
      "--token-auth-file=" + (dir / "tokens.csv").string(),
      "--authorization-mode=Node,RBAC",
      // On top of the defaults (NamespaceLifecycle, LimitRanger, ServiceAccount, ResourceQuota,
      // PodSecurity, TaintNodesByCondition, webhooks, ...): what kubeadm clusters add.
      "--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement,ResourceQuota",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-key-file=" + (dir / "service-account.pub").string(),
      "--service-account-signing-key-file=" + (dir / "service-account.key").string(),
      "--service-cluster-ip-range=10.96.0.0/16",
      // The server's loopback address is no endpoint for the kubernetes Service; Pods reach the
      // server through a relay their node agent names in their environment instead.
      "--endpoint-reconciler-type=none",
      "--allow-privileged=true",
      // pods/log reaches the node agents at their InternalIP (127.0.0.1) and kubelet port.
      "--kubelet-preferred-address-types=InternalIP",
      "--audit-policy-file=" + (dir / "audit-policy.yaml").string(),
      "--audit-log-path=" + (dir / "audit.log").string(),
      "--audit-log-maxbackup=1",
      "--profiling=false",
      // PodGroups and Workloads: a beta API group version, served only when asked for.
      "--runtime-config=scheduling.k8s.io/v1beta1=true",
  };
  apiserver.insert(apiserver.end(), gates.begin(), gates.end());
  apiserver.insert(apiserver.end(), options.extra_apiserver_args.begin(), options.extra_apiserver_args.end());
  plane->StartComponent("kube-apiserver", apiserver);

  const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  std::vector<std::string> controller_manager = {
      "--kubeconfig=" + (dir / "controller-manager.kubeconfig").string(),
      "--leader-elect=false",
      "--secure-port=0",
      "--use-service-account-credentials=true",
      "--service-account-private-key-file=" + (dir / "service-account.key").string(),
      "--root-ca-file=" + (dir / "ca.crt").string(),
      "--controllers=*",
  };
  controller_manager.insert(controller_manager.end(), gates.begin(), gates.end());
  std::vector<std::string> scheduler = {
      "--kubeconfig=" + (dir / "scheduler.kubeconfig").string(),
      "--leader-elect=false",
      "--secure-port=0",
  };
  scheduler.insert(scheduler.end(), gates.begin(), gates.end());
  plane->WaitUntilReady(deadline);
  plane->StartComponent("kube-controller-manager", controller_manager);
  plane->StartComponent("kube-scheduler", scheduler);
  plane->WaitUntilReady(deadline);
  return plane;
}

ControlPlane::~ControlPlane() { Stop(); }

std::string ControlPlane::url() const { return "https://127.0.0.1:" + std::to_string(port_); }

std::string ControlPlane::node_token(const std::string& node) const {
  const auto it = node_tokens_.find(node);
  if (it == node_tokens_.end()) {
    throw std::invalid_argument("control plane: no token for Node " + node);
  }
  return it->second;
}

std::filesystem::path ControlPlane::audit_log() const { return options_.dir / "audit.log"; }

std::map<std::string, int> ControlPlane::pids() const {
  std::map<std::string, int> pids;
  for (const auto& [name, process] : components_) {
    pids[name] = process->pid();
  }
  return pids;
}

void ControlPlane::StartComponent(const std::string& name, const std::vector<std::string>& args) {
  testing::ChildOptions child;
  child.binary = options_.bin_dir / name;
  child.args = args;
  child.log = options_.dir / (name + ".log");
  child.die_with_parent = true;
  components_.emplace_back(name, std::make_unique<testing::ChildProcess>(child));
}

void ControlPlane::WaitUntilReady(const std::chrono::steady_clock::time_point deadline) {
  kube::Config config;
  config.server = url();
  config.ca_pem = ca_pem_;
  kube::TransportOptions transport_options;
  transport_options.request_timeout = std::chrono::seconds(5);
  const auto transport = kube::MakeCpprestTransport(config, transport_options);
  // Ready, and the default ServiceAccount exists (the controller manager's, once it runs).
  const bool controllers_started = components_.size() > 2;
  const std::string target =
      controllers_started ? "/api/v1/namespaces/default/serviceaccounts/default" : "/readyz";
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& [name, process] : components_) {
      if (!process->Running()) {
        throw std::runtime_error("control plane: " + name + " exited while starting; its log (" +
                                 (options_.dir / (name + ".log")).string() + ") ends:\n" +
                                 Tail(options_.dir / (name + ".log")));
      }
    }
    try {
      const kube::HttpResponse response = transport->Send({"GET", target, admin_token_, "", ""});
      if (response.status == 200) {
        return;
      }
      last = "HTTP " + std::to_string(response.status) + ": " + response.body.substr(0, 500);
    } catch (const std::exception& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw std::runtime_error("control plane: GET " + target + " did not answer 200 in time (last: " + last +
                           "); kube-apiserver's log ends:\n" + Tail(options_.dir / "kube-apiserver.log"));
}

void ControlPlane::Stop() {
  for (auto it = components_.rbegin(); it != components_.rend(); ++it) {
    it->second->Signal(SIGTERM);
    if (!it->second->WaitFor(std::chrono::seconds(10))) {
      it->second->Signal(SIGKILL);
      it->second->WaitFor(std::chrono::seconds(5));
    }
  }
  components_.clear();
}

}  // namespace ringleader::devcluster
