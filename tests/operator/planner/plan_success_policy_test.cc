// Planner tests of spec.runPolicy.successPolicy: RankZero makes the job Succeeded once rank 0's
// trainers of the current attempt exited 0, stops the other ranks, and takes no later failure of
// theirs for the job's; before that, failures restart as with AllRanks, which is unchanged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "operator/planner/plan.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::At;
using testing::FakeCluster;
using testing::FindCondition;
using testing::MinimalJob;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json JobWithSuccessPolicy(int replicas, const std::string& policy, json failure_policy = json::object()) {
  json job = MinimalJob("demo", replicas);
  job["spec"]["runPolicy"] = {{"successPolicy", policy}, {"failurePolicy", std::move(failure_policy)}};
  if (!job["spec"]["runPolicy"]["failurePolicy"].contains("restartBackoff")) {
    job["spec"]["runPolicy"]["failurePolicy"]["restartBackoff"] = {{"initialSeconds", 0}};
  }
  return job;
}

// The Pod's trainer exited 0 while its native sidecar still runs: the Pod stays Running.
void FinishTrainers(FakeCluster& cluster, const std::string& pod) {
  cluster.pod(pod)["status"]["containerStatuses"] = json::array(
      {{{"name", "trainer"}, {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}});
}

TEST(SuccessPolicyTest, RankZeroSucceedsWhenRankZerosTrainersExitZeroAndStopsTheOtherRanks) {
  FakeCluster cluster(JobWithSuccessPolicy(3, "RankZero"));
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-0");
  cluster.ReconcileUntilStable(At(30));

  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason("Succeeded"), "RankZeroSucceeded");
  EXPECT_EQ(cluster.ConditionReason("Running"), "RankZeroSucceeded");
  EXPECT_EQ(cluster.ConditionReason("PreflightPassed"), "PreflightPassed");
  EXPECT_EQ(cluster.status()["completionTime"], api::FormatTime(At(30)));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  // Rank 0 finishes by itself, its logs kept; the others were still training and are stopped.
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0"));
  const std::vector<std::string> events = cluster.EventMessages("RankZeroSucceeded");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0], HasSubstr("rank 0's trainers succeeded (pod demo-0, attempt 0)"));
  EXPECT_THAT(events[0], HasSubstr("stopping 2 of the other 2 pods, still running"));
  EXPECT_FALSE(cluster.status().contains("portsReleased")) << "rank 0's sidecar still holds the ports";

  cluster.SetPhase("demo-0", "Succeeded");
  cluster.ReconcileUntilStable(At(31));
  EXPECT_EQ(cluster.status()["portsReleased"], true);
  EXPECT_FALSE(cluster.ledger().Find("job-uid-1").has_value());
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
}

// Regression guard: once rank 0 is done its peers lose their rendezvous and fail; that failure
// must neither fail the job nor restart the gang.
TEST(SuccessPolicyTest, OtherRanksFailingAfterRankZeroSucceededChangeNothing) {
  FakeCluster cluster(JobWithSuccessPolicy(3, "RankZero"));
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-0");
  cluster.ReconcileUntilStable(At(30));
  ASSERT_EQ(cluster.status()["state"], "Succeeded");

  cluster.FailContainer("demo-1", 1, "Error");
  cluster.FailContainer("demo-2", 137, "Error");
  cluster.SetPhase("demo-0", "Succeeded");
  cluster.ReconcileUntilStable(At(35));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason("Succeeded"), "RankZeroSucceeded");
  EXPECT_EQ(FindCondition(cluster.job_json(), "Failed"), nullptr);
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_TRUE(cluster.EventMessages("Restarting").empty());
  EXPECT_TRUE(cluster.EventMessages("Failed").empty());
  EXPECT_EQ(cluster.status()["portsReleased"], true);
}

TEST(SuccessPolicyTest, RankZeroDoneInTheSamePassAsAPeerFailureWinsEvenOverAFailJobRule) {
  const json fail_on_one = {{"rules", json::array({{{"action", "FailJob"},
                                                    {"onExitCodes", {{"operator", "In"}, {"values", {1}}}}}})},
                            {"restartBackoff", {{"initialSeconds", 0}}}};
  FakeCluster cluster(JobWithSuccessPolicy(3, "RankZero", fail_on_one));
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-0");
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(30));

  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason("Succeeded"), "RankZeroSucceeded");
  EXPECT_EQ(FindCondition(cluster.job_json(), "Failed"), nullptr);
  // demo-1 has finished (Failed) and stays; demo-2 was running and is stopped.
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-1"));
  const std::vector<std::string> events = cluster.EventMessages("RankZeroSucceeded");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0], HasSubstr("stopping 1 of the other 2 pods"));
}

TEST(SuccessPolicyTest, BeforeRankZeroSucceedsAFailureRestartsTheGangAsBefore) {
  FakeCluster cluster(JobWithSuccessPolicy(3, "RankZero"));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-2", 1, "Error");
  cluster.ReconcileUntilStable(At(10));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodFailed");

  // Rank 0 of the new attempt decides.
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(20));
  ASSERT_EQ(cluster.status()["state"], "Running");
  FinishTrainers(cluster, cluster.CurrentPod(0));
  cluster.ReconcileUntilStable(At(40));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason("Succeeded"), "RankZeroSucceeded");
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_THAT(cluster.EventMessages("RankZeroSucceeded")[0], HasSubstr("(pod demo-0-attempt-1, attempt 1)"));
}

TEST(SuccessPolicyTest, AnotherRanksTrainersFinishingFirstDecideNothing) {
  FakeCluster cluster(JobWithSuccessPolicy(3, "RankZero"));
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-1");
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.pods().size(), 3u);
  EXPECT_TRUE(cluster.EventMessages("RankZeroSucceeded").empty());
}

TEST(SuccessPolicyTest, AllRanksWaitsForEveryPodAsBefore) {
  FakeCluster cluster(JobWithSuccessPolicy(3, "AllRanks"));
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-0");
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.pods().size(), 3u);

  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(40));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason("Succeeded"), "AllPodsSucceeded");
}

TEST(SuccessPolicyTest, ASingleRankZeroJobSucceedsWithNothingToStop) {
  FakeCluster cluster(JobWithSuccessPolicy(1, "RankZero"));
  cluster.StartRunning(At(0));
  FinishTrainers(cluster, "demo-0");
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  const std::vector<std::string> events = cluster.EventMessages("RankZeroSucceeded");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0], ::testing::Not(HasSubstr("stopping")));
}

}  // namespace
}  // namespace ringleader::planner
