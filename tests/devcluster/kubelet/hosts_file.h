// Cluster DNS for devcluster's Pods as a hosts file: the names a headless Service gives its Pods
// (hostname.subdomain.namespace.svc.cluster.local), bind-mounted on every container's /etc/hosts.
// ClusterDns (cluster_dns.h) keeps it current from the API.
#pragma once

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringleader::devcluster::kubelet {

struct HostEntry {
  std::string ip;
  std::string name;
};

// The records cluster DNS (CoreDNS's kubernetes plugin) answers for headless Services (clusterIP
// None), from their discovery.k8s.io/v1 EndpointSlices (label kubernetes.io/service-name): for each
// IPv4 address of a counted endpoint "<service>.<namespace>.svc.cluster.local", and
// "<hostname>.<service>.<namespace>.svc.cluster.local" when the endpoint has a hostname (the
// EndpointSlice controller sets it for Pods whose spec.subdomain names the Service). An endpoint
// counts when conditions.ready is true or absent, or when its Service sets
// publishNotReadyAddresses. Sorted by name, then address; no duplicates.
std::vector<HostEntry> ClusterHostEntries(const std::vector<nlohmann::json>& services,
                                          const std::vector<nlohmann::json>& endpoint_slices);

// localhost lines, then "IP NAME" per entry.
std::string RenderHosts(const std::vector<HostEntry>& entries);

// The file every container sees as /etc/hosts. Rewritten in place (never renamed) because a bind
// mount follows the inode it was made from.
class HostsFile {
 public:
  explicit HostsFile(std::filesystem::path path);  // writes the localhost lines
  const std::filesystem::path& path() const { return path_; }
  // Rewrites the file when `content` differs from what it holds; true when it did.
  bool Update(const std::string& content);

 private:
  std::filesystem::path path_;
  std::mutex mu_;
  std::string content_;
};

}  // namespace ringleader::devcluster::kubelet
