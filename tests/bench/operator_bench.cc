// 1,000 TrainingJobs of 8 replicas each applied at once to devcluster, reconciled by the real
// ringleader-operator binary: time until every job has its Service, Secret and 8 Pods, API
// writes per job against the ideal (1 Service + 1 Secret + 1 NetworkPolicy + 8 Pods = 11
// creates, at most 3 status writes), and the operator process's peak RSS (VmHWM) and CPU seconds (from wait4).
// The writes are counted by the API server's audit log, which records every request the
// operator's ServiceAccount sent (retries and requests answered with an error included); the
// operator's own counters, which see one write per call it meant to make, are printed beside.
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
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"
#include "operator/kube/transport.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/bench/bench_args.h"
#include "tests/devcluster/cluster_objects.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/kubeconfig.h"

namespace {

using ringleader::bench::Median;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace kube = ringleader::kube;
namespace devcluster = ringleader::devcluster;

// The operator runs as this ServiceAccount, so that the audit log tells its requests from the
// bench's own (which use devcluster's admin token).
constexpr const char* kOperatorAccount = "ringleader-operator";
constexpr const char* kOperatorUser = "system:serviceaccount:default:ringleader-operator";

struct Settings {
  int jobs = 1000;
  int replicas = 8;
  int repetitions = 3;
};

// API writes sorted into the kinds the operator's own counters keep.
struct Writes {
  double creates = 0;  // Pods, Services and Secrets
  double status = 0;   // TrainingJob /status
  double events = 0;
  double deletes = 0;
  double other = 0;    // none of these: a kind the operator's counters do not know
  double total = 0;
};

struct Result {
  double converge_s = 0;
  Writes audited;                           // every write request in the API server's audit log
  std::map<std::string, double> audited_by; // "create pods", "update trainingjobs/status", ...
  double refused = 0;                       // audited writes RBAC refused
  Writes counted;                           // the operator's own counters
  double failed = 0;                        // the operator's count of writes answered with an error
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

// Makes the operator's ServiceAccount, allowed everything (RBAC is chart_install_test's subject,
// not this bench's), and returns the path of a kubeconfig with a token for it.
std::string OperatorKubeconfig(kube::Client& admin, const devcluster::DevCluster& cluster,
                               const std::filesystem::path& dir) {
  const kube::Resource service_accounts{"", "v1", "serviceaccounts", true};
  const std::string rbac = "rbac.authorization.k8s.io";
  admin.Create(service_accounts, "default",
               {{"apiVersion", "v1"},
                {"kind", "ServiceAccount"},
                {"metadata", {{"name", kOperatorAccount}, {"namespace", "default"}}}});
  admin.Create(kube::Resource{rbac, "v1", "clusterroles", false}, "",
               {{"apiVersion", rbac + "/v1"},
                {"kind", "ClusterRole"},
                {"metadata", {{"name", kOperatorAccount}}},
                {"rules", json::array({{{"apiGroups", json::array({"*"})},
                                        {"resources", json::array({"*"})},
                                        {"verbs", json::array({"*"})}},
                                       {{"nonResourceURLs", json::array({"*"})}, {"verbs", json::array({"*"})}}})}});
  admin.Create(kube::Resource{rbac, "v1", "clusterrolebindings", false}, "",
               {{"apiVersion", rbac + "/v1"},
                {"kind", "ClusterRoleBinding"},
                {"metadata", {{"name", kOperatorAccount}}},
                {"roleRef", {{"apiGroup", rbac}, {"kind", "ClusterRole"}, {"name", kOperatorAccount}}},
                {"subjects", json::array({{{"kind", "ServiceAccount"},
                                           {"name", kOperatorAccount},
                                           {"namespace", "default"}}})}});
  // The TokenRequest subresource, as `kubectl create token` calls it (the Client has no verb
  // for a subresource POST).
  const auto transport = kube::MakeCpprestTransport(kube::LoadKubeconfig(cluster.kubeconfig_path()));
  kube::HttpRequest request;
  request.method = "POST";
  request.target = kube::ResourcePath(service_accounts, "default", kOperatorAccount, "token");
  request.bearer_token = cluster.token();
  request.content_type = "application/json";
  request.body = json{{"apiVersion", "authentication.k8s.io/v1"},
                      {"kind", "TokenRequest"},
                      {"spec", {{"expirationSeconds", 24 * 3600}}}}
                     .dump();
  const kube::HttpResponse response = transport->Send(request);
  if (response.status != 201) {
    throw std::runtime_error("the TokenRequest for the operator's ServiceAccount was answered " +
                             std::to_string(response.status) + ": " + response.body);
  }
  const std::string token = json::parse(response.body).at("status").at("token").get<std::string>();
  return devcluster::WriteClientFiles((dir / "operator").string(), cluster.url(), cluster.ca_pem(), token);
}

// Every create, update, patch and delete the operator's ServiceAccount sent, from the API
// server's audit log (audit.k8s.io/v1 Events at level Metadata, one per line). Each request's
// ResponseComplete event counts once, so a request answered with an error (a 409, a refusal) is
// counted, and so is each client retry; RBAC's refusals carry the annotation
// authorization.k8s.io/decision: forbid.
void CountAuditedWrites(const std::filesystem::path& path, Result& result) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read the audit log " + path.string());
  }
  std::string line;
  while (std::getline(in, line)) {
    const json event = json::parse(line);
    if (event.value("stage", "") != "ResponseComplete" ||
        event.value("user", json::object()).value("username", "") != kOperatorUser) {
      continue;
    }
    const std::string verb = event.value("verb", "");
    if (verb != "create" && verb != "update" && verb != "patch" && verb != "delete" && verb != "deletecollection") {
      continue;
    }
    const json object = event.value("objectRef", json::object());
    const std::string resource = object.value("resource", "");
    const std::string subresource = object.value("subresource", "");
    result.audited_by[verb + " " + (subresource.empty() ? resource : resource + "/" + subresource)] += 1;
    if (event.value("annotations", json::object()).value("authorization.k8s.io/decision", "") == "forbid") {
      ++result.refused;
    }
    Writes& writes = result.audited;
    ++writes.total;
    if (verb == "delete" || verb == "deletecollection") {
      ++writes.deletes;
    } else if (resource == "trainingjobs" && subresource == "status") {
      ++writes.status;
    } else if (resource == "events") {
      ++writes.events;
    } else if (verb == "create" && subresource.empty() &&
               (resource == "pods" || resource == "services" || resource == "secrets" ||
                resource == "networkpolicies")) {
      ++writes.creates;
    } else {
      ++writes.other;
    }
  }
}

