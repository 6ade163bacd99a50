// Kubelet: the sync loop over the Pods bound to the Node (admit, start, stop, finish deletions),
// the sources of their API volumes, and pods/log.
#include "tests/devcluster/kubelet/kubelet.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>

#include "operator/api/trainingjob.h"
#include "tests/devcluster/kubelet/container_log.h"
#include "tests/devcluster/kubelet/log_request.h"
#include "tests/devcluster/kubelet/pod_worker.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// How long a newly admitted Pod's containers wait for its first status (its podIP) to be written.
constexpr milliseconds kFirstStatusWait{5000};
// How often the sync loop runs without a change: stopping Pods are reaped, and followers polled.
constexpr milliseconds kSyncPeriod{500};
// A followed log is polled this often for new output.
constexpr milliseconds kFollowPoll{100};

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

// The mount points of every mount namespace on this machine (each read once, from the first
// process found in it), resolved as the kernel resolved them.
std::set<std::filesystem::path> MountPointsInUse() {
  std::set<std::filesystem::path> points;
  std::set<std::filesystem::path> namespaces;
  std::error_code ignored;
  for (const auto& process : std::filesystem::directory_iterator("/proc", ignored)) {
    const std::string pid = process.path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      continue;
    }
    std::error_code error;
    const std::filesystem::path mount_namespace = std::filesystem::read_symlink(process.path() / "ns" / "mnt", error);
    if (error || !namespaces.insert(mount_namespace).second) {
      continue;
    }
    std::ifstream mountinfo(process.path() / "mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
      // mount ID, parent ID, major:minor, root, mount point, ...
      std::istringstream fields(line);
      std::string field;
      std::string point;
      fields >> field >> field >> field >> field >> point;
      if (!point.empty()) {
        points.insert(point);
      }
    }
  }
  return points;
}

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
milliseconds DeletionGrace(const json& pod) {
  const json& meta = pod["metadata"];
  const auto grace = meta.find("deletionGracePeriodSeconds");
  const std::int64_t seconds =
      grace != meta.end() && grace->is_number_integer() ? std::max<std::int64_t>(grace->get<std::int64_t>(), 0) : 0;
  return std::chrono::seconds(seconds);
}

PodRef RefOf(const json& pod) { return {Meta(pod, "namespace"), Meta(pod, "name"), Meta(pod, "uid")}; }

bool HasContainer(const json& pod, const std::string& name) {
  const json spec = pod.value("spec", json::object());
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    for (const json& container : spec.value(list, json::array())) {
      if (container.is_object() && container.value("name", "") == name) {
        return true;
      }
    }
  }
  return false;
}

// The container's current run, by its restart count, while it runs; nullopt otherwise.
std::optional<int> RunningRun(const PodView& view, const std::string& container) {
  for (const auto* list : {&view.init_containers, &view.containers}) {
    for (const ContainerView& entry : *list) {
      if (entry.name == container && entry.phase == ContainerPhase::kRunning) {
        return entry.restarts;
      }
    }
  }
  return std::nullopt;
}

kube::Resource ServiceAccounts() { return {"", "v1", "serviceaccounts", true}; }

}  // namespace

struct Kubelet::Running {
  PodRef ref;
  json pod;                 // as admitted
  std::string network_key;  // "" when the Pod shares its Node's namespace
  std::string netns;
  std::string ip;
  std::string start_time;
  std::filesystem::path dir;
  std::map<std::string, std::map<std::string, std::string>> device_env;  // by container name
  std::shared_ptr<PodWorker> worker;  // shared with pods/log requests that read its view
  bool deleting = false;  // stopped for a graceful deletion: deleted through the API when stopped
};

