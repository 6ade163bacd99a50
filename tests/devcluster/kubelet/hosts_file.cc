// The cluster's hosts file: the records cluster DNS would answer, and writing them in place.
#include "tests/devcluster/kubelet/hosts_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

std::string Field(const json& object, const char* outer, const char* inner) {
  if (!object.is_object() || !object.contains(outer) || !object[outer].is_object()) {
    return "";
  }
  const json& value = object[outer];
  return value.contains(inner) && value[inner].is_string() ? value[inner].get<std::string>() : "";
}

std::string ServiceOf(const json& slice) {
  if (!slice.contains("metadata") || !slice["metadata"].contains("labels") ||
      !slice["metadata"]["labels"].is_object()) {
    return "";
  }
  return slice["metadata"]["labels"].value("kubernetes.io/service-name", "");
}

void WriteAll(int fd, const std::string& content, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::pwrite(fd, content.data() + done, content.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw std::runtime_error("writing " + path.string() + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::vector<HostEntry> ClusterHostEntries(const std::vector<json>& services, const std::vector<json>& endpoint_slices) {
  // Headless Services by "namespace/name" -> whether they publish not-ready addresses.
  std::map<std::string, bool> headless;
  for (const json& service : services) {
    if (Field(service, "spec", "clusterIP") == "None") {
      headless[Field(service, "metadata", "namespace") + "/" + Field(service, "metadata", "name")] =
          service["spec"].value("publishNotReadyAddresses", false);
    }
  }
  std::set<std::pair<std::string, std::string>> records;  // (name, ip)
  for (const json& slice : endpoint_slices) {
    const std::string ns = Field(slice, "metadata", "namespace");
    const std::string service = ServiceOf(slice);
    const auto found = headless.find(ns + "/" + service);
    if (service.empty() || found == headless.end() || slice.value("addressType", "") != "IPv4" ||
        !slice.contains("endpoints") || !slice["endpoints"].is_array()) {
      continue;
    }
    const std::string domain = service + "." + ns + ".svc.cluster.local";
    for (const json& endpoint : slice["endpoints"]) {
      if (!endpoint.is_object()) {
        continue;
      }
      const json conditions = endpoint.value("conditions", json::object());
      const bool ready = !conditions.contains("ready") || !conditions["ready"].is_boolean() ||
                         conditions["ready"].get<bool>();
      if (!ready && !found->second) {
        continue;
      }
      const std::string hostname = endpoint.value("hostname", "");
      for (const json& address : endpoint.value("addresses", json::array())) {
        if (!address.is_string()) {
          continue;
        }
        records.emplace(domain, address.get<std::string>());
        if (!hostname.empty()) {
          records.emplace(hostname + "." + domain, address.get<std::string>());
        }
      }
    }
  }
  std::vector<HostEntry> entries;
  for (const auto& [name, ip] : records) {
    entries.push_back({ip, name});
  }
  return entries;
}

std::string RenderHosts(const std::vector<HostEntry>& entries) {
  std::string text =
      "# devcluster's cluster DNS: headless Services' Pods\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n";
  for (const HostEntry& entry : entries) {
    text += entry.ip + "\t" + entry.name + "\n";
  }
  return text;
}

HostsFile::HostsFile(std::filesystem::path path) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("creating " + path_.string() + ": " + std::strerror(errno));
  }
  ::close(fd);
  Update(RenderHosts({}));
}

bool HostsFile::Update(const std::string& content) {
  std::lock_guard<std::mutex> lock(mu_);
  if (content == content_) {
    return false;
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("opening " + path_.string() + ": " + std::strerror(errno));
  }
  // Written over the old bytes, then cut to length: readers never see an empty file.
  try {
    WriteAll(fd, content, path_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  const int truncated = ::ftruncate(fd, static_cast<off_t>(content.size()));
  ::close(fd);
  if (truncated != 0) {
    throw std::runtime_error("truncating " + path_.string() + ": " + std::strerror(errno));
  }
  content_ = content;
  return true;
}

}  // namespace ringleader::devcluster::kubelet