// The counts the operator logs when it stops: {"writes":{"status","creates","deletes","events","failed"}}.
void ReadOperatorCounts(const std::filesystem::path& log, Result& result) {
  std::ifstream in(log);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.find("\"stopped\"") == std::string::npos) {
      continue;
    }
    const json stopped = json::parse(line);
    const json& writes = stopped["writes"];
    result.counted.creates = writes["creates"].get<double>();
    result.counted.status = writes["status"].get<double>();
    result.counted.events = writes["events"].get<double>();
    result.counted.deletes = writes["deletes"].get<double>();
    result.counted.total = result.counted.creates + result.counted.status + result.counted.events + result.counted.deletes;
    result.failed = writes["failed"].get<double>();
    found = true;
  }
  if (!found) {
    throw std::runtime_error("the operator did not log its write counts; see " + log.string());
  }
}

// The kinds the two counts disagree on, as "creates 8000 vs 7990"; empty when they agree.
std::string Differences(const Result& run) {
  std::string out;
  const auto compare = [&](const char* kind, double Writes::*field) {
    if (run.audited.*field != run.counted.*field) {
      char text[96];
      std::snprintf(text, sizeof(text), "%s%s %.0f in the audit log vs %.0f counted", out.empty() ? "" : ", ", kind,
                    run.audited.*field, run.counted.*field);
      out += text;
    }
  };
  compare("creates", &Writes::creates);
  compare("status writes", &Writes::status);
  compare("Events", &Writes::events);
  compare("deletes", &Writes::deletes);
  compare("other writes", &Writes::other);
  return out;
}

