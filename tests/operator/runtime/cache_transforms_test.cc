// The cache transforms keep exactly what the planner reads: planning from trimmed Pods gives
// the same plan as planning from full Pods, in every state a job's Pods go through.
#include "operator/runtime/cache_transforms.h"

#include <gtest/gtest.h>

#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using planner::testing::At;
using planner::testing::FakeCluster;
using planner::testing::MinimalJob;

planner::Plan PlanWith(FakeCluster& cluster, bool trimmed) {
  planner::Observed observed;
  observed.job = cluster.Job();
  for (const auto& [name, pod] : cluster.pods()) {
    json copy = pod;
    if (trimmed) {
      TrimPod(copy);
    }
    observed.pods.push_back(copy);
  }
  std::optional<json> service;
  if (cluster.has_service()) {
    service = cluster.service();
    if (trimmed) {
      TrimToOwnership(*service);
    }
  }
  std::optional<json> secret;
  if (cluster.has_secret()) {
    secret = cluster.secret();
    if (trimmed) {
      TrimToOwnership(*secret);
    }
  }
  observed.service = service;
  observed.secret = secret;
  observed.ledger = &cluster.ledger();
  observed.fresh_token = "token";
  observed.providers = cluster.providers();
  observed.now = At(100);
  return planner::MakePlan(observed, planner::PlannerConfig{});
}

void ExpectSamePlan(FakeCluster& cluster, const std::string& state) {
  const planner::Plan full = PlanWith(cluster, false);
  const planner::Plan trimmed = PlanWith(cluster, true);
  EXPECT_EQ(full.actions, trimmed.actions) << state;
  EXPECT_EQ(full.requeue_after, trimmed.requeue_after) << state;
  EXPECT_EQ(full.release_ports, trimmed.release_ports) << state;
}

