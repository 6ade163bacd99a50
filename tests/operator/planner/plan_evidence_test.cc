// Planner tests of the evidence a gang restart keeps: Pod names that carry the attempt (hostname
// and subdomain unchanged), the failed rank's Pod of each of the last 3 attempts kept for
// `kubectl logs`, and that a kept Pod neither blocks the next attempt nor holds the ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "operator/planner/plan.h"
#include "operator/planner/pod_builder.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::At;
using testing::EnvValue;
using testing::FakeCluster;
using testing::FindCondition;
using testing::MinimalJob;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

json Job(int replicas, int backoff_limit = 3, int initial_backoff = 0) {
  json job = MinimalJob("demo", replicas);
  job["spec"]["runPolicy"] = {{"backoffLimit", backoff_limit},
                              {"failurePolicy", {{"restartBackoff", {{"initialSeconds", initial_backoff}}}}}};
  return job;
}

std::vector<std::string> DeletedPods(const Plan& plan) {
  std::vector<std::string> names = testing::DeletedPodNames(plan);
  std::sort(names.begin(), names.end());
  return names;
}

int CreatedPods(const Plan& plan) { return static_cast<int>(testing::CreatedPodNames(plan).size()); }

// The trainer exited non-zero and the sidecar's monitor failed on the lost peer; the kubelet is
// still stopping the sidecar, so the Pod's phase is not Failed yet.
void TrainerExitedSidecarStopping(FakeCluster& cluster, const std::string& pod) {
  cluster.pod(pod)["status"]["containerStatuses"] = json::array(
      {{{"name", "trainer"},
        {"state",
         {{"terminated",
           {{"exitCode", 1}, {"reason", "Error"}, {"finishedAt", api::FormatTime(cluster.now())}}}}}}});
  cluster.FailSidecar(pod, 1, "failed: monitor: rank 0 of 2 is gone");
}

TEST(EvidenceTest, PodNamesCarryTheAttemptFromTheFirstRestartOnWhileDnsNamesStay) {
  FakeCluster cluster(Job(2));
  cluster.StartRunning(At(0));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-1"));
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0-attempt-1", "demo-1", "demo-1-attempt-1"));
  for (const int rank : {0, 1}) {
    const std::string name = "demo-" + std::to_string(rank) + "-attempt-1";
    const json& pod = cluster.pods().at(name);
    EXPECT_EQ(pod["metadata"]["name"], name);
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/rank"], std::to_string(rank));
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "1");
    EXPECT_EQ(pod["spec"]["hostname"], "demo-" + std::to_string(rank)) << name;
    EXPECT_EQ(pod["spec"]["subdomain"], "demo") << name;
    EXPECT_EQ(EnvValue(pod["spec"]["containers"][0], "MASTER_ADDR"), "demo-0.demo.default.svc.cluster.local");
  }
  EXPECT_EQ(cluster.status()["masterAddr"], "demo-0.demo.default.svc.cluster.local");
}

// The longest job name validation admits still gives valid Pod names (DNS subdomains, 253
// characters) and hostnames (DNS labels, 63), whatever the attempt.
TEST(EvidenceTest, AttemptNamesFitTheLongestJobName) {
  json object = MinimalJob(std::string(61, 'j'), 4);
  object["metadata"]["uid"] = "uid";
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  ASSERT_TRUE(errors.empty());
  ASSERT_TRUE(api::Validate(job, {}).empty()) << "61 characters is the longest name for 4 ranks";
  const std::string name = PodName(job, 3, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(name, std::string(61, 'j') + "-3-attempt-9223372036854775807");
  EXPECT_LE(name.size(), 253u);
  EXPECT_TRUE(std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  }));
  EXPECT_EQ(PodHostname(job, 3).size(), 63u);
  EXPECT_EQ(PodName(job, 3, 0), PodHostname(job, 3));
}

