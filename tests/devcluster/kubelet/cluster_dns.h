// devcluster's stand-in for CoreDNS: one per cluster, it watches Services and EndpointSlices
// (discovery.k8s.io/v1) in every namespace, as CoreDNS's kubernetes plugin does, and keeps the
// shared hosts file that every isolated Pod's containers see as /etc/hosts holding the records
// cluster DNS would answer for headless Services (ClusterHostEntries in hosts_file.h).
#pragma once

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "operator/kube/client.h"
#include "tests/devcluster/kubelet/hosts_file.h"
#include "tests/devcluster/kubelet/object_feed.h"

namespace ringleader::devcluster::kubelet {

class ClusterDns {
 public:
  // Creates `hosts_file` (localhost lines only) before returning, so node agents may mount it at
  // once, then starts watching. `api` may list and watch Services and EndpointSlices in every
  // namespace (the admin's). Throws std::runtime_error when the file cannot be written and
  // kube::ConfigError for unusable TLS material in `api`.
  ClusterDns(const kube::Config& api, std::filesystem::path hosts_file);
  ClusterDns(const ClusterDns&) = delete;
  ClusterDns& operator=(const ClusterDns&) = delete;
  ~ClusterDns();

  // Ends the watches; the file keeps its last content. Idempotent.
  void Stop();
  const std::filesystem::path& hosts_file() const { return hosts_.path(); }
  // True once both kinds have been listed and the file written from them.
  bool Synced() const;
  // The last failure to rewrite the file, "" when none.
  std::string LastError() const;

 private:
  void Run(std::stop_token stop);

  HostsFile hosts_;
  std::unique_ptr<kube::Client> client_;
  mutable std::mutex mu_;  // guards changed_, synced_ and last_error_
  std::condition_variable_any wake_;
  bool changed_ = false;
  bool synced_ = false;
  std::string last_error_;
  std::unique_ptr<ObjectFeed> services_;
  std::unique_ptr<ObjectFeed> endpoint_slices_;
  std::jthread thread_;
};

}  // namespace ringleader::devcluster::kubelet