Kubelet::Kubelet(const kube::Config& api, NodeConfig node, PodNetwork* network, std::filesystem::path hosts_file,
                 KubeletOptions options)
    : node_(std::move(node)),
      options_(std::move(options)),
      network_(options_.isolate ? network : nullptr),
      hosts_file_(std::move(hosts_file)),
      devices_(NodeDeviceInventory(node_)) {
  std::filesystem::create_directories(options_.root_dir / "pods");
  node_endpoint_ = network_ != nullptr
                       ? network_->AddNode(node_.name)
                       : Endpoint{"", "127.0." + std::to_string(options_.fallback_node_number) + ".1"};
  // The kubelet's own client defaults (kubeAPIQPS 50, kubeAPIBurst 100).
  kube::ClientOptions client_options;
  client_options.qps = 50;
  client_options.burst = 100;
  kube::TransportOptions transport_options;
  transport_options.user_agent = "devcluster-node-agent/" + node_.name;
  client_ = kube::MakeClient(api, client_options, transport_options);
  transport_ = kube::MakeCpprestTransport(api, transport_options);
  token_ = api.token;

  log_server_ = std::make_unique<LogServer>(
      [this](const std::string& ns, const std::string& pod, const std::string& container,
             const std::map<std::string, std::string>& query) { return ServeLog(ns, pod, container, query); },
      [this](const std::string& ns, const std::string& pod) { return PodAddressOf(ns, pod); });
  streaming_ = std::make_unique<StreamingFront>(
      options_.streaming_program.empty() ? DefaultStreamingProgram() : options_.streaming_program,
      options_.root_dir / "streaming" / node_.name, log_server_->port());
  heartbeat_ = std::make_unique<NodeHeartbeat>(*client_, node_, streaming_->port(), options_.heartbeat);
  kube::ReflectorOptions bound;
  bound.resource = kube::Pods();
  bound.field_selector = "spec.nodeName=" + node_.name;  // all the Node authorizer lets a node watch
  pods_feed_ = std::make_unique<ObjectFeed>(*client_, bound, [this] { Wake(); });
  status_ = std::make_unique<PodStatusWriter>(*client_, node_.name,
                                              [this](const std::string& key) { return pods_feed_->Get(key); });
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

Kubelet::~Kubelet() { Stop(); }

int Kubelet::port() const { return streaming_->port(); }

bool Kubelet::Registered() const { return heartbeat_->Registered(); }

std::string Kubelet::LastError() const {
  const std::string heartbeat = heartbeat_->LastError();
  return !heartbeat.empty() ? heartbeat : status_->LastError();
}

std::filesystem::path Kubelet::PodDir(const std::string& ns, const std::string& name, const std::string& uid) const {
  return PodDirectory(options_.root_dir, ns, name, uid);
}

void Kubelet::Wake() {
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void Kubelet::Stop() {
  if (stopped_.exchange(true)) {
    return;
  }
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  // No log request holds a worker past this point.
  streaming_->Stop();
  log_server_->Stop();
  pods_feed_->Stop();
  heartbeat_->Stop();
  std::vector<std::unique_ptr<Running>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [uid, running] : pods_) {
      all.push_back(std::move(running));
    }
    pods_.clear();
    for (auto& running : stopping_) {
      all.push_back(std::move(running));
    }
    stopping_.clear();
  }
  // Every Pod's containers get their SIGTERM at once; destroying a worker waits for its own.
  for (auto& running : all) {
    if (running->worker) {
      running->worker->RequestStop();
    }
  }
  for (auto& running : all) {
    if (running->worker) {
      const auto created = running->worker->CreatedMountPoints();
      mount_points_.insert(mount_points_.end(), created.begin(), created.end());
      running->worker.reset();
    }
    if (!running->network_key.empty()) {
      try {
        network_->RemovePod(running->network_key);
      } catch (const std::exception&) {
        // The caller's Destroy removes what is left.
      }
    }
    RemoveAllButLogs(running->dir);
  }
  status_->Stop();
  // Deepest first; a directory something else put files in stays, and so does one that is a mount
  // point in another mount namespace: a Pod of another agent (another devcluster on this machine)
  // has a volume there, which removing the directory would detach.
  const std::set<std::filesystem::path> in_use = MountPointsInUse();
  for (auto it = mount_points_.rbegin(); it != mount_points_.rend(); ++it) {
    std::error_code ignored;
    if (in_use.count(std::filesystem::weakly_canonical(*it, ignored)) == 0) {
      std::filesystem::remove(*it, ignored);
    }
  }
}

