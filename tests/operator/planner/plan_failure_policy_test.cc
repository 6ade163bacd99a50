// Planner tests of spec.runPolicy.failurePolicy: exit-code and Pod-condition rules (FailJob,
// RestartJob, Ignore), the DisruptionTarget defaults, countedRestarts against backoffLimit, and the
// restart backoff that holds a new attempt's Pods back (status.nextRestartTime, requeue, Events).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "operator/planner/plan.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using testing::At;
using testing::FakeCluster;
using testing::FindCondition;
using testing::MinimalJob;
using ::testing::HasSubstr;
using ::testing::Not;

json JobWithPolicy(int replicas, json failure_policy, int backoff_limit = 3) {
  json job = MinimalJob("demo", replicas);
  job["spec"]["runPolicy"] = {{"backoffLimit", backoff_limit}, {"failurePolicy", std::move(failure_policy)}};
  return job;
}

json ExitCodeRule(const std::string& action, const std::string& op, std::vector<int> values,
                  const std::string& container = "") {
  json on = {{"operator", op}, {"values", values}};
  if (!container.empty()) {
    on["containerName"] = container;
  }
  return {{"action", action}, {"onExitCodes", on}};
}

json NoBackoff() { return {{"initialSeconds", 0}}; }

int CreatedPods(const Plan& plan) { return static_cast<int>(testing::CreatedPodNames(plan).size()); }

