// Planner tests of stall detection: the rank-0 sidecar's stall (observed.summary's stall) becomes
// the Stalled condition and one Warning Event per stall with the same words, clears when the
// missing ranks catch up, is ignored when it belongs to an earlier attempt, and with
// spec.communication.telemetry.onStall Restart restarts the gang, counted against backoffLimit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
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
using ::testing::HasSubstr;

// Rank 2 never entered all_reduce #18342 of 64 MiB; three ranks have waited `waited` seconds.
contract::StallSummary RankTwoStalled(std::int64_t waited = 95, int attempt = 0) {
  contract::StallSummary stall;
  stall.collective = "all_reduce";
  stall.bytes = 67108864;
  stall.sequence = 18342;
  stall.communicator = "0x9f3c5a00000000e1";
  stall.missing_ranks = {2};
  stall.missing_rank_count = 1;
  stall.missing_pods = {2};
  stall.waiting_ranks = 3;
  stall.waited_seconds = waited;
  stall.attempt = attempt;
  return stall;
}

api::CommunicationStatus Summary(std::optional<contract::StallSummary> stall) {
  api::CommunicationStatus summary;
  summary.backend = "gloo";
  summary.preflight = "Passed";
  summary.stall = std::move(stall);
  return summary;
}

json JobOnStall(const std::string& on_stall, int backoff_limit = 3) {
  json job = MinimalJob("demo", 4);
  job["spec"]["communication"]["telemetry"] = {{"onStall", on_stall}};
  job["spec"]["runPolicy"] = {{"backoffLimit", backoff_limit},
                              {"failurePolicy", {{"restartBackoff", {{"initialSeconds", 0}}}}}};
  return job;
}

constexpr const char* kMessage =
    "rank 2 (pod demo-2) never entered all_reduce #18342 (67108864 bytes) on communicator "
    "0x9f3c5a00000000e1: 3 ranks entered it and have waited 95 s";

TEST(PlanStallTest, TheStalledConditionAndOneEventNameTheRankPodCollectiveSequenceSizeAndCommunicator) {
  FakeCluster cluster(JobOnStall("Report"));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled()));
  cluster.ReconcileUntilStable(At(10));
  const json* stalled = FindCondition(cluster.job_json(), "Stalled");
  ASSERT_NE(stalled, nullptr) << cluster.status().dump(2);
  EXPECT_EQ((*stalled)["status"], "True");
  EXPECT_EQ((*stalled)["reason"], "CollectiveStalled");
  EXPECT_EQ((*stalled)["message"], kMessage);
  EXPECT_EQ(cluster.EventMessages("CollectiveStalled"), std::vector<std::string>{kMessage});
  // Report only: the gang runs on.
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(cluster.pods().size(), 4u);
  // The stall is the condition's to tell, not status.communication's.
  EXPECT_FALSE(cluster.status()["communication"].contains("stall")) << cluster.status().dump(2);

  // Later reads of the same stall (a longer wait) change nothing: no Event, no status write.
  cluster.set_summary(Summary(RankTwoStalled(155)));
  EXPECT_TRUE(cluster.Reconcile(At(70)).empty());
  EXPECT_EQ(cluster.ConditionMessage("Stalled"), kMessage);
  EXPECT_EQ(cluster.EventMessages("CollectiveStalled").size(), 1u);
}

TEST(PlanStallTest, TheConditionClearsWhenTheMissingRanksCatchUpAndANewStallIsAnnouncedAgain) {
  FakeCluster cluster(JobOnStall("Report"));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled()));
  cluster.ReconcileUntilStable(At(10));
  cluster.set_summary(Summary(std::nullopt));
  cluster.ReconcileUntilStable(At(20));
  const json* stalled = FindCondition(cluster.job_json(), "Stalled");
  ASSERT_NE(stalled, nullptr);
  EXPECT_EQ((*stalled)["status"], "False");
  EXPECT_EQ((*stalled)["reason"], "StallEnded");
  EXPECT_EQ((*stalled)["lastTransitionTime"], "2026-01-01T00:00:20Z") << cluster.status().dump(2);

  // The next collective stalls: another condition message, another Event.
  contract::StallSummary next = RankTwoStalled(30);
  next.sequence = 18400;
  next.missing_ranks = {0, 1};
  next.missing_rank_count = 2;
  next.missing_pods = {0, 1};
  next.waiting_ranks = 2;
  cluster.set_summary(Summary(next));
  cluster.ReconcileUntilStable(At(100));
  const std::string second =
      "ranks 0, 1 (pods demo-0, demo-1) never entered all_reduce #18400 (67108864 bytes) on communicator "
      "0x9f3c5a00000000e1: 2 ranks entered it and have waited 30 s";
  EXPECT_EQ(cluster.ConditionMessage("Stalled"), second);
  EXPECT_EQ(cluster.EventMessages("CollectiveStalled"), (std::vector<std::string>{kMessage, second}));
}

