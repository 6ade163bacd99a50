// spec.runPolicy.successPolicy RankZero through the real kubectl, operator, sidecars and example
// trainer on devcluster: the other ranks linger after training, as workers that never learn the
// run is over, and the job still succeeds once rank 0's trainer exits 0, their Pods stopped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

// Three ranks of the example trainer; every rank but 0 waits `linger_seconds` after its last step.
std::string RankZeroJobYaml(const std::string& name, int linger_seconds) {
  return "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + name +
         "\n  namespace: default\nspec:\n  replicas: 3\n"
         "  communication:\n    backend: gloo\n"
         "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 60}\n"
         "    monitor: {intervalSeconds: 5, messageBytes: 64Ki}\n"
         "  runPolicy:\n    backoffLimit: 2\n    successPolicy: RankZero\n"
         "  template:\n    spec:\n      containers:\n        - name: trainer\n"
         "          image: ringleader/example-trainer:0.1.0\n"
         "          args: [\"--steps\", \"10\", \"--step-delay-ms\", \"50\", "
         "\"--linger-after-training-seconds\", \"" + std::to_string(linger_seconds) + "\"]\n";
}

class SuccessPolicyEndToEndTest : public BedTest {};

TEST_F(SuccessPolicyEndToEndTest, RankZeroSucceedingEndsTheJobAndStopsTheLingeringRanks) {
  // The other ranks would linger far past every wait below: only the operator can end them.
  const CommandOutput applied = bed_->Apply("leader", RankZeroJobYaml("leader", 600));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("leader", JobFinished, seconds(90));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  const json* succeeded = FindJobCondition(job, "Succeeded");
  ASSERT_NE(succeeded, nullptr);
  EXPECT_EQ(succeeded->value("reason", ""), "RankZeroSucceeded");
  EXPECT_THAT(succeeded->value("message", ""), HasSubstr("rank 0's trainers succeeded (pod leader-0, attempt 0)"));
  EXPECT_EQ(job["status"]["restarts"], 0);
  EXPECT_TRUE(job["status"].contains("completionTime")) << job.dump(2);

  // The lingering ranks' Pods are deleted; rank 0's finishes by itself, and then the ports go back.
  const bool others_gone = WaitUntil(
      [&] { return bed_->Get("pod", "leader-1").is_null() && bed_->Get("pod", "leader-2").is_null(); },
      seconds(60));
  EXPECT_TRUE(others_gone) << bed_->Diagnostics();
  const json released = bed_->WaitForJob(
      "leader", [](const json& j) { return j.value("status", json::object()).value("portsReleased", false); },
      seconds(60));
  ASSERT_TRUE(released.is_object()) << bed_->Get("trainingjob", "leader").dump(2) << bed_->Diagnostics();
  EXPECT_EQ(JobState(released), "Succeeded");
  ASSERT_NE(FindJobCondition(released, "Succeeded"), nullptr);
  EXPECT_EQ(FindJobCondition(released, "Succeeded")->value("reason", ""), "RankZeroSucceeded");
  EXPECT_EQ(FindJobCondition(released, "Failed"), nullptr) << released.dump(2);
  EXPECT_EQ(released["status"]["restarts"], 0);
  const json rank_zero = bed_->Get("pod", "leader-0");
  ASSERT_TRUE(rank_zero.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(rank_zero["status"].value("phase", ""), "Succeeded");

  const std::vector<std::string> events = JobEventMessages(*bed_, "leader", "RankZeroSucceeded");
  ASSERT_EQ(events.size(), 1u) << bed_->Diagnostics();
  EXPECT_THAT(events[0], HasSubstr("stopping 2 of the other 2 pods, still running"));
  EXPECT_TRUE(JobEventMessages(*bed_, "leader", "Restarting").empty());
  // The other ranks had finished training and were lingering when they were stopped.
  EXPECT_THAT(bed_->AllPodLogs(), HasSubstr("training done; lingering 600 s"));
}

}  // namespace
}  // namespace ringleader::testing
