// Stall detection end to end (issue 28) on the real control plane. devcluster has no GPU and so no
// NCCL: the example trainer stands in for NCCL's side of the profiler ABI, starting each Gloo
// all-reduce's event when the rank enters it, as NCCL does at launch. With --stall-at-step one
// rank never enters an all-reduce while the others enter it and wait. Everything after that is
// real: the plugin in each trainer, its snapshots, every sidecar's report, rank 0's verdict in
// /summary and ringleader_training_stalled, the operator's Stalled condition and Event, and with
// onStall Restart the gang restart. A job whose ranks all idle between collectives for three
// times stallSeconds is never called stalled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/http_fetch.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kStallSeconds = 10;

struct StallJob {
  std::string name;
  int replicas = 4;
  int steps = 12;
  int step_delay_ms = 100;
  std::string on_stall = "Report";
  std::vector<std::string> trainer_args = {};  // after the steps, the delay and a long Gloo timeout
};

// The example trainer with stallSeconds 10; the trainer learns its attempt from its Pod's label.
// Its Gloo timeout (600 s) outlasts every wait here, so the ranks waiting for a stalled one wait
// instead of failing.
std::string StallJobYaml(const StallJob& job) {
  std::string args = "\"--steps\", \"" + std::to_string(job.steps) + "\", \"--step-delay-ms\", \"" +
                     std::to_string(job.step_delay_ms) + "\", \"--timeout-seconds\", \"600\"";
  for (const std::string& arg : job.trainer_args) {
    args += ", \"" + arg + "\"";
  }
  return "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + job.name +
         "\n  namespace: default\nspec:\n  replicas: " + std::to_string(job.replicas) + "\n"
         "  communication:\n    backend: gloo\n"
         "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 60}\n"
         "    monitor: {intervalSeconds: 5, messageBytes: 64Ki}\n"
         "    telemetry: {stallSeconds: " + std::to_string(kStallSeconds) + ", onStall: " + job.on_stall + "}\n"
         "  runPolicy:\n    backoffLimit: 2\n"
         "    failurePolicy: {restartBackoff: {initialSeconds: 1, maxSeconds: 10}}\n"
         "  template:\n    spec:\n      containers:\n        - name: trainer\n"
         "          image: ringleader/example-trainer:0.1.0\n"
         "          env:\n            - name: ATTEMPT\n"
         "              valueFrom: {fieldRef: {fieldPath: \"metadata.labels['ringleader.dev/attempt']\"}}\n"
         "          args: [" + args + "]\n";
}

// Rank 2 stops before step 5's all-reduce; `first_attempt_only` narrows that to attempt 0.
std::vector<std::string> RankTwoStallsAtStepFive(bool first_attempt_only) {
  std::vector<std::string> args = {"--stall-at-step", "5", "--stall-rank", "2"};
  if (first_attempt_only) {
    args.insert(args.end(), {"--stall-attempt", "0", "--attempt", "$(ATTEMPT)"});
  }
  return args;
}

// When rank 2's trainer said it stopped (its log line), polled every 200 ms; nullopt on timeout.
std::optional<Clock::time_point> WaitForTheStallToBegin(EndToEnd& bed, seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (bed.AllPodLogs().find("rank 2 of ") != std::string::npos &&
        bed.AllPodLogs().find("stalling at step 5") != std::string::npos) {
      return Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return std::nullopt;
}

// GET path from rank 0's sidecar of the job's current attempt ("" when it cannot be reached).
std::string FromRankZeroSidecar(EndToEnd& bed, const json& job, const std::string& pod, const std::string& path) {
  const json got = bed.Get("pod", pod);
  const std::string ip = got.is_object() ? got.value("status", json::object()).value("podIP", "") : "";
  const int port = job.value("status", json::object()).value("ports", json::object()).value("metrics", 0);
  if (ip.empty() || port == 0) {
    return "";
  }
  const auto reply = HttpGet("http://" + ip + ":" + std::to_string(port) + path);
  return reply && reply->status == 200 ? reply->body : "";
}

// The value of ringleader_training_stalled{rank="0"} in a /metrics body; -1 when absent.
double StalledGauge(const std::string& metrics) {
  const std::string series = "ringleader_training_stalled{rank=\"0\"} ";
  const std::size_t at = metrics.find(series);
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + series.size()));
}