TEST(PlanStallTest, AnUnknownOpAndUnlistedRanksAreSaidSo) {
  FakeCluster cluster(JobOnStall("Report"));
  cluster.StartRunning(At(0));
  contract::StallSummary stall = RankTwoStalled(12);
  stall.collective.reset();
  stall.bytes.reset();
  stall.missing_rank_count = 3;
  stall.waiting_ranks = 1;
  cluster.set_summary(Summary(stall));
  cluster.ReconcileUntilStable(At(10));
  EXPECT_EQ(cluster.ConditionMessage("Stalled"),
            "ranks 2 and 2 more (pod demo-2) never entered collective #18342 on communicator "
            "0x9f3c5a00000000e1: 1 rank entered it and has waited 12 s");
}

TEST(PlanStallTest, AStallOfAnotherAttemptIsIgnored) {
  FakeCluster cluster(JobOnStall("Restart"));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled(95, /*attempt=*/1)));
  cluster.ReconcileUntilStable(At(10));
  EXPECT_EQ(FindCondition(cluster.job_json(), "Stalled"), nullptr);
  EXPECT_EQ(cluster.status()["restarts"], 0);
}

TEST(PlanStallTest, RestartOnStallRestartsTheGangCountedAgainstBackoffLimitOnce) {
  FakeCluster cluster(JobOnStall("Restart"));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled()));
  cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "CollectiveStalled");
  const std::string restarting = cluster.ConditionMessage("Restarting");
  EXPECT_THAT(restarting, HasSubstr(std::string(kMessage) + " (spec.communication.telemetry.onStall is Restart)"));
  EXPECT_THAT(restarting, HasSubstr("restarting all 4 pods (restart 1 of 3)"));
  EXPECT_EQ(cluster.EventMessages("CollectiveStalled"), std::vector<std::string>{kMessage});
  EXPECT_EQ(cluster.EventMessages("Restarting"), std::vector<std::string>{"CollectiveStalled: " + restarting});
  EXPECT_EQ(cluster.ConditionReason("Stalled"), "Restarting");
  EXPECT_EQ(FindCondition(cluster.job_json(), "Stalled")->at("status"), "False");
  EXPECT_TRUE(cluster.pods().empty()) << "no Pod of a stalled attempt is kept: none failed";

  // The new attempt starts; the last summary read still holds attempt 0's stall, which restarts
  // nothing more.
  cluster.ReconcileUntilStable(At(11));
  cluster.StartRunning(At(12));
  cluster.ReconcileUntilStable(At(13));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 1);
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.pods().count("demo-2-attempt-1"), 1u);

  // The new attempt stalls too: named by its own Pod's name, and restarted again.
  cluster.set_summary(Summary(RankTwoStalled(40, /*attempt=*/1)));
  cluster.Reconcile(At(60));
  EXPECT_EQ(cluster.status()["restarts"], 2);
  EXPECT_EQ(cluster.status()["countedRestarts"], 2);
  EXPECT_THAT(cluster.EventMessages("CollectiveStalled").back(), HasSubstr("rank 2 (pod demo-2-attempt-1)"));
}

TEST(PlanStallTest, RestartOnStallPastBackoffLimitFailsTheJob) {
  FakeCluster cluster(JobOnStall("Restart", /*backoff_limit=*/0));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled()));
  cluster.ReconcileUntilStable(At(10));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason("Failed"), "BackoffLimitExceeded");
  EXPECT_EQ(cluster.ConditionMessage("Failed"),
            std::string(kMessage) + " (spec.communication.telemetry.onStall is Restart); 0 of 0 restarts used");
  EXPECT_EQ(cluster.status()["restarts"], 0);
  // A finished job is stalled no more.
  EXPECT_EQ(cluster.ConditionReason("Stalled"), "JobFinished");
  EXPECT_EQ(FindCondition(cluster.job_json(), "Stalled")->at("status"), "False");
}

TEST(PlanStallTest, APodFailureStillGoesByTheFailurePolicyAndClearsTheStall) {
  FakeCluster cluster(JobOnStall("Report"));
  cluster.StartRunning(At(0));
  cluster.set_summary(Summary(RankTwoStalled()));
  cluster.ReconcileUntilStable(At(10));
  cluster.FailContainer("demo-2", 1, "Error");
  cluster.ReconcileUntilStable(At(20));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodFailed");
  EXPECT_EQ(cluster.ConditionReason("Stalled"), "Restarting");
}

}  // namespace
}  // namespace ringleader::planner
