// Gang scheduling in the planner: the exact PodGroup each provider gets and when, the labels,
// annotations and scheduler name on every Pod, minAvailable, a provider the cluster lacks, and the
// Scheduled condition from the Pods' PodScheduled conditions.
#include "operator/planner/gang_scheduling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/planner/plan.h"
#include "operator/planner/scheduling_state.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::At;
using testing::FakeCluster;
using testing::FindCondition;
using testing::MinimalJob;
using ::testing::HasSubstr;

json JobWith(const json& scheduling_policy, int replicas = 4) {
  json job = MinimalJob("demo", replicas);
  job["spec"]["runPolicy"]["schedulingPolicy"] = scheduling_policy;
  return job;
}

json KueueJob(int replicas = 4) {
  json job = JobWith({{"provider", "Kueue"}}, replicas);
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  job["metadata"]["uid"] = "3f2a9c1b-0d4e-4b6a-9a51-6c0e2f7d8e90";
  return job;
}

SchedulingProviders All() { return {.coscheduling = true, .volcano = true, .kueue = true, .kubernetes = true}; }

std::vector<std::string> CreatedKinds(const Plan& plan) {
  std::vector<std::string> kinds;
  for (const Action& action : plan.actions) {
    if (const auto* create = std::get_if<CreateObject>(&action)) {
      kinds.push_back(create->object["kind"]);
    }
  }
  return kinds;
}

int CountEvents(const FakeCluster& cluster, const std::string& reason) {
  return static_cast<int>(std::count_if(cluster.events().begin(), cluster.events().end(),
                                        [&](const RecordEvent& e) { return e.reason == reason; }));
}

bool JobConditionTrue(const FakeCluster& cluster, const std::string& type) {
  const json* condition = FindCondition(const_cast<FakeCluster&>(cluster).job_json(), type);
  return condition != nullptr && (*condition)["status"] == "True";
}

// The PodGroup's ownership, as every child of the job has it.
json OwnedMetadata() {
  return {{"name", "demo"},
          {"namespace", "default"},
          {"labels",
           {{"ringleader.dev/job-name", "demo"},
            {"ringleader.dev/job-uid", "job-uid-1"},
            {"app.kubernetes.io/managed-by", "ringleader"}}},
          {"ownerReferences",
           json::array({{{"apiVersion", "ringleader.dev/v1alpha1"},
                         {"kind", "TrainingJob"},
                         {"name", "demo"},
                         {"uid", "job-uid-1"},
                         {"controller", true},
                         {"blockOwnerDeletion", true}}})}};
}

TEST(GangSchedulingTest, CoschedulingPodGroupIsExactAndCreatedBeforeThePods) {
  FakeCluster cluster(JobWith({{"provider", "Coscheduling"}, {"minAvailable", 3}, {"scheduleTimeoutSeconds", 120}}));
  cluster.providers() = All();
  cluster.Reconcile(At(0));  // ports
  const Plan plan = cluster.Reconcile(At(0));
  const std::vector<std::string> kinds = CreatedKinds(plan);
  // Secret, Service and NetworkPolicy, then the group, then its members.
  ASSERT_EQ(kinds.size(), 8u);
  EXPECT_EQ(kinds[3], "PodGroup");
  EXPECT_EQ(std::count(kinds.begin() + 4, kinds.end(), "Pod"), 4);
  ASSERT_EQ(cluster.pod_groups().size(), 1u);
  json group = cluster.pod_groups().at("demo");
  group["metadata"].erase("uid");  // the fake's
  EXPECT_EQ(group, json({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                         {"kind", "PodGroup"},
                         {"metadata", OwnedMetadata()},
                         {"spec", {{"minMember", 3}, {"scheduleTimeoutSeconds", 120}}}}));
  for (const auto& [name, pod] : cluster.pods()) {
    EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "demo") << name;
    EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler") << name;
    EXPECT_FALSE(pod["metadata"].contains("annotations")) << name;
  }
}

