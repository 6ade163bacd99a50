// PodWorker: one Pod's containers driven step by step on its own thread.
#include "tests/devcluster/kubelet/pod_worker.h"

#include <algorithm>
#include <exception>
#include <future>

#include "tests/devcluster/kubelet/container_log.h"
#include "operator/api/trainingjob.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kTerminationMessageBytes = 2048;  // the kubelet's limit for log tails

std::string Now() { return api::FormatTime(std::chrono::system_clock::now()); }

bool IsSidecar(const json& container) { return container.value("restartPolicy", "") == "Always"; }

std::optional<ProbeTracker> TrackerFor(const json& container, const char* field, Clock::time_point started) {
  if (!container.contains(field) || !container[field].is_object()) {
    return std::nullopt;
  }
  return ProbeTracker(container[field], started);
}

}  // namespace

struct PodWorker::Container {
  json spec;
  bool sidecar = false;
  std::optional<LaunchSpec> launch;
  std::unique_ptr<ContainerProcess> process;
  std::optional<ProbeTracker> startup;
  std::optional<ProbeTracker> liveness;
  std::optional<ProbeTracker> readiness;
  ContainerView view;
  bool done = false;  // terminated and not to be restarted
  Clock::time_point restart_at{};
  std::chrono::milliseconds backoff{0};
  std::string kill_reason;  // why the kubelet stopped it, when a probe did
};

PodView InitialPodView(const json& pod, const PodEnvironment& environment) {
  PodView view;
  view.pod_ip = environment.pod_ip;
  view.host_ip = environment.host_ip;
  view.start_time = environment.start_time.empty() ? Now() : environment.start_time;
  const json spec = pod.value("spec", json::object());
  const auto add = [](std::vector<ContainerView>& into, const json& containers, const char* waiting_reason) {
    if (!containers.is_array()) {
      return;
    }
    for (const json& container : containers) {
      ContainerView waiting;
      waiting.name = container.value("name", "");
      waiting.image = container.value("image", "");
      waiting.waiting_reason = waiting_reason;
      into.push_back(std::move(waiting));
    }
  };
  add(view.init_containers, spec.value("initContainers", json::array()), "PodInitializing");
  add(view.containers, spec.value("containers", json::array()), "ContainerCreating");
  view.initialized = view.init_containers.empty();
  return view;
}

PodWorker::PodWorker(json pod, PodEnvironment environment, std::function<void(const PodView&)> publish)
    : pod_(std::move(pod)), env_(std::move(environment)), publish_(std::move(publish)) {
  const json& spec = pod_["spec"];
  restart_policy_ = spec.value("restartPolicy", "Always");
  const std::int64_t grace_seconds = spec.value("terminationGracePeriodSeconds", std::int64_t{30});
  grace_ = std::min<std::chrono::milliseconds>(std::chrono::seconds(std::max<std::int64_t>(grace_seconds, 0)),
                                               env_.max_grace);
  view_ = InitialPodView(pod_, env_);
  const auto add = [&](std::vector<std::unique_ptr<Container>>& into, const json& containers,
                       const std::vector<ContainerView>& views, bool init) {
    if (!containers.is_array()) {
      return;
    }
    for (std::size_t i = 0; i < containers.size() && i < views.size(); ++i) {
      auto container = std::make_unique<Container>();
      container->spec = containers[i];
      container->sidecar = init && IsSidecar(containers[i]);
      container->view = views[i];
      container->backoff = env_.restart_backoff;
      into.push_back(std::move(container));
    }
  };
  add(init_, spec.value("initContainers", json::array()), view_.init_containers, true);
  add(main_, spec.value("containers", json::array()), view_.containers, false);
  thread_ = std::thread([this] { Run(); });
}

PodWorker::~PodWorker() {
  RequestStop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void PodWorker::RequestStop(std::optional<std::chrono::milliseconds> deletion_grace) {
  if (deletion_grace && !stop_) {
    deletion_grace_ms_ = deletion_grace->count();
    deleting_ = true;
  }
  stop_ = true;
  std::lock_guard<std::mutex> lock(wake_mu_);
  wake_.notify_all();
}

PodView PodWorker::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

std::vector<std::filesystem::path> PodWorker::CreatedMountPoints() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_mount_points_;
}

