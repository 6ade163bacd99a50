// Planner tests of elastic jobs (spec.elasticPolicy): status.selector for the scale subresource,
// the trainers' and sidecars' elastic env, scaling up and down without a gang restart, a failed
// rank recreated alone and counted in status.elasticRestarts against maxRestarts, rank 0's failure
// still restarting the gang, and the minReplicas timeout. The policy is set on the parsed job
// (FakeCluster::set_job_edit), so these tests read only the planner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/planner/plan.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::At;
using testing::CreatedPodNames;
using testing::DeletedPodNames;
using testing::EnvValue;
using testing::FakeCluster;
using testing::MinimalJob;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void MakeElastic(FakeCluster& cluster, api::ElasticPolicy policy) {
  cluster.set_job_edit([policy](api::TrainingJob& job) { job.spec.elastic_policy = policy; });
}

const json& Trainer(const json& pod) { return pod["spec"]["containers"][0]; }
const json& Sidecar(const json& pod) { return pod["spec"]["initContainers"].front(); }
const json& Preflight(const json& pod) { return pod["spec"]["initContainers"].back(); }

std::string Uid(FakeCluster& cluster, const std::string& pod) { return cluster.pod(pod)["metadata"]["uid"]; }

std::int64_t ElasticRestarts(FakeCluster& cluster) { return cluster.status().value("elasticRestarts", 0); }

TEST(ElasticPlanTest, EveryJobsStatusSelectsItsPodsByTheirLabels) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  const std::string selector = cluster.status().value("selector", "");
  EXPECT_EQ(selector, "ringleader.dev/job-name=demo,ringleader.dev/job-uid=job-uid-1");
  for (const auto& [name, pod] : cluster.pods()) {
    for (const std::string term : {"ringleader.dev/job-name=demo", "ringleader.dev/job-uid=job-uid-1"}) {
      const std::string key = term.substr(0, term.find('='));
      EXPECT_EQ(pod["metadata"]["labels"].value(key, ""), term.substr(term.find('=') + 1)) << name;
    }
  }
}

