// The end-to-end bed: devcluster (the real control plane, and its node agents running Pods as
// root: network namespaces and cluster DNS), the real ringleader-operator as a process, real
// kubectl, and the real sidecar and example trainer as the images' programs.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/devcluster/devcluster.h"
#include "tests/support/child_process.h"

namespace ringleader::testing {

// A TrainingJob of `replicas` ranks whose trainer runs `steps` steps `step_delay_ms` apart, with
// a small preflight (64-256 KiB) and the given extras (YAML lines under spec, indented 2).
struct JobSpec {
  std::string name;
  int replicas = 4;
  int steps = 20;
  int step_delay_ms = 0;
  int preflight_timeout_seconds = 60;
  int backoff_limit = 2;
  bool host_network = false;
  int ttl_seconds_after_finished = -1;  // spec.runPolicy.ttlSecondsAfterFinished; -1 leaves it out
  int gpus_per_replica = 0;             // spec.gpusPerReplica; 0 leaves it out (the backend stays gloo)
  std::vector<std::string> trainer_args = {};  // after --steps and --step-delay-ms
  // spec.communication.trainerStore; "" leaves the default, Sidecar: rank 0's sidecar serves
  // PyTorch's TCPStore protocol on MASTER_PORT and the example trainer, told
  // TORCHELASTIC_USE_AGENT_STORE=True, is a client of it on every rank. "Trainer" makes the
  // example trainer's rank 0 host a store of ringleader's own protocol there instead.
  std::string trainer_store = "";
};
std::string JobYaml(const JobSpec& job);

// Prometheus scrape_configs entries for a job's sidecars as the chart's PodMonitor finds them
// (honorLabels; namespace and pod target labels from the file_sd `targets` file, which
// EndToEnd::WritePodMonitorTargets writes), indented for PrometheusServer's config.
std::string SidecarScrapeConfig(const std::filesystem::path& targets);

// A program in .deps/bin (run from the repository root) or on PATH; empty when there is none.
std::filesystem::path FindProgram(const std::string& name);

// The project's current PyTorch (scripts/install-torch), relative to the repository root, and the
// tag of the PyTorch example's image that runs train.py under it (untagged or any other tag: 1.13).
inline constexpr char kTorchVenv[] = ".deps/torch-venv";
inline constexpr char kTorch2Tag[] = "2.15";

// Writes an executable shell script at `path` that runs `interpreter script "$@"`: an image that
// stands for a script under a Python (or torchrun) other than its #! line's. Returns `path`.
std::filesystem::path WriteLauncher(const std::filesystem::path& path, const std::filesystem::path& interpreter,
                                    const std::filesystem::path& script);

// Processes on this machine whose environment has every NAME=VALUE in `env` (read from /proc).
std::vector<int> ProcessesWithEnv(const std::vector<std::string>& env);

struct CommandOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

class EndToEnd {
 public:
  // Whether this machine can run it (root for the Pods' namespaces); `why` says what is missing.
  static bool Supported(std::string* why);

  enum class Operator { kStart, kLater };
  // Starts devcluster with its node agents (after `customize` adjusts its options), installs the
  // CRD with kubectl and, unless told kLater, starts the operator with the bed's own flags.
  explicit EndToEnd(const std::function<void(devcluster::Options&)>& customize = {},
                    Operator start = Operator::kStart);
  ~EndToEnd();
  EndToEnd(const EndToEnd&) = delete;
  EndToEnd& operator=(const EndToEnd&) = delete;

  // Starts the operator binary with exactly these arguments (its log joins Diagnostics).
  void StartOperator(const std::vector<std::string>& args);
  // Starts the operator with the bed's own flags (as the constructor does) and `extra_args` after
  // them; for a bed made with Operator::kLater.
  void StartOperatorWith(const std::vector<std::string>& extra_args);
  // Runs a program to its end, waiting up to a minute.
  CommandOutput Run(const std::filesystem::path& binary, const std::vector<std::string>& args);
  // Runs kubectl against the cluster, waiting up to a minute.
  CommandOutput Kubectl(const std::vector<std::string>& args);
  // The object as `kubectl get RESOURCE NAME -o json` shows it; null when it does not exist.
  nlohmann::json Get(const std::string& resource, const std::string& name);
  // Polls the TrainingJob until `done(job)` holds; returns the last state seen (null on timeout).
  nlohmann::json WaitForJob(const std::string& name, const std::function<bool(const nlohmann::json&)>& done,
                            std::chrono::seconds timeout);
  // Writes `yaml` to a file and applies it with kubectl; the output when that fails.
  CommandOutput Apply(const std::string& name, const std::string& yaml);
  // A container's log in the Pod's current incarnation, as `kubectl logs` reads it through the
  // API server ("" if there is none).
  std::string PodLog(const std::string& pod, const std::string& container);
  // Waits until the controller manager's garbage collector watches TrainingJobs, so that deleting
  // one deletes its children at once, as on a cluster whose CRD is older than a few seconds: the
  // collector picks a new resource up at its discovery sync, every 30 s. The proof is a suspended
  // probe job deleted in the foreground, which only the collector can finish deleting. Whether it
  // went within `timeout`.
  bool WaitForGarbageCollector(std::chrono::seconds timeout);
  // Writes `file` for Prometheus' file_sd as the chart's PodMonitor would find the job's sidecars:
  // each Pod's address and the job's metrics port, labelled namespace and pod. Waits up to
  // `timeout` for the port and every address; false if they did not come. Written whole (a
  // rename), so Prometheus never reads half a file.
  bool WritePodMonitorTargets(const std::filesystem::path& file, const std::string& job, int replicas,
                              std::chrono::seconds timeout);
  // Every container log of every Pod run so far, deleted ones too, joined (for searching all of
  // them at once): the node agents' files, which outlive the Pods.
  std::string AllPodLogs();
  // The operator's log, the Pods' statuses, the Events, and the container logs of every Pod run so
  // far (replaced ones too), for failure messages.
  std::string Diagnostics();

  devcluster::DevCluster& cluster() { return *cluster_; }
  // Where the operator serves /metrics (127.0.0.1).
  int operator_metrics_port() const { return operator_metrics_port_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::unique_ptr<ChildProcess> operator_;
  int operator_metrics_port_ = 0;
};

}  // namespace ringleader::testing
