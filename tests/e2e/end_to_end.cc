// EndToEnd: devcluster with its node agents, the operator and kubectl, for the end-to-end tests.
#include "tests/e2e/end_to_end.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "tests/devcluster/kubelet/pod_network.h"
#include "tests/support/wait_until.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {

using nlohmann::json;

std::filesystem::path FindProgram(const std::string& name) {
  // scripts/setup installs what Debian lacks (helm, and kubectl where missing) into .deps/bin.
  const std::filesystem::path local = std::filesystem::path(".deps/bin") / name;
  if (::access(local.c_str(), X_OK) == 0) {
    return std::filesystem::absolute(local);
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return {};
}

bool EndToEnd::Supported(std::string* why) { return devcluster::kubelet::PodNetwork::Supported(why); }

std::string JobYaml(const JobSpec& job) {
  std::string yaml = "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + job.name +
                     "\n  namespace: default\nspec:\n  replicas: " + std::to_string(job.replicas) + "\n";
  if (job.gpus_per_replica > 0) {
    // The example trainer is one process per Pod, whatever its GPUs.
    yaml += "  gpusPerReplica: " + std::to_string(job.gpus_per_replica) + "\n  processesPerReplica: 1\n";
  }
  if (job.host_network) {
    yaml += "  networking:\n    hostNetwork: true\n";
  }
  yaml +=
      "  communication:\n    backend: gloo\n    preflight:\n      minBytes: 64Ki\n      maxBytes: 256Ki\n"
      "      stepFactor: 4\n      timeoutSeconds: " +
      std::to_string(job.preflight_timeout_seconds) +
      "\n    monitor:\n      intervalSeconds: 5\n      messageBytes: 64Ki\n";
  if (!job.trainer_store.empty()) {
    yaml += "    trainerStore: " + job.trainer_store + "\n";
  }
  yaml += "  runPolicy:\n    backoffLimit: " + std::to_string(job.backoff_limit) + "\n";
  if (job.ttl_seconds_after_finished >= 0) {
    yaml += "    ttlSecondsAfterFinished: " + std::to_string(job.ttl_seconds_after_finished) + "\n";
  }
  yaml +=
      "  template:\n    spec:\n      containers:\n        - name: trainer\n"
      "          image: ringleader/example-trainer:0.1.0\n"
      "          args: [\"--steps\", \"" +
      std::to_string(job.steps) + "\", \"--step-delay-ms\", \"" + std::to_string(job.step_delay_ms) + "\"";
  for (const std::string& arg : job.trainer_args) {
    yaml += ", \"" + arg + "\"";
  }
  yaml += "]\n";
  return yaml;
}

std::string SidecarScrapeConfig(const std::filesystem::path& targets) {
  return "  - job_name: ringleader-sidecars\n    honor_labels: true\n    file_sd_configs:\n      - files: ['" +
         targets.string() + "']\n        refresh_interval: 1s\n";
}

std::filesystem::path WriteLauncher(const std::filesystem::path& path, const std::filesystem::path& interpreter,
                                    const std::filesystem::path& script) {
  {
    std::ofstream out(path);
    out << "#!/bin/sh\nexec '" << interpreter.string() << "' '" << script.string() << "' \"$@\"\n";
    if (!out) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                         std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec);
  return path;
}

std::vector<int> ProcessesWithEnv(const std::vector<std::string>& env) {
  std::vector<int> found;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ignored)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) {
      continue;
    }
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> variables;
    std::size_t start = 0;
    for (std::size_t end = environ.find('\0'); end != std::string::npos; end = environ.find('\0', start)) {
      variables.push_back(environ.substr(start, end - start));
      start = end + 1;
    }
    const bool all = std::all_of(env.begin(), env.end(), [&](const std::string& wanted) {
      return std::find(variables.begin(), variables.end(), wanted) != variables.end();
    });
    if (all && !env.empty()) {
      found.push_back(std::stoi(pid));
    }
  }
  return found;
}

