// Real PyTorch on devcluster: examples/pytorch/train.py (DDP over Gloo, torch's env:// rendezvous
// from the env ringleader injects) as the trainer of TrainingJobs run by the real operator and
// sidecar, under Debian's PyTorch 1.13 and the project's current PyTorch, plain and under torchrun.
// Every rank is a client of rank 0's sidecar store (spec.communication.trainerStore: Sidecar).
// Skips where a Python cannot import torch (scripts/setup installs both).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/sidecar/app/exposition.h"
#include "tests/support/child_process.h"
#include "tests/support/http_fetch.h"
#include "tests/support/wait_until.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The interpreters train.py runs under: its #! line's (Debian's, which python3-torch installs
// into: PyTorch 1.13) and the project's current PyTorch (scripts/install-torch).
constexpr char kDebianPython[] = "/usr/bin/python3";
std::string VenvPython() { return std::filesystem::absolute(std::string(kTorchVenv) + "/bin/python").string(); }
// The port every job is handed by hand in the comparison, as Kubeflow's PyTorchJob does.
constexpr int kFixedPort = 23456;

// Whether `python` imports torch with Gloo; `why` says what is missing. Checked once per Python.
bool TorchAvailable(const std::string& python, std::string* why) {
  static std::map<std::string, std::string> checked;
  if (!checked.contains(python)) {
    const std::filesystem::path dir = MakeTempDir("ringleader-torch-check");
    ChildOptions child;
    child.binary = python;
    child.args = {"-c", "import torch.distributed as dist; assert dist.is_gloo_available(), 'no Gloo'"};
    child.log = dir / "import.log";
    std::string reason;
    if (!std::filesystem::exists(python)) {
      reason = python + " is missing";
    } else {
      ChildProcess check(child);
      const auto exit = check.WaitFor(std::chrono::minutes(1));
      if (!exit || !exit->exited() || exit->exit_code != 0) {
        // Python's last line names the error (ModuleNotFoundError: No module named 'torch').
        std::string log = ReadLog(child.log);
        while (!log.empty() && log.back() == '\n') {
          log.pop_back();
        }
        reason = python + " cannot import torch with Gloo: " + log.substr(log.rfind('\n') + 1);
      }
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    checked[python] = reason;
  }
  const std::string& missing = checked[python];
  if (!missing.empty()) {
    *why = missing + " (scripts/setup installs python3-torch and .deps/torch-venv)";
  }
  return missing.empty();
}

// A TrainingJob whose trainer is train.py, with a small Gloo preflight; Gloo listens on eth0, as in
// examples/pytorch/trainingjob.yaml (a devcluster Pod's hostname resolves to no address of its own).
struct PyTorchJob {
  std::string name;
  int replicas = 2;
  int steps = 20;
  int step_delay_ms = 0;
  bool host_network = false;
  int backoff_limit = 2;
  int fixed_master_port = 0;  // train.py --master-port: host the store there, as other operators do
  int timeout_seconds = 60;   // train.py --timeout-seconds: joining and each collective
  std::string image = "ringleader/pytorch-example:0.1.0";  // 1.13; tag kTorch2Tag: current PyTorch
  std::string trainer_store = {};  // spec.communication.trainerStore; "" leaves the default (Sidecar)
};

std::string PyTorchJobYaml(const PyTorchJob& job) {
  std::string yaml = "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + job.name +
                     "\n  namespace: default\nspec:\n  replicas: " + std::to_string(job.replicas) + "\n";
  if (job.host_network) {
    yaml += "  networking:\n    hostNetwork: true\n";
  }
  yaml +=
      "  communication:\n    backend: gloo\n    preflight:\n      minBytes: 64Ki\n      maxBytes: 256Ki\n"
      "      stepFactor: 4\n      timeoutSeconds: 60\n    monitor:\n      intervalSeconds: 30\n"
      "      messageBytes: 64Ki\n";
  if (!job.trainer_store.empty()) {
    yaml += "    trainerStore: " + job.trainer_store + "\n";
  }
  yaml += "  runPolicy:\n    backoffLimit: " + std::to_string(job.backoff_limit) + "\n";
  std::string args = "\"--steps\", \"" + std::to_string(job.steps) + "\", \"--step-delay-ms\", \"" +
                     std::to_string(job.step_delay_ms) + "\", \"--timeout-seconds\", \"" +
                     std::to_string(job.timeout_seconds) + "\"";
  if (job.fixed_master_port != 0) {
    args += ", \"--master-port\", \"" + std::to_string(job.fixed_master_port) + "\"";
  }
  yaml +=
      "  template:\n    spec:\n      containers:\n        - name: trainer\n"
      "          image: " + job.image + "\n          args: [" +
      args +
      "]\n          env:\n            - name: GLOO_SOCKET_IFNAME\n              value: eth0\n";
  return yaml;
}

std::string MasterAddr(const std::string& job) { return job + "-0." + job + ".default.svc.cluster.local"; }

// The checksum of train.py's last line ("final steps N checksum C weights ..."), "" if absent.
std::string FinalChecksum(const std::string& log, int steps) {
  std::smatch match;
  const std::regex final_line("final steps " + std::to_string(steps) + " checksum ([0-9a-f]+) weights");
  return std::regex_search(log, match, final_line) ? match[1].str() : "";
}

// The loss rank 0 printed for `step`, or -1 when it did not.
double LossAt(const std::string& log, int step) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("step " + std::to_string(step) + " loss ([0-9.]+)"))) {
    return -1;
  }
  return std::stod(match[1].str());
}

