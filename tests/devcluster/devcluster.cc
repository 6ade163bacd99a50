// DevCluster: starts the real control plane, the fault proxy in front of it, the node agents and
// Kueue when asked, and waits until the Nodes can take Pods.
#include "tests/devcluster/devcluster.h"

#include <thread>

#include "operator/kube/client.h"
#include "tests/devcluster/control_plane.h"
#include "tests/devcluster/fault_proxy.h"
#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/kueue.h"
#include "tests/devcluster/tcp_relay.h"
#include "tests/devcluster/kubelet/cluster_dns.h"
#include "tests/devcluster/kubelet/kubelet.h"
#include "tests/devcluster/kubelet/node_heartbeat.h"
#include "tests/devcluster/kubelet/pod_network.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster {
namespace {

kube::Config ConfigFor(const ControlPlane& plane, const std::string& token) {
  kube::Config config;
  config.server = plane.url();
  config.ca_pem = plane.ca_pem();
  config.token = kube::MakeStaticTokenSource(token);
  return config;
}

}  // namespace

DevCluster::DevCluster() = default;

std::unique_ptr<DevCluster> DevCluster::Start(const Options& options) {
  std::unique_ptr<DevCluster> cluster(new DevCluster());
  cluster->options_ = options;
  if (options.data_dir.empty()) {
    cluster->dir_ = testing::MakeTempDir("devcluster");
    cluster->owns_dir_ = true;
  } else {
    cluster->dir_ = options.data_dir;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  ControlPlaneOptions plane;
  plane.dir = cluster->dir_ / "control-plane";
  if (options.run_pods) {
    for (const NodeConfig& node : options.nodes) {
      plane.node_names.push_back(node.name);
    }
  }
  plane.feature_gates = options.feature_gates;
  if (options.run_pods) {
    // Before the control plane: its serving certificate names this machine's address on the Pods'
    // bridge, where the relay for the Pods listens.
    cluster->StartPodNetwork();
    if (cluster->network_) {
      plane.extra_serving_addresses.push_back(cluster->network_->ConnectHost().ip);
    }
  }
  cluster->control_plane_ = ControlPlane::Start(plane);
  if (cluster->network_) {
    // The API server listens on loopback, which Pods in their own namespaces cannot reach.
    cluster->api_relay_ = std::make_unique<TcpRelay>(cluster->network_->ConnectHost().ip, "127.0.0.1",
                                                     cluster->control_plane_->port());
  }
  cluster->kubeconfig_path_ = WriteClientFiles(cluster->dir_.string(), cluster->control_plane_->url(),
                                               cluster->control_plane_->ca_pem(),
                                               cluster->control_plane_->admin_token());

  FaultProxyOptions proxy;
  proxy.upstream_url = cluster->control_plane_->url();
  proxy.upstream_ca_pem = cluster->control_plane_->ca_pem();
  // The API server's own certificate names 127.0.0.1, where the proxy listens too: clients verify
  // the proxy with the same CA.
  proxy.server_cert_pem = cluster->control_plane_->serving_cert_pem();
  proxy.server_key_pem = cluster->control_plane_->serving_key_pem();
  cluster->proxy_ = FaultProxy::Start(proxy);

  if (options.run_pods) {
    cluster->StartNodeAgents();
    cluster->WaitForSchedulableNodes(deadline);
  }
  if (options.kueue) {
    KueueOptions kueue;
    kueue.dir = cluster->dir_ / "kueue";
    kueue.api_server_url = cluster->control_plane_->url();
    kueue.ca_pem = cluster->control_plane_->ca_pem();
    kueue.kubeconfig_path = cluster->kubeconfig_path_;
    kueue.token = cluster->control_plane_->admin_token();
    kueue.wait_for_pods_ready = options.kueue_wait_for_pods_ready;
    cluster->kueue_ = Kueue::Start(kueue);
  }
  return cluster;
}

void DevCluster::StartPodNetwork() {
  std::string why;
  if (kubelet::PodNetwork::Supported(&why)) {
    kubelet::NetworkOptions network;
    network.prefix = options_.network_prefix;
    network.subnet = "auto";  // devclusters side by side (parallel tests) get their own
    // As in a cluster, the operator (and Prometheus, and tests) on this machine reach Pods.
    network.connect_host = true;
    network_ = kubelet::PodNetwork::Create(network);
  }
}

void DevCluster::StartNodeAgents() {
  const std::filesystem::path root =
      options_.pods_dir.empty() ? dir_ / "kubelet" : std::filesystem::path(options_.pods_dir);
  std::filesystem::create_directories(root);
  // Before the agents: isolated Pods bind-mount its hosts file.
  dns_ = std::make_unique<kubelet::ClusterDns>(ConfigFor(*control_plane_, control_plane_->admin_token()),
                                               root / "hosts");
  for (std::size_t i = 0; i < options_.nodes.size(); ++i) {
    const NodeConfig& node = options_.nodes[i];
    kubelet::KubeletOptions agent;
    agent.root_dir = root;
    for (const auto& [image, program] : options_.images) {
      agent.images.programs[image] = program;
    }
    agent.fallback_node_number = static_cast<int>(i) + 1;
    agent.on_pod_network_for_test = options_.on_pod_network_for_test;
    // Without a Pod network, Pods share this machine's namespace and reach loopback.
    agent.api_server_host = api_relay_ ? network_->ConnectHost().ip : "127.0.0.1";
    agent.api_server_port = api_relay_ ? api_relay_->port() : control_plane_->port();
    agents_.push_back(std::make_unique<kubelet::Kubelet>(
        ConfigFor(*control_plane_, control_plane_->node_token(node.name)), node, network_.get(), dns_->hosts_file(),
        std::move(agent)));
  }
}

void DevCluster::WaitForSchedulableNodes(std::chrono::steady_clock::time_point deadline) {
  const auto client = kube::MakeClient(ConfigFor(*control_plane_, control_plane_->admin_token()));
  std::vector<std::string> names;
  for (const NodeConfig& node : options_.nodes) {
    names.push_back(node.name);
  }
  kubelet::WaitForNodesReady(*client, names, deadline);
}

DevCluster::~DevCluster() { Stop(); }

std::string DevCluster::url() const { return control_plane_->url(); }
std::string DevCluster::proxy_url() const { return proxy_->url(); }
std::string DevCluster::kubeconfig_path() const { return kubeconfig_path_; }
std::string DevCluster::ca_pem() const { return control_plane_->ca_pem(); }
std::string DevCluster::token() const { return control_plane_->admin_token(); }
Faults& DevCluster::faults() { return proxy_->faults(); }
std::filesystem::path DevCluster::audit_log() const { return control_plane_->audit_log(); }
kubelet::PodNetwork* DevCluster::pod_network() { return network_.get(); }

void DevCluster::Stop() {
  // Pods first (their processes end while the API still answers their agents' status writes).
  for (auto& agent : agents_) {
    agent->Stop();
  }
  agents_.clear();
  if (kueue_) {
    kueue_->Stop();
  }
  if (dns_) {
    dns_->Stop();
    dns_.reset();
  }
  if (network_) {
    network_->Destroy();
    network_.reset();
  }
  if (api_relay_) {
    api_relay_->Stop();
  }
  if (proxy_) {
    proxy_->Stop();
  }
  if (control_plane_) {
    control_plane_->Stop();
  }
  if (owns_dir_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    owns_dir_ = false;
  }
}

}  // namespace ringleader::devcluster
