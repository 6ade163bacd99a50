// End to end on devcluster: kubectl applies a TrainingJob to the real API server, the operator
// creates its Pods, the real scheduler binds them, the node agents (the kubelet stand-in) run the
// real sidecar and trainer in network namespaces, and the job succeeds or fails as it should.
#include "tests/e2e/audit_log.h"
#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include "tests/devcluster/kubelet/pod_network.h"
#include "tests/support/prometheus_server.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The message of the job's condition `type`, "" when it is not True.
std::string ConditionMessage(const json& job, const std::string& type) {
  const json* condition = FindJobCondition(job, type);
  return condition != nullptr && condition->value("status", "") == "True" ? condition->value("message", "") : "";
}

// Every process of the job: its sidecars carry RINGLEADER_JOB_NAME, its trainers MASTER_ADDR.
// The job's sidecars (RINGLEADER_JOB_NAME) and trainers (MASTER_ADDR), each process once.
std::set<int> JobProcesses(const std::string& job) {
  std::set<int> pids;
  for (const int pid : ProcessesWithEnv({"RINGLEADER_JOB_NAME=" + job})) {
    pids.insert(pid);
  }
  for (const int pid : ProcessesWithEnv({"MASTER_ADDR=" + job + "-0." + job + ".default.svc.cluster.local"})) {
    pids.insert(pid);
  }
  return pids;
}

// "pid: argv..." per process, for a failure message.
std::string CommandLines(const std::set<int>& pids) {
  std::string out;
  for (const int pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    out += std::to_string(pid) + ": " + cmdline + "\n";
  }
  return out;
}

// Who kube-controller-manager's garbage collector is to the API server (it runs with service
// account credentials).
constexpr char kGarbageCollector[] = "system:serviceaccount:kube-system:generic-garbage-collector";

class EndToEndTest : public BedTest {};