TEST(GangSchedulingTest, CoschedulingMinMemberDefaultsToReplicasAndTimeoutIsLeftOut) {
  FakeCluster cluster(JobWith({{"provider", "Coscheduling"}}, 3));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  EXPECT_EQ(cluster.pod_groups().at("demo")["spec"], json({{"minMember", 3}}));
}

TEST(GangSchedulingTest, VolcanoPodGroupIsExactAndPodsCarryItsAnnotationAndScheduler) {
  FakeCluster cluster(JobWith({{"provider", "Volcano"},
                               {"minAvailable", 2},
                               {"queue", "research"},
                               {"priorityClassName", "high-priority"}}));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  json group = cluster.pod_groups().at("demo");
  group["metadata"].erase("uid");
  EXPECT_EQ(group, json({{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                         {"kind", "PodGroup"},
                         {"metadata", OwnedMetadata()},
                         {"spec", {{"minMember", 2}, {"queue", "research"}, {"priorityClassName", "high-priority"}}}}));
  ASSERT_EQ(cluster.pods().size(), 4u);
  for (const auto& [name, pod] : cluster.pods()) {
    EXPECT_EQ(pod["metadata"]["annotations"], json({{"scheduling.k8s.io/group-name", "demo"}})) << name;
    EXPECT_EQ(pod["spec"]["schedulerName"], "volcano") << name;
    EXPECT_FALSE(pod["metadata"]["labels"].contains("scheduling.x-k8s.io/pod-group")) << name;
  }
}

TEST(GangSchedulingTest, VolcanoKeepsTheTemplatesOwnAnnotations) {
  json job = JobWith({{"provider", "Volcano"}});
  job["spec"]["template"]["metadata"]["annotations"] = {{"team", "vision"}};
  FakeCluster cluster(job);
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  EXPECT_EQ(cluster.pods().at("demo-0")["metadata"]["annotations"],
            json({{"team", "vision"}, {"scheduling.k8s.io/group-name", "demo"}}));
  EXPECT_EQ(cluster.pod_groups().at("demo")["spec"], json({{"minMember", 4}}));
}

TEST(GangSchedulingTest, KueuePodsCarryTheGroupLabelsAndAnnotationsAndNoPodGroupIsMade) {
  FakeCluster cluster(KueueJob());
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  EXPECT_TRUE(cluster.pod_groups().empty());
  ASSERT_EQ(cluster.pods().size(), 4u);
  for (const auto& [name, pod] : cluster.pods()) {
    const json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(labels["kueue.x-k8s.io/queue-name"], "team-a") << name;
    EXPECT_EQ(labels["kueue.x-k8s.io/pod-group-name"], "demo-3f2a9c1b-0") << name;
    EXPECT_EQ(pod["metadata"]["annotations"], json({{"kueue.x-k8s.io/pod-group-total-count", "4"},
                                                    {"kueue.x-k8s.io/retriable-in-group", "false"},
                                                    {"kueue.x-k8s.io/role-hash", "trainer"}}))
        << name;
    // Kueue gates the Pods itself; the scheduler stays the template's (here the default).
    EXPECT_FALSE(pod["spec"].contains("schedulerName")) << name;
  }
}

TEST(GangSchedulingTest, KueueGangRestartIsANewGroupSoKueueAdmitsItAfresh) {
  FakeCluster cluster(KueueJob(2));
  cluster.providers() = All();
  cluster.job_json()["spec"]["runPolicy"]["failurePolicy"]["restartBackoff"]["initialSeconds"] = 0;
  cluster.ReconcileUntilStable(At(0));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(1));
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(2));
  ASSERT_EQ(cluster.pods().size(), 3u);
  for (const char* name : {"demo-0-attempt-1", "demo-1-attempt-1"}) {
    const json& pod = cluster.pods().at(name);
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "1") << name;
    EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"], "demo-3f2a9c1b-1") << name;
  }
  // The failed rank's Pod kept for kubectl logs stays in its own attempt's (finished) group.
  EXPECT_EQ(cluster.pods().at("demo-1")["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"], "demo-3f2a9c1b-0");
}