TEST(ElasticPlanTest, TrainersGetTorchrunsRangeAndRestartsAndSidecarsTheElasticSettings) {
  FakeCluster cluster(MinimalJob("demo", 2));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 5});
  cluster.ReconcileUntilStable(At(0));
  ASSERT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-1"));
  for (const auto& [name, pod] : cluster.pods()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_NNODES"), "2:4");
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_MAX_RESTARTS"), "5");
    EXPECT_EQ(EnvValue(Trainer(pod), "WORLD_SIZE"), "2");
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_BACKEND"), "c10d");
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_ID"), "job-uid-1-0");
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_CONF"), "is_host=false,last_call_timeout=5");
    EXPECT_EQ(EnvValue(Trainer(pod), "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "1");
    for (const json* container : {&Sidecar(pod), &Preflight(pod)}) {
      SCOPED_TRACE((*container)["name"].get<std::string>());
      EXPECT_EQ(EnvValue(*container, "RINGLEADER_MAX_REPLICAS"), "4");
      EXPECT_EQ(EnvValue(*container, "RINGLEADER_MONITOR_ENABLED"), "false");
      // The attempt's initial Pods meet in one world of spec.replicas.
      EXPECT_EQ(EnvValue(*container, "RINGLEADER_PREFLIGHT_SCOPE"), "Job");
      EXPECT_EQ(EnvValue(*container, "RINGLEADER_REPLICAS"), "2");
    }
  }
}

TEST(ElasticPlanTest, RigidJobsGetNoneOfTheElasticEnv) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.ReconcileUntilStable(At(0));
  const json& pod = cluster.pods().at("demo-1");
  EXPECT_EQ(EnvValue(Trainer(pod), "PET_NNODES"), "2");
  EXPECT_EQ(EnvValue(Trainer(pod), "PET_MAX_RESTARTS"), "<unset>");
  EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_CONF"), "is_host=false");
  EXPECT_EQ(EnvValue(Trainer(pod), "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "<unset>");
  for (const json* container : {&Sidecar(pod), &Preflight(pod)}) {
    EXPECT_EQ(EnvValue(*container, "RINGLEADER_MAX_REPLICAS"), "<unset>");
    EXPECT_EQ(EnvValue(*container, "RINGLEADER_PREFLIGHT_SCOPE"), "<unset>");
    EXPECT_EQ(EnvValue(*container, "RINGLEADER_MONITOR_ENABLED"), "true");
  }
}

TEST(ElasticPlanTest, ScalingUpCreatesTheNewRankAloneWithPodScopeAndNoRestart) {
  FakeCluster cluster(MinimalJob("demo", 2));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));
  const std::string rank_zero = Uid(cluster, "demo-0");
  const std::string rank_one = Uid(cluster, "demo-1");

  cluster.EditSpec([](json& spec) { spec["replicas"] = 3; });
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_THAT(CreatedPodNames(plan), ElementsAre("demo-2"));
  EXPECT_THAT(DeletedPodNames(plan), IsEmpty());
  const json& added = cluster.pods().at("demo-2");
  EXPECT_EQ(added["metadata"]["labels"]["ringleader.dev/attempt"], "0");
  EXPECT_EQ(EnvValue(Sidecar(added), "RINGLEADER_PREFLIGHT_SCOPE"), "Pod");
  EXPECT_EQ(EnvValue(Preflight(added), "RINGLEADER_PREFLIGHT_SCOPE"), "Pod");
  EXPECT_EQ(EnvValue(Preflight(added), "RINGLEADER_REPLICAS"), "3");
  EXPECT_EQ(EnvValue(Trainer(added), "PET_NNODES"), "2:4");
  // The same rendezvous as the running ranks: torchrun re-forms the world they are in.
  EXPECT_EQ(EnvValue(Trainer(added), "PET_RDZV_ID"), "job-uid-1-0");

  cluster.SetPhase("demo-2", "Running");
  cluster.ReconcileUntilStable(At(20));
  // The running ranks are not replaced, whatever their env says about the size.
  EXPECT_EQ(Uid(cluster, "demo-0"), rank_zero);
  EXPECT_EQ(Uid(cluster, "demo-1"), rank_one);
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_THAT(cluster.ConditionMessage("Running"), HasSubstr("all 3 pods"));
}

TEST(ElasticPlanTest, ScalingDownDeletesTheHighestRanksFirstAndCountsNoFailure) {
  FakeCluster cluster(MinimalJob("demo", 4));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));
  cluster.set_graceful_deletion(true);

  cluster.EditSpec([](json& spec) { spec["replicas"] = 2; });
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_THAT(DeletedPodNames(plan), ElementsAre("demo-3", "demo-2"));
  EXPECT_THAT(CreatedPodNames(plan), IsEmpty());
  ASSERT_EQ(cluster.EventMessages("ScalingDown").size(), 1u);
  EXPECT_THAT(cluster.EventMessages("ScalingDown")[0],
              HasSubstr("spec.replicas is 2: deleting pods demo-3 (rank 3), demo-2 (rank 2), highest rank first"));

  // The leaving ranks' trainers end non-zero on SIGTERM: no failure of the job's.
  cluster.FailContainer("demo-3", 143, "Error");
  cluster.FailContainer("demo-2", 137, "Error");
  cluster.ReconcileUntilStable(At(20));
  cluster.ReconcileUntilStable(At(40));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  EXPECT_THAT(cluster.EventMessages("PodRecreated"), IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Running");

  cluster.FinishDeletions();
  cluster.ReconcileUntilStable(At(41));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-1"));
  EXPECT_EQ(cluster.status()["state"], "Running");
}