Result RunOnce(const Settings& settings) {
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() / ("ringleader-op-bench-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  devcluster::Options options;
  options.data_dir = (dir / "dc").string();
  auto cluster = devcluster::DevCluster::Start(options);
  const std::filesystem::path audit_log = cluster->audit_log();
  kube::ClientOptions client_options;
  client_options.qps = 0;
  auto client = kube::MakeClient(kube::LoadKubeconfig(cluster->kubeconfig_path()), client_options);
  const json crd = ringleader::yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml");
  ringleader::testing::InstallCrd(*client, crd);
  const std::string operator_kubeconfig = OperatorKubeconfig(*client, *cluster, dir);

  const auto log = dir / "operator.log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(RINGLEADER_OPERATOR_PATH, RINGLEADER_OPERATOR_PATH, "run", "--kubeconfig", operator_kubeconfig.c_str(),
            "--leader-elect", "false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
            "--workers", "4", "--kube-api-qps", "1000", "--kube-api-burst", "1000",
            // No Node exists, so the real scheduler marks every Pod Unschedulable; the job
            // condition that reports it after 60 s would add a status write and an Event to
            // whichever jobs happen to wait that long, a count that depends on the run's speed.
            "--unschedulable-after", "3600", nullptr);
    ::_exit(127);
  }
  // Stops the operator when the run ends by an exception, so that no orphan keeps running.
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    ~Reaper() {
      if (!reaped) {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};

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
  // The operator writes a job's Created condition before that plan's Pod creates (the status
  // write goes first), so converged also waits for every Pod to exist.
  const auto want_pods = static_cast<std::size_t>(settings.jobs) * static_cast<std::size_t>(settings.replicas);
  Clock::time_point converged{};
  std::size_t pods = 0;
  while (Clock::now() - start < std::chrono::minutes(20)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto jobs = kube::ListAll(*client, kube::TrainingJobs(), "default").items;
    const auto done = std::count_if(jobs.begin(), jobs.end(), PodsCreated);
    if (done != settings.jobs) {
      continue;
    }
    pods = kube::ListAll(*client, kube::Pods(), "default").items.size();
    if (pods >= want_pods) {
      converged = Clock::now();
      break;
    }
  }
  if (converged == Clock::time_point{}) {
    throw std::runtime_error("the jobs did not converge within 20 minutes (" + std::to_string(pods) + " of " +
                             std::to_string(want_pods) + " Pods); see " + log.string());
  }
  if (pods != want_pods) {
    throw std::runtime_error("expected " + std::to_string(want_pods) + " Pods, found " + std::to_string(pods) +
                             "; see " + log.string());
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
  reaper.reaped = true;

  Result result;
  result.converge_s = std::chrono::duration<double>(converged - start).count();
  result.peak_rss_mb = peak_kb / 1024.0;
  result.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  // The operator has exited, so the audit log holds every request it will ever send.
  ReadOperatorCounts(log, result);
  CountAuditedWrites(audit_log, result);
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
    const double jobs = settings.jobs;
    std::vector<Result> runs;
    std::vector<int> differing;
    for (int r = 0; r < settings.repetitions; ++r) {
      runs.push_back(RunOnce(settings));
      const Result& run = runs.back();
      std::printf("run %d: converged in %.1f s; peak RSS %.1f MB, CPU %.1f s\n", r + 1, run.converge_s,
                  run.peak_rss_mb, run.cpu_s);
      std::printf("  audit log: per job %.2f creates, %.2f status writes, %.2f events; %.0f deletes, %.0f other "
                  "writes, %.0f refused; %.0f writes in all\n",
                  run.audited.creates / jobs, run.audited.status / jobs, run.audited.events / jobs,
                  run.audited.deletes, run.audited.other, run.refused, run.audited.total);
      std::printf("  operator's counters: per job %.2f creates, %.2f status writes, %.2f events; %.0f deletes, "
                  "%.0f failed writes; %.0f writes in all\n",
                  run.counted.creates / jobs, run.counted.status / jobs, run.counted.events / jobs,
                  run.counted.deletes, run.failed, run.counted.total);
      std::printf("  audited writes by verb and resource:");
      for (const auto& [what, count] : run.audited_by) {
        std::printf(" %s %.0f;", what.c_str(), count);
      }
      std::printf("\n");
      const std::string differences = Differences(run);
      if (differences.empty()) {
        std::printf("  the audit log and the operator's counters agree\n");
      } else {
        differing.push_back(r + 1);
        std::printf("  the audit log and the operator's counters DIFFER: %s\n", differences.c_str());
      }
      std::fflush(stdout);
    }
    auto median = [&](auto field) {
      std::vector<double> values;
      for (const Result& run : runs) {
        values.push_back(field(run));
      }
      return Median(values);
    };
    const auto audited = [&](double Writes::*kind) { return median([&](const Result& run) { return run.audited.*kind; }); };
    const auto counted = [&](double Writes::*kind) { return median([&](const Result& run) { return run.counted.*kind; }); };
    std::printf("\n%d jobs x %d replicas, median of %d runs\n\n", settings.jobs, settings.replicas,
                settings.repetitions);
    std::printf("API writes: every create, update, patch and delete request the operator's ServiceAccount sent, from "
                "the API server's audit log (client retries and requests answered with an error included), and the "
                "operator's own counters (one per write it meant to make) beside them.\n\n");
    std::printf("| writes | audit log | operator's counters | ideal or target |\n|---|---|---|---|\n");
    std::printf("| creates per job | %.2f | %.2f | %d (1 Service, 1 Secret, 1 NetworkPolicy, %d Pods) |\n",
                audited(&Writes::creates) / jobs, counted(&Writes::creates) / jobs, settings.replicas + 3,
                settings.replicas);
    std::printf("| status writes per job | %.2f | %.2f | at most 3 |\n", audited(&Writes::status) / jobs,
                counted(&Writes::status) / jobs);
    std::printf("| Events per job | %.2f | %.2f | - |\n", audited(&Writes::events) / jobs, counted(&Writes::events) / jobs);
    std::printf("| deletes (all jobs) | %.0f | %.0f | 0 |\n", audited(&Writes::deletes), counted(&Writes::deletes));
    std::printf("| other writes (all jobs) | %.0f | - | 0 |\n", audited(&Writes::other));
    std::printf("| writes per job, all kinds | %.2f | %.2f | - |\n", audited(&Writes::total) / jobs,
                counted(&Writes::total) / jobs);
    std::printf("| failed writes (all jobs) | in the totals above | %.0f | 0 |\n",
                median([](const Result& run) { return run.failed; }));
    std::printf("| refused by RBAC (all jobs) | %.0f | - | 0 |\n", median([](const Result& run) { return run.refused; }));
    if (differing.empty()) {
      std::printf("\nThe audit log and the operator's counters agree in every run.\n");
    } else {
      std::printf("\nThe audit log and the operator's counters differ in %zu of %d runs (see the runs above).\n",
                  differing.size(), settings.repetitions);
    }
    std::map<std::string, std::vector<double>> by;
    for (const Result& run : runs) {
      for (const auto& [what, count] : run.audited_by) {
        by[what];
      }
    }
    for (const Result& run : runs) {
      for (auto& [what, counts] : by) {
        const auto it = run.audited_by.find(what);
        counts.push_back(it == run.audited_by.end() ? 0.0 : it->second);
      }
    }
    std::printf("\n| audited write | all jobs | per job |\n|---|---|---|\n");
    for (const auto& [what, counts] : by) {
      std::printf("| %s | %.0f | %.2f |\n", what.c_str(), Median(counts), Median(counts) / jobs);
    }
    std::printf("\n| measure | median | ideal or target |\n|---|---|---|\n");
    std::printf("| time to converge | %.1f s | - |\n", median([](const Result& run) { return run.converge_s; }));
    std::printf("| operator peak RSS | %.1f MB | at most 64 MB |\n", median([](const Result& run) { return run.peak_rss_mb; }));
    std::printf("| operator CPU | %.1f s | - |\n", median([](const Result& run) { return run.cpu_s; }));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "operator_bench: %s\n", e.what());
    return 1;
  }
}