// A job deleted and made again under the same name gets a new UID, so its Pods never join the old
// job's Workload, which may outlive it until garbage collection removes it.
TEST(GangSchedulingTest, AKueueGroupNameCarriesTheJobsUidAndFitsALabel) {
  json again = KueueJob();
  again["metadata"]["uid"] = "c0ffee00-1111-4222-8333-444455556666";
  EXPECT_NE(KueueGroupName(FakeCluster(KueueJob()).Job(), 0), KueueGroupName(FakeCluster(again).Job(), 0));
  json longest = KueueJob();
  longest["metadata"]["name"] = std::string(api::kMaxKueueJobNameLength, 'j');
  const std::string name = KueueGroupName(FakeCluster(longest).Job(), 999'999'999);
  EXPECT_EQ(name, std::string(44, 'j') + "-3f2a9c1b-999999999");
  EXPECT_EQ(name.size(), 63u);
}

// Kubernetes' own gang scheduling: a scheduling.k8s.io/v1beta1 PodGroup per attempt, made before
// its Pods, each Pod naming it in spec.schedulingGroup; no Workload, no scheduler name.
TEST(GangSchedulingTest, KubernetesPodGroupIsExactAndEveryPodJoinsIt) {
  json job = JobWith({{"provider", "Kubernetes"}, {"minAvailable", 3}});
  job["metadata"]["uid"] = "3f2a9c1b-0d4e-4b6a-9a51-6c0e2f7d8e90";
  FakeCluster cluster(job);
  cluster.providers() = All();
  cluster.Reconcile(At(0));  // ports
  const Plan plan = cluster.Reconcile(At(0));
  const std::vector<std::string> kinds = CreatedKinds(plan);
  ASSERT_EQ(kinds.size(), 8u);
  EXPECT_EQ(kinds[3], "PodGroup");
  ASSERT_EQ(cluster.pod_groups().size(), 1u);
  json group = cluster.pod_groups().at("demo-3f2a9c1b-0");
  group["metadata"].erase("uid");
  json metadata = OwnedMetadata();
  metadata["name"] = "demo-3f2a9c1b-0";
  metadata["labels"]["ringleader.dev/job-uid"] = "3f2a9c1b-0d4e-4b6a-9a51-6c0e2f7d8e90";
  metadata["ownerReferences"][0]["uid"] = "3f2a9c1b-0d4e-4b6a-9a51-6c0e2f7d8e90";
  EXPECT_EQ(group, json({{"apiVersion", "scheduling.k8s.io/v1beta1"},
                         {"kind", "PodGroup"},
                         {"metadata", metadata},
                         {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", 3}}}}}}}}));
  ASSERT_EQ(cluster.pods().size(), 4u);
  for (const auto& [name, pod] : cluster.pods()) {
    EXPECT_EQ(pod["spec"]["schedulingGroup"], json({{"podGroupName", "demo-3f2a9c1b-0"}})) << name;
    EXPECT_FALSE(pod["spec"].contains("schedulerName")) << name;
    EXPECT_FALSE(pod["metadata"].contains("annotations")) << name;
  }
}

// A finished attempt's group never holds the next one back: the restart gets a group of its own.
TEST(GangSchedulingTest, KubernetesGangRestartGetsAFreshPodGroup) {
  FakeCluster cluster(JobWith({{"provider", "Kubernetes"}}, 2));
  cluster.providers() = All();
  cluster.job_json()["spec"]["runPolicy"]["failurePolicy"]["restartBackoff"]["initialSeconds"] = 0;
  cluster.ReconcileUntilStable(At(0));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(1));
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.pod_groups().size(), 2u);
  EXPECT_EQ(cluster.pod_groups().at("demo-job-uid--1")["spec"]["schedulingPolicy"]["gang"]["minCount"], 2);
  for (const char* name : {"demo-0-attempt-1", "demo-1-attempt-1"}) {
    EXPECT_EQ(cluster.pods().at(name)["spec"]["schedulingGroup"]["podGroupName"], "demo-job-uid--1") << name;
  }
}

TEST(GangSchedulingTest, KubernetesWithoutTheWorkloadApiIsSchedulerNotInstalledNamingTheGate) {
  FakeCluster cluster(JobWith({{"provider", "Kubernetes"}}));
  cluster.providers() = {.coscheduling = true, .volcano = true, .kueue = true, .kubernetes = false};
  cluster.ReconcileUntilStable(At(0));
  EXPECT_TRUE(cluster.pods().empty());
  EXPECT_TRUE(cluster.pod_groups().empty());
  EXPECT_EQ(cluster.ConditionReason("Scheduled"), "SchedulerNotInstalled");
  EXPECT_THAT(cluster.ConditionMessage("Scheduled"),
              HasSubstr("provider is Kubernetes, but the cluster does not serve podgroups.scheduling.k8s.io/v1beta1; "
                        "turn on the feature gate GenericWorkload (kube-apiserver, kube-scheduler) and "
                        "--runtime-config=scheduling.k8s.io/v1beta1=true"));
  cluster.providers().kubernetes = true;
  cluster.ReconcileUntilStable(At(60));
  EXPECT_EQ(cluster.pods().size(), 4u);
  EXPECT_EQ(cluster.pod_groups().size(), 1u);
}

// Kueue's webhook labels and gates each Pod it takes. Pods it never saw (the namespace is not
// selected, or the pod integration is off) are a gang that is neither queued nor placed whole:
// said in one reconcile, once, with the likely causes.
TEST(GangSchedulingTest, PodsKueueNeverTookAreAWarningAndAConditionNamingTheLikelyCause) {
  FakeCluster cluster(KueueJob(2));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  ASSERT_EQ(cluster.pods().size(), 2u);
  EXPECT_EQ(cluster.ConditionReason("KueueManaged"), "NotManagedByKueue");
  const std::string message = cluster.ConditionMessage("KueueManaged");
  EXPECT_THAT(message, HasSubstr("pod demo-0 has neither the label kueue.x-k8s.io/managed nor the scheduling gate "
                                 "kueue.x-k8s.io/admission"));
  EXPECT_THAT(message, HasSubstr("namespace \"default\" is not selected by Kueue's managedJobsNamespaceSelector, "
                                 "or Kueue's pod integration (integrations.frameworks: pod) is off"));
  EXPECT_EQ(CountEvents(cluster, "NotManagedByKueue"), 1);
  cluster.ReconcileUntilStable(At(5));
  EXPECT_EQ(CountEvents(cluster, "NotManagedByKueue"), 1);
}

TEST(GangSchedulingTest, PodsKueueTookMakeKueueManagedTrue) {
  FakeCluster cluster(KueueJob(2));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  // What Kueue's webhook does at creation: the label on one Pod, the gate still on the other.
  cluster.pod("demo-0")["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true";
  cluster.pod("demo-1")["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/admission"}}});
  cluster.ReconcileUntilStable(At(1));
  EXPECT_TRUE(JobConditionTrue(cluster, "KueueManaged")) << cluster.status().dump(2);
  // No other provider gets the condition.
  FakeCluster plain(JobWith({{"provider", "Volcano"}}));
  plain.providers() = All();
  plain.ReconcileUntilStable(At(0));
  EXPECT_EQ(FindCondition(plain.job_json(), "KueueManaged"), nullptr);
}