TEST(ElasticPlanTest, ScalingBackUpWaitsForTheLeavingPodToGoAndCountsNothing) {
  FakeCluster cluster(MinimalJob("demo", 3));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));
  cluster.set_graceful_deletion(true);
  cluster.EditSpec([](json& spec) { spec["replicas"] = 2; });
  cluster.Reconcile(At(10));
  cluster.FailContainer("demo-2", 143, "Error");

  cluster.EditSpec([](json& spec) { spec["replicas"] = 3; });
  const Plan waiting = cluster.Reconcile(At(20));
  EXPECT_THAT(CreatedPodNames(waiting), IsEmpty());  // demo-2 still holds the name
  EXPECT_THAT(DeletedPodNames(waiting), IsEmpty());
  EXPECT_EQ(ElasticRestarts(cluster), 0);

  cluster.FinishDeletions();
  const Plan back = cluster.Reconcile(At(21));
  EXPECT_THAT(CreatedPodNames(back), ElementsAre("demo-2"));
  EXPECT_EQ(EnvValue(Preflight(cluster.pods().at("demo-2")), "RINGLEADER_PREFLIGHT_SCOPE"), "Pod");
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  EXPECT_EQ(cluster.status()["restarts"], 0);
}

TEST(ElasticPlanTest, AFailedRankIsDeletedThenRecreatedAloneAndCounted) {
  FakeCluster cluster(MinimalJob("demo", 3));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 3});
  cluster.StartRunning(At(0));
  cluster.set_graceful_deletion(true);
  const std::string rank_zero = Uid(cluster, "demo-0");
  const std::string rank_two = Uid(cluster, "demo-2");

  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(100));
  // Rank 0 may be failing too and its kubelet not have said so yet: the recreation waits a little.
  const Plan settling = cluster.Reconcile(At(101));
  EXPECT_THAT(DeletedPodNames(settling), IsEmpty());
  ASSERT_TRUE(settling.requeue_after.has_value());
  EXPECT_LE(settling.requeue_after->count(), 4);

  const Plan deleting = cluster.Reconcile(At(105));
  EXPECT_THAT(DeletedPodNames(deleting), ElementsAre("demo-1"));
  EXPECT_THAT(CreatedPodNames(deleting), IsEmpty());
  EXPECT_EQ(ElasticRestarts(cluster), 1);
  EXPECT_EQ(cluster.status()["restarts"], 0);
  ASSERT_EQ(cluster.EventMessages("PodRecreated").size(), 1u);
  EXPECT_THAT(cluster.EventMessages("PodRecreated")[0],
              HasSubstr("rank 1 (pod demo-1) container trainer exited with code 1 (Error); recreating rank 1 alone "
                        "once its pod is gone, the other ranks go on (elastic restart 1 of 3)"));

  // Its Pod is still terminating under the same name: nothing is created, nothing counted again.
  const Plan terminating = cluster.Reconcile(At(106));
  EXPECT_THAT(CreatedPodNames(terminating), IsEmpty());
  EXPECT_EQ(ElasticRestarts(cluster), 1);

  cluster.FinishDeletions();
  const Plan recreated = cluster.Reconcile(At(107));
  EXPECT_THAT(CreatedPodNames(recreated), ElementsAre("demo-1"));
  const json& pod = cluster.pods().at("demo-1");
  EXPECT_EQ(EnvValue(Preflight(pod), "RINGLEADER_PREFLIGHT_SCOPE"), "Pod");
  EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_ID"), "job-uid-1-0");
  EXPECT_EQ(Uid(cluster, "demo-0"), rank_zero);
  EXPECT_EQ(Uid(cluster, "demo-2"), rank_two);
  EXPECT_EQ(ElasticRestarts(cluster), 1);
  EXPECT_EQ(cluster.status()["restarts"], 0);
}