// The trainer container's terminated state in the Pod's status (null when it has not ended).
json TrainerTerminated(const json& pod) {
  for (const json& status : pod.value("status", json::object()).value("containerStatuses", json::array())) {
    if (status.value("name", "") == "trainer") {
      return status.value("state", json::object()).value("terminated", json());
    }
  }
  return nullptr;
}

// The inodes of TCP sockets listening on `port` in process `pid`'s network namespace (its
// /proc/PID/net/tcp and tcp6: "sl local_address rem_address st ... inode", addresses in hex).
std::set<std::string> ListeningSocketInodes(int pid, int port) {
  std::set<std::string> inodes;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeouts, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeouts >> inode;
      const std::size_t colon = local.rfind(':');
      if (state == "0A" && colon != std::string::npos && std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
        inodes.insert(inode);
      }
    }
  }
  return inodes;
}

// The inodes of the sockets process `pid` holds open (its /proc/PID/fd links "socket:[N]").
std::set<std::string> SocketInodes(int pid) {
  std::set<std::string> inodes;
  std::error_code ignored;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ignored)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), ignored).string();
    if (target.starts_with("socket:[") && target.ends_with("]")) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  return inodes;
}

class PyTorchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    if (!TorchAvailable(kDebianPython, &why)) {
      GTEST_SKIP() << why;
    }
    bed_ = std::make_unique<EndToEnd>();
  }

  // Applies `jobs` back to back; a refusal fails the test with kubectl's output.
  void ApplyAll(const std::vector<PyTorchJob>& jobs) {
    for (const PyTorchJob& job : jobs) {
      const CommandOutput applied = bed_->Apply(job.name, PyTorchJobYaml(job));
      ASSERT_EQ(applied.exit_code, 0) << job.name << ": " << applied.output;
    }
  }

  // While `job` trains: the listener on its MASTER_PORT in rank 0's Pod belongs to rank 0's
  // sidecar, no trainer process of the job holds it, and the sidecar's metrics count at least
  // `clients` store clients (every trainer process of the job).
  void ExpectTheSidecarAloneServesTheStore(const std::string& job, int master_port, int metrics_port,
                                           int clients) {
    const std::vector<int> sidecars =
        ProcessesWithEnv({"RINGLEADER_MODE=sidecar", "RINGLEADER_RANK=0", "RINGLEADER_JOB_NAME=" + job});
    ASSERT_EQ(sidecars.size(), 1u) << bed_->Diagnostics();
    const std::set<std::string> listening = ListeningSocketInodes(sidecars[0], master_port);
    ASSERT_EQ(listening.size(), 1u) << "listeners on " << master_port << " in " << job << "-0's network";
    EXPECT_TRUE(SocketInodes(sidecars[0]).contains(*listening.begin())) << "the sidecar does not hold the listener";
    const std::vector<int> trainers = ProcessesWithEnv({"MASTER_ADDR=" + MasterAddr(job)});
    ASSERT_FALSE(trainers.empty());
    for (const int trainer : trainers) {
      EXPECT_FALSE(SocketInodes(trainer).contains(*listening.begin()))
          << "trainer process " << trainer << " holds MASTER_PORT's listener";
    }
    const json pod = bed_->Get("pod", job + "-0");
    const std::string ip = pod["status"].value("podIP", "");
    const auto reply = HttpGet("http://" + ip + ":" + std::to_string(metrics_port) + "/metrics");
    ASSERT_TRUE(reply.has_value() && reply->status == 200) << job << "-0's sidecar /metrics";
    // At least one connection per trainer process (1.13's TCPStore opens a second, for callbacks).
    const std::optional<double> open = SeriesValue(reply->body, "ringleader_sidecar_trainer_store_clients");
    ASSERT_TRUE(open.has_value()) << reply->body;
    EXPECT_GE(*open, clients) << reply->body;
  }

  // A job's trainers all finished and printed the same checksum; their logs joined.
  std::string ExpectAgreeingChecksums(const std::string& job, int replicas, int steps, int per_pod = 1) {
    std::set<std::string> checksums;
    std::string logs;
    for (int rank = 0; rank < replicas; ++rank) {
      const std::string log = bed_->PodLog(job + "-" + std::to_string(rank), "trainer");
      logs += log;
      int finals = 0;
      const std::regex final_line("final steps " + std::to_string(steps) + " checksum ([0-9a-f]+) weights");
      for (std::sregex_iterator it(log.begin(), log.end(), final_line), end; it != end; ++it) {
        checksums.insert((*it)[1].str());
        ++finals;
      }
      EXPECT_EQ(finals, per_pod) << job << " rank " << rank << ":\n" << log;
    }
    EXPECT_EQ(checksums.size(), 1u) << bed_->AllPodLogs();
    return logs;
  }

  std::unique_ptr<EndToEnd> bed_;
};

