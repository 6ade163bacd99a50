// An elastic TrainingJob (spec.elasticPolicy, docs/elastic.md) on devcluster's real control plane
// with the real operator and sidecar: examples/pytorch/train.py under the project's current
// PyTorch's torchrun, whose agents meet through c10d rendezvous on rank 0's sidecar store. One job
// covers the lifecycle: it trains at 2 Pods, `kubectl scale` adds rank 2 and torchrun re-forms the
// world at 3 Pods, rank 1's trainer is SIGKILLed and its Pod is recreated alone (no gang restart,
// status.elasticRestarts 1), `kubectl scale` back to 2 removes rank 2, and the job succeeds with
// every worker's checksum equal. train.py resumes each re-formed world from the furthest
// checkpoint any Pod holds, so training goes on rather than starting over.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kJob[] = "elastic";
constexpr int kProcesses = 2;  // processesPerReplica: torchrun's workers per Pod
// About 0.4 s a step: the world trains between the scalings, and the last re-form still finds
// steps left (each re-form resumes from a checkpoint at most 5 steps back).
constexpr int kSteps = 70;
constexpr int kStepDelayMs = 400;

// The job of examples/pytorch/trainingjob-elastic.yaml, shorter: min 2, max 4, replicas 2, 2
// workers per Pod under torchrun, each Pod's checkpoints in its own emptyDir.
std::string ElasticJobYaml() {
  return std::string("apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: ") + kJob +
         "\n  namespace: default\nspec:\n  replicas: 2\n  processesPerReplica: " + std::to_string(kProcesses) +
         "\n  elasticPolicy: {minReplicas: 2, maxReplicas: 4, maxRestarts: 3}\n"
         "  communication:\n    backend: gloo\n"
         "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 60}\n"
         "  template:\n    spec:\n      containers:\n        - name: trainer\n"
         "          image: ringleader/pytorch-torchrun-example:0.1.0\n"
         "          args: [\"--steps\", \"" + std::to_string(kSteps) + "\", \"--step-delay-ms\", \"" +
         std::to_string(kStepDelayMs) + "\", \"--checkpoint-every\", \"5\"]\n"
         "          env:\n"
         "            - {name: GLOO_SOCKET_IFNAME, value: eth0}\n"
         "            - {name: TRAIN_CHECKPOINT_DIR, value: /checkpoints}\n"
         "          volumeMounts: [{name: checkpoints, mountPath: /checkpoints}]\n"
         "      volumes: [{name: checkpoints, emptyDir: {}}]\n";
}

std::string PodName(int rank) { return std::string(kJob) + "-" + std::to_string(rank); }

// One worker's "rank R of W: elastic start (restart count C), resuming after step S ..." line.
struct WorkerStart {
  int rank = 0;
  int world = 0;
  int restart = 0;
  int resumed = 0;
  std::size_t end = 0;  // where the line ends in the log searched
};

std::vector<WorkerStart> WorkerStarts(const std::string& log) {
  std::vector<WorkerStart> starts;
  const std::regex line(
      "rank ([0-9]+) of ([0-9]+): elastic start \\(restart count ([0-9]+)\\), resuming after step ([0-9]+)");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    starts.push_back({std::stoi((*it)[1].str()), std::stoi((*it)[2].str()), std::stoi((*it)[3].str()),
                      std::stoi((*it)[4].str()), static_cast<std::size_t>(it->position() + it->length())});
  }
  return starts;
}

// The trainers' logs of the job's current Pods, each from the given offset on (what they printed
// after a moment the test noted), by rank.
struct Logs {
  std::map<int, std::string> text;
  std::string All() const {
    std::string all;
    for (const auto& [rank, log] : text) {
      all += "--- " + PodName(rank) + " ---\n" + log;
    }
    return all;
  }
};

class ElasticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    const std::filesystem::path torchrun = std::filesystem::path(kTorchVenv) / "bin" / "torchrun";
    if (!std::filesystem::exists(torchrun)) {
      GTEST_SKIP() << torchrun << " is missing (scripts/setup installs .deps/torch-venv)";
    }
    bed_ = std::make_unique<EndToEnd>();
  }

  Logs Read(const std::vector<int>& ranks, const std::map<int, std::size_t>& from = {}) {
    Logs logs;
    for (const int rank : ranks) {
      const std::string log = bed_->PodLog(PodName(rank), "trainer");
      const std::size_t offset = from.contains(rank) ? std::min(from.at(rank), log.size()) : 0;
      logs.text[rank] = log.substr(offset);
    }
    return logs;
  }

  std::map<int, std::size_t> LogSizes(const std::vector<int>& ranks) {
    std::map<int, std::size_t> sizes;
    for (const int rank : ranks) {
      sizes[rank] = bed_->PodLog(PodName(rank), "trainer").size();
    }
    return sizes;
  }

  // Waits until the Pods of `ranks` (their logs from `from` on) show a world of `pods` x
  // kProcesses workers, each of its ranks started once per world and each Pod's own workers
  // among them, and its rank 0 has then trained `steps` steps. Returns the step the world resumed
  // after, or -1 on timeout.
  int AwaitWorld(const std::vector<int>& ranks, int pods, const std::map<int, std::size_t>& from,
                 seconds timeout, int steps = 3) {
    const int world = pods * kProcesses;
    int resumed = -1;
    const bool formed = WaitUntil(
        [&] {
          const Logs logs = Read(ranks, from);
          std::set<int> workers;
          int resumed_after = -1;
          std::size_t rank0_end = std::string::npos;
          int rank0_pod = -1;
          for (const auto& [pod, log] : logs.text) {
            int own = 0;
            for (const WorkerStart& start : WorkerStarts(log)) {
              if (start.world != world) {
                continue;
              }
              workers.insert(start.rank);
              ++own;
              resumed_after = std::max(resumed_after, start.resumed);
              if (start.rank == 0) {
                rank0_end = start.end;
                rank0_pod = pod;
              }
            }
            if (own < kProcesses) {
              return false;
            }
          }
          if (static_cast<int>(workers.size()) != world || rank0_pod < 0) {
            return false;
          }
          // Rank 0 prints every step it trained; count those after its start line.
          const std::string& log = logs.text.at(rank0_pod);
          const std::regex step("\nstep ([0-9]+) loss");
          int trained = 0;
          for (std::sregex_iterator it(log.begin() + static_cast<std::ptrdiff_t>(rank0_end), log.end(), step), end;
               it != end; ++it) {
            ++trained;
          }
          resumed = resumed_after;
          return trained >= steps;
        },
        timeout, std::chrono::milliseconds(1000));
    return formed ? resumed : -1;
  }

  std::string Uid(const std::string& pod) {
    const json object = bed_->Get("pod", pod);
    return object.is_object() ? object["metadata"].value("uid", "") : "";
  }

  std::unique_ptr<EndToEnd> bed_;
};