EndToEnd::EndToEnd(const std::function<void(devcluster::Options&)>& customize, Operator start)
    : dir_(MakeTempDir("ringleader-e2e")) {
  devcluster::Options options;
  options.data_dir = (dir_ / "devcluster").string();
  options.run_pods = true;
  // The PyTorch example's image stands for its script, whose #! line names Debian's Python
  // (python3-torch, 1.13); its tag kTorch2Tag, and the torchrun image, for the same script under
  // the project's current PyTorch (scripts/install-torch). The tests run from the repository root.
  const std::filesystem::path script = std::filesystem::absolute("examples/pytorch/train.py");
  const std::filesystem::path venv = std::filesystem::absolute(kTorchVenv);
  options.images = {
      {"ringleader/sidecar", RINGLEADER_SIDECAR_PATH},
      {"ringleader/example-trainer", RINGLEADER_EXAMPLE_TRAINER_PATH},
      {"ringleader/pytorch-example", script},
      {std::string("ringleader/pytorch-example:") + kTorch2Tag,
       WriteLauncher(dir_ / "pytorch-example-torch2", venv / "bin" / "python", script)},
      {"ringleader/pytorch-torchrun-example", WriteLauncher(dir_ / "pytorch-torchrun-example", venv / "bin" / "torchrun", script)}};
  // Its own namespaces, so end-to-end tests may run beside each other.
  options.network_prefix = "rle" + std::to_string(::getpid());
  if (customize) {
    customize(options);
  }
  cluster_ = devcluster::DevCluster::Start(options);
  const CommandOutput crd = Kubectl({"apply", "-f", "crds/ringleader.dev_trainingjobs.yaml"});
  if (crd.exit_code != 0) {
    throw std::runtime_error("kubectl apply of the CRD failed: " + crd.output);
  }
  if (start == Operator::kLater) {
    return;
  }
  StartOperatorWith({});
}

