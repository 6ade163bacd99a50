// ClusterDns: two feeds, and a thread that rewrites the hosts file whenever either changes.
#include "tests/devcluster/kubelet/cluster_dns.h"

#include <chrono>
#include <exception>
#include <vector>

namespace ringleader::devcluster::kubelet {
namespace {

kube::ReflectorOptions AllNamespaces(kube::Resource resource) {
  kube::ReflectorOptions options;
  options.resource = std::move(resource);
  return options;
}

std::vector<nlohmann::json> Copies(const std::vector<ObjectPtr>& objects) {
  std::vector<nlohmann::json> copies;
  copies.reserve(objects.size());
  for (const ObjectPtr& object : objects) {
    copies.push_back(*object);
  }
  return copies;
}

}  // namespace

ClusterDns::ClusterDns(const kube::Config& api, std::filesystem::path hosts_file)
    : hosts_(std::move(hosts_file)), client_(kube::MakeClient(api)) {
  const auto changed = [this] {
    std::lock_guard lock(mu_);
    changed_ = true;
    wake_.notify_all();
  };
  services_ = std::make_unique<ObjectFeed>(*client_, AllNamespaces(kube::Services()), changed);
  endpoint_slices_ = std::make_unique<ObjectFeed>(
      *client_, AllNamespaces({"discovery.k8s.io", "v1", "endpointslices", true}), changed);
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

ClusterDns::~ClusterDns() { Stop(); }

void ClusterDns::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (services_) {
    services_->Stop();
  }
  if (endpoint_slices_) {
    endpoint_slices_->Stop();
  }
}

bool ClusterDns::Synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

std::string ClusterDns::LastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void ClusterDns::Run(std::stop_token stop) {
  bool failed = false;  // the last rewrite failed: try again after a pause even without a change
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, stop, failed ? std::chrono::milliseconds(500) : std::chrono::hours(24),
                     [this] { return changed_; });
      if (stop.stop_requested()) {
        return;
      }
      changed_ = false;
    }
    // Until both kinds are listed, a Service without its slices (or the reverse) would drop names.
    if (!services_->Synced() || !endpoint_slices_->Synced()) {
      continue;
    }
    std::string error;
    try {
      hosts_.Update(RenderHosts(ClusterHostEntries(Copies(services_->Objects()), Copies(endpoint_slices_->Objects()))));
    } catch (const std::exception& e) {
      error = "rewriting " + hosts_.path().string() + ": " + e.what();
    }
    failed = !error.empty();
    std::lock_guard lock(mu_);
    last_error_ = error;
    synced_ = synced_ || !failed;
  }
}

}  // namespace ringleader::devcluster::kubelet