// The example, as given (PyTorch 1.13), and under current PyTorch: every rank, rank 0 included,
// joins as a client of rank 0's sidecar store; no trainer listens on MASTER_PORT.
TEST_F(PyTorchTest, TheExampleJobTrainsWithDdpAndEveryRankEndsWithTheSameWeights) {
  const CommandOutput applied = bed_->Kubectl({"apply", "-f", "examples/pytorch/trainingjob.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("pytorch-demo", JobFinished, seconds(120));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();

  // torch joined through ringleader's MASTER_ADDR and the job's own MASTER_PORT, as a client.
  const int master_port = job["status"]["ports"]["master"];
  const std::string joining = "joining " + MasterAddr("pytorch-demo") + ":" + std::to_string(master_port) + " (gloo)";
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = bed_->PodLog("pytorch-demo-" + std::to_string(rank), "trainer");
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(rank) + " of 2: " + joining +
                               " local rank 0, store client, attempt 0, torch 1.13"));
  }
  ExpectAgreeingChecksums("pytorch-demo", 2, 20);
  // It trained: rank 0's loss fell.
  const std::string rank0 = bed_->PodLog("pytorch-demo-0", "trainer");
  ASSERT_GT(LossAt(rank0, 1), 0) << rank0;
  EXPECT_LT(LossAt(rank0, 20), LossAt(rank0, 1) / 10) << rank0;
}