TEST(FailurePolicyTest, AnExitCodeFailJobRuleFailsTheJobAtOnceNamingTheRuleAndTheRank) {
  FakeCluster cluster(JobWithPolicy(3, {{"rules", json::array({ExitCodeRule("FailJob", "In", {3, 42})})}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 42, "Error");
  cluster.ReconcileUntilStable(At(5));

  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason("Failed"), "FailJobRule");
  const std::string message = cluster.ConditionMessage("Failed");
  EXPECT_THAT(message, HasSubstr("rank 1 (pod demo-1) container trainer exited with code 42 (Error)"));
  EXPECT_THAT(message, HasSubstr("spec.runPolicy.failurePolicy.rules[0] (FailJob on exit codes In [3, 42]) "
                                 "matched: container trainer exited with code 42"));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  EXPECT_FALSE(cluster.status().contains("nextRestartTime"));
  // The failed Pod stays for its logs; the others are stopped.
  ASSERT_EQ(cluster.pods().size(), 1u);
  EXPECT_EQ(cluster.pods().begin()->first, "demo-1");
  const std::vector<std::string> failed = cluster.EventMessages("Failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_THAT(failed[0], HasSubstr("FailJobRule: rank 1 (pod demo-1)"));
  EXPECT_TRUE(cluster.EventMessages("Restarting").empty());
}

TEST(FailurePolicyTest, ExitCodeRulesMatchByOperatorAndContainer) {
  struct Case {
    std::string name;
    json rule;
    std::string container;  // the container that exits
    int code;
    std::string state;      // what the job turns into
  };
  const std::vector<Case> cases = {
      {"In matches", ExitCodeRule("FailJob", "In", {3}), "trainer", 3, "Failed"},
      {"In misses", ExitCodeRule("FailJob", "In", {3}), "trainer", 4, "Restarting"},
      {"NotIn matches another code", ExitCodeRule("FailJob", "NotIn", {1, 137}), "trainer", 3, "Failed"},
      {"NotIn misses a listed code", ExitCodeRule("FailJob", "NotIn", {1, 137}), "trainer", 137, "Restarting"},
      {"containerName narrows", ExitCodeRule("FailJob", "In", {3}, "helper"), "trainer", 3, "Restarting"},
      {"containerName matches", ExitCodeRule("FailJob", "In", {3}, "helper"), "helper", 3, "Failed"},
      {"preflight init container", ExitCodeRule("FailJob", "In", {5}, "ringleader-preflight"),
       "ringleader-preflight", 5, "Failed"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    json job = JobWithPolicy(2, {{"rules", json::array({test.rule})}});
    job["spec"]["template"]["spec"]["containers"].push_back({{"name", "helper"}, {"image", "busybox"}});
    FakeCluster cluster(job);
    cluster.StartRunning(At(0));
    if (test.container == "ringleader-preflight") {
      cluster.FailPreflight("demo-1", test.code, "bandwidth below the floor");
    } else {
      cluster.FailContainer("demo-1", test.code, "Error", test.container);
    }
    // demo-0 still runs: a restart waits 5 s for its failure (a FailJob verdict does not).
    cluster.Reconcile(At(5));
    EXPECT_EQ(cluster.status()["state"], test.state) << cluster.status().dump(2);
  }
}

TEST(FailurePolicyTest, TheFirstMatchingRuleDecides) {
  FakeCluster cluster(JobWithPolicy(
      2, {{"rules", json::array({ExitCodeRule("Ignore", "In", {42}), ExitCodeRule("FailJob", "NotIn", {1})})},
          {"restartBackoff", NoBackoff()}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 42, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.status()["state"], "Running") << "demo-1 may yet fail with a code rule 1 fails the job on";
  cluster.SetPhase("demo-1", "Succeeded");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "IgnoreRule");
  EXPECT_THAT(cluster.ConditionMessage("Restarting"),
              HasSubstr("not counted against backoffLimit: spec.runPolicy.failurePolicy.rules[0] (Ignore on exit "
                        "codes In [42]) matched container trainer exited with code 42; 0 of 3 restarts used"));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
}

TEST(FailurePolicyTest, AFailJobVerdictWinsOverARestartInTheSamePass) {
  FakeCluster cluster(JobWithPolicy(3, {{"rules", json::array({ExitCodeRule("FailJob", "In", {3})})}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");  // lost its peer
  cluster.FailContainer("demo-2", 3, "Error");  // the cause
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.ConditionReason("Failed"), "FailJobRule");
  EXPECT_THAT(cluster.ConditionMessage("Failed"), HasSubstr("rank 2 (pod demo-2)"));
  EXPECT_THAT(cluster.ConditionMessage("Failed"), Not(HasSubstr("demo-0")));
}

// The kubelets report each rank on their own, so a rank that lost its peer is often seen failed
// before the peer whose exit code a FailJob rule names.
TEST(FailurePolicyTest, ARestartWaitsBrieflyForThePeersFailureThatARuleMayJudge) {
  FakeCluster cluster(JobWithPolicy(3, {{"rules", json::array({ExitCodeRule("FailJob", "In", {42})})}}));
  cluster.StartRunning(At(0));
  const auto fail_at = [&cluster](const std::string& pod, int code, int at) {
    cluster.FailContainer(pod, code, "Error", "trainer", At(at));
  };
  fail_at("demo-0", 1, 10);
  const Plan waiting = cluster.Reconcile(At(11));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(cluster.status()["state"], "Running");
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, seconds(4)) << "5 s after the first failure";
  EXPECT_EQ(cluster.status()["replicas"]["failed"], 1);

  fail_at("demo-1", 42, 11);
  cluster.ReconcileUntilStable(At(12));
  EXPECT_EQ(cluster.ConditionReason("Failed"), "FailJobRule");
  EXPECT_THAT(cluster.ConditionMessage("Failed"), HasSubstr("rank 1 (pod demo-1)"));
}

TEST(FailurePolicyTest, TheRestartGoesAheadOnceEveryPodFinishedOrTheWaitIsOver) {
  FakeCluster cluster(JobWithPolicy(3, {{"rules", json::array({ExitCodeRule("FailJob", "In", {42})})}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error", "trainer", At(10));
  cluster.Reconcile(At(14));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  cluster.Reconcile(At(15));  // demo-1 and demo-2 still run: the wait is over
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodFailed");

  FakeCluster finished(JobWithPolicy(2, {{"rules", json::array({ExitCodeRule("FailJob", "In", {42})})}}));
  finished.StartRunning(At(0));
  finished.FailContainer("demo-0", 1, "Error", "trainer", At(10));
  finished.SetPhase("demo-1", "Succeeded");
  finished.Reconcile(At(10));
  EXPECT_EQ(finished.status()["restarts"], 1) << "every Pod has finished: nothing more to learn";
}

TEST(FailurePolicyTest, PodConditionRulesMatchTypeAndStatus) {
  const json fail_on_config = {{"action", "FailJob"},
                               {"onPodConditions", json::array({{{"type", "example.com/BadConfig"}}})}};
  FakeCluster cluster(JobWithPolicy(2, {{"rules", json::array({fail_on_config})}}));
  cluster.StartRunning(At(0));
  cluster.SetPodCondition("demo-1", "example.com/BadConfig", "False");
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.Reconcile(At(5));  // after the 5 s wait for demo-0's failure
  EXPECT_EQ(cluster.status()["state"], "Restarting") << "status defaults to True, so False does not match";

  FakeCluster matched(JobWithPolicy(2, {{"rules", json::array({fail_on_config})}}));
  matched.StartRunning(At(0));
  matched.SetPodCondition("demo-1", "example.com/BadConfig", "True", "Checked", "missing dataset");
  matched.FailContainer("demo-1", 1, "Error");
  matched.Reconcile(At(1));
  EXPECT_EQ(matched.ConditionReason("Failed"), "FailJobRule");
  EXPECT_THAT(matched.ConditionMessage("Failed"),
              HasSubstr("spec.runPolicy.failurePolicy.rules[0] (FailJob on pod condition example.com/BadConfig=True) "
                        "matched: pod condition example.com/BadConfig=True"));
}

TEST(FailurePolicyTest, ARuleOnDisruptionTargetOverridesTheIgnoreDefault) {
  const json count_preemption = {{"action", "RestartJob"},
                                 {"onPodConditions", json::array({{{"type", "DisruptionTarget"}}})}};
  FakeCluster cluster(JobWithPolicy(2, {{"rules", json::array({count_preemption})}}));
  cluster.StartRunning(At(0));
  cluster.Disrupt("demo-1", "PreemptionByScheduler", "preempted by default/urgent");
  cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodFailed");
  EXPECT_EQ(cluster.status()["countedRestarts"], 1);
}

// Preemption, eviction and node drains are nobody's bug: they must not use up backoffLimit.
TEST(FailurePolicyTest, AnEvictedPodRestartsTheGangWithoutCounting) {
  json job = MinimalJob("demo", 3);
  job["spec"]["runPolicy"] = {{"backoffLimit", 0}};
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  cluster.SetPodCondition("demo-2", "DisruptionTarget", "True", "EvictionByEvictionAPI",
                          "Eviction API: evicting");
  cluster.FailContainer("demo-2", 143, "Error");
  cluster.ReconcileUntilStable(At(1));

  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodDisrupted");
  const std::string message = cluster.ConditionMessage("Restarting");
  EXPECT_THAT(message, HasSubstr("rank 2 (pod demo-2) disrupted (DisruptionTarget, EvictionByEvictionAPI): "
                                 "Eviction API: evicting"));
  EXPECT_THAT(message, HasSubstr("not counted against backoffLimit: pod demo-2 was disrupted "
                                 "(DisruptionTarget=True); 0 of 0 restarts used"));
  EXPECT_EQ(cluster.status()["disruption"],
            json({{"attempt", 0}, {"pod", "demo-2"}, {"reason", "EvictionByEvictionAPI"},
                  {"message", "Eviction API: evicting"}}));
  EXPECT_EQ(cluster.EventMessages("PodDisrupted").size(), 1u);
}

// The eviction API and preemption delete the Pod: it may never reach phase Failed.
TEST(FailurePolicyTest, ADisruptedPodBeingDeletedRestartsTheGangWithoutCounting) {
  json job = MinimalJob("demo", 2);
  job["spec"]["runPolicy"] = {{"backoffLimit", 0}};
  FakeCluster cluster(job);
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  cluster.Disrupt("demo-0", "PreemptionByScheduler", "preempted");
  const Plan plan = cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_EQ(CreatedPods(plan), 0);
}

// Draining a node after its rank's trainers finished fails nothing.
TEST(FailurePolicyTest, ADisruptedPodWhoseTrainersSucceededIsNoFailure) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  cluster.SetPhase("demo-0", "Succeeded");
  cluster.Disrupt("demo-0", "DeletionByTaintManager", "node drained");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(cluster.status()["state"], "Running");
}

// Kueue preempts a plain-Pod group by setting TerminationTarget=True on each Pod and deleting it;
// it never sets DisruptionTarget. That is a disruption, not a failure, even for trainers that exit
// 0 on SIGTERM: the gang restarts without counting, and status.disruption names Kueue's reason.
TEST(FailurePolicyTest, KueuesPreemptionRestartsTheGangWithoutCountingOrSucceeding) {
  json job = MinimalJob("demo", 2);
  job["spec"]["runPolicy"] = {{"backoffLimit", 0}};
  FakeCluster cluster(job);
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  cluster.Reconcile(At(5));
  for (const std::string pod : {"demo-0", "demo-1"}) {
    cluster.StopByKueue(pod, "WorkloadEvictedDueToPreempted",
                        "Preempted to accommodate a higher priority Workload");
    cluster.SucceedContainers(pod, At(6));
  }
  cluster.Reconcile(At(7));
  EXPECT_EQ(cluster.status()["state"], "Restarting") << cluster.status().dump(2);
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  EXPECT_EQ(cluster.status()["disruption"]["reason"], "WorkloadEvictedDueToPreempted");
  EXPECT_EQ(cluster.status()["disruption"]["message"], "Preempted to accommodate a higher priority Workload");
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodDisrupted");
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("(TerminationTarget, WorkloadEvictedDueToPreempted)"));
  EXPECT_THAT(cluster.EventMessages("PodDisrupted"), ::testing::Contains(HasSubstr("has TerminationTarget=True")));
  EXPECT_EQ(FindCondition(cluster.job_json(), "Succeeded"), nullptr);
}

// Kueue also stops the Pods of a Workload that finished; trainers done before that succeeded.
TEST(FailurePolicyTest, TrainersDoneBeforeKueuesTerminationTargetSucceeded) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  cluster.SucceedContainers("demo-0", At(3));
  cluster.SucceedContainers("demo-1", At(4));
  cluster.Reconcile(At(5));
  cluster.StopByKueue("demo-0", "WorkloadFinished", "the workload finished");
  cluster.ReconcileUntilStable(At(6));
  EXPECT_EQ(cluster.status()["state"], "Succeeded") << cluster.status().dump(2);
  EXPECT_EQ(cluster.status()["restarts"], 0);
}

// Once a rank is disrupted, the others fail for want of it; those failures are Ignored too, even
// after the disrupted Pod is gone from the API.
TEST(FailurePolicyTest, TheOtherRanksFailuresInADisruptedAttemptAreIgnored) {
  json job = MinimalJob("demo", 3);
  job["spec"]["runPolicy"] = {{"backoffLimit", 0}};
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  // The condition is set and the delete not yet seen.
  cluster.SetPodCondition("demo-1", "DisruptionTarget", "True", "DeletionByTaintManager", "node drained");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.status()["disruption"]["pod"], "demo-1");
  EXPECT_EQ(cluster.status()["disruption"]["attempt"], 0);
  EXPECT_EQ(cluster.status()["restarts"], 0);

  cluster.RemovePod("demo-1");
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.FailContainer("demo-2", 1, "Error");
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting") << cluster.status().dump(2);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodDisrupted");
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("pod demo-1 of the same attempt was disrupted"));

  // The next attempt is not disrupted: a failure there counts (and backoffLimit 0 ends the job).
  cluster.ReconcileUntilStable(At(20));
  cluster.SetAllPhases("Running");
  cluster.FailContainer(cluster.CurrentPod(0), 1, "Error");
  cluster.ReconcileUntilStable(At(21));
  EXPECT_EQ(cluster.ConditionReason("Failed"), "BackoffLimitExceeded");
}

TEST(FailurePolicyTest, IgnoredRestartsDoNotUseUpTheBackoffLimit) {
  json job = MinimalJob("demo", 2);
  job["spec"]["runPolicy"] = {{"backoffLimit", 1}, {"failurePolicy", {{"restartBackoff", NoBackoff()}}}};
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  cluster.Disrupt("demo-1", "PreemptionByScheduler", "preempted");
  cluster.FailContainer("demo-1", 137, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.status()["countedRestarts"], 0);
  cluster.FinishDeletions();
  cluster.ReconcileUntilStable(At(1));

  cluster.SetAllPhases("Running");
  cluster.FailContainer(cluster.CurrentPod(0), 1, "Error");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.status()["restarts"], 2);
  EXPECT_EQ(cluster.status()["countedRestarts"], 1);
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("(restart 1 of 1)"));
  // Pods carry the attempt number, which counts every restart.
  for (const int rank : {0, 1}) {
    EXPECT_EQ(cluster.pods().at(cluster.CurrentPod(rank))["metadata"]["labels"]["ringleader.dev/attempt"], "2");
  }

  cluster.SetAllPhases("Running");
  cluster.FailContainer(cluster.CurrentPod(1), 1, "Error");
  cluster.ReconcileUntilStable(At(3));
  EXPECT_EQ(cluster.ConditionReason("Failed"), "BackoffLimitExceeded");
  EXPECT_THAT(cluster.ConditionMessage("Failed"), HasSubstr("1 of 1 restarts used"));
  EXPECT_EQ(cluster.status()["restarts"], 2);
}

