// Kubelet: admits the Pods bound to devcluster's Nodes, keeps the hosts file current, stops the
// Pods that were deleted and writes each Pod's status.
#include "tests/devcluster/kubelet/kubelet.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <set>

#include "tests/devcluster/kubelet/container_log.h"
#include "tests/devcluster/kubelet/hosts_file.h"
#include "tests/devcluster/kubelet/pod_worker.h"
#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster::kubelet {
namespace {

// A finished Pod's volumes and scratch files go; its container logs (and the notes of where each
// run's output starts) stay until the data dir does, so a test that fails after a gang restart can
// still read what the replaced Pods printed.
void RemoveAllButLogs(const std::filesystem::path& pod_dir) {
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(pod_dir, ignored)) {
    if (entry.path().filename() != "logs" && entry.path() != ContainerRunNotesDir(pod_dir)) {
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

using nlohmann::json;

// Store keys (group "/" plural) of the core resources the kubelet reads and writes.
constexpr const char* kPodsKey = "/pods";
constexpr const char* kServicesKey = "/services";
constexpr const char* kSecretsKey = "/secrets";
constexpr const char* kEventsKey = "/events";

std::string Meta(const json& object, const char* field) {
  return object.contains("metadata") ? object["metadata"].value(field, "") : "";
}

std::string Spec(const json& object, const char* field) {
  return object.contains("spec") && object["spec"].is_object() ? object["spec"].value(field, "") : "";
}

bool Terminating(const json& pod) {
  return pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp") &&
         !pod["metadata"]["deletionTimestamp"].is_null();
}

// The grace period a DELETE gave the Pod (metadata.deletionGracePeriodSeconds).
std::chrono::milliseconds DeletionGrace(const json& pod) {
  const json& meta = pod["metadata"];
  const auto grace = meta.find("deletionGracePeriodSeconds");
  const std::int64_t seconds =
      grace != meta.end() && grace->is_number_integer() ? std::max<std::int64_t>(grace->get<std::int64_t>(), 0) : 0;
  return std::chrono::seconds(seconds);
}

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
};

}  // namespace

struct Kubelet::Running {
  std::string uid;
  std::string ns;
  std::string name;
  std::string network_key;  // "" when the Pod shares its Node's namespace
  std::string netns;
  std::string ip;
  std::filesystem::path dir;
  std::map<std::string, std::map<std::string, std::string>> device_env;  // by container name
  std::unique_ptr<PodWorker> worker;
  bool deleting = false;  // stopped for a graceful deletion: the kubelet deletes it when stopped
};

Kubelet::Kubelet(Store& store, const std::vector<NodeConfig>& nodes, KubeletOptions options)
    : store_(store), options_(std::move(options)) {
  std::filesystem::create_directories(options_.root_dir / "pods");
  for (const NodeConfig& node : nodes) {
    devices_.emplace(node.name, NodeDevices(NodeDeviceInventory(node)));
  }
  std::string why;
  if (options_.isolate && PodNetwork::Supported(&why)) {
    NetworkOptions network;
    network.prefix = options_.network_prefix;
    network.subnet = "auto";  // devclusters side by side (parallel tests) get their own
    // As in a cluster, the operator (and Prometheus, and tests) on this machine reach Pods.
    network.connect_host = true;
    network_ = PodNetwork::Create(network);
    for (const NodeConfig& node : nodes) {
      nodes_[node.name] = network_->AddNode(node.name);
    }
  } else {
    int index = 1;
    for (const NodeConfig& node : nodes) {
      nodes_[node.name] = Endpoint{"", "127.0." + std::to_string(index++) + ".1"};
    }
  }
  hosts_ = std::make_unique<HostsFile>(options_.root_dir / "hosts");
  thread_ = std::thread([this] { Run(); });
}

Kubelet::~Kubelet() { Stop(); }

std::filesystem::path Kubelet::PodDir(const std::string& ns, const std::string& name, const std::string& uid) const {
  return PodDirectory(options_.root_dir, ns, name, uid);
}

void Kubelet::Stop() {
  if (stopping_all_.exchange(true)) {
    return;
  }
  store_.Wake();
  if (thread_.joinable()) {
    thread_.join();
  }
  for (auto& [uid, pod] : pods_) {
    stopping_.push_back(std::move(pod));
  }
  pods_.clear();
  // Every Pod's containers get their SIGTERM at once; destroying a worker waits for its own.
  for (auto& pod : stopping_) {
    pod->worker->RequestStop();
  }
  for (auto& pod : stopping_) {
    const auto created = pod->worker->CreatedMountPoints();
    mount_points_.insert(mount_points_.end(), created.begin(), created.end());
    pod->worker.reset();
    RemoveAllButLogs(pod->dir);
  }
  stopping_.clear();
  // Deepest first; a directory something else put files in stays.
  for (auto it = mount_points_.rbegin(); it != mount_points_.rend(); ++it) {
    std::error_code ignored;
    std::filesystem::remove(*it, ignored);
  }
  if (network_) {
    network_->Destroy();
  }
}

void Kubelet::Run() {
  std::uint64_t seen = 0;
  while (!stopping_all_) {
    try {
      Pass();
    } catch (const std::exception&) {
      // A malformed object or a failed network step; the next pass tries again.
    }
    // Also every half second: stopping Pods are reaped without a store change.
    const Store::Batch batch =
        store_.WaitForEvents(seen, std::chrono::steady_clock::now() + std::chrono::milliseconds(500),
                             [this] { return stopping_all_.load() || pod_finished_.exchange(false); });
    seen = batch.rv;
  }
}

void Kubelet::Pass() {
  std::vector<json> pods;
  std::vector<json> services;
  store_.Read([&](const Store::Txn& txn) {
    for (const json* pod : txn.List(kPodsKey, "")) {
      pods.push_back(*pod);
    }
    for (const json* service : txn.List(kServicesKey, "")) {
      services.push_back(*service);
    }
  });

  // Devices go back when their Pod has ended: finished, or deleted and its containers stopped.
  std::set<std::string> holding;
  for (const auto& [uid, running] : pods_) {
    const std::string phase = running->worker->View().phase;
    if (phase != "Succeeded" && phase != "Failed") {
      holding.insert(uid);
    }
  }
  for (const auto& running : stopping_) {
    if (!running->worker->Finished()) {
      holding.insert(running->uid);
    }
  }
  for (auto& [node, devices] : devices_) {
    devices.Retain(holding);
  }

  std::set<std::string> wanted;
  std::map<std::string, std::chrono::milliseconds> terminating;  // uid -> the deletion's grace period
  std::vector<PodRef> deletions;  // Pods being deleted that have nothing (left) running here
  std::vector<const json*> admitted;
  for (const json& pod : pods) {
    const std::string node = Spec(pod, "nodeName");
    const std::string uid = Meta(pod, "uid");
    if (nodes_.count(node) == 0) {
      continue;
    }
    if (Terminating(pod)) {
      const bool stopping = std::any_of(stopping_.begin(), stopping_.end(),
                                        [&](const auto& running) { return running->uid == uid; });
      if (pods_.count(uid) != 0) {
        terminating[uid] = DeletionGrace(pod);
      } else if (!stopping) {
        deletions.push_back({Meta(pod, "namespace"), Meta(pod, "name"), uid});
      }
      continue;
    }
    wanted.insert(uid);
    const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
    if (pods_.count(uid) != 0 || phase == "Succeeded" || phase == "Failed") {
      continue;
    }
    // Admission: the device manager allocates for every container before any starts.
    const Admission admission = devices_.at(node).Allocate(pod);
    if (!admission.admitted) {
      Reject(pod, admission);
      continue;
    }
    auto running = std::make_unique<Running>();
    running->uid = uid;
    for (const auto& [container, devices] : admission.devices) {
      running->device_env[container] = DeviceEnvironment(devices);
    }
    running->ns = Meta(pod, "namespace");
    running->name = Meta(pod, "name");
    running->dir = PodDir(running->ns, running->name, uid);
    const bool host_network = pod["spec"].value("hostNetwork", false);
    if (network_ && !host_network) {
      running->network_key = running->ns + "/" + running->name + "/" + uid;
      const Endpoint endpoint = network_->AddPod(running->network_key);
      running->netns = endpoint.netns;
      running->ip = endpoint.ip;
    } else {
      running->netns = nodes_[node].netns;
      running->ip = nodes_[node].ip;
    }
    if (options_.on_pod_network_for_test) {
      options_.on_pod_network_for_test(running->ns, running->name, running->netns, running->ip);
    }
    pods_[uid] = std::move(running);
    admitted.push_back(&pod);
  }

  // Names first, so that a new Pod's peers resolve from its first moment.
  hosts_->Update(RenderHosts(ClusterHostEntries(pods, services, [this](const json& pod) {
    const auto it = pods_.find(Meta(pod, "uid"));
    return it == pods_.end() ? std::string() : it->second->ip;
  })));

  for (const json* pod : admitted) {
    const std::string uid = Meta(*pod, "uid");
    Running& running = *pods_[uid];
    const Endpoint& node = nodes_[Spec(*pod, "nodeName")];
    PodEnvironment environment;
    environment.pod_ip = running.ip;
    environment.host_ip = node.ip;
    environment.netns = running.netns;
    environment.probe_netns = node.netns;
    environment.dir = running.dir;
    if (network_) {
      environment.hosts_file = hosts_->path();
    } else {
      environment.isolation = Isolation::kNone;
    }
    environment.images = options_.images;
    environment.device_env = running.device_env;
    environment.max_grace = options_.max_grace;
    environment.restart_backoff = options_.restart_backoff;
    const std::string ns = running.ns;
    environment.get_secret = [this, ns](const std::string& name) {
      std::optional<json> secret;
      store_.Read([&](const Store::Txn& txn) {
        if (const json* found = txn.Get(kSecretsKey, ns, name)) {
          secret = *found;
        }
      });
      return secret;
    };
    const std::string name = running.name;
    environment.on_stopped = [this] {
      pod_finished_ = true;
      store_.Wake();
    };
    running.worker = std::make_unique<PodWorker>(
        *pod, std::move(environment), [this, ns, name, uid](const PodView& view) { WriteStatus(ns, name, uid, view); });
  }

  for (auto it = pods_.begin(); it != pods_.end();) {
    const auto deletion = terminating.find(it->first);
    if (deletion != terminating.end()) {
      it->second->worker->RequestStop(deletion->second);
      it->second->deleting = true;
    } else if (wanted.count(it->first) == 0) {
      it->second->worker->RequestStop();
    } else {
      ++it;
      continue;
    }
    stopping_.push_back(std::move(it->second));
    it = pods_.erase(it);
  }
  for (auto it = stopping_.begin(); it != stopping_.end();) {
    Running& running = **it;
    if (!running.worker->Finished()) {
      ++it;
      continue;
    }
    if (running.deleting) {
      // The final status first (its terminated containers and terminal phase), then the DELETE.
      WriteStatus(running.ns, running.name, running.uid, running.worker->View());
      deletions.push_back({running.ns, running.name, running.uid});
    }
    const auto created = running.worker->CreatedMountPoints();
    mount_points_.insert(mount_points_.end(), created.begin(), created.end());
    running.worker.reset();
    if (!running.network_key.empty()) {
      network_->RemovePod(running.network_key);
    }
    RemoveAllButLogs(running.dir);
    it = stopping_.erase(it);
  }
  for (const PodRef& pod : deletions) {
    DeletePod(pod.ns, pod.name, pod.uid);
  }
}

void Kubelet::DeletePod(const std::string& ns, const std::string& name, const std::string& uid) {
  if (options_.delete_pod) {
    try {
      options_.delete_pod(ns, name, uid);
    } catch (const std::exception&) {
      // Gone already, or replaced (the uid precondition): nothing of ours is left to delete.
    }
    return;
  }
  store_.Write([&](Store::Txn& txn) {
    const json* current = txn.Get(kPodsKey, ns, name);
    if (current == nullptr || Meta(*current, "uid") != uid) {
      return;
    }
    const json& meta = (*current)["metadata"];
    if (meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty()) {
      json held = *current;
      held["metadata"]["deletionGracePeriodSeconds"] = 0;
      txn.Put(kPodsKey, std::move(held));
      return;
    }
    txn.Remove(kPodsKey, ns, name);
  });
}

void Kubelet::Reject(const json& pod, const Admission& admission) {
  const std::string now = FormatTime(std::chrono::system_clock::now());
  const std::string ns = Meta(pod, "namespace");
  const std::string name = Meta(pod, "name");
  const std::string uid = Meta(pod, "uid");
  const std::string node = Spec(pod, "nodeName");
  store_.Write([&](Store::Txn& txn) {
    const json* current = txn.Get(kPodsKey, ns, name);
    if (current == nullptr || Meta(*current, "uid") != uid) {
      return;
    }
    json next = *current;
    json& status = next["status"];
    status["phase"] = "Failed";
    status["reason"] = admission.reason;
    status["message"] = "Pod was rejected: " + admission.message;
    txn.Put(kPodsKey, std::move(next));
    json event = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata",
                   {{"namespace", ns},
                    {"name", GenerateName(name + ".")},
                    {"uid", NewUid()},
                    {"creationTimestamp", now}}},
                  {"involvedObject",
                   {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", ns}, {"name", name}, {"uid", uid}}},
                  {"type", "Warning"},
                  {"reason", admission.reason},
                  {"message", admission.message},
                  {"source", {{"component", "kubelet"}, {"host", node}}},
                  {"reportingComponent", "kubelet"},
                  {"reportingInstance", node},
                  {"firstTimestamp", now},
                  {"lastTimestamp", now},
                  {"count", 1}};
    txn.Put(kEventsKey, std::move(event));
  });
}

void Kubelet::WriteStatus(const std::string& ns, const std::string& name, const std::string& uid, const PodView& view) {
  const std::string now = FormatTime(std::chrono::system_clock::now());
  store_.Write([&](Store::Txn& txn) {
    const json* current = txn.Get(kPodsKey, ns, name);
    if (current == nullptr || Meta(*current, "uid") != uid) {
      return;  // deleted, or replaced by a Pod of the same name
    }
    const json old_status = current->value("status", json::object());
    json status = BuildPodStatus(view, old_status, now);
    if (status == old_status) {
      return;
    }
    json next = *current;
    next["status"] = std::move(status);
    txn.Put(kPodsKey, std::move(next));
  });
}

}  // namespace ringleader::devcluster::kubelet