TEST(GangSchedulingTest, KubernetesTopologyIsThePodGroupsConstraint) {
  FakeCluster cluster(
      JobWith({{"provider", "Kubernetes"}, {"topology", {{"mode", "Required"}, {"key", "example.com/block"}}}}));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  ASSERT_EQ(cluster.pod_groups().size(), 1u);
  EXPECT_EQ(cluster.pod_groups().begin()->second["spec"],
            json({{"schedulingPolicy", {{"gang", {{"minCount", 4}}}}},
                  {"schedulingConstraints", {{"topology", json::array({{{"key", "example.com/block"}}})}}}}));
}

// Kueue's topology-aware scheduling reads the pod set's topology and orders the group's Pods by
// the rank label, so consecutive ranks share the closest domain.
TEST(GangSchedulingTest, KueueTopologyIsThePodSetAnnotationsWithTheRankAsPodIndex) {
  for (const auto& [mode, annotation] : {std::pair{"Required", "kueue.x-k8s.io/podset-required-topology"},
                                         std::pair{"Preferred", "kueue.x-k8s.io/podset-preferred-topology"}}) {
    json job = KueueJob(2);
    job["spec"]["runPolicy"]["schedulingPolicy"]["topology"] = {{"mode", mode}, {"key", "example.com/rack"}};
    FakeCluster cluster(job);
    cluster.providers() = All();
    cluster.ReconcileUntilStable(At(0));
    ASSERT_EQ(cluster.pods().size(), 2u);
    for (const auto& [name, pod] : cluster.pods()) {
      const json& notes = pod["metadata"]["annotations"];
      EXPECT_EQ(notes[annotation], "example.com/rack") << name;
      EXPECT_EQ(notes["kueue.x-k8s.io/pod-group-pod-index-label"], "ringleader.dev/rank") << name;
      EXPECT_EQ(notes.size(), 5u) << notes.dump();
    }
  }
}