// A fresh bed per TEST whose operator reads rank 0's /summary every 3 s (the default, 60 s, would
// outlast the stall tests' deadlines; a cluster sets --summary-interval the same way).
class StalledJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    bed_ = std::make_unique<EndToEnd>(std::function<void(devcluster::Options&)>{}, EndToEnd::Operator::kLater);
    bed_->StartOperatorWith({"--summary-interval", "3"});
  }

  std::unique_ptr<EndToEnd> bed_;
};

TEST_F(StalledJobTest, ARankThatNeverEntersStepFivesAllReduceIsNamedWithinStallSecondsPlus30) {
  const CommandOutput applied = bed_->Apply(
      "stalled", StallJobYaml({.name = "stalled", .trainer_args = RankTwoStallsAtStepFive(false)}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const std::optional<Clock::time_point> began = WaitForTheStallToBegin(*bed_, seconds(120));
  ASSERT_TRUE(began.has_value()) << bed_->Diagnostics();

  const json job = bed_->WaitForJob("stalled", [](const json& seen) { return JobConditionIs(seen, "Stalled", "True"); },
                                    seconds(kStallSeconds + 30));
  const double named_after = std::chrono::duration<double>(Clock::now() - *began).count();
  ASSERT_TRUE(JobConditionIs(job, "Stalled", "True")) << job.dump(2) << bed_->Diagnostics();
  std::printf("stall named %.1f s after rank 2 stopped (stallSeconds %d)\n", named_after, kStallSeconds);
  const json* stalled = FindJobCondition(job, "Stalled");
  EXPECT_EQ(stalled->value("reason", ""), "CollectiveStalled");
  const std::string message = stalled->value("message", "");
  // Rank 2 never entered the fifth all-reduce (the gradient all-reduce of step 5, 10 floats);
  // ranks 0, 1 and 3 did and wait in it.
  EXPECT_THAT(message, StartsWith("rank 2 (pod stalled-2) never entered all_reduce #5 (40 bytes) on communicator 0x"));
  EXPECT_THAT(message, HasSubstr(": 3 ranks entered it and have waited "));
  EXPECT_EQ(JobState(job), "Running") << "onStall Report keeps the job running";
  EXPECT_EQ(job["status"].value("restarts", -1), 0);

  // The Event says the same, once.
  std::vector<std::string> events;
  const auto until = Clock::now() + seconds(10);
  while (events.empty() && Clock::now() < until) {
    events = JobEventMessages(*bed_, "stalled", "CollectiveStalled");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(events, std::vector<std::string>{message});

  // Rank 0's sidecar agrees: its gauge is 1 and its /summary names the same rank, Pod, op and
  // sequence number.
  EXPECT_EQ(StalledGauge(FromRankZeroSidecar(*bed_, job, "stalled-0", "/metrics")), 1.0);
  const json summary = json::parse(FromRankZeroSidecar(*bed_, job, "stalled-0", "/summary"), nullptr, false);
  ASSERT_TRUE(summary.is_object() && summary.contains("stall")) << summary.dump();
  const json& stall = summary["stall"];
  EXPECT_EQ(stall["collective"], "all_reduce");
  EXPECT_EQ(stall["sequence"], 5);
  EXPECT_EQ(stall["bytes"], 40);
  EXPECT_EQ(stall["missingRanks"], json::array({2}));
  EXPECT_EQ(stall["missingPods"], json::array({2}));
  EXPECT_EQ(stall["waitingRanks"], 3);
  EXPECT_EQ(stall["attempt"], 0);
  EXPECT_GE(stall["waitedSeconds"].get<int>(), kStallSeconds);
  EXPECT_THAT(message, HasSubstr(stall["communicator"].get<std::string>()));
  // Only rank 0's sidecar has the gauge.
  EXPECT_EQ(StalledGauge(FromRankZeroSidecar(*bed_, job, "stalled-1", "/metrics")), -1);
}

TEST_F(StalledJobTest, OnStallRestartRestartsTheGangCountedAndTheNextAttemptSucceeds) {
  const CommandOutput applied =
      bed_->Apply("restarted", StallJobYaml({.name = "restarted",
                                             .replicas = 3,
                                             .on_stall = "Restart",
                                             .trainer_args = RankTwoStallsAtStepFive(true)}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const std::optional<Clock::time_point> began = WaitForTheStallToBegin(*bed_, seconds(120));
  ASSERT_TRUE(began.has_value()) << bed_->Diagnostics();
  const json restarting = bed_->WaitForJob(
      "restarted", [](const json& seen) { return seen.value("status", json::object()).value("restarts", 0) >= 1; },
      seconds(kStallSeconds + 30));
  ASSERT_TRUE(restarting.is_object()) << bed_->Diagnostics();
  std::printf("gang restarted %.1f s after rank 2 stopped (stallSeconds %d)\n",
              std::chrono::duration<double>(Clock::now() - *began).count(), kStallSeconds);
  EXPECT_EQ(restarting["status"]["countedRestarts"], 1);

  const json done = bed_->WaitForJob("restarted", JobFinished, seconds(120));
  ASSERT_EQ(JobState(done), "Succeeded") << done.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(done["status"]["restarts"], 1);
  EXPECT_EQ(done["status"]["countedRestarts"], 1);
  const std::vector<std::string> stalls = JobEventMessages(*bed_, "restarted", "CollectiveStalled");
  ASSERT_EQ(stalls.size(), 1u) << bed_->Diagnostics();
  EXPECT_THAT(stalls[0], StartsWith("rank 2 (pod restarted-2) never entered all_reduce #5 (40 bytes)"));
  const std::vector<std::string> restarts = JobEventMessages(*bed_, "restarted", "Restarting");
  ASSERT_EQ(restarts.size(), 1u) << bed_->Diagnostics();
  EXPECT_THAT(restarts[0], StartsWith("CollectiveStalled: " + stalls[0]));
  EXPECT_THAT(restarts[0], HasSubstr("(spec.communication.telemetry.onStall is Restart); restarting all 3 pods"));
  EXPECT_THAT(restarts[0], HasSubstr("restart 1 of 2"));
  const json* stalled = FindJobCondition(done, "Stalled");
  ASSERT_NE(stalled, nullptr) << done.dump(2);
  EXPECT_EQ(stalled->value("status", ""), "False");
}

TEST_F(StalledJobTest, RanksIdleBetweenCollectivesForThreeTimesStallSecondsAreNotStalled) {
  // Two steps, each all-reduce followed by 30 s (3 x stallSeconds) of sleep on every rank.
  const CommandOutput applied = bed_->Apply(
      "idle", StallJobYaml({.name = "idle", .replicas = 3, .steps = 2, .step_delay_ms = 3 * kStallSeconds * 1000}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  bool reported = false;  // rank 0 compared every rank's progress at least once
  double gauge = -1;
  const json done = bed_->WaitForJob(
      "idle",
      [&](const json& seen) {
        EXPECT_FALSE(JobConditionIs(seen, "Stalled", "True")) << seen.dump(2);
        if (JobState(seen) == "Running") {
          const json summary = json::parse(FromRankZeroSidecar(*bed_, seen, "idle-0", "/summary"), nullptr, false);
          if (summary.is_object()) {
            EXPECT_FALSE(summary.contains("stall")) << summary.dump();
            reported = reported || summary.value("training", json::object()).value("ranksReporting", 0) == 3;
          }
          if (const std::string metrics = FromRankZeroSidecar(*bed_, seen, "idle-0", "/metrics"); !metrics.empty()) {
            gauge = StalledGauge(metrics);
            EXPECT_EQ(gauge, 0.0);
          }
        }
        return JobFinished(seen);
      },
      seconds(180));
  ASSERT_EQ(JobState(done), "Succeeded") << done.dump(2) << bed_->Diagnostics();
  EXPECT_TRUE(reported) << "rank 0 never compared all three ranks, so this proves nothing";
  EXPECT_EQ(gauge, 0.0) << "rank 0's gauge was never read";
  EXPECT_EQ(FindJobCondition(done, "Stalled"), nullptr) << done.dump(2);
  EXPECT_TRUE(JobEventMessages(*bed_, "idle", "CollectiveStalled").empty());
}

}  // namespace
}  // namespace ringleader::testing