TEST_F(ElasticTest, ScaledUpKilledAndScaledDownTheWorldReformsWithoutAGangRestartAndTheJobSucceeds) {
  using Clock = std::chrono::steady_clock;
  const auto began = Clock::now();
  const auto since = [&] { return std::chrono::duration_cast<seconds>(Clock::now() - began).count(); };
  const CommandOutput applied = bed_->Apply(kJob, ElasticJobYaml());
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_EQ(JobState(bed_->WaitForJob(kJob, JobRunning, seconds(120))), "Running") << bed_->Diagnostics();

  // 2 Pods x 2 workers train.
  const int first = AwaitWorld({0, 1}, 2, {}, seconds(90));
  ASSERT_EQ(first, 0) << Read({0, 1}).All() << bed_->Diagnostics();
  const std::string rank0_uid = Uid(PodName(0));
  const std::string rank1_uid = Uid(PodName(1));
  std::cout << "+" << since() << " s: a world of 2 Pods x " << kProcesses << " trains\n";

  // kubectl scale adds rank 2; within a minute every worker reports a world of 3 Pods and trains on.
  std::map<int, std::size_t> from = LogSizes({0, 1});
  const auto scaled_up = Clock::now();
  const CommandOutput up = bed_->Kubectl({"scale", std::string("trainingjob/") + kJob, "--replicas", "3"});
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const int after_up = AwaitWorld({0, 1, 2}, 3, from, seconds(90));
  ASSERT_GE(after_up, 0) << Read({0, 1, 2}, from).All() << bed_->Diagnostics();
  const auto took_up = std::chrono::duration_cast<seconds>(Clock::now() - scaled_up);
  EXPECT_LE(took_up.count(), 60) << "the world of 3 Pods formed and trained 3 steps " << took_up.count()
                                 << " s after kubectl scale";
  // It resumed from a checkpoint rather than starting over.
  EXPECT_GT(after_up, 0) << Read({0, 1, 2}, from).All();
  std::cout << "+" << since() << " s: scaled to 3, world of 3 Pods " << took_up.count()
            << " s after kubectl scale, resumed after step " << after_up << "\n";
  {
    const json job = bed_->Get("trainingjob", kJob);
    ASSERT_TRUE(job.is_object());
    EXPECT_EQ(job["status"].value("restarts", -1), 0) << job.dump(2);
  }

  // SIGKILL every trainer process of rank 1's Pod (torchrun's agent and its workers, which run in
  // sessions of their own): the Pod is recreated alone and torchrun re-forms the world.
  const json pod1 = bed_->Get("pod", PodName(1));
  ASSERT_TRUE(pod1.is_object());
  const std::string job_uid = bed_->Get("trainingjob", kJob)["metadata"].value("uid", "");
  const std::vector<int> trainers = ProcessesWithEnv(
      {"PET_LOCAL_ADDR=" + pod1["status"].value("podIP", ""), "PET_RDZV_ID=" + job_uid + "-0"});
  ASSERT_GE(trainers.size(), 1u + kProcesses) << "torchrun and its workers in " << PodName(1);
  from = LogSizes({0, 2});
  for (const int pid : trainers) {
    EXPECT_EQ(::kill(pid, SIGKILL), 0) << pid;
  }
  ASSERT_TRUE(WaitUntil([&] { return !Uid(PodName(1)).empty() && Uid(PodName(1)) != rank1_uid; }, seconds(60)))
      << bed_->Diagnostics();
  from[1] = 0;  // the new Pod's log is its own
  const int after_kill = AwaitWorld({0, 1, 2}, 3, from, seconds(120));
  ASSERT_GE(after_kill, 0) << Read({0, 1, 2}, from).All() << bed_->Diagnostics();
  EXPECT_GE(after_kill, after_up) << "the world started over";
  std::cout << "+" << since() << " s: rank 1 recreated, world of 3 Pods again, resumed after step "
            << after_kill << "\n";
  {
    const json job = bed_->Get("trainingjob", kJob);
    ASSERT_TRUE(job.is_object());
    EXPECT_EQ(job["status"].value("restarts", -1), 0) << job.dump(2);
    EXPECT_EQ(job["status"].value("elasticRestarts", 0), 1) << job.dump(2);
  }
  EXPECT_EQ(Uid(PodName(0)), rank0_uid) << "rank 0's Pod was replaced: a gang restart";
  {
    const std::vector<std::string> recreated = JobEventMessages(*bed_, kJob, "PodRecreated");
    ASSERT_EQ(recreated.size(), 1u) << ::testing::PrintToString(recreated);
    EXPECT_THAT(recreated[0], ::testing::HasSubstr("recreating rank 1 alone")) << recreated[0];
  }

  // Scaling back to 2 removes the highest rank; ranks 0 and 1 re-form and go on.
  from = LogSizes({0, 1});
  const CommandOutput down = bed_->Kubectl({"scale", std::string("trainingjob/") + kJob, "--replicas", "2"});
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(WaitUntil([&] { return !bed_->Get("pod", PodName(2)).is_object(); }, seconds(60)))
      << PodName(2) << " is still there" << bed_->Diagnostics();
  const int after_down = AwaitWorld({0, 1}, 2, from, seconds(90));
  ASSERT_GE(after_down, 0) << Read({0, 1}, from).All() << bed_->Diagnostics();
  EXPECT_GE(after_down, after_kill) << "the world started over";
  std::cout << "+" << since() << " s: scaled to 2, world of 2 Pods, resumed after step " << after_down << "\n";
  const std::vector<std::string> scaled_down = JobEventMessages(*bed_, kJob, "ScalingDown");
  ASSERT_EQ(scaled_down.size(), 1u) << ::testing::PrintToString(scaled_down);
  EXPECT_THAT(scaled_down[0], ::testing::HasSubstr("deleting pod " + PodName(2) + " (rank 2)")) << scaled_down[0];

  const json job = bed_->WaitForJob(kJob, JobFinished, seconds(120));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"].value("restarts", -1), 0) << job.dump(2);
  EXPECT_EQ(job["status"].value("elasticRestarts", 0), 1) << job.dump(2);
  EXPECT_EQ(Uid(PodName(0)), rank0_uid);
  // Every worker of both Pods ended with the same weights.
  std::set<std::string> checksums;
  const Logs logs = Read({0, 1});
  const std::regex final_line("final steps " + std::to_string(kSteps) + " checksum ([0-9a-f]+) weights");
  for (const auto& [rank, log] : logs.text) {
    int finals = 0;
    for (std::sregex_iterator it(log.begin(), log.end(), final_line), end; it != end; ++it) {
      checksums.insert((*it)[1].str());
      ++finals;
    }
    EXPECT_EQ(finals, kProcesses) << PodName(rank) << ":\n" << log;
  }
  EXPECT_EQ(checksums.size(), 1u) << logs.All();
  std::cout << "+" << since() << " s: Succeeded, checksum " << (checksums.empty() ? "" : *checksums.begin())
            << "\n";
}

}  // namespace
}  // namespace ringleader::testing