TEST_F(PyTorchTest, UnderEitherPyTorchTheRanksMeetInTheSidecarStoreAndNoTrainerListensOnMasterPort) {
  for (const bool current : {false, true}) {
    std::string why;
    if (current && !TorchAvailable(VenvPython(), &why)) {
      GTEST_SKIP() << why;
    }
    const std::string name = current ? "torch-current" : "torch-debian";
    // Long enough (about 6 s of steps) to look at the Pods while it trains.
    PyTorchJob spec{.name = name, .replicas = 3, .steps = 60, .step_delay_ms = 100};
    if (current) {
      spec.image = std::string("ringleader/pytorch-example:") + kTorch2Tag;
    }
    ApplyAll({spec});
    const json running = bed_->WaitForJob(name, JobRunning, seconds(120));
    ASSERT_EQ(JobState(running), "Running") << bed_->Diagnostics();
    WaitUntil([&] { return LossAt(bed_->PodLog(name + "-0", "trainer"), 5) >= 0; }, seconds(60),
              std::chrono::milliseconds(100));
    ASSERT_GE(LossAt(bed_->PodLog(name + "-0", "trainer"), 5), 0) << bed_->Diagnostics();
    ExpectTheSidecarAloneServesTheStore(name, running["status"]["ports"]["master"],
                                        running["status"]["ports"]["metrics"], 3);

    const json job = bed_->WaitForJob(name, JobFinished, seconds(120));
    ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
    const std::string logs = ExpectAgreeingChecksums(name, 3, 60);
    EXPECT_THAT(logs, HasSubstr(current ? "torch 2." : "torch 1.13"));
    EXPECT_EQ(logs.find("store rank 0 hosts"), std::string::npos) << logs;
  }
}

// The seed's case: PyTorch jobs on the host network, two ranks each on the bed's two Nodes, so
// every Node runs a rank of every job and at least two rank 0s (their sidecars serving the jobs'
// stores) share a Node's network while they train. The trainers bind nothing for the rendezvous.
TEST_F(PyTorchTest, HostNetworkJobsEachOnItsOwnMasterPortTrainTogetherWithoutACollision) {
  constexpr int kJobs = 4;
  std::vector<PyTorchJob> jobs;
  for (int i = 0; i < kJobs; ++i) {
    // About 4 s of steps, so the jobs overlap.
    jobs.push_back({.name = "own" + std::to_string(i), .steps = 40, .step_delay_ms = 100, .host_network = true});
  }
  ApplyAll(jobs);

  std::set<int> master_ports;
  struct Rank0 {
    std::string job, node, started, finished;  // the trainer's run, RFC 3339 in UTC
  };
  std::vector<Rank0> rank0s;
  for (const PyTorchJob& spec : jobs) {
    const json job = bed_->WaitForJob(spec.name, JobFinished, seconds(180));
    ASSERT_EQ(JobState(job), "Succeeded") << spec.name << ": " << job.dump(2) << bed_->Diagnostics();
    const int master_port = job["status"]["ports"]["master"];
    EXPECT_TRUE(master_ports.insert(master_port).second) << spec.name << " shares MASTER_PORT " << master_port;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string pod_name = spec.name + "-" + std::to_string(rank);
      const json pod = bed_->Get("pod", pod_name);
      if (rank == 0) {
        const json ended = TrainerTerminated(pod);
        ASSERT_TRUE(ended.is_object()) << pod.dump(2);
        rank0s.push_back({spec.name, pod["spec"].value("nodeName", ""), ended.value("startedAt", ""),
                          ended.value("finishedAt", "")});
      }
      const std::string log = bed_->PodLog(pod_name, "trainer");
      EXPECT_THAT(log, HasSubstr(":" + std::to_string(master_port) + " (gloo) local rank 0, store client"))
          << pod_name;
    }
    ExpectAgreeingChecksums(spec.name, 2, spec.steps);
  }
  // Two rank 0s trained in one Node's network at the same time: each started before the other
  // ended (RFC 3339 in UTC compares as text; whole seconds, so strictly).
  std::string shared;
  for (const Rank0& a : rank0s) {
    for (const Rank0& b : rank0s) {
      if (a.job < b.job && a.node == b.node && a.started < b.finished && b.started < a.finished) {
        shared += a.job + " and " + b.job + " on " + a.node + "; ";
      }
    }
  }
  std::string runs;
  for (const Rank0& r : rank0s) {
    runs += r.job + "-0 on " + r.node + " " + r.started + " to " + r.finished + "\n";
  }
  EXPECT_FALSE(shared.empty()) << "no two rank 0s overlapped on one Node:\n" << runs;
  const std::string logs = bed_->AllPodLogs();
  EXPECT_EQ(logs.find("Address already in use"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("EADDRINUSE"), std::string::npos);
}