TEST(EvidenceTest, ARestartKeepsTheFailedRanksPodAndDeletesTheOthers) {
  FakeCluster cluster(Job(4));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-2", 137, "OOMKilled");
  const Plan restart = cluster.Reconcile(At(1));
  EXPECT_THAT(DeletedPods(restart), ElementsAre("demo-0", "demo-1", "demo-3"));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("; pod demo-2 kept for kubectl logs"));
  const auto event = std::find_if(cluster.events().rbegin(), cluster.events().rend(),
                                  [](const RecordEvent& e) { return e.reason == "Restarting"; });
  ASSERT_NE(event, cluster.events().rend());
  EXPECT_THAT(event->message, HasSubstr("; pod demo-2 kept for kubectl logs"));
  // Later passes leave it alone while the new attempt runs, and it is not counted there.
  cluster.ReconcileUntilStable(At(1));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.pods().at("demo-2")["status"]["phase"], "Failed");
  EXPECT_EQ(cluster.status()["replicas"]["failed"], 0);
  EXPECT_EQ(cluster.status()["replicas"]["active"], 4);
}

TEST(EvidenceTest, TheEarliestFailureIsKeptAndNamedFirst) {
  FakeCluster cluster(Job(4));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error", "trainer", At(8));  // lost its peer
  cluster.FailContainer("demo-3", 3, "Error", "trainer", At(5));  // the cause
  const Plan restart = cluster.Reconcile(At(10));
  EXPECT_THAT(DeletedPods(restart), ElementsAre("demo-0", "demo-1", "demo-2"));
  const std::string message = cluster.ConditionMessage("Restarting");
  EXPECT_THAT(message, ::testing::StartsWith("rank 3 (pod demo-3) container trainer exited with code 3 (Error); "
                                             "rank 1 (pod demo-1)"));
  EXPECT_THAT(message, HasSubstr("; pod demo-3 kept for kubectl logs"));
}

// Exit times have one-second resolution: of two failures in the same second, either may have
// brought the other down, so both Pods stay.
TEST(EvidenceTest, FailuresInTheSameSecondAreAllKept) {
  FakeCluster cluster(Job(4));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error", "trainer", At(5));  // lost its peer, in the same second
  cluster.FailContainer("demo-2", 3, "Error", "trainer", At(5));  // the cause
  const Plan restart = cluster.Reconcile(At(10));
  EXPECT_THAT(DeletedPods(restart), ElementsAre("demo-1", "demo-3"));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("; pods demo-0, demo-2 kept for kubectl logs"));
  cluster.ReconcileUntilStable(At(20));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-0-attempt-1", "demo-1-attempt-1", "demo-2",
                                             "demo-2-attempt-1", "demo-3-attempt-1"));
}

// Its trainers still run: kept, it would hold its GPUs and ports through the next attempt.
TEST(EvidenceTest, APodWhoseOnlyItsSidecarFailedIsDeleted) {
  FakeCluster cluster(Job(2));
  cluster.StartRunning(At(0));
  cluster.pod("demo-1")["status"]["containerStatuses"] =
      json::array({{{"name", "trainer"}, {"state", {{"running", json::object()}}}}});
  cluster.FailSidecar("demo-1", 1, "failed: monitor: wrong data from rank 0");
  const Plan restart = cluster.Reconcile(At(1));
  EXPECT_THAT(DeletedPods(restart), ElementsAre("demo-0", "demo-1"));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("rank 1 (pod demo-1) sidecar failed"));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), Not(HasSubstr("kept")));
  cluster.ReconcileUntilStable(At(1));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0-attempt-1", "demo-1-attempt-1"));
}