TEST_F(EndToEndTest, TheExampleJobSucceedsWithAPassingPreflightAndAgreeingRanks) {
  const CommandOutput applied = bed_->Kubectl({"apply", "-f", "examples/trainingjob.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("demo", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();

  // Data-parallel training: every rank ends with the same weights.
  const std::regex final_line("final steps 20 checksum ([^ ]+) weights");
  std::set<std::string> checksums;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string log = bed_->PodLog("demo-" + std::to_string(rank), "trainer");
    std::smatch match;
    ASSERT_TRUE(std::regex_search(log, match, final_line)) << "rank " << rank << ":\n" << log;
    checksums.insert(match[1]);
    // trainerStore Sidecar (the default): every rank, rank 0's too, a client of rank 0's sidecar.
    EXPECT_THAT(log, HasSubstr("(a client of its TCPStore, keys under /worker/attempt_0/)")) << log;
  }
  EXPECT_EQ(checksums.size(), 1u);
  // The preflight init container ran the sweep and printed the table; the sidecar took its result.
  const std::string preflight = bed_->PodLog("demo-0", "ringleader-preflight");
  EXPECT_THAT(preflight, HasSubstr("# ringleader preflight, gloo, 4 ranks"));
  EXPECT_THAT(preflight, HasSubstr("# transport: tcp"));
  EXPECT_THAT(preflight, HasSubstr("preflight passed"));
  EXPECT_THAT(bed_->PodLog("demo-0", "ringleader-sidecar"), HasSubstr("preflight passed"));
  EXPECT_EQ(job["status"]["replicas"]["succeeded"], 4) << job.dump(2);
  // The job trains for seconds, far less than the operator's 60 s summary interval, and still
  // ends with the fabric in status: rank 0's summary is read as soon as the job runs.
  const json communication = job["status"].value("communication", json::object());
  EXPECT_EQ(communication.value("preflight", ""), "Passed") << job.dump(2);
  EXPECT_EQ(communication.value("transport", ""), "tcp") << job.dump(2);
  EXPECT_NE(communication.value("busBandwidth", ""), "") << job.dump(2);
}

// The happy path as users watch it: a real Prometheus scrapes every rank's sidecar while the job
// trains, and the job still ends Succeeded with every rank agreeing.
TEST_F(EndToEndTest, PrometheusScrapesBusBandwidthFromEveryRankWhileTheJobTrains) {
  if (!PrometheusServer::Installed()) {
    GTEST_SKIP() << "no Prometheus server installed (scripts/setup installs Debian's)";
  }
  const std::filesystem::path targets = bed_->dir() / "targets.json";
  std::ofstream(targets) << "[]";
  PrometheusServer prometheus(bed_->dir() / "prometheus", SidecarScrapeConfig(targets));
  {
    const CommandOutput applied =
        bed_->Apply("watched", JobYaml({.name = "watched", .replicas = 4, .steps = 100, .step_delay_ms = 100}));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  const json running = bed_->WaitForJob("watched", JobRunning, seconds(120));
  ASSERT_EQ(JobState(running), "Running") << running.dump(2) << bed_->Diagnostics();
  ASSERT_TRUE(bed_->WritePodMonitorTargets(targets, "watched", 4, seconds(30))) << bed_->Diagnostics();

  const json series = prometheus.WaitForSeries(
      "max by (pod) (ringleader_sidecar_bus_bandwidth_bytes_per_second{collective=\"all_reduce\", pod=~\"watched-.*\"}) > 0",
      4, seconds(30));
  std::set<std::string> pods;
  for (const json& one : series) {
    pods.insert(one["metric"].value("pod", ""));
  }
  EXPECT_EQ(pods.size(), 4u) << series.dump(2) << prometheus.Log();

  const json job = bed_->WaitForJob("watched", JobFinished, seconds(120));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  std::set<std::string> checksums;
  for (int rank = 0; rank < 4; ++rank) {
    std::smatch match;
    const std::string log = bed_->PodLog("watched-" + std::to_string(rank), "trainer");
    ASSERT_TRUE(std::regex_search(log, match, std::regex("final steps 100 checksum ([^ ]+) weights"))) << log;
    checksums.insert(match[1]);
  }
  EXPECT_EQ(checksums.size(), 1u);
}

// The operator sets no finalizer: the job's children go by their owner reference, deleted by the
// controller manager's garbage collector, and the processes with the Pods.
TEST_F(EndToEndTest, DeletingARunningJobGarbageCollectsItsChildrenEndsItsProcessesAndFreesItsPorts) {
  {
    const CommandOutput applied =
        bed_->Apply("long", JobYaml({.name = "long", .replicas = 2, .steps = 600, .step_delay_ms = 100}));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  const json running = bed_->WaitForJob("long", JobRunning, seconds(120));
  ASSERT_EQ(JobState(running), "Running") << running.dump(2) << bed_->Diagnostics();
  const int master_port = running["status"]["ports"]["master"];
  const std::set<int> processes = JobProcesses("long");
  ASSERT_EQ(processes.size(), 4u) << "two sidecars and two trainers:\n" << CommandLines(processes) << bed_->Diagnostics();
  // The children, each owned by the job.
  const std::vector<std::pair<std::string, std::string>> children = {
      {"pods", "long-0"},
      {"pods", "long-1"},
      {"services", "long"},
      {"secrets", "long-ringleader-token"},
      {"networkpolicies", "long-ringleader"}};
  for (const auto& [resource, name] : children) {
    const json child = bed_->Get(resource, name);
    ASSERT_TRUE(child.is_object()) << resource << "/" << name << bed_->Diagnostics();
    EXPECT_EQ(child["metadata"]["ownerReferences"][0].value("uid", ""), running["metadata"].value("uid", ""))
        << resource << "/" << name;
  }
  ASSERT_TRUE(bed_->WaitForGarbageCollector(seconds(60))) << bed_->Diagnostics();

  const auto deleted_at = std::chrono::steady_clock::now();
  ASSERT_EQ(bed_->Kubectl({"delete", "trainingjob", "long"}).exit_code, 0);
  // Up to 20 s from the delete, as before kubectl answered.
  WaitUntil([] { return JobProcesses("long").empty(); }, seconds(20) - (std::chrono::steady_clock::now() - deleted_at),
            std::chrono::milliseconds(100));
  EXPECT_TRUE(JobProcesses("long").empty()) << bed_->Diagnostics();
  EXPECT_LT(std::chrono::steady_clock::now() - deleted_at, seconds(10));

  const bool children_gone = WaitUntil(
      [&] {
        return std::all_of(children.begin(), children.end(),
                           [&](const auto& child) { return bed_->Get(child.first, child.second).is_null(); });
      },
      seconds(30), std::chrono::milliseconds(250));
  ASSERT_TRUE(children_gone) << bed_->Diagnostics();
  // The garbage collector deleted every one (a Pod then ends as its node agent confirms it).
  const std::vector<AuditedRequest> audited = ReadAuditLog(bed_->cluster().audit_log());
  for (const auto& [resource, name] : children) {
    const bool by_collector = std::any_of(audited.begin(), audited.end(), [&](const AuditedRequest& request) {
      return request.verb == "delete" && request.resource == resource && request.name == name &&
             request.namespace_ == "default" && request.user == kGarbageCollector && request.code / 100 == 2;
    });
    EXPECT_TRUE(by_collector) << resource << "/" << name << " was not deleted by " << kGarbageCollector;
  }

  // Its ports went back to the operator: the next job is handed the same block.
  {
    const CommandOutput applied = bed_->Apply("next", JobYaml({.name = "next", .replicas = 2}));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  const json next = bed_->WaitForJob(
      "next", [](const json& job) { return job.value("status", json::object()).contains("ports"); }, seconds(60));
  ASSERT_TRUE(next.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(next["status"]["ports"]["master"], master_port);
}

// The value of the container's env entry `name`, "<unset>" when it has none.
std::string EnvValue(const json& container, const std::string& name) {
  for (const json& entry : container.value("env", json::array())) {
    if (entry.value("name", "") == name) {
      return entry.value("value", "");
    }
  }
  return "<unset>";
}

// name -> port of what the container declares, hostPort included.
std::map<std::string, json> DeclaredPorts(const json& container) {
  std::map<std::string, json> ports;
  for (const json& port : container.value("ports", json::array())) {
    ports[port.value("name", "")] = port;
  }
  return ports;
}

const json& InitContainer(const json& pod, const std::string& name) {
  static const json kNone = json::object();
  for (const json& container : pod["spec"]["initContainers"]) {
    if (container.value("name", "") == name) {
      return container;
    }
  }
  return kNone;
}

// What the operator made of a job with spec.communication.trainerStore left at its default,
// Sidecar, as the real API server stored it: rank 0's sidecar is told to serve the trainers' store
// on the master port and declares that port on every rank, each trainer is told to be a client,
// and the job's NetworkPolicy (which the API server validated, endPort ranges and all) admits that
// port and the rendezvous port only from the job's own Pods. The Pods wait for a node that never
// comes, so nothing runs: devcluster enforces no NetworkPolicy, and trainers meeting in the
// sidecar's store are pytorch_test's.
TEST_F(EndToEndTest, AJobsNetworkPolicyAndTrainerStoreAreWhatTheApiServerKeeps) {
  const std::string yaml = JobYaml({.name = "shielded", .replicas = 2}) +
                           "      nodeSelector:\n        ringleader.dev/test-node: nowhere\n";
  {
    const CommandOutput applied = bed_->Apply("shielded", yaml);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  ASSERT_TRUE(WaitUntil([&] { return bed_->Get("pods", "shielded-1").is_object(); }, seconds(60),
                        std::chrono::milliseconds(250)))
      << bed_->Diagnostics();
  const json job = bed_->Get("trainingjob", "shielded");
  ASSERT_TRUE(job.is_object());
  const std::string uid = job["metadata"]["uid"];
  const int master = job["status"]["ports"]["master"];
  ASSERT_EQ(job["status"]["ports"]["rendezvous"], master + 1) << job.dump(2);

  const json policy = bed_->Get("networkpolicies", "shielded-ringleader");
  ASSERT_TRUE(policy.is_object()) << bed_->Diagnostics();
  const json& owner = policy["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner.value("kind", ""), "TrainingJob");
  EXPECT_EQ(owner.value("uid", ""), uid);
  EXPECT_EQ(owner.value("controller", false), true);
  const json selector = {{"matchLabels", {{"ringleader.dev/job-name", "shielded"}, {"ringleader.dev/job-uid", uid}}}};
  const json expected = {
      {"podSelector", selector},
      {"policyTypes", {"Ingress"}},
      {"ingress",
       {{{"from", {{{"podSelector", selector}}}}},
        {{"ports",
          {{{"protocol", "TCP"}, {"port", 1}, {"endPort", master - 1}},
           {{"protocol", "TCP"}, {"port", master + 2}, {"endPort", 65535}},
           {{"protocol", "UDP"}},
           {{"protocol", "SCTP"}}}}}}}};
  EXPECT_EQ(policy["spec"], expected) << policy.dump(2);
  // It selects the job's Pods as they are.
  for (const char* pod : {"shielded-0", "shielded-1"}) {
    const json labels = bed_->Get("pods", pod)["metadata"]["labels"];
    for (const auto& [key, value] : selector["matchLabels"].items()) {
      EXPECT_EQ(labels.value(key, ""), value) << pod << " " << key;
    }
  }

  const std::string endpoint = "shielded-0.shielded.default.svc.cluster.local:" + std::to_string(master);
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const json pod = bed_->Get("pods", "shielded-" + std::to_string(rank));
    const json& sidecar = InitContainer(pod, "ringleader-sidecar");
    const json& trainer = pod["spec"]["containers"][0];
    EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_TRAINER_STORE_PORT"), rank == 0 ? std::to_string(master) : "<unset>");
    const auto sidecar_ports = DeclaredPorts(sidecar);
    ASSERT_TRUE(sidecar_ports.contains("rl-master")) << sidecar.dump(2);
    EXPECT_EQ(sidecar_ports.at("rl-master").value("containerPort", 0), master);
    EXPECT_FALSE(sidecar_ports.at("rl-master").contains("hostPort"));
    EXPECT_FALSE(DeclaredPorts(trainer).contains("rl-master")) << trainer.dump(2);
    EXPECT_EQ(EnvValue(trainer, "MASTER_PORT"), std::to_string(master));
    EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_USE_AGENT_STORE"), "True");
    EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_RESTART_COUNT"), "0");
    EXPECT_EQ(EnvValue(trainer, "PET_RDZV_BACKEND"), "c10d");
    EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ENDPOINT"), endpoint);
    EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ID"), uid + "-0");
    EXPECT_EQ(EnvValue(trainer, "PET_RDZV_CONF"), "is_host=false");
  }
}

TEST_F(EndToEndTest, AKilledPodRestartsTheGangWhichThenSucceeds) {
  {
    const CommandOutput applied =
        bed_->Apply("crash", JobYaml({.name = "crash", .replicas = 3, .steps = 60, .step_delay_ms = 100}));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  ASSERT_EQ(JobState(bed_->WaitForJob("crash", JobRunning, seconds(120))), "Running") << bed_->Diagnostics();
  const std::vector<int> trainer = ProcessesWithEnv({"RANK=2", "MASTER_ADDR=crash-0.crash.default.svc.cluster.local"});
  ASSERT_EQ(trainer.size(), 1u);
  ASSERT_EQ(::kill(trainer[0], SIGKILL), 0);

  const json job = bed_->WaitForJob("crash", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 1) << job.dump(2) << bed_->Diagnostics();
  // The new attempt's three trainers met in the new rank-0 sidecar's store under the attempt's
  // prefix (read from the node agents' log files, which keep both attempts' Pods' logs).
  const std::string logs = bed_->AllPodLogs();
  const std::regex attempt_1("rank [0-2] of 3: connected on [^ ]+ to MASTER_ADDR [^ ]+ \\(a client of its "
                             "TCPStore, keys under /worker/attempt_1/\\)");
  EXPECT_EQ(std::distance(std::sregex_iterator(logs.begin(), logs.end(), attempt_1), std::sregex_iterator()), 3)
      << logs;
}

TEST(EndToEndFaultTest, ARankThatCannotReachRankZeroFailsThePreflightNamingIt) {
  std::string why;
  if (!EndToEnd::Supported(&why)) {
    GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
  }
  // Rank 3's namespace gets a blackhole route to rank 0's address before either starts.
  std::atomic<devcluster::DevCluster*> cluster{nullptr};
  std::mutex mu;
  std::map<std::string, devcluster::kubelet::Endpoint> pods;
  const auto block = [&](const std::string&, const std::string& pod, const std::string& netns, const std::string& ip) {
    std::lock_guard<std::mutex> lock(mu);
    pods[pod] = {netns, ip};
    if (pods.count("cut-0") != 0 && pods.count("cut-3") != 0 && cluster.load() != nullptr) {
      cluster.load()->pod_network()->BlockRoute(pods["cut-3"], pods["cut-0"].ip);
    }
  };
  EndToEnd bed([&](devcluster::Options& options) { options.on_pod_network_for_test = block; });
  cluster = &bed.cluster();
  const CommandOutput applied =
      bed.Apply("cut", JobYaml({.name = "cut", .replicas = 4, .preflight_timeout_seconds = 10, .backoff_limit = 0}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed.WaitForJob("cut", JobFinished, seconds(120));
  ASSERT_EQ(JobState(job), "Failed") << job.dump(2) << bed.Diagnostics();
  // Whichever rank reports first: the others say rank 3 never joined, rank 3 that it cannot connect.
  EXPECT_THAT(ConditionMessage(job, "Failed"), ::testing::AnyOf(HasSubstr("rank 3 of 4 did not join"),
                                                                HasSubstr("rank 3 (pod cut-3)")))
      << job.dump(2);
}

TEST_F(EndToEndTest, SixHostNetworkJobsPackOntoTwoNodesWithoutAPortCollision) {
  constexpr int kJobs = 6;
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = "pack" + std::to_string(i);
    // Long enough (5 s of steps) that all six run at once; finished jobs hand their ports back.
    const CommandOutput applied = bed_->Apply(
        name, JobYaml({.name = name, .replicas = 2, .steps = 50, .step_delay_ms = 100, .host_network = true}));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  std::map<int, std::string> ports;
  std::string last_start;
  std::string first_completion = "9999";
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = "pack" + std::to_string(i);
    const json job = bed_->WaitForJob(name, JobFinished, seconds(240));
    ASSERT_EQ(JobState(job), "Succeeded") << name << ": " << job.dump(2) << bed_->Diagnostics();
    for (const char* role : {"master", "rendezvous", "metrics", "spare"}) {
      const int port = job["status"]["ports"][role];
      const auto [it, fresh] = ports.emplace(port, name + " " + role);
      EXPECT_TRUE(fresh) << "port " << port << ": " << it->second << " and " << name << " " << role;
    }
    last_start = std::max(last_start, job["status"].value("startTime", ""));
    first_completion = std::min(first_completion, job["status"].value("completionTime", ""));
    // The two ranks share their hostPorts, so kube-scheduler must put them on different nodes.
    const json rank0 = bed_->Get("pod", name + "-0");
    const json rank1 = bed_->Get("pod", name + "-1");
    EXPECT_NE(rank0["spec"]["nodeName"], rank1["spec"]["nodeName"]) << name;
  }
  // RFC 3339 in UTC compares as text: every job started before any finished, so they ran together.
  EXPECT_LT(last_start, first_completion);
  const std::string logs = bed_->AllPodLogs();
  EXPECT_EQ(logs.find("Address already in use"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("EADDRINUSE"), std::string::npos);
}

// The CRD's OpenAPI schema and CEL rules are kube-apiserver's to enforce: kubectl apply of a bad
// TrainingJob fails with the server's own words, and nothing is stored. Needs no Pods and no
// operator.
TEST(EndToEndApiTest, KubectlApplyOfABadTrainingJobIsRefusedWithTheServersMessage) {
  EndToEnd bed([](devcluster::Options& options) { options.run_pods = false; }, EndToEnd::Operator::kLater);
  struct BadJob {
    std::string name;
    std::string spec;  // YAML under spec, indented 2
    std::string message;
  };
  const std::vector<BadJob> bad = {
      // The schema's minimum, and the scale subresource's own check of specReplicasPath.
      {"bad-replicas", "  replicas: -1\n",
       "The TrainingJob \"bad-replicas\" is invalid: \n* spec.replicas: Invalid value: -1: spec.replicas in body "
       "should be greater than or equal to 1\n* .spec.replicas: Invalid value: -1: should be a non-negative integer"},
      // A CEL rule across fields.
      {"bad-backend", "  replicas: 2\n  communication:\n    backend: nccl\n",
       "The TrainingJob \"bad-backend\" is invalid: spec.communication.backend: Invalid value: "
       "communication.backend nccl needs gpusPerReplica of at least 1"},
  };
  for (const BadJob& job : bad) {
    const CommandOutput applied =
        bed.Apply(job.name, "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + job.name +
                                "\n  namespace: default\nspec:\n" + job.spec +
                                "  template:\n    spec:\n      containers:\n        - name: trainer\n"
                                "          image: ringleader/example-trainer:0.1.0\n");
    EXPECT_NE(applied.exit_code, 0) << job.name << ": " << applied.output;
    EXPECT_THAT(applied.output, HasSubstr(job.message)) << job.name;
    EXPECT_TRUE(bed.Get("trainingjob", job.name).is_null()) << job.name << " was stored";
  }
}

}  // namespace
}  // namespace ringleader::testing