void PodWorker::Run() {
  while (!stop_) {
    try {
      Step();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      view_.message = std::string("kubelet: ") + e.what();
    }
    Publish();
    std::unique_lock<std::mutex> lock(wake_mu_);
    wake_.wait_for(lock, env_.step, [this] { return stop_.load(); });
  }
  if (deleting_) {
    grace_ = std::min(std::chrono::milliseconds(deletion_grace_ms_.load()), env_.max_grace);
  }
  StopAll();
  if (deleting_) {
    SetTerminalPhase();
  }
  finished_ = true;
  // After finished_: the status write wakes the kubelet, which then finds the Pod ready to go.
  if (deleting_) {
    Publish();
  }
  if (env_.on_stopped) {
    env_.on_stopped();
  }
}

void PodWorker::SetTerminalPhase() {
  std::lock_guard<std::mutex> lock(mu_);
  if (view_.phase == "Succeeded" || view_.phase == "Failed") {
    return;
  }
  // The kubelet's getPhase for a terminal Pod, and TerminatePod's Failed for one that never ran.
  const bool succeeded = !main_.empty() && std::all_of(main_.begin(), main_.end(), [](const auto& container) {
    return container->view.terminated && container->view.terminated->exit_code == 0;
  });
  view_.phase = succeeded ? "Succeeded" : "Failed";
}