TEST(FailurePolicyTest, BackoffHoldsTheNewAttemptsPodsBackAndRequeuesForTheRest) {
  json job = MinimalJob("demo", 2);
  job["spec"]["runPolicy"] = {{"backoffLimit", 5},
                              {"failurePolicy", {{"restartBackoff", {{"initialSeconds", 10}, {"maxSeconds", 25}}}}}};
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));

  // Restart k waits min(10 x 2^(k-1), 25): 10, 20, 25, 25.
  int now = 100;
  for (const int expected : {10, 20, 25, 25}) {
    SCOPED_TRACE("backoff " + std::to_string(expected));
    const std::string failed = cluster.CurrentPod(1);
    cluster.FailContainer(failed, 1, "Error");
    const Plan restart = cluster.Reconcile(At(now));
    ASSERT_TRUE(restart.requeue_after.has_value());
    EXPECT_EQ(*restart.requeue_after, seconds(expected));
    EXPECT_EQ(cluster.status()["nextRestartTime"], api::FormatTime(At(now + expected)));
    const int restarts = cluster.status()["restarts"];
    const std::string delay = std::to_string(expected) + " s";
    EXPECT_THAT(cluster.ConditionMessage("Restarting"),
                HasSubstr("restarting all 2 pods in " + delay + " (restart " + std::to_string(restarts) +
                          " of 5, backoff " + delay + ")"));
    EXPECT_THAT(cluster.EventMessages("Restarting").back(),
                HasSubstr("PodFailed: rank 1 (pod " + failed + ") container trainer exited with code 1 (Error); "
                          "restarting all 2 pods in " + delay));
    // Only the failed ranks' Pods of the last 3 attempts are left.
    EXPECT_EQ(cluster.pods().size(), std::min<std::size_t>(restarts, 3));
    EXPECT_TRUE(cluster.pods().contains(failed));

    // Part way through: nothing is created, and the requeue is for what is left.
    const Plan waiting = cluster.Reconcile(At(now + 4));
    EXPECT_EQ(CreatedPods(waiting), 0);
    ASSERT_TRUE(waiting.requeue_after.has_value());
    EXPECT_EQ(*waiting.requeue_after, seconds(expected - 4));
    EXPECT_TRUE(cluster.PlanNow(At(now + expected - 1)).empty());

    // Then the Pods come, and nextRestartTime goes.
    const Plan created = cluster.Reconcile(At(now + expected));
    EXPECT_EQ(CreatedPods(created), 2);
    cluster.ReconcileUntilStable(At(now + expected));
    EXPECT_FALSE(cluster.status().contains("nextRestartTime"));
    cluster.SetAllPhases("Running");
    cluster.ReconcileUntilStable(At(now + expected));
    EXPECT_EQ(cluster.status()["state"], "Running");
    now += expected + 10;
  }
  EXPECT_EQ(cluster.EventMessages("Restarting").size(), 4u);
}

