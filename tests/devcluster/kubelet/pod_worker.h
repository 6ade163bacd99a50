// One Pod on devcluster's kubelet: its volumes, its containers as processes in the order
// Kubernetes gives them (init containers one by one, native sidecars gated by their startup
// probe, then the main containers; sidecars stopped after the main containers end), restarts,
// probes, and the status it reports. A thread per Pod, so a slow probe holds up no other Pod.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/devcluster/kubelet/api_volumes.h"
#include "tests/devcluster/kubelet/container_process.h"
#include "tests/devcluster/kubelet/container_spec.h"
#include "tests/devcluster/kubelet/pod_status.h"
#include "tests/devcluster/kubelet/probe_runner.h"

namespace ringleader::devcluster::kubelet {

// What the kubelet gives a Pod.
struct PodEnvironment {
  std::string pod_ip;
  std::string host_ip;
  std::string netns;          // the Pod's network namespace ("" = this process's)
  std::string probe_netns;    // where probes connect from: the node's namespace
  std::filesystem::path dir;  // the Pod's own folder: volumes and container logs
  std::filesystem::path hosts_file;
  ImageMap images;
  // Container name -> the env the runtime adds for the devices allocated to it (DeviceEnvironment).
  std::map<std::string, std::map<std::string, std::string>> device_env;
  // Every container's Service environment (KubernetesServiceEnv).
  std::map<std::string, std::string> service_env;
  Isolation isolation = Isolation::kAuto;
  // Where secret, configMap and projected volumes, and the Secrets and ConfigMaps the containers'
  // env and envFrom name, get their content.
  VolumeSources volume_sources;
  // status.startTime (RFC 3339): when the kubelet admitted the Pod; "" = when the worker starts.
  std::string start_time;
  std::chrono::milliseconds max_grace{5000};        // caps terminationGracePeriodSeconds
  std::chrono::milliseconds restart_backoff{1000};  // doubles per restart, up to 10x
  std::chrono::milliseconds step{100};
  // Called on the worker's thread once its containers have stopped after RequestStop.
  std::function<void()> on_stopped;
};

// What the kubelet reports for a Pod it admitted before any container ran: Pending, the Pod's
// addresses and start time, every container waiting (init containers PodInitializing, the others
// ContainerCreating). The worker starts from it.
PodView InitialPodView(const nlohmann::json& pod, const PodEnvironment& environment);

class PodWorker {
 public:
  // Starts the Pod's thread; `publish` receives each changed view (from that thread).
  PodWorker(nlohmann::json pod, PodEnvironment environment, std::function<void(const PodView&)> publish);
  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;
  ~PodWorker();  // stops the containers (RequestStop) and joins

  // Stop every container (main ones first, then sidecars, each SIGTERM then SIGKILL after the
  // grace period). With `deletion_grace` the Pod is being deleted: that grace period (capped by
  // max_grace) replaces terminationGracePeriodSeconds, and once the containers have stopped the
  // worker publishes the terminal phase the kubelet reports before the Pod goes (Succeeded when
  // every app container exited 0, else Failed). Without it the Pod is already gone. Returns at
  // once; Finished() tells when it is done.
  void RequestStop(std::optional<std::chrono::milliseconds> deletion_grace = std::nullopt);
  bool Finished() const { return finished_.load(); }
  PodView View() const;
  // Mount points its containers created on the host (parents first). Other Pods' containers may
  // have mounts on the same paths, so the kubelet removes them only when it stops.
  std::vector<std::filesystem::path> CreatedMountPoints() const;

 private:
  struct Container;

  void Run();
  void Step();
  bool Prepare();
  void Reap(Container& container);
  void Start(Container& container);
  void Probe(Container& container);
  bool Restartable(const Container& container) const;
  void StopContainer(Container& container);
  void StopAll();
  // The phase of a Pod whose containers were stopped for its deletion.
  void SetTerminalPhase();
  void Publish();

  nlohmann::json pod_;
  PodEnvironment env_;
  std::function<void(const PodView&)> publish_;
  std::vector<std::unique_ptr<Container>> init_;
  std::vector<std::unique_ptr<Container>> main_;
  std::string restart_policy_;
  std::chrono::milliseconds grace_;
  bool prepared_ = false;
  std::chrono::steady_clock::time_point prepare_at_{};
  std::chrono::milliseconds prepare_backoff_{100};
  std::size_t next_init_ = 0;
  bool failed_ = false;    // a regular init container failed under restartPolicy Never
  bool complete_ = false;  // every main container has ended for good

  mutable std::mutex mu_;  // guards view_
  PodView view_;
  std::optional<PodView> published_;
  std::vector<std::filesystem::path> created_mount_points_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> deleting_{false};
  std::atomic<std::int64_t> deletion_grace_ms_{0};
  std::atomic<bool> finished_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace ringleader::devcluster::kubelet
