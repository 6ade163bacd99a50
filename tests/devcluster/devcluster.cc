// DevCluster, the public face of the server.
#include "tests/devcluster/devcluster.h"

#include "tests/devcluster/server.h"

namespace ringleader::devcluster {

std::unique_ptr<DevCluster> DevCluster::Start(const Options& options) {
  return std::unique_ptr<DevCluster>(new DevCluster(std::make_unique<Server>(options)));
}

DevCluster::DevCluster(std::unique_ptr<Server> server) : server_(std::move(server)) {}

DevCluster::~DevCluster() { Stop(); }

std::string DevCluster::url() const { return server_->url(); }
std::string DevCluster::kubeconfig_path() const { return server_->kubeconfig_path(); }
std::string DevCluster::ca_pem() const { return server_->ca_pem(); }
std::string DevCluster::token() const { return server_->token(); }
Faults& DevCluster::faults() { return server_->faults(); }
kubelet::PodNetwork* DevCluster::pod_network() { return server_->pod_network(); }
void DevCluster::Stop() { server_->Stop(); }

}  // namespace ringleader::devcluster
