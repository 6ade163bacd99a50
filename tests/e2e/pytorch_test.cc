// Real PyTorch on devcluster: examples/pytorch/train.py (DDP over Gloo, torch's env:// rendezvous
// from the env ringleader injects) as the trainer of TrainingJobs run by the real operator and
// sidecar. Skips where Debian's Python cannot import torch (scripts/setup installs python3-torch).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The interpreter train.py's #! line names: Debian's, which python3-torch installs into.
constexpr char kPython[] = "/usr/bin/python3";
// The port every job is handed by hand in the comparison, as Kubeflow's PyTorchJob does.
constexpr int kFixedPort = 23456;

// Whether kPython imports torch with Gloo; `why` says what is missing. Checked once per program.
bool TorchAvailable(std::string* why) {
  static const std::string missing = [] {
    const std::filesystem::path dir = MakeTempDir("ringleader-torch-check");
    ChildOptions child;
    child.binary = kPython;
    child.args = {"-c", "import torch.distributed as dist; assert dist.is_gloo_available(), 'no Gloo'"};
    child.log = dir / "import.log";
    std::string reason;
    if (!std::filesystem::exists(kPython)) {
      reason = std::string(kPython) + " is missing";
    } else {
      ChildProcess check(child);
      const auto exit = check.WaitFor(std::chrono::minutes(1));
      if (!exit || !exit->exited() || exit->exit_code != 0) {
        // Python's last line names the error (ModuleNotFoundError: No module named 'torch').
        std::string log = ReadLog(child.log);
        while (!log.empty() && log.back() == '\n') {
          log.pop_back();
        }
        reason = std::string(kPython) + " cannot import torch with Gloo: " + log.substr(log.rfind('\n') + 1);
      }
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return reason;
  }();
  if (!missing.empty()) {
    *why = missing + " (scripts/setup installs python3-torch)";
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
  int fixed_master_port = 0;  // train.py --master-port: listen there instead of on MASTER_PORT
  int timeout_seconds = 60;   // train.py --timeout-seconds: joining and each collective
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
  yaml += "  runPolicy:\n    backoffLimit: " + std::to_string(job.backoff_limit) + "\n";
  std::string args = "\"--steps\", \"" + std::to_string(job.steps) + "\", \"--step-delay-ms\", \"" +
                     std::to_string(job.step_delay_ms) + "\", \"--timeout-seconds\", \"" +
                     std::to_string(job.timeout_seconds) + "\"";
  if (job.fixed_master_port != 0) {
    args += ", \"--master-port\", \"" + std::to_string(job.fixed_master_port) + "\"";
  }
  yaml +=
      "  template:\n    spec:\n      containers:\n        - name: trainer\n"
      "          image: ringleader/pytorch-example:0.1.0\n          args: [" +
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

class PyTorchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    if (!TorchAvailable(&why)) {
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

  std::unique_ptr<EndToEnd> bed_;
};

TEST_F(PyTorchTest, TheExampleJobTrainsWithDdpAndEveryRankEndsWithTheSameWeights) {
  const CommandOutput applied = bed_->Kubectl({"apply", "-f", "examples/pytorch/trainingjob.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("pytorch-demo", JobFinished, seconds(120));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();

  // torch joined through ringleader's MASTER_ADDR and the job's own MASTER_PORT.
  const int master_port = job["status"]["ports"]["master"];
  const std::string joining = "joining " + MasterAddr("pytorch-demo") + ":" + std::to_string(master_port) + " (gloo)";
  std::set<std::string> checksums;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = bed_->PodLog("pytorch-demo-" + std::to_string(rank), "trainer");
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(rank) + " of 2: " + joining));
    const std::string checksum = FinalChecksum(log, 20);
    ASSERT_FALSE(checksum.empty()) << "rank " << rank << ":\n" << log;
    checksums.insert(checksum);
  }
  EXPECT_EQ(checksums.size(), 1u) << bed_->AllPodLogs();
  // It trained: rank 0's loss fell.
  const std::string rank0 = bed_->PodLog("pytorch-demo-0", "trainer");
  ASSERT_GT(LossAt(rank0, 1), 0) << rank0;
  EXPECT_LT(LossAt(rank0, 20), LossAt(rank0, 1) / 10) << rank0;
}

// The seed's case: PyTorch jobs on the host network, two ranks each on the bed's two Nodes, so
// every Node runs a rank of every job and at least two rank 0s (TCPStore servers) share a Node's
// network while they train.
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
    std::set<std::string> checksums;
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
      EXPECT_THAT(log, HasSubstr(":" + std::to_string(master_port) + " (gloo)")) << pod_name;
      checksums.insert(FinalChecksum(log, spec.steps));
    }
    EXPECT_EQ(checksums.size(), 1u) << spec.name;
    EXPECT_EQ(checksums.count(""), 0u) << spec.name << bed_->AllPodLogs();
  }
  // Two rank 0s listened in one Node's network at the same time: each started before the other
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

// The same jobs handed one fixed port by hand, as other operators do (kept off the Pod's declared
// ports here, as torchrun's default usually is): the second rank 0 on a Node cannot bind it.
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
                    .timeout_seconds = 10});
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

TEST_F(PyTorchTest, APyTorchRankKilledMidTrainingRestartsTheGangWhichThenSucceeds) {
  ApplyAll({{.name = "killed", .steps = 60, .step_delay_ms = 50}});
  ASSERT_EQ(JobState(bed_->WaitForJob("killed", JobRunning, seconds(120))), "Running") << bed_->Diagnostics();
  // Mid-training: rank 0 has finished a few DDP steps.
  WaitUntil([&] { return LossAt(bed_->PodLog("killed-0", "trainer"), 5) >= 0; }, seconds(60),
            std::chrono::milliseconds(100));
  ASSERT_GE(LossAt(bed_->PodLog("killed-0", "trainer"), 5), 0) << bed_->Diagnostics();
  const std::vector<int> rank1 = ProcessesWithEnv({"RANK=1", "MASTER_ADDR=" + MasterAddr("killed")});
  ASSERT_EQ(rank1.size(), 1u) << bed_->Diagnostics();
  ASSERT_EQ(::kill(rank1[0], SIGKILL), 0);

  const json job = bed_->WaitForJob("killed", JobFinished, seconds(180));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 1) << job.dump(2) << bed_->Diagnostics();
  // The new gang (attempt 1, its Pods named for it) trained to the end and agrees.
  const std::string rank0 = FinalChecksum(bed_->PodLog("killed-0-attempt-1", "trainer"), 60);
  EXPECT_FALSE(rank0.empty()) << bed_->PodLog("killed-0-attempt-1", "trainer");
  EXPECT_EQ(FinalChecksum(bed_->PodLog("killed-1-attempt-1", "trainer"), 60), rank0);
  // The surviving rank saw its peer go (Gloo raised) and exited non-zero on its own.
  EXPECT_THAT(bed_->AllPodLogs(), HasSubstr("train.py: rank 0 failed: RuntimeError")) << bed_->Diagnostics();
}

}  // namespace
}  // namespace ringleader::testing