TEST(CacheTransformsTest, TrimPodKeepsIdentityOwnershipStatusAndPlacementOnly) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.ReconcileUntilStable(At(0));
  cluster.FailContainer("demo-1", 137, "OOMKilled");
  json pod = cluster.pod("demo-1");
  pod["metadata"]["labels"]["team"] = "vision";
  pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{...}";
  pod["metadata"]["ownerReferences"].push_back({{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "x"}, {"uid", "u"}});
  pod["status"]["containerStatuses"][0]["image"] = "example/trainer:1";
  pod["status"]["containerStatuses"][0]["imageID"] = "sha256:abc";
  pod["status"]["hostIP"] = "10.0.0.1";
  pod["status"]["podIP"] = "10.1.0.7";
  pod["status"]["conditions"] = json::array(
      {{{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "EvictionByEvictionAPI"},
        {"message", "Eviction API: evicting"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}},
       {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-01-01T00:00:01Z"}}});
  pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  pod["spec"]["nodeName"] = "node-3";
  TrimPod(pod);

  // Of the spec only where and by whom it is scheduled, for the Scheduled condition.
  EXPECT_EQ(pod["spec"], json({{"nodeName", "node-3"}}));
  EXPECT_EQ(pod["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(pod["metadata"]["name"], "demo-1");
  EXPECT_FALSE(pod["metadata"]["labels"].contains("team"));
  EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/rank"], "1");
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  ASSERT_EQ(pod["metadata"]["ownerReferences"].size(), 1u) << "only the controller reference";
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "TrainingJob");
  EXPECT_FALSE(pod["status"]["containerStatuses"][0].contains("image"));
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(pod["status"]["podIP"], "10.1.0.7");
  EXPECT_FALSE(pod["status"].contains("hostIP"));
  // The failure policy reads every condition (DisruptionTarget, onPodConditions); how long a Pod
  // has waited for a node needs PodScheduled's time, and a disruption's time tells trainers done
  // before it from those it stopped.
  EXPECT_EQ(pod["status"]["conditions"],
            json::array({{{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "EvictionByEvictionAPI"},
                          {"message", "Eviction API: evicting"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}},
                         {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-01-01T00:00:01Z"}}}));
}

TEST(CacheTransformsTest, SecretsKeepNoData) {
  FakeCluster cluster(MinimalJob("demo", 1));
  cluster.ReconcileUntilStable(At(0));
  json secret = cluster.secret();
  ASSERT_TRUE(secret.contains("data") || secret.contains("stringData"));
  TrimToOwnership(secret);
  EXPECT_FALSE(secret.contains("data"));
  EXPECT_FALSE(secret.contains("stringData"));
  EXPECT_EQ(secret["metadata"]["name"], "demo-ringleader-token");
}

TEST(CacheTransformsTest, TrainingJobsLoseOnlyManagedFieldsAndLastApplied) {
  json job = MinimalJob("demo", 1);
  job["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  job["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration", "{...}"}, {"team", "x"}};
  json expected = job;
  expected["metadata"].erase("managedFields");
  expected["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  TrimTrainingJob(job);
  EXPECT_EQ(job, expected);
}

TEST(CacheTransformsTest, MalformedObjectsDoNotThrow) {
  for (json object : {json(nullptr), json(3), json::array(), json{{"metadata", "x"}},
                      json{{"metadata", {{"labels", 5}, {"ownerReferences", {1, "a"}}}}, {"status", {{"conditions", 4}}}},
                      json{{"status", {{"containerStatuses", {1, {{"name", "a"}}}}}}}}) {
    json pod = object;
    EXPECT_NO_THROW(TrimPod(pod)) << object.dump();
    json other = object;
    EXPECT_NO_THROW(TrimToOwnership(other)) << object.dump();
    json job = object;
    EXPECT_NO_THROW(TrimTrainingJob(job)) << object.dump();
  }
}

TEST(CacheTransformsTest, PlansFromTrimmedPodsEqualPlansFromFullPods) {
  FakeCluster cluster(MinimalJob("demo", 3));
  ExpectSamePlan(cluster, "new job");
  cluster.Reconcile(At(0));
  ExpectSamePlan(cluster, "ports assigned");
  cluster.ReconcileUntilStable(At(0));
  ExpectSamePlan(cluster, "pods pending");
  for (const char* pod : {"demo-0", "demo-1", "demo-2"}) {
    cluster.SetSidecarStarted(pod, true);
  }
  ExpectSamePlan(cluster, "sidecars started, preflights running");
  for (const char* pod : {"demo-0", "demo-1", "demo-2"}) {
    cluster.PassPreflight(pod);
  }
  ExpectSamePlan(cluster, "preflights passed");
  cluster.SetAllPhases("Running");
  ExpectSamePlan(cluster, "running");
  cluster.ReconcileUntilStable(At(1));
  cluster.FailSidecar("demo-1", 1, "monitor: rank 2 of 3 is gone");
  ExpectSamePlan(cluster, "one sidecar failed");
  cluster.FailContainer("demo-2", 137, "OOMKilled");
  ExpectSamePlan(cluster, "one rank failed");
  cluster.set_graceful_deletion(true);
  cluster.Reconcile(At(2));
  ExpectSamePlan(cluster, "gang restart with terminating pods");
  cluster.FinishDeletions();
  ExpectSamePlan(cluster, "restart backoff");
  cluster.ReconcileUntilStable(At(12));
  cluster.FailPreflight(cluster.CurrentPod(0), 3, "rendezvous: ranks 2 of 3 did not join within 300 s");
  ExpectSamePlan(cluster, "preflight failed");
  cluster.Reconcile(At(13));
  cluster.FinishDeletions();
  cluster.ReconcileUntilStable(At(60));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(60));
  ExpectSamePlan(cluster, "attempt 1's failed rank kept");
  cluster.Disrupt(cluster.CurrentPod(1), "PreemptionByScheduler", "preempted by default/urgent");
  ExpectSamePlan(cluster, "a rank preempted");
  cluster.AddForeignPod("intruder");
  ExpectSamePlan(cluster, "foreign pod");
}

// Kueue's marks (the managed label, the admission gate) and the time of its TerminationTarget
// reach the planner through the cache: without them every job Kueue manages would read as
// unmanaged, and trainers Kueue stopped as done.
TEST(CacheTransformsTest, PlansFromTrimmedKueuePodsEqualPlansFromFullPods) {
  json job = MinimalJob("demo", 2);
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  job["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Kueue"}};
  FakeCluster cluster(job);
  cluster.providers() = {.kueue = true};
  cluster.ReconcileUntilStable(At(0));
  ASSERT_EQ(cluster.pods().size(), 2u);
  ExpectSamePlan(cluster, "pods Kueue never took");
  cluster.pod("demo-0")["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true";
  cluster.pod("demo-1")["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/admission"}}});
  ExpectSamePlan(cluster, "one pod labelled, one gated");
  cluster.ReconcileUntilStable(At(1));
  cluster.pod("demo-1")["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true";
  cluster.pod("demo-1")["spec"].erase("schedulingGates");
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(2));
  ExpectSamePlan(cluster, "admitted and running");
  for (const char* pod : {"demo-0", "demo-1"}) {
    cluster.StopByKueue(pod, "WorkloadEvictedDueToPreempted", "Preempted to accommodate a higher priority Workload");
    cluster.SucceedContainers(pod, At(6));
  }
  ExpectSamePlan(cluster, "preempted, trainers exited 0 on SIGTERM");

  json pod = cluster.pod("demo-0");
  TrimPod(pod);
  EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
  EXPECT_FALSE(pod["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
}

}  // namespace
}  // namespace ringleader::runtime