TEST(ElasticPlanTest, ARecreationPastMaxRestartsFailsTheJobNamingTheLimitAndThePod) {
  FakeCluster cluster(MinimalJob("demo", 3));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 1});
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(105));
  cluster.SetPhase("demo-1", "Running");
  cluster.ReconcileUntilStable(At(106));
  ASSERT_EQ(ElasticRestarts(cluster), 1);
  ASSERT_EQ(cluster.status()["state"], "Running");

  cluster.FailContainer("demo-2", 1, "Error", "trainer", At(200));
  cluster.ReconcileUntilStable(At(205));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason("Failed"), "MaxRestartsExceeded");
  EXPECT_THAT(cluster.ConditionMessage("Failed"),
              HasSubstr("rank 2 (pod demo-2) container trainer exited with code 1 (Error); torchrun's maxRestarts "
                        "(1, spec.elasticPolicy.maxRestarts) is spent: recreating it would be restart 2 in attempt 0"));
  EXPECT_EQ(cluster.status()["restarts"], 0);
  // The failed Pod stays for kubectl logs; the others are stopped.
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-2"));
}

TEST(ElasticPlanTest, RankZerosFailureStillRestartsTheGangAndStartsTheCountAfresh) {
  json job = MinimalJob("demo", 3);
  job["spec"]["runPolicy"] = {{"failurePolicy", {{"restartBackoff", {{"initialSeconds", 0}}}}}};
  FakeCluster cluster(job);
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 3});
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-2", 1, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(105));
  cluster.SetPhase("demo-2", "Running");
  cluster.ReconcileUntilStable(At(106));
  ASSERT_EQ(ElasticRestarts(cluster), 1);

  cluster.FailContainer("demo-0", 1, "Error", "trainer", At(200));
  cluster.ReconcileUntilStable(At(200));  // no wait: rank 0 holds the store
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodFailed");
  // The new attempt's torchrun agents have maxRestarts of their own.
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  for (int rank = 0; rank < 3; ++rank) {
    const json& pod = cluster.pods().at("demo-" + std::to_string(rank) + "-attempt-1");
    EXPECT_EQ(EnvValue(Preflight(pod), "RINGLEADER_PREFLIGHT_SCOPE"), "Job") << rank;
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_ID"), "job-uid-1-1") << rank;
  }
  // Rank 0's failed Pod is kept for kubectl logs, as in any gang restart.
  EXPECT_TRUE(cluster.pods().contains("demo-0"));
}

TEST(ElasticPlanTest, RankZeroGoneWithoutAFailureSeenRestartsTheGang) {
  json job = MinimalJob("demo", 3);
  job["spec"]["runPolicy"] = {{"failurePolicy", {{"restartBackoff", {{"initialSeconds", 0}}}}}};
  FakeCluster cluster(job);
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));
  cluster.RemovePod("demo-0");
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_THAT(CreatedPodNames(plan), IsEmpty());  // never a fresh rank 0 under the running ranks
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(cluster.ConditionReason("Restarting"), "PodLost");
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("rank 0 (pod demo-0) is gone"));
}

TEST(ElasticPlanTest, FailureRulesStillApplyToARankRecreatedAlone) {
  json job = MinimalJob("demo", 3);
  job["spec"]["runPolicy"] = {
      {"failurePolicy",
       {{"rules", json::array({{{"action", "Ignore"}, {"onExitCodes", {{"operator", "In"}, {"values", {7}}}}},
                               {{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}, {"values", {9}}}}}})}}}};
  FakeCluster cluster(job);
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));

  cluster.FailContainer("demo-1", 7, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(105));
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  ASSERT_EQ(cluster.EventMessages("PodRecreated").size(), 1u);
  EXPECT_THAT(cluster.EventMessages("PodRecreated")[0], HasSubstr("not counted against maxRestarts"));
  EXPECT_EQ(cluster.pod("demo-1")["status"]["phase"], "Pending");  // recreated

  cluster.SetPhase("demo-1", "Running");
  cluster.FailContainer("demo-2", 9, "Error", "trainer", At(200));
  cluster.ReconcileUntilStable(At(200));  // FailJob does not wait
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason("Failed"), "FailJobRule");
  EXPECT_THAT(cluster.ConditionMessage("Failed"), HasSubstr("rank 2 (pod demo-2)"));
}

