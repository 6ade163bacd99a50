// 1,000 TrainingJobs of 8 replicas each applied at once to devcluster, reconciled by the real
// ringleader-operator binary: time until every job has its Service, Secret and 8 Pods, API
// writes per job against the ideal (1 Service + 1 Secret + 8 Pods = 10 creates, at most 3
// status writes), and the operator process's peak RSS (VmHWM) and CPU seconds (from wait4).
//
//   operator_bench [--jobs N] [--replicas R] [--repetitions K]
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/bench/bench_args.h"
#include "tests/devcluster/devcluster.h"

namespace {

using ringleader::bench::Median;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Settings {
  int jobs = 1000;
  int replicas = 8;
  int repetitions = 3;
};

struct Result {
  double converge_s = 0;
  double creates_per_job = 0;
  double status_per_job = 0;
  double events_per_job = 0;
  double deletes = 0;
  double failed = 0;
  double peak_rss_mb = 0;
  double cpu_s = 0;
};

json Job(int index, int replicas) {
  return {{"apiVersion", "ringleader.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "bench-" + std::to_string(index)}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", replicas},
            {"template", {{"spec", {{"containers", json::array({{{"name", "trainer"}, {"image", "example/trainer:1"}}})}}}}}}}};
}

bool PodsCreated(const json& job) {
  for (const json& condition : job.value("status", json::object()).value("conditions", json::array())) {
    if (condition.value("type", "") == "Created" && condition.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

// The process's peak resident set ("VmHWM" in /proc/PID/status), in KiB.
double PeakRssKb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) {
      return std::stod(line.substr(6));
    }
  }
  throw std::runtime_error("no VmHWM for process " + std::to_string(pid));
}

Result RunOnce(const Settings& settings) {
  namespace kube = ringleader::kube;
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() / ("ringleader-op-bench-" + std::to_string(rd()));
  ringleader::devcluster::Options options;
  options.data_dir = (dir / "dc").string();
  options.watch_history = 1'000'000;
  auto cluster = ringleader::devcluster::DevCluster::Start(options);
  kube::ClientOptions client_options;
  client_options.qps = 0;
  auto client = kube::MakeClient(kube::LoadKubeconfig(cluster->kubeconfig_path()), client_options);
  client->Create(kube::CustomResourceDefinitions(), "", ringleader::yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml"));

  const auto log = dir / "operator.log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string kubeconfig = cluster->kubeconfig_path();
    ::execl(RINGLEADER_OPERATOR_PATH, RINGLEADER_OPERATOR_PATH, "run", "--kubeconfig", kubeconfig.c_str(),
            "--leader-elect", "false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
            "--workers", "4", "--kube-api-qps", "1000", "--kube-api-burst", "1000", nullptr);
    ::_exit(127);
  }

  // Applied as fast as 4 writers can, as a `kubectl apply -f` of a big directory would.
  const auto start = Clock::now();
  {
    std::atomic<int> next{0};
    std::vector<std::jthread> writers;
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&] {
        for (int i = next++; i < settings.jobs; i = next++) {
          client->Create(kube::TrainingJobs(), "default", Job(i, settings.replicas));
        }
      });
    }
  }
  Clock::time_point converged{};
  while (Clock::now() - start < std::chrono::minutes(20)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto jobs = kube::ListAll(*client, kube::TrainingJobs(), "default").items;
    const auto done = std::count_if(jobs.begin(), jobs.end(), PodsCreated);
    if (done == settings.jobs) {
      converged = Clock::now();
      break;
    }
  }
  if (converged == Clock::time_point{}) {
    throw std::runtime_error("the jobs did not converge within 20 minutes; see " + log.string());
  }
  const auto pods = kube::ListAll(*client, kube::Pods(), "default").items.size();
  if (pods != static_cast<std::size_t>(settings.jobs * settings.replicas)) {
    throw std::runtime_error("expected " + std::to_string(settings.jobs * settings.replicas) + " Pods, found " +
                             std::to_string(pods));
  }
  // Let late writes (a trailing status or Event) land before counting.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // VmHWM belongs to the exec'd image; wait4's ru_maxrss would also count the memory this
  // (forking) process had, since Linux keeps it across execve.
  const double peak_kb = PeakRssKb(pid);
  ::kill(pid, SIGTERM);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);

  Result result;
  result.converge_s = std::chrono::duration<double>(converged - start).count();
  result.peak_rss_mb = peak_kb / 1024.0;
  result.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::ifstream in(log);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.find("\"stopped\"") == std::string::npos) {
      continue;
    }
    const json stopped = json::parse(line);
    const json& writes = stopped["writes"];
    result.creates_per_job = writes["creates"].get<double>() / settings.jobs;
    result.status_per_job = writes["status"].get<double>() / settings.jobs;
    result.events_per_job = writes["events"].get<double>() / settings.jobs;
    result.deletes = writes["deletes"].get<double>();
    result.failed = writes["failed"].get<double>();
    found = true;
  }
  if (!found) {
    throw std::runtime_error("the operator did not log its write counts; see " + log.string());
  }
  client.reset();
  cluster->Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Settings settings;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      const int value = std::stoi(argv[i + 1]);
      if (flag == "--jobs") {
        settings.jobs = value;
      } else if (flag == "--replicas") {
        settings.replicas = value;
      } else if (flag == "--repetitions") {
        settings.repetitions = value;
      } else {
        throw std::invalid_argument("unknown flag " + flag);
      }
    }
    std::vector<Result> runs;
    for (int r = 0; r < settings.repetitions; ++r) {
      runs.push_back(RunOnce(settings));
      const Result& run = runs.back();
      std::printf("run %d: converged in %.1f s; per job %.2f creates, %.2f status writes, %.2f events; "
                  "%.0f deletes, %.0f failed writes; peak RSS %.1f MB, CPU %.1f s\n",
                  r + 1, run.converge_s, run.creates_per_job, run.status_per_job, run.events_per_job, run.deletes,
                  run.failed, run.peak_rss_mb, run.cpu_s);
      std::fflush(stdout);
    }
    auto median = [&](double Result::*field) {
      std::vector<double> values;
      for (const Result& run : runs) {
        values.push_back(run.*field);
      }
      return Median(values);
    };
    std::printf("\n%d jobs x %d replicas, median of %d runs\n\n", settings.jobs, settings.replicas,
                settings.repetitions);
    std::printf("| measure | median | ideal or target |\n|---|---|---|\n");
    std::printf("| time to converge | %.1f s | - |\n", median(&Result::converge_s));
    std::printf("| creates per job | %.2f | %d (1 Service, 1 Secret, %d Pods) |\n", median(&Result::creates_per_job),
                settings.replicas + 2, settings.replicas);
    std::printf("| status writes per job | %.2f | at most 3 |\n", median(&Result::status_per_job));
    std::printf("| Events per job | %.2f | - |\n", median(&Result::events_per_job));
    std::printf("| failed writes (all jobs) | %.0f | 0 |\n", median(&Result::failed));
    std::printf("| operator peak RSS | %.1f MB | at most 64 MB |\n", median(&Result::peak_rss_mb));
    std::printf("| operator CPU | %.1f s | - |\n", median(&Result::cpu_s));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "operator_bench: %s\n", e.what());
    return 1;
  }
}