void EndToEnd::StartOperatorWith(const std::vector<std::string>& extra_args) {
  const std::vector<int> ports = FreePorts(2);
  operator_metrics_port_ = ports[0];
  std::vector<std::string> args = {"run", "--kubeconfig", cluster_->kubeconfig_path(), "--metrics-bind-address",
                                   "127.0.0.1:" + std::to_string(operator_metrics_port_),
                                   "--health-probe-bind-address", "127.0.0.1:" + std::to_string(ports[1]),
                                   // The summary interval stays the default (60 s), longer than
                                   // any job here trains: status must still show each job's fabric.
                                   "--port-range", "61000-61999"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  StartOperator(args);
}

void EndToEnd::StartOperator(const std::vector<std::string>& args) {
  ChildOptions child;
  child.binary = RINGLEADER_OPERATOR_PATH;
  child.args = args;
  child.log = dir_ / "operator.log";
  operator_ = std::make_unique<ChildProcess>(child);
}

EndToEnd::~EndToEnd() {
  operator_.reset();
  cluster_->Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

CommandOutput EndToEnd::Kubectl(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--kubeconfig", cluster_->kubeconfig_path()};
  all.insert(all.end(), args.begin(), args.end());
  const std::filesystem::path kubectl = FindProgram("kubectl");
  if (kubectl.empty()) {
    throw std::runtime_error("kubectl is neither in .deps/bin nor on PATH (run scripts/setup)");
  }
  return Run(kubectl, all);
}

CommandOutput EndToEnd::Run(const std::filesystem::path& binary, const std::vector<std::string>& args) {
  static std::atomic<int> serial = 0;
  const std::filesystem::path log = dir_ / (binary.filename().string() + "-" + std::to_string(++serial) + ".log");
  ChildOptions child;
  child.binary = binary;
  child.args = args;
  child.log = log;
  ChildProcess process(child);
  const auto exit = process.WaitFor(std::chrono::minutes(1));
  CommandOutput out;
  out.exit_code = exit && exit->exited() ? exit->exit_code : -1;
  out.output = ReadLog(log);
  return out;
}

json EndToEnd::Get(const std::string& resource, const std::string& name) {
  const CommandOutput got = Kubectl({"get", resource, name, "-o", "json"});
  if (got.exit_code != 0) {
    return nullptr;
  }
  return json::parse(got.output, nullptr, false);
}

json EndToEnd::WaitForJob(const std::string& name, const std::function<bool(const json&)>& done,
                          std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    json job = Get("trainingjob", name);
    if (job.is_object() && done(job)) {
      return job;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return nullptr;
}

CommandOutput EndToEnd::Apply(const std::string& name, const std::string& yaml) {
  const std::filesystem::path file = dir_ / (name + ".yaml");
  std::ofstream(file) << yaml;
  return Kubectl({"apply", "-f", file.string()});
}

bool EndToEnd::WritePodMonitorTargets(const std::filesystem::path& file, const std::string& job, int replicas,
                                      std::chrono::seconds timeout) {
  std::vector<std::string> pod_ips(static_cast<std::size_t>(replicas));
  int metrics_port = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto known = [&] { return metrics_port != 0 && std::find(pod_ips.begin(), pod_ips.end(), "") == pod_ips.end(); };
  while (!known() && std::chrono::steady_clock::now() < deadline) {
    const json object = Get("trainingjob", job);
    if (object.is_object() && object.value("status", json::object()).contains("ports")) {
      metrics_port = object["status"]["ports"]["metrics"];
    }
    for (int rank = 0; rank < replicas; ++rank) {
      const json pod = Get("pod", job + "-" + std::to_string(rank));
      if (pod.is_object()) {
        pod_ips[static_cast<std::size_t>(rank)] = pod.value("status", json::object()).value("podIP", "");
      }
    }
    if (!known()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!known()) {
    return false;
  }
  json groups = json::array();
  for (int rank = 0; rank < replicas; ++rank) {
    groups.push_back({{"targets", {pod_ips[static_cast<std::size_t>(rank)] + ":" + std::to_string(metrics_port)}},
                      {"labels", {{"namespace", "default"}, {"pod", job + "-" + std::to_string(rank)}}}});
  }
  const std::filesystem::path partial = file.string() + ".new";
  std::ofstream(partial) << groups.dump();
  std::filesystem::rename(partial, file);
  return true;
}

std::string EndToEnd::AllPodLogs() {
  std::string text;
  std::error_code ignored;
  for (const auto& pod : std::filesystem::directory_iterator(dir_ / "devcluster" / "kubelet" / "pods", ignored)) {
    for (const auto& log : std::filesystem::directory_iterator(pod.path() / "logs", ignored)) {
      text += ReadLog(log.path());
    }
  }
  return text;
}

std::string EndToEnd::PodLog(const std::string& pod, const std::string& container) {
  const CommandOutput logs = Kubectl({"logs", pod, "-c", container});
  return logs.exit_code == 0 ? logs.output : "";
}

bool EndToEnd::WaitForGarbageCollector(std::chrono::seconds timeout) {
  const std::string probe = "garbage-collector-probe";
  const CommandOutput applied =
      Apply(probe, "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + probe +
                       "\n  namespace: default\nspec:\n  replicas: 1\n  runPolicy:\n    suspend: true\n"
                       "  template:\n    spec:\n      containers:\n        - name: trainer\n"
                       "          image: ringleader/example-trainer:0.1.0\n");
  if (applied.exit_code != 0) {
    throw std::runtime_error("kubectl apply of the garbage collector's probe failed: " + applied.output);
  }
  // Foreground: the API server only marks it; the collector removes the mark once it sees it.
  const CommandOutput deleted =
      Kubectl({"delete", "trainingjob", probe, "--cascade=foreground", "--wait=false"});
  if (deleted.exit_code != 0) {
    throw std::runtime_error("kubectl delete of the garbage collector's probe failed: " + deleted.output);
  }
  return WaitUntil(
      [&] {
        const CommandOutput got = Kubectl({"get", "trainingjob", probe, "-o", "name"});
        return got.exit_code != 0 && got.output.find("NotFound") != std::string::npos;
      },
      timeout, std::chrono::milliseconds(250));
}

std::string EndToEnd::Diagnostics() {
  std::string text = "--- operator ---\n" + ReadLog(dir_ / "operator.log");
  text += "--- pods ---\n" + Kubectl({"get", "pods", "-o", "wide"}).output;
  text += "--- events ---\n" + Kubectl({"get", "events"}).output;
  const std::filesystem::path pods = dir_ / "devcluster" / "kubelet" / "pods";
  std::error_code ignored;
  for (const auto& pod : std::filesystem::directory_iterator(pods, ignored)) {
    for (const auto& log : std::filesystem::directory_iterator(pod.path() / "logs", ignored)) {
      text += "--- " + pod.path().filename().string() + " " + log.path().filename().string() + " ---\n" +
              ReadLog(log.path());
    }
  }
  return text;
}

}  // namespace ringleader::testing