TEST(EvidenceTest, TheFourthRestartDeletesTheOldestKeptPod) {
  FakeCluster cluster(Job(2, 10));
  cluster.StartRunning(At(0));
  std::vector<std::string> kept;
  for (int attempt = 0; attempt < 4; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const std::string failed = cluster.CurrentPod(1);
    std::vector<std::string> deleted = {cluster.CurrentPod(0)};
    cluster.FailContainer(failed, 1, "Error");
    const Plan restart = cluster.Reconcile(At(attempt * 10 + 1));
    if (attempt == 3) {
      deleted.push_back("demo-1");  // attempt 0's evidence, beyond the last 3
      std::sort(deleted.begin(), deleted.end());
    }
    EXPECT_EQ(DeletedPods(restart), deleted);
    kept.push_back(failed);
    cluster.ReconcileUntilStable(At(attempt * 10 + 1));
    cluster.SetAllPhases("Running");
    cluster.ReconcileUntilStable(At(attempt * 10 + 2));
    ASSERT_EQ(cluster.status()["state"], "Running");
  }
  EXPECT_THAT(kept, ElementsAre("demo-1", "demo-1-attempt-1", "demo-1-attempt-2", "demo-1-attempt-3"));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0-attempt-4", "demo-1-attempt-1", "demo-1-attempt-2",
                                             "demo-1-attempt-3", "demo-1-attempt-4"));
}

// A kept Pod whose kubelet is still stopping its sidecar holds nothing the next attempt needs; a
// deleted Pod still terminating may still hold the ports.
TEST(EvidenceTest, TheNewAttemptWaitsForDeletedPodsButNotForTheKeptOne) {
  FakeCluster cluster(Job(2));
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  TrainerExitedSidecarStopping(cluster, "demo-1");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_THAT(cluster.ConditionMessage("Restarting"), HasSubstr("; pod demo-1 kept for kubectl logs"));
  EXPECT_FALSE(cluster.pods().at("demo-1")["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(cluster.pods().at("demo-0")["metadata"].contains("deletionTimestamp"));

  EXPECT_EQ(CreatedPods(cluster.Reconcile(At(2))), 0) << "demo-0 is still terminating";
  cluster.FinishDeletions();
  EXPECT_EQ(CreatedPods(cluster.Reconcile(At(3))), 2) << "demo-1 is Running, but kept";
  cluster.ReconcileUntilStable(At(3));
  EXPECT_EQ((*FindCondition(cluster.job_json(), "Created"))["status"], "True");
  EXPECT_EQ(cluster.pods().at("demo-1")["status"]["phase"], "Running");
  EXPECT_FALSE(cluster.pods().at("demo-1")["metadata"].contains("deletionTimestamp"));
}

// The job fails for good while a kept Pod is still finishing: the kept Pod stays, and the ports
// are released without waiting for it.
TEST(EvidenceTest, AFinishedJobReleasesItsPortsWithKeptPodsPresent) {
  FakeCluster cluster(Job(2, 1));
  cluster.StartRunning(At(0));
  TrainerExitedSidecarStopping(cluster, "demo-1");
  cluster.ReconcileUntilStable(At(1));
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(2));
  ASSERT_EQ(cluster.status()["state"], "Running");
  ASSERT_EQ(cluster.pods().at("demo-1")["status"]["phase"], "Running");

  cluster.FailContainer("demo-0-attempt-1", 1, "Error");
  cluster.ReconcileUntilStable(At(3));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0-attempt-1", "demo-1"));
  EXPECT_EQ(cluster.status()["portsReleased"], true);
  EXPECT_FALSE(cluster.ledger().Find("job-uid-1").has_value());
}

TEST(EvidenceTest, ASucceededJobKeepsItsEvidenceUntilTheTtlDeletesTheJob) {
  json job = Job(2);
  job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.status()["replicas"]["succeeded"], 2);
  EXPECT_EQ(cluster.status()["replicas"]["failed"], 0);
  EXPECT_EQ(cluster.status()["portsReleased"], true);
  cluster.ReconcileUntilStable(At(61));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("demo-0", "demo-0-attempt-1", "demo-1-attempt-1"));
  EXPECT_FALSE(cluster.job_deleted());
  cluster.Reconcile(At(62));
  EXPECT_TRUE(cluster.job_deleted()) << "garbage collection takes the kept Pods with the job";
}

TEST(EvidenceTest, SuspendDeletesTheKeptPodsToo) {
  FakeCluster cluster(Job(2));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  ASSERT_TRUE(cluster.pods().contains("demo-0"));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
  cluster.ReconcileUntilStable(At(2));
  EXPECT_TRUE(cluster.pods().empty());
}

}  // namespace
}  // namespace ringleader::planner