// The same jobs handed one fixed port by hand, as other operators do (trainerStore: Trainer, so
// rank 0's trainer hosts the store, on a port kept off the Pod's declared ones, as torchrun's
// default usually is): the second rank 0 on a Node cannot bind it.
TEST_F(PyTorchTest, HostNetworkJobsGivenOneFixedPortCollideWithAddressAlreadyInUse) {
  constexpr int kJobs = 4;
  std::vector<PyTorchJob> jobs;
  for (int i = 0; i < kJobs; ++i) {
    jobs.push_back({.name = "fixed" + std::to_string(i),
                    .steps = 40,
                    .step_delay_ms = 100,
                    .host_network = true,
                    .backoff_limit = 0,
                    .fixed_master_port = kFixedPort,
                    .timeout_seconds = 10,
                    .trainer_store = "Trainer"});
  }
  ApplyAll(jobs);

  int collided = 0;
  std::vector<std::string> outcomes;
  for (const PyTorchJob& spec : jobs) {
    const json job = bed_->WaitForJob(spec.name, JobFinished, seconds(180));
    ASSERT_TRUE(JobFinished(job)) << spec.name << bed_->Diagnostics();
    outcomes.push_back(spec.name + " " + JobState(job));
  }
  // Logs of every attempt: a job that lost the port was failed and its Pods deleted.
  const std::string logs = bed_->AllPodLogs();
  const std::regex lost_bind("rank 0 failed: RuntimeError: The server socket has failed to listen.*:" +
                             std::to_string(kFixedPort) + " \\(errno: 98 - Address already in use\\)");
  for (std::sregex_iterator it(logs.begin(), logs.end(), lost_bind), end; it != end; ++it) {
    ++collided;
  }
  // Four rank 0s on two Nodes: at least two share one, and the later one cannot listen.
  EXPECT_GE(collided, 1) << ::testing::PrintToString(outcomes) << "\n" << logs;
  EXPECT_GE(std::count_if(outcomes.begin(), outcomes.end(),
                          [](const std::string& outcome) { return outcome.ends_with(" Failed"); }),
            collided)
      << ::testing::PrintToString(outcomes);
  std::cout << "fixed port " << kFixedPort << ": " << ::testing::PrintToString(outcomes) << ", " << collided
            << " rank 0(s) got EADDRINUSE\n";
}

