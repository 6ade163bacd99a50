// Cluster DNS for devcluster's Pods as a hosts file: the names a headless Service gives its Pods
// (hostname.subdomain.namespace.svc.cluster.local), bind-mounted on every container's /etc/hosts.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringleader::devcluster::kubelet {

struct HostEntry {
  std::string ip;
  std::string name;
};

// One entry per Pod that has an address (from `ip_of`, "" for none), a spec.hostname and a
// spec.subdomain naming a headless Service (clusterIP None) of its namespace whose selector
// matches the Pod's labels - the Pods that cluster DNS would answer for. Sorted by name.
std::vector<HostEntry> ClusterHostEntries(const std::vector<nlohmann::json>& pods,
                                          const std::vector<nlohmann::json>& services,
                                          const std::function<std::string(const nlohmann::json& pod)>& ip_of);

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
