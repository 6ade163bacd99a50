// The cluster's hosts file: which Pods have DNS names, and writing it in place.
#include "tests/devcluster/kubelet/hosts_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

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

bool SelectorMatches(const json& service, const json& pod) {
  const json& spec = service["spec"];
  if (!spec.contains("selector") || !spec["selector"].is_object() || spec["selector"].empty()) {
    return false;
  }
  const json labels = pod["metadata"].value("labels", json::object());
  for (const auto& [key, value] : spec["selector"].items()) {
    if (!labels.contains(key) || labels[key] != value) {
      return false;
    }
  }
  return true;
}

bool Headless(const json& service) { return Field(service, "spec", "clusterIP") == "None"; }

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

std::vector<HostEntry> ClusterHostEntries(const std::vector<json>& pods, const std::vector<json>& services,
                                          const std::function<std::string(const json& pod)>& ip_of) {
  std::vector<HostEntry> entries;
  for (const json& pod : pods) {
    const std::string hostname = Field(pod, "spec", "hostname");
    const std::string subdomain = Field(pod, "spec", "subdomain");
    const std::string ns = Field(pod, "metadata", "namespace");
    if (hostname.empty() || subdomain.empty()) {
      continue;
    }
    const std::string ip = ip_of(pod);
    if (ip.empty()) {
      continue;
    }
    const bool served = std::any_of(services.begin(), services.end(), [&](const json& service) {
      return Field(service, "metadata", "namespace") == ns && Field(service, "metadata", "name") == subdomain &&
             Headless(service) && SelectorMatches(service, pod);
    });
    if (served) {
      entries.push_back({ip, hostname + "." + subdomain + "." + ns + ".svc.cluster.local"});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const HostEntry& a, const HostEntry& b) { return a.name < b.name; });
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