TEST(GangSchedulingTest, SchedulerNameOverrideWinsAndProviderNoneLeavesPodsAlone) {
  FakeCluster custom(JobWith({{"provider", "Coscheduling"}, {"schedulerName", "gang-scheduler"}}));
  custom.providers() = All();
  custom.ReconcileUntilStable(At(0));
  EXPECT_EQ(custom.pods().at("demo-2")["spec"]["schedulerName"], "gang-scheduler");

  FakeCluster plain(MinimalJob());
  plain.ReconcileUntilStable(At(0));
  EXPECT_TRUE(plain.pod_groups().empty());
  const json& pod = plain.pods().at("demo-0");
  EXPECT_FALSE(pod["spec"].contains("schedulerName"));
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_EQ(FindCondition(plain.job_json(), "Scheduled"), nullptr);  // no Pod placed yet
}

TEST(GangSchedulingTest, AGroupIsAskedForOnlyWithPodsToCreate) {
  FakeCluster cluster(JobWith({{"provider", "Volcano"}}));
  cluster.providers() = All();
  cluster.ReconcileUntilStable(At(0));
  cluster.SetAllPhases("Running");
  const Plan later = cluster.Reconcile(At(5));
  EXPECT_TRUE(CreatedKinds(later).empty());
}

TEST(GangSchedulingTest, MissingProviderSetsScheduledFalseNamingTheCrdAndCreatesNoPods) {
  FakeCluster cluster(JobWith({{"provider", "Volcano"}}));
  cluster.providers() = {.coscheduling = true, .volcano = false, .kueue = true};
  cluster.Reconcile(At(0));  // ports
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_TRUE(cluster.pods().empty());
  EXPECT_TRUE(cluster.pod_groups().empty());
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(*plan.requeue_after, std::chrono::seconds(60));
  const json* scheduled = FindCondition(cluster.job_json(), "Scheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ((*scheduled)["status"], "False");
  EXPECT_EQ((*scheduled)["reason"], "SchedulerNotInstalled");
  EXPECT_THAT((*scheduled)["message"].get<std::string>(),
              HasSubstr("provider is Volcano, but the cluster does not serve podgroups.scheduling.volcano.sh"));
  // Planned again and again while it is missing: still one Event.
  cluster.ReconcileUntilStable(At(60));
  cluster.ReconcileUntilStable(At(120));
  EXPECT_EQ(CountEvents(cluster, "SchedulerNotInstalled"), 1);
  EXPECT_TRUE(cluster.pods().empty());

  // Discovery finds it: the Pods come and the condition goes.
  cluster.providers().volcano = true;
  cluster.ReconcileUntilStable(At(180));
  EXPECT_EQ(cluster.pods().size(), 4u);
  EXPECT_EQ(cluster.pod_groups().size(), 1u);
  EXPECT_EQ(FindCondition(cluster.job_json(), "Scheduled"), nullptr);
}

TEST(GangSchedulingTest, MissingKueueAndCoschedulingNameTheirCrds) {
  FakeCluster kueue(KueueJob());
  kueue.ReconcileUntilStable(At(0));
  EXPECT_THAT((*FindCondition(kueue.job_json(), "Scheduled"))["message"].get<std::string>(),
              HasSubstr("workloads.kueue.x-k8s.io"));
  FakeCluster coscheduling(JobWith({{"provider", "Coscheduling"}}));
  coscheduling.ReconcileUntilStable(At(0));
  EXPECT_THAT((*FindCondition(coscheduling.job_json(), "Scheduled"))["message"].get<std::string>(),
              HasSubstr("podgroups.scheduling.x-k8s.io"));
}

// What kube-scheduler writes on a Pod it cannot place.
void Unschedulable(FakeCluster& cluster, const std::string& pod, const std::string& since,
                   const std::string& message, const std::string& reason = "Unschedulable") {
  json& status = cluster.pod(pod)["status"];
  status["conditions"] = json::array({{{"type", "PodScheduled"},
                                       {"status", "False"},
                                       {"reason", reason},
                                       {"message", message},
                                       {"lastTransitionTime", since}}});
}

void Place(FakeCluster& cluster, const std::string& pod) {
  json& status = cluster.pod(pod)["status"];
  status["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  cluster.pod(pod)["spec"]["nodeName"] = "node-1";
}

TEST(GangSchedulingTest, ScheduledTurnsFalseInTheSchedulersWordsOnlyPastTheThreshold) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.ReconcileUntilStable(At(0));
  Place(cluster, "demo-0");
  // At(0) is 2026-01-01T00:00:00Z.
  Unschedulable(cluster, "demo-1", "2026-01-01T00:00:10Z", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");

  const Plan early = cluster.Reconcile(At(40));
  EXPECT_EQ(FindCondition(cluster.job_json(), "Scheduled"), nullptr);
  ASSERT_TRUE(early.requeue_after.has_value());
  EXPECT_EQ(*early.requeue_after, std::chrono::seconds(30));  // 60 s after 00:00:10

  cluster.ReconcileUntilStable(At(70));
  const json* scheduled = FindCondition(cluster.job_json(), "Scheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ((*scheduled)["status"], "False");
  EXPECT_EQ((*scheduled)["reason"], "Unschedulable");
  EXPECT_EQ((*scheduled)["message"],
            "rank 1 (pod demo-1) is not scheduled after more than 60 s: 0/1 nodes are available: 1 Insufficient "
            "nvidia.com/gpu.");
  ASSERT_EQ(CountEvents(cluster, "Unschedulable"), 1);
  // Planned again later: no new Event, the same status (nothing to write).
  EXPECT_TRUE(cluster.Reconcile(At(200)).empty());
  EXPECT_EQ(CountEvents(cluster, "Unschedulable"), 1);

  Place(cluster, "demo-1");
  cluster.ReconcileUntilStable(At(210));
  scheduled = FindCondition(cluster.job_json(), "Scheduled");
  EXPECT_EQ((*scheduled)["status"], "True");
  EXPECT_EQ((*scheduled)["reason"], "AllPodsScheduled");
  EXPECT_EQ(CountEvents(cluster, "Scheduled"), 1);
}

TEST(GangSchedulingTest, ThresholdComesFromTheConfig) {
  FakeCluster cluster(MinimalJob("demo", 1));
  cluster.config().unschedulable_after = std::chrono::seconds(5);
  cluster.ReconcileUntilStable(At(0));
  Unschedulable(cluster, "demo-0", "2026-01-01T00:00:00Z", "Scheduling is blocked due to non-empty scheduling gates",
                "SchedulingGated");
  cluster.ReconcileUntilStable(At(6));
  const json* scheduled = FindCondition(cluster.job_json(), "Scheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ((*scheduled)["reason"], "SchedulingGated");
  EXPECT_THAT((*scheduled)["message"].get<std::string>(), HasSubstr("rank 0 (pod demo-0)"));
}

// A gate says only that something holds the Pods; for a Kueue job the condition adds why, in
// Kueue's words from the attempt's Workload, and only for a gated wait.
TEST(GangSchedulingTest, AGatedKueueGangSaysWhyKueueHoldsIt) {
  FakeCluster cluster(KueueJob(1));
  cluster.providers() = All();
  cluster.config().unschedulable_after = std::chrono::seconds(5);
  cluster.ReconcileUntilStable(At(0));
  cluster.queue_verdict() =
      "Workload demo-3f2a9c1b-0 QuotaReserved=False (Pending): couldn't assign flavors to pod set trainer: "
      "insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 2 more needed";
  Unschedulable(cluster, "demo-0", "2026-01-01T00:00:00Z", "Scheduling is blocked due to non-empty scheduling gates",
                "SchedulingGated");
  cluster.ReconcileUntilStable(At(6));
  const json* scheduled = FindCondition(cluster.job_json(), "Scheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ((*scheduled)["reason"], "SchedulingGated");
  EXPECT_EQ((*scheduled)["message"],
            "rank 0 (pod demo-0) is not scheduled after more than 5 s: Scheduling is blocked due to non-empty "
            "scheduling gates; Kueue: Workload demo-3f2a9c1b-0 QuotaReserved=False (Pending): couldn't assign "
            "flavors to pod set trainer: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 2 "
            "more needed");
  EXPECT_THAT(cluster.EventMessages("Unschedulable"),
              ::testing::Contains(HasSubstr("; Kueue: Workload demo-3f2a9c1b-0 QuotaReserved=False")));
  // Nothing watched changes while Kueue holds the gang: the Workload is read again soon.
  const Plan again = cluster.PlanNow(At(6));
  ASSERT_TRUE(again.requeue_after.has_value());
  EXPECT_LE(*again.requeue_after, std::chrono::seconds(15));

  // The scheduler's own verdict stands alone.
  Unschedulable(cluster, "demo-0", "2026-01-01T00:00:00Z", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  cluster.ReconcileUntilStable(At(7));
  scheduled = FindCondition(cluster.job_json(), "Scheduled");
  EXPECT_EQ((*scheduled)["message"],
            "rank 0 (pod demo-0) is not scheduled after more than 5 s: 0/1 nodes are available: 1 Insufficient "
            "nvidia.com/gpu.");
}

TEST(GangSchedulingTest, RunningPodsMakeScheduledTrueWithoutAnEvent) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.ReconcileUntilStable(At(0));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(1));
  const json* scheduled = FindCondition(cluster.job_json(), "Scheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ((*scheduled)["status"], "True");
  EXPECT_EQ(CountEvents(cluster, "Scheduled"), 0);  // only a recovery from False is announced
}

TEST(SchedulingStateTest, APodNoSchedulerLookedAtIsNamedWithItsScheduler) {
  const json pod = {{"metadata", {{"name", "demo-3"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
                    {"spec", {{"schedulerName", "volcano"}}},
                    {"status", {{"phase", "Pending"}}}};
  const SchedulingVerdict verdict =
      JudgeScheduling({{3, "demo-3", &pod}}, 4, At(100), std::chrono::seconds(60));
  EXPECT_EQ(verdict.state, SchedulingVerdict::State::kUnschedulable);
  EXPECT_EQ(verdict.reason, "NotScheduled");
  EXPECT_EQ(verdict.message,
            "rank 3 (pod demo-3) is not scheduled after more than 60 s: no scheduler has looked at it; is "
            "\"volcano\" running?");
}

TEST(SchedulingStateTest, AGangWithARankMissingIsNotAllScheduled) {
  const json pod = {{"spec", {{"nodeName", "n1"}}}, {"status", {{"phase", "Pending"}}}};
  EXPECT_EQ(JudgeScheduling({{0, "demo-0", &pod}}, 2, At(0), std::chrono::seconds(60)).state,
            SchedulingVerdict::State::kWaiting);
  EXPECT_EQ(JudgeScheduling({{0, "demo-0", &pod}}, 1, At(0), std::chrono::seconds(60)).state,
            SchedulingVerdict::State::kAllScheduled);
}

}  // namespace
}  // namespace ringleader::planner