TEST(ElasticPlanTest, FewerThanMinReplicasRunningPastTheTimeoutFailsTheJob) {
  FakeCluster cluster(MinimalJob("demo", 3));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 3, .min_replicas_timeout_seconds = 60});
  cluster.StartRunning(At(0));
  EXPECT_FALSE(cluster.status().contains("belowMinReplicasSince"));
  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(100));
  cluster.FailContainer("demo-2", 1, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(105));  // both recreated, Pending: only rank 0 runs
  EXPECT_EQ(ElasticRestarts(cluster), 2);
  EXPECT_EQ(cluster.status().value("belowMinReplicasSince", ""), "2026-01-01T00:01:45Z");

  const Plan before = cluster.Reconcile(At(164));
  ASSERT_TRUE(before.requeue_after.has_value());
  EXPECT_EQ(before.requeue_after->count(), 1);
  EXPECT_EQ(cluster.status()["state"], "Running");

  cluster.ReconcileUntilStable(At(165));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason("Failed"), "BelowMinReplicas");
  EXPECT_THAT(cluster.ConditionMessage("Failed"),
              HasSubstr("1 pod has been running, fewer than spec.elasticPolicy.minReplicas (2), since "
                        "2026-01-01T00:01:45Z, longer than spec.elasticPolicy.minReplicasTimeoutSeconds (60 s)"));
}

TEST(ElasticPlanTest, EnoughRanksRunningAgainClearsBelowMinReplicasSince) {
  FakeCluster cluster(MinimalJob("demo", 2));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4, .max_restarts = 3, .min_replicas_timeout_seconds = 60});
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(105));
  ASSERT_TRUE(cluster.status().contains("belowMinReplicasSince"));
  cluster.SetPhase("demo-1", "Running");
  cluster.ReconcileUntilStable(At(150));
  EXPECT_FALSE(cluster.status().contains("belowMinReplicasSince"));
  cluster.ReconcileUntilStable(At(400));
  EXPECT_EQ(cluster.status()["state"], "Running");
}

TEST(ElasticPlanTest, AfterAScaleDownTheJobSucceedsWhenEveryRemainingRankSucceeded) {
  FakeCluster cluster(MinimalJob("demo", 3));
  MakeElastic(cluster, {.min_replicas = 2, .max_replicas = 4});
  cluster.StartRunning(At(0));
  cluster.EditSpec([](json& spec) { spec["replicas"] = 2; });
  cluster.ReconcileUntilStable(At(10));
  ASSERT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-1"));
  cluster.SucceedContainers("demo-0", At(20));
  cluster.SucceedContainers("demo-1", At(20));
  cluster.ReconcileUntilStable(At(21));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionMessage("Succeeded"), "all 2 pods succeeded");
}

TEST(ElasticPlanTest, AKueueManagedElasticJobRestartsItsGangOnAFailedRank) {
  json job = MinimalJob("demo", 2);
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  job["spec"]["runPolicy"] = {{"schedulingPolicy", {{"provider", "Kueue"}}},
                              {"failurePolicy", {{"restartBackoff", {{"initialSeconds", 0}}}}}};
  FakeCluster cluster(job);
  cluster.providers().kueue = true;
  MakeElastic(cluster, {.min_replicas = 1, .max_replicas = 2});
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(100));
  cluster.ReconcileUntilStable(At(100));
  EXPECT_EQ(cluster.status()["restarts"], 1);
  EXPECT_EQ(ElasticRestarts(cluster), 0);
  EXPECT_TRUE(cluster.pods().contains("demo-1-attempt-1"));
}

}  // namespace
}  // namespace ringleader::planner