bool PodWorker::Prepare() {
  const json& spec = pod_["spec"];
  LaunchContext context;
  context.pod_ip = env_.pod_ip;
  context.host_ip = env_.host_ip;
  context.node_name = spec.value("nodeName", "");
  const auto waiting = [&](const std::string& reason, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* list : {&init_, &main_}) {
      for (auto& container : *list) {
        container->view.waiting_reason = reason;
        container->view.waiting_message = message;
      }
    }
    return false;
  };
  for (const json& volume : spec.value("volumes", json::array())) {
    const std::string name = volume.value("name", "");
    const std::filesystem::path dir = env_.dir / "volumes" / name;
    if (volume.contains("emptyDir")) {
      std::filesystem::create_directories(dir);
    } else if (IsApiVolume(volume)) {
      try {
        if (const std::optional<std::string> wait = WriteApiVolume(pod_, volume, dir, env_.volume_sources)) {
          return waiting("ContainerCreating", "volume " + name + ": " + *wait);
        }
      } catch (const std::exception& e) {
        return waiting("CreateContainerConfigError", "volume " + name + ": " + e.what());
      }
    } else {
      return waiting("CreateContainerConfigError",
                     "volume " + name + ": devcluster supports emptyDir, secret, configMap and projected volumes only");
    }
    context.volume_dirs[name] = dir;
  }
  // The Secrets and ConfigMaps the containers' env and envFrom name, read as the kubelet does
  // before it creates the containers.
  EnvObjectNames referenced;
  for (auto* list : {&init_, &main_}) {
    for (auto& container : *list) {
      const EnvObjectNames names = EnvObjects(container->spec);
      referenced.secrets.insert(names.secrets.begin(), names.secrets.end());
      referenced.config_maps.insert(names.config_maps.begin(), names.config_maps.end());
    }
  }
  try {
    for (const std::string& name : referenced.secrets) {
      if (const std::optional<json> secret = env_.volume_sources.secret(name)) {
        context.secrets[name] = SecretValues(*secret);
      }
    }
    for (const std::string& name : referenced.config_maps) {
      if (const std::optional<json> config_map = env_.volume_sources.config_map(name)) {
        context.config_maps[name] = ConfigMapValues(*config_map);
      }
    }
  } catch (const std::exception& e) {
    return waiting("CreateContainerConfigError", std::string("reading the containers' env: ") + e.what());
  }
  std::filesystem::create_directories(env_.dir / "logs");
  for (auto* list : {&init_, &main_}) {
    for (auto& container : *list) {
      try {
        const auto devices = env_.device_env.find(container->view.name);
        context.device_env = devices == env_.device_env.end() ? std::map<std::string, std::string>() : devices->second;
        context.service_env = env_.service_env;
        container->launch = ResolveLaunch(pod_, container->spec, env_.images, context);
      } catch (const std::exception& e) {
        return waiting("CreateContainerConfigError", e.what());
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto* list : {&init_, &main_}) {
    for (auto& container : *list) {
      container->view.waiting_message.clear();
    }
  }
  return true;
}

bool PodWorker::Restartable(const Container& container) const {
  if (container.sidecar) {
    return true;  // a native sidecar always restarts while the Pod runs
  }
  const int exit_code = container.view.terminated ? container.view.terminated->exit_code : 0;
  return restart_policy_ == "Always" || (restart_policy_ == "OnFailure" && exit_code != 0);
}

void PodWorker::Reap(Container& container) {
  if (!container.process || container.process->Running()) {
    return;
  }
  TerminatedState terminated;
  terminated.exit_code = container.process->ExitCode().value_or(-1);
  terminated.reason = terminated.exit_code == 0 ? "Completed" : "Error";
  terminated.started_at = container.view.started_at;
  terminated.finished_at = Now();
  // FallbackToLogsOnError, the policy the operator sets: a failed container's last output.
  if (terminated.exit_code != 0) {
    terminated.message = container.process->LogTail(kTerminationMessageBytes);
  }
  if (!container.kill_reason.empty()) {
    terminated.message = container.kill_reason + (terminated.message.empty() ? "" : "\n" + terminated.message);
    container.kill_reason.clear();
  }
  container.process.reset();
  std::lock_guard<std::mutex> lock(mu_);
  container.view.phase = ContainerPhase::kTerminated;
  container.view.terminated = terminated;
  container.view.ready = false;
  container.view.started = false;
  container.restart_at = Clock::now() + container.backoff;
  container.backoff = std::min(container.backoff * 2, env_.restart_backoff * 10);
}

void PodWorker::Start(Container& container) {
  const Clock::time_point now = Clock::now();
  ContainerOptions options;
  options.spec = *container.launch;
  options.netns = env_.netns;
  options.hosts_file = env_.hosts_file;
  options.log = ContainerLogPath(env_.dir, container.view.name);
  options.isolation = env_.isolation;
  std::unique_ptr<ContainerProcess> process;
  std::string error;
  try {
    // Each run's output is told apart from the last one's (pods/log serves one run).
    NoteContainerRunStart(env_.dir, container.view.name);
    process = std::make_unique<ContainerProcess>(options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (container.view.phase == ContainerPhase::kTerminated) {
    container.view.last_terminated = container.view.terminated;
    ++container.view.restarts;
  }
  if (!process) {
    // The kubelet's StartError: the runtime could not start the process at all.
    container.view.phase = ContainerPhase::kTerminated;
    container.view.terminated = TerminatedState{128, "StartError", error, "", Now()};
    container.restart_at = now + container.backoff;
    container.backoff = std::min(container.backoff * 2, env_.restart_backoff * 10);
    return;
  }
  for (const std::filesystem::path& path : process->CreatedMountPoints()) {
    created_mount_points_.push_back(path);
  }
  container.process = std::move(process);
  container.view.phase = ContainerPhase::kRunning;
  container.view.started_at = Now();
  container.view.terminated.reset();
  container.startup = TrackerFor(container.spec, "startupProbe", now);
  container.liveness = TrackerFor(container.spec, "livenessProbe", now);
  container.readiness = TrackerFor(container.spec, "readinessProbe", now);
  container.view.started = !container.startup;
  container.view.ready = container.view.started && !container.readiness;
}

void PodWorker::Probe(Container& container) {
  if (!container.process) {
    return;
  }
  // One attempt of the probe in container.spec[field] when its tracker says it is due.
  const auto attempt = [&](std::optional<ProbeTracker>& tracker, const char* field) {
    const Clock::time_point now = Clock::now();
    if (!tracker || !tracker->Due(now)) {
      return false;
    }
    tracker->Record(
        RunProbeOnce(container.spec[field], env_.pod_ip, env_.probe_netns, *container.launch, env_.isolation), now);
    return true;
  };
  if (!container.view.started) {
    if (attempt(container.startup, "startupProbe")) {
      if (container.startup->Failed()) {
        container.kill_reason = "startup probe failed: " + container.startup->LastMessage();
        StopContainer(container);
        return;
      }
      if (container.startup->Succeeded()) {
        std::lock_guard<std::mutex> lock(mu_);
        container.view.started = true;
        container.view.ready = !container.readiness;
      }
    }
    return;
  }
  if (attempt(container.liveness, "livenessProbe") && container.liveness->Failed()) {
    container.kill_reason = "liveness probe failed: " + container.liveness->LastMessage();
    StopContainer(container);
    return;
  }
  if (attempt(container.readiness, "readinessProbe")) {
    std::lock_guard<std::mutex> lock(mu_);
    if (container.readiness->Succeeded()) {
      container.view.ready = true;
    } else if (container.readiness->Failed()) {
      container.view.ready = false;
    }
  }
}

void PodWorker::Step() {
  if (!prepared_) {
    if (Clock::now() < prepare_at_) {
      return;
    }
    prepared_ = Prepare();
    if (!prepared_) {
      // A volume waits for an object: ask the API server again, less often each time.
      prepare_at_ = Clock::now() + prepare_backoff_;
      prepare_backoff_ = std::min(prepare_backoff_ * 2, std::chrono::milliseconds(2000));
      return;
    }
  }
  for (auto* list : {&init_, &main_}) {
    for (auto& container : *list) {
      Reap(*container);
    }
  }
  if (failed_ || complete_) {
    return;
  }
  const Clock::time_point now = Clock::now();
  const auto due = [&](const Container& container) { return !container.process && now >= container.restart_at; };
  // Init containers in order: a regular one must exit 0, a sidecar must have started.
  while (next_init_ < init_.size()) {
    Container& container = *init_[next_init_];
    if (container.sidecar) {
      if (due(container)) {
        Start(container);
      }
      Probe(container);
      if (container.view.started) {
        ++next_init_;
        continue;
      }
      break;
    }
    if (container.view.phase == ContainerPhase::kTerminated) {
      if (container.view.terminated->exit_code == 0) {
        ++next_init_;
        continue;
      }
      if (restart_policy_ == "Never") {
        std::lock_guard<std::mutex> lock(mu_);
        failed_ = true;
        view_.phase = "Failed";
        break;
      }
    }
    if (due(container)) {
      Start(container);
    }
    break;
  }
  // Sidecars past their turn keep running (and restart) for the life of the Pod.
  for (std::size_t i = 0; i < next_init_ && i < init_.size(); ++i) {
    Container& container = *init_[i];
    if (container.sidecar) {
      if (due(container)) {
        Start(container);
      }
      Probe(container);
    }
  }
  if (failed_) {
    StopAll();
    return;
  }
  const bool initialized = next_init_ == init_.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_.initialized = initialized;
  }
  if (!initialized) {
    return;
  }
  bool all_done = true;
  bool all_succeeded = true;
  for (auto& container : main_) {
    if (!container->process && container->view.phase == ContainerPhase::kTerminated && !Restartable(*container)) {
      container->done = true;
    }
    if (!container->done && due(*container)) {
      Start(*container);
    }
    Probe(*container);
    all_done = all_done && container->done;
    all_succeeded = all_succeeded && container->view.terminated && container->view.terminated->exit_code == 0;
  }
  std::string phase = "Running";
  if (all_done) {
    // The main containers have ended for good. As the kubelet's status manager does, that is
    // reported while the sidecars still run (an operator may ask a sidecar for its last figures
    // then); then the sidecars are stopped, and they do not count.
    Publish();
    for (auto it = init_.rbegin(); it != init_.rend(); ++it) {
      StopContainer(**it);
    }
    complete_ = true;
    phase = all_succeeded ? "Succeeded" : "Failed";
  }
  std::lock_guard<std::mutex> lock(mu_);
  view_.phase = phase;
}

void PodWorker::StopContainer(Container& container) {
  if (container.process) {
    container.process->Terminate(grace_);
  }
  Reap(container);
}

void PodWorker::StopAll() {
  // Main containers first, then sidecars in reverse order, as the kubelet ends a Pod.
  const auto stop_in_parallel = [this](const std::vector<Container*>& containers) {
    std::vector<std::future<void>> stops;
    for (Container* container : containers) {
      if (container->process) {
        stops.push_back(std::async(std::launch::async, [this, container] { StopContainer(*container); }));
      }
    }
    for (auto& stop : stops) {
      stop.get();
    }
  };
  std::vector<Container*> mains;
  for (auto& container : main_) {
    mains.push_back(container.get());
  }
  stop_in_parallel(mains);
  for (auto it = init_.rbegin(); it != init_.rend(); ++it) {
    StopContainer(**it);
  }
}

void PodWorker::Publish() {
  std::optional<PodView> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* list : {&init_, &main_}) {
      auto& views = list == &init_ ? view_.init_containers : view_.containers;
      views.clear();
      for (auto& container : *list) {
        views.push_back(container->view);
      }
    }
    if (!published_ || BuildPodStatus(*published_, json::object(), "") != BuildPodStatus(view_, json::object(), "")) {
      published_ = view_;
      changed = view_;
    }
  }
  if (changed) {
    publish_(*changed);
  }
}

}  // namespace ringleader::devcluster::kubelet