void Kubelet::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    try {
      Pass();
    } catch (const std::exception&) {
      // A malformed object or a failed network step; the next pass tries again.
    }
    std::unique_lock lock(wake_mu_);
    wake_.wait_for(lock, stop, kSyncPeriod, [this] { return woken_; });
    woken_ = false;
  }
}

void Kubelet::Pass() {
  if (!pods_feed_->Synced()) {
    return;  // before the first list, a Pod we do not see may still be ours
  }
  const std::vector<ObjectPtr> pods = pods_feed_->Objects();

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
      holding.insert(running->ref.uid);
    }
  }
  devices_.Retain(holding);

  std::set<std::string> present;  // uids the watch shows
  std::set<std::string> wanted;   // uids to keep running
  std::map<std::string, milliseconds> terminating;  // uid -> the deletion's grace period
  std::vector<std::pair<ObjectPtr, std::unique_ptr<Running>>> admitted;
  for (const ObjectPtr& object : pods) {
    const json& pod = *object;
    const std::string uid = Meta(pod, "uid");
    if (Spec(pod, "nodeName") != node_.name) {
      continue;
    }
    present.insert(uid);
    if (Terminating(pod)) {
      const bool stopping = std::any_of(stopping_.begin(), stopping_.end(),
                                        [&](const auto& running) { return running->ref.uid == uid; });
      if (pods_.count(uid) != 0) {
        terminating[uid] = DeletionGrace(pod);
      } else if (!stopping && deleted_.insert(uid).second) {
        status_->Finish(RefOf(pod), std::nullopt);  // nothing runs here: the DELETE alone
      }
      continue;
    }
    wanted.insert(uid);
    const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
    if (pods_.count(uid) != 0 || phase == "Succeeded" || phase == "Failed" || rejected_.count(uid) != 0) {
      continue;
    }
    // Admission: the device manager allocates for every container before any starts.
    const Admission admission = devices_.Allocate(pod);
    if (!admission.admitted) {
      status_->Reject(RefOf(pod), admission.reason, admission.message);
      rejected_.insert(uid);
      continue;
    }
    try {
      admitted.emplace_back(object, Admit(pod, admission));
    } catch (const std::exception&) {
      // Its network could not be built: its devices go back at the next pass, which tries again.
    }
  }

  // Each new Pod's first status (its podIP) is written before its containers start: peers find
  // it (EndpointSlices, cluster DNS) from the start.
  std::vector<std::pair<std::string, std::uint64_t>> first_writes;
  for (auto& [object, running] : admitted) {
    PodEnvironment environment;
    environment.pod_ip = running->ip;
    environment.host_ip = node_endpoint_.ip;
    environment.start_time = running->start_time;
    first_writes.emplace_back(running->ref.uid, status_->Set(running->ref, InitialPodView(*object, environment)));
  }
  const auto deadline = std::chrono::steady_clock::now() + kFirstStatusWait;
  for (const auto& [uid, number] : first_writes) {
    status_->WaitWritten(uid, number, deadline);
  }
  for (auto& [object, running] : admitted) {
    StartWorker(*running, *object);
    std::lock_guard lock(mu_);
    pods_[running->ref.uid] = std::move(running);
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
    std::lock_guard lock(mu_);
    stopping_.push_back(std::move(it->second));
    it = pods_.erase(it);
  }
  for (std::size_t i = 0; i < stopping_.size();) {
    Running& running = *stopping_[i];
    if (!running.worker->Finished()) {
      ++i;
      continue;
    }
    if (running.deleting && deleted_.insert(running.ref.uid).second) {
      // The final status (terminated containers, terminal phase), then the DELETE.
      status_->Finish(running.ref, running.worker->View());
    } else if (!running.deleting) {
      status_->Forget(running.ref.uid);  // it left the API: nothing to write
    }
    const auto created = running.worker->CreatedMountPoints();
    mount_points_.insert(mount_points_.end(), created.begin(), created.end());
    std::unique_ptr<Running> done;
    {
      std::lock_guard lock(mu_);
      done = std::move(stopping_[i]);
      stopping_.erase(stopping_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    done->worker.reset();
    if (!done->network_key.empty()) {
      network_->RemovePod(done->network_key);
    }
    RemoveAllButLogs(done->dir);
  }

  // What left the API leaves the agent's books.
  for (auto* uids : {&rejected_, &deleted_}) {
    std::erase_if(*uids, [&](const std::string& uid) {
      if (present.count(uid) != 0) {
        return false;
      }
      status_->Forget(uid);
      return true;
    });
  }
}

std::unique_ptr<Kubelet::Running> Kubelet::Admit(const json& pod, const Admission& admission) {
  auto running = std::make_unique<Running>();
  running->ref = RefOf(pod);
  running->pod = pod;
  running->dir = PodDir(running->ref.ns, running->ref.name, running->ref.uid);
  running->start_time = api::FormatTime(std::chrono::system_clock::now());
  for (const auto& [container, devices] : admission.devices) {
    running->device_env[container] = DeviceEnvironment(devices);
  }
  const bool host_network = pod.value("spec", json::object()).value("hostNetwork", false);
  if (network_ != nullptr && !host_network) {
    running->network_key = running->ref.ns + "/" + running->ref.name + "/" + running->ref.uid;
    const Endpoint endpoint = network_->AddPod(running->network_key);
    running->netns = endpoint.netns;
    running->ip = endpoint.ip;
  } else {
    running->netns = node_endpoint_.netns;
    running->ip = node_endpoint_.ip;
  }
  if (options_.on_pod_network_for_test) {
    options_.on_pod_network_for_test(running->ref.ns, running->ref.name, running->netns, running->ip);
  }
  return running;
}

void Kubelet::StartWorker(Running& running, const json& pod) {
  PodEnvironment environment;
  environment.pod_ip = running.ip;
  environment.host_ip = node_endpoint_.ip;
  environment.netns = running.netns;
  environment.probe_netns = node_endpoint_.netns;
  environment.dir = running.dir;
  if (network_ != nullptr) {
    environment.hosts_file = hosts_file_;
  } else {
    environment.isolation = Isolation::kNone;
  }
  environment.images = options_.images;
  environment.device_env = running.device_env;
  environment.service_env = KubernetesServiceEnv(options_.api_server_host, options_.api_server_port);
  environment.volume_sources = SourcesFor(pod);
  environment.start_time = running.start_time;
  environment.max_grace = options_.max_grace;
  environment.restart_backoff = options_.restart_backoff;
  environment.on_stopped = [this] { Wake(); };
  const PodRef ref = running.ref;
  running.worker = std::make_shared<PodWorker>(pod, std::move(environment),
                                               [this, ref](const PodView& view) { status_->Set(ref, view); });
}

VolumeSources Kubelet::SourcesFor(const json& pod) {
  const PodRef ref = RefOf(pod);
  std::string account = Spec(pod, "serviceAccountName");
  if (account.empty()) {
    account = "default";
  }
  const auto getter = [this, ns = ref.ns](kube::Resource resource) {
    return [this, ns, resource](const std::string& name) -> std::optional<json> {
      try {
        return client_->Get(resource, ns, name);
      } catch (const kube::ApiError& e) {
        if (kube::IsNotFound(e)) {
          return std::nullopt;
        }
        throw;
      }
    };
  };
  VolumeSources sources;
  sources.secret = getter(kube::Secrets());
  sources.config_map = getter(kube::ConfigMaps());
  // POST .../serviceaccounts/<name>/token, bound to the Pod: the client has no verb for a
  // subresource create, so it goes through the transport with the node's token.
  sources.service_account_token = [this, ref, account](const std::string& audience, std::int64_t seconds) {
    const json bound = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", ref.name}, {"uid", ref.uid}};
    json request = {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec", {{"expirationSeconds", seconds}, {"boundObjectRef", bound}}}};
    if (!audience.empty()) {
      request["spec"]["audiences"] = json::array({audience});
    }
    const kube::HttpResponse response = transport_->Send(
        {"POST", kube::ResourcePath(ServiceAccounts(), ref.ns, account, "token"), token_ ? token_->Token() : "",
         "application/json", request.dump()});
    if (response.status < 200 || response.status > 299) {
      throw kube::ApiErrorFromResponse(response.status, response.body);
    }
    const json answer = json::parse(response.body, nullptr, false);
    const std::string token = answer.is_object() ? answer.value("/status/token"_json_pointer, std::string()) : "";
    if (token.empty()) {
      throw std::runtime_error("TokenRequest for serviceaccount " + ref.ns + "/" + account + " returned no token");
    }
    return token;
  };
  return sources;
}

std::optional<PodAddress> Kubelet::PodAddressOf(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& [uid, running] : pods_) {
    if (running->ref.ns == ns && running->ref.name == name) {
      return PodAddress{running->ref.uid, running->ip};
    }
  }
  return std::nullopt;
}

LogReply Kubelet::ServeLog(const std::string& ns, const std::string& name, const std::string& container,
                           const std::map<std::string, std::string>& query) {
  LogRequest request;
  try {
    request = ParseLogQuery(query);
  } catch (const LogRequestError& e) {
    return {e.code(), e.what(), nullptr};
  }
  std::shared_ptr<PodWorker> worker;
  json pod;
  std::filesystem::path dir;
  {
    std::lock_guard lock(mu_);
    const auto matches = [&](const std::unique_ptr<Running>& running) {
      return running->ref.ns == ns && running->ref.name == name && running->worker;
    };
    const Running* found = nullptr;
    for (const auto& [uid, running] : pods_) {
      if (matches(running)) {
        found = running.get();
      }
    }
    for (const auto& running : stopping_) {
      if (found == nullptr && matches(running)) {
        found = running.get();
      }
    }
    if (found == nullptr) {
      return {404, "pod \"" + name + "\" does not exist", nullptr};
    }
    worker = found->worker;
    pod = found->pod;
    dir = found->dir;
  }
  if (!HasContainer(pod, container)) {
    return {404, "container \"" + container + "\" not found in pod \"" + name + "\"", nullptr};
  }
  const PodView view = worker->View();
  ContainerRun run;
  try {
    run = LogRun(BuildPodStatus(view, json::object(), ""), name, container, request.previous);
  } catch (const LogRequestError& e) {
    return {e.code(), e.what(), nullptr};
  }
  const std::optional<int> running_run = RunningRun(view, container);
  if (!request.follow || run != ContainerRun::kLast || !running_run) {
    // Nothing more will come: what the run wrote is the whole answer.
    return {200, TrimLog(ReadContainerRun(dir, container, run), request), nullptr};
  }
  std::uintmax_t offset = LastRunStart(dir, container);
  LogReply reply{200, TrimLog(ReadContainerLogFrom(dir, container, offset), request), nullptr};
  std::optional<std::uint64_t> left;  // of limitBytes
  if (request.limit_bytes) {
    left = static_cast<std::uint64_t>(*request.limit_bytes) - reply.body.size();
    if (*left == 0) {
      return reply;
    }
  }
  const int restarts = *running_run;
  reply.more = [worker, dir, container, offset, left,
                restarts](std::stop_token stop) mutable -> std::optional<std::string> {
    if (left && *left == 0) {
      return std::nullopt;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) {
      // Whether the run still goes on is read before its output, so nothing it wrote is missed.
      const bool still = RunningRun(worker->View(), container) == restarts;
      std::string chunk = ReadContainerLogFrom(dir, container, offset);
      if (left && chunk.size() > *left) {
        chunk.resize(static_cast<std::size_t>(*left));
      }
      if (left) {
        *left -= chunk.size();
      }
      if (!chunk.empty()) {
        return chunk;
      }
      if (!still) {
        return std::nullopt;
      }
      std::this_thread::sleep_for(kFollowPoll);
    }
    return std::string();
  };
  return reply;
}

}  // namespace ringleader::devcluster::kubelet