// Rank 0's trainer SIGKILLed mid-training: the gang restarts; the new attempt's ranks meet as
// clients under the new attempt's prefix (TORCHELASTIC_RESTART_COUNT=1) in rank 0's sidecar store,
// and no trainer ever binds MASTER_PORT.
TEST_F(PyTorchTest, APyTorchRankZeroKilledMidTrainingRestartsTheGangWhichMeetsAgainInTheSidecarStore) {
  ApplyAll({{.name = "killed", .steps = 60, .step_delay_ms = 50}});
  ASSERT_EQ(JobState(bed_->WaitForJob("killed", JobRunning, seconds(120))), "Running") << bed_->Diagnostics();
  // Mid-training: rank 0 has finished a few DDP steps.
  WaitUntil([&] { return LossAt(bed_->PodLog("killed-0", "trainer"), 5) >= 0; }, seconds(60),
            std::chrono::milliseconds(100));
  ASSERT_GE(LossAt(bed_->PodLog("killed-0", "trainer"), 5), 0) << bed_->Diagnostics();
  const std::vector<int> rank0 = ProcessesWithEnv({"RANK=0", "MASTER_ADDR=" + MasterAddr("killed")});
  ASSERT_EQ(rank0.size(), 1u) << bed_->Diagnostics();
  ASSERT_EQ(::kill(rank0[0], SIGKILL), 0);

  const json job = bed_->WaitForJob("killed", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 1) << job.dump(2) << bed_->Diagnostics();
  // The new gang (attempt 1, its Pods named for it) joined under attempt 1's prefix, trained to
  // the end and agrees.
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = bed_->PodLog("killed-" + std::to_string(rank) + "-attempt-1", "trainer");
    EXPECT_THAT(log, HasSubstr("store client, attempt 1")) << log;
  }
  const std::string new_rank0 = FinalChecksum(bed_->PodLog("killed-0-attempt-1", "trainer"), 60);
  EXPECT_FALSE(new_rank0.empty()) << bed_->PodLog("killed-0-attempt-1", "trainer");
  EXPECT_EQ(FinalChecksum(bed_->PodLog("killed-1-attempt-1", "trainer"), 60), new_rank0);
  // The surviving rank saw its peer go (Gloo raised) and exited non-zero on its own; no attempt's
  // trainer ever tried to listen.
  const std::string logs = bed_->AllPodLogs();
  EXPECT_THAT(logs, HasSubstr("train.py: rank 1 failed: RuntimeError")) << bed_->Diagnostics();
  EXPECT_EQ(logs.find("failed to listen"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("store rank 0 hosts"), std::string::npos) << logs;
}

// examples/pytorch/trainingjob-torchrun.yaml: 2 Pods x 2 workers under torchrun, whose agents meet
// through c10d rendezvous in rank 0's sidecar store; every worker gets its own RANK, LOCAL_RANK and
// WORLD_SIZE 4 from torchrun.
TEST_F(PyTorchTest, TheTorchrunExampleFormsItsWorldThroughC10dRendezvousOnTheSidecarStore) {
  std::string why;
  if (!TorchAvailable(VenvPython(), &why)) {
    GTEST_SKIP() << why;
  }
  const CommandOutput applied = bed_->Kubectl({"apply", "-f", "examples/pytorch/trainingjob-torchrun.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("pytorch-torchrun", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  const std::string logs = ExpectAgreeingChecksums("pytorch-torchrun", 2, 20, 2);

  // "rank R of 4: joining ... local rank L, store client": each global rank once, and within a
  // Pod the local ranks 0 and 1 with global ranks of one node (R = node x 2 + L).
  std::set<int> ranks;
  for (int pod = 0; pod < 2; ++pod) {
    const std::string log = bed_->PodLog("pytorch-torchrun-" + std::to_string(pod), "trainer");
    const std::regex worker("rank ([0-9]+) of 4: joining \\S+ \\(gloo\\) local rank ([0-9]+), store client");
    std::set<int> nodes, local_ranks;
    for (std::sregex_iterator it(log.begin(), log.end(), worker), end; it != end; ++it) {
      const int rank = std::stoi((*it)[1].str());
      const int local_rank = std::stoi((*it)[2].str());
      EXPECT_TRUE(ranks.insert(rank).second) << "rank " << rank << " twice:\n" << logs;
      local_ranks.insert(local_rank);
      nodes.insert(rank / 2);
      EXPECT_EQ(rank % 2, local_rank) << log;
    }
    EXPECT_EQ(local_ranks, (std::set<int>{0, 1})) << log;
    EXPECT_EQ(nodes.size(), 1u) << log;
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << logs;
}

}  // namespace
}  // namespace ringleader::testing