TEST(FailurePolicyTest, ZeroInitialSecondsRestartsAtOnce) {
  FakeCluster cluster(JobWithPolicy(2, {{"restartBackoff", NoBackoff()}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  const Plan restart = cluster.Reconcile(At(1));
  EXPECT_FALSE(restart.requeue_after.has_value());
  EXPECT_FALSE(cluster.status().contains("nextRestartTime"));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("restarting all 2 pods (restart 1 of 3)"));
  EXPECT_EQ(CreatedPods(cluster.Reconcile(At(1))), 2);
}

TEST(FailurePolicyTest, SuspendingDuringTheBackoffDropsItAndResumeStartsAtOnce) {
  FakeCluster cluster(JobWithPolicy(2, {{"restartBackoff", {{"initialSeconds", 60}}}}));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  ASSERT_TRUE(cluster.status().contains("nextRestartTime"));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
  cluster.ReconcileUntilStable(At(2));
  EXPECT_FALSE(cluster.status().contains("nextRestartTime"));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = false; });
  cluster.ReconcileUntilStable(At(3));
  EXPECT_EQ(cluster.pods().size(), 2u);
}

TEST(FailurePolicyTest, TheDeadlineStillEndsAJobWaitingOutItsBackoff) {
  json job = JobWithPolicy(2, {{"restartBackoff", {{"initialSeconds", 60}}}});
  job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 30;
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.ReconcileUntilStable(At(10));
  const Plan waiting = cluster.PlanNow(At(11));
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, seconds(19)) << "the deadline comes before the backoff ends";
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(cluster.ConditionReason("Failed"), "DeadlineExceeded");
  EXPECT_FALSE(cluster.status().contains("nextRestartTime"));
}

}  // namespace
}  // namespace ringleader::planner
