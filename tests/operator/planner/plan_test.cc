// Table-style tests of the pure planner: the objects a job gets, idempotence, gang restarts,
// preflight and sidecar failures, backoff, suspend and resume, deadline, TTL, hostNetwork ports,
// invalid specs, port exhaustion.
#include "operator/planner/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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
using ::testing::HasSubstr;

template <typename T>
int Count(const Plan& plan) {
  int n = 0;
  for (const Action& action : plan.actions) {
    n += std::holds_alternative<T>(action) ? 1 : 0;
  }
  return n;
}

int CountCreated(const Plan& plan, const std::string& kind) {
  int n = 0;
  for (const Action& action : plan.actions) {
    if (const auto* create = std::get_if<CreateObject>(&action)) {
      n += create->object["kind"] == kind ? 1 : 0;
    }
  }
  return n;
}

bool HasEvent(const FakeCluster& cluster, const std::string& reason) {
  for (const RecordEvent& event : cluster.events()) {
    if (event.reason == reason) {
      return true;
    }
  }
  return false;
}

const json& Sidecar(const json& pod) { return pod["spec"]["initContainers"].front(); }
const json& Preflight(const json& pod) { return pod["spec"]["initContainers"].back(); }
const json& Trainer(const json& pod) { return pod["spec"]["containers"][0]; }

TEST(PlanTest, NewJobGetsPortsInStatusBeforeAnyPodExists) {
  FakeCluster cluster(MinimalJob());
  const Plan first = cluster.Reconcile(At(0));
  EXPECT_EQ(Count<CreateObject>(first), 0);
  ASSERT_EQ(Count<UpdateStatus>(first), 1);
  ASSERT_TRUE(first.reserve_ports.has_value());
  EXPECT_EQ(first.reserve_ports->base, 61000);
  const json& status = cluster.job_json()["status"];
  EXPECT_EQ(status["ports"], json({{"master", 61000}, {"rendezvous", 61001}, {"metrics", 61002}, {"spare", 61003}}));
  EXPECT_EQ(status["masterAddr"], "demo-0.demo.default.svc.cluster.local");
  EXPECT_TRUE(HasEvent(cluster, "PortsAssigned"));
  EXPECT_TRUE(cluster.pods().empty());
}

TEST(PlanTest, NewJobYieldsExactlyASecretAServiceAndOnePodPerRank) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.Reconcile(At(0));
  const Plan second = cluster.Reconcile(At(1));
  EXPECT_EQ(CountCreated(second, "Secret"), 1);
  EXPECT_EQ(CountCreated(second, "Service"), 1);
  EXPECT_EQ(CountCreated(second, "Pod"), 4);
  EXPECT_EQ(Count<DeleteObject>(second), 0);
  std::vector<std::string> names;
  for (const auto& [name, pod] : cluster.pods()) {
    names.push_back(name);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("demo-0", "demo-1", "demo-2", "demo-3"));
  const json* created = FindCondition(cluster.job_json(), "Created");
  ASSERT_NE(created, nullptr);
  EXPECT_EQ((*created)["status"], "True");
  EXPECT_EQ(cluster.job_json()["status"]["startTime"], "2026-01-01T00:00:01Z");
}

TEST(PlanTest, PodCarriesTheEnvContractIdentityAndNativeSidecar) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.ReconcileUntilStable(At(0));
  const json& pod = cluster.pods().at("demo-2");
  EXPECT_EQ(pod["spec"]["hostname"], "demo-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "demo");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/rank"], "2");
  EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "0");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);

  const json& trainer = Trainer(pod);
  const std::map<std::string, std::string> expected = {
      {"MASTER_ADDR", "demo-0.demo.default.svc.cluster.local"},
      {"MASTER_PORT", "61000"},
      {"RANK", "2"},
      {"WORLD_SIZE", "4"},
      {"LOCAL_WORLD_SIZE", "1"},
      {"NODE_RANK", "2"},
      {"PET_NNODES", "4"},
      {"PET_NODE_RANK", "2"},
      {"PET_NPROC_PER_NODE", "1"},
      {"PET_MASTER_ADDR", "demo-0.demo.default.svc.cluster.local"},
      {"PET_MASTER_PORT", "61000"},
      {"RINGLEADER_SPARE_PORT", "61003"},
      {"RINGLEADER_CONTRACT_FILE", "/var/run/ringleader/run/contract.json"},
      {"NCCL_PROFILER_PLUGIN", "/var/run/ringleader/profiler/libnccl-profiler-ringleader.so"},
      // spec.communication.trainerStore Sidecar (the default): a client of rank 0's sidecar store.
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"PET_RDZV_BACKEND", "c10d"},
      {"PET_RDZV_ENDPOINT", "demo-0.demo.default.svc.cluster.local:61000"},
      {"PET_RDZV_ID", "job-uid-1-0"},
      {"PET_RDZV_CONF", "is_host=false"},
      {"PET_LOCAL_ADDR", ""},  // from status.podIP
  };
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(EnvValue(trainer, name), value) << name;
  }
  EXPECT_EQ(trainer["env"].size(), expected.size());

  const json& sidecar = Sidecar(pod);
  EXPECT_EQ(sidecar["name"], "ringleader-sidecar");
  EXPECT_EQ(sidecar["restartPolicy"], "Always");
  // It only has to serve; the preflight container, not this probe, holds the trainers back.
  EXPECT_EQ(sidecar["startupProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(sidecar["startupProbe"]["httpGet"]["port"], 61002);
  EXPECT_EQ(sidecar["startupProbe"]["periodSeconds"], 2);
  EXPECT_EQ(sidecar["startupProbe"]["failureThreshold"], 30);
  EXPECT_EQ(sidecar["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_MODE"), "sidecar");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_RANK"), "2");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_ATTEMPT"), "0");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_RENDEZVOUS_PORT"), "61001");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_BACKEND"), "gloo");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_PREFLIGHT_MAX_BYTES"), "67108864");
  EXPECT_FALSE(pod["spec"].contains("hostNetwork"));
  EXPECT_FALSE(sidecar["ports"][0].contains("hostPort"));

  const json& preflight = Preflight(pod);
  EXPECT_EQ(preflight["name"], "ringleader-preflight");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_MODE"), "pod-preflight");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_RANK"), "2");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_RENDEZVOUS_PORT"), "61001");

  const json& service = cluster.service();
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(service["spec"]["ports"].size(), 4u);
  EXPECT_EQ(cluster.secret()["data"]["token"], "dG9rZW4tMQ==");  // base64("token-1")
}

TEST(PlanTest, UserEnvComesAfterTheContractAndTemplateFieldsSurvive) {
  json job = MinimalJob("demo", 2);
  json& container = job["spec"]["template"]["spec"]["containers"][0];
  container["env"] = json::array({{{"name", "NCCL_DEBUG"}, {"value", "INFO"}}});
  job["spec"]["template"]["spec"]["tolerations"] = json::array({{{"key", "gpu"}, {"operator", "Exists"}}});
  job["spec"]["template"]["metadata"] = {{"labels", {{"team", "a"}}}, {"annotations", {{"note", "x"}}}};
  FakeCluster cluster(job);
  cluster.ReconcileUntilStable(At(0));
  const json& pod = cluster.pods().at("demo-1");
  EXPECT_EQ(Trainer(pod)["env"].back()["name"], "NCCL_DEBUG");
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "gpu");
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(pod["metadata"]["annotations"]["note"], "x");
}

TEST(PlanTest, ReplanningAfterApplyingYieldsNoActions) {
  struct Case {
    std::string name;
    std::function<void(FakeCluster&)> drive;
  };
  const std::vector<Case> cases = {
      {"fresh", [](FakeCluster&) {}},
      {"running", [](FakeCluster& c) { c.StartRunning(At(5)); }},
      {"restarted",
       [](FakeCluster& c) {
         c.StartRunning(At(5));
         c.FailContainer("demo-1", 1, "Error");
         c.ReconcileUntilStable(At(6));
       }},
      {"suspended",
       [](FakeCluster& c) {
         c.StartRunning(At(5));
         c.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
       }},
      {"succeeded",
       [](FakeCluster& c) {
         c.StartRunning(At(5));
         c.SetAllPhases("Succeeded");
       }},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    FakeCluster cluster(MinimalJob());
    cluster.ReconcileUntilStable(At(0));
    test.drive(cluster);
    cluster.ReconcileUntilStable(At(10));
    const Plan again = cluster.PlanNow(At(10));
    EXPECT_TRUE(again.empty()) << again.actions.size() << " actions on re-plan";
    EXPECT_FALSE(again.reserve_ports.has_value());
  }
}

TEST(PlanTest, ADisabledPreflightIsNeverReportedAsPassed) {
  json spec = MinimalJob("demo", 2);
  spec["spec"]["communication"]["preflight"]["enabled"] = false;
  FakeCluster cluster(spec);
  cluster.StartRunning(At(0));
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["state"], "Running");
  EXPECT_EQ(FindCondition(job, "PreflightPassed"), nullptr);
  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(job["status"]["state"], "Succeeded");
  EXPECT_EQ(FindCondition(job, "PreflightPassed"), nullptr);
}

TEST(PlanTest, AllPodsRunningThenSucceededMovesConditions) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["state"], "Running");
  EXPECT_EQ((*FindCondition(job, "PreflightPassed"))["status"], "True");
  EXPECT_EQ(job["status"]["replicas"]["active"], 2);
  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(30));
  EXPECT_EQ(job["status"]["state"], "Succeeded");
  EXPECT_EQ((*FindCondition(job, "Running"))["status"], "False");
  EXPECT_EQ(job["status"]["completionTime"], "2026-01-01T00:00:30Z");
  EXPECT_EQ(job["status"]["portsReleased"], true);
  EXPECT_FALSE(cluster.ledger().Find("job-uid-1").has_value());
  EXPECT_TRUE(HasEvent(cluster, "AllPodsSucceeded"));
}

TEST(PlanTest, FailedPodCausesGangRestartNamingTheRank) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-2", 137, "OOMKilled");
  const Plan plan = cluster.Reconcile(At(20));
  EXPECT_EQ(Count<DeleteObject>(plan), 3) << "demo-2 is kept for kubectl logs";
  EXPECT_EQ(Count<CreateObject>(plan), 0);
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["restarts"], 1);
  EXPECT_EQ(job["status"]["state"], "Restarting");
  const json* restarting = FindCondition(job, "Restarting");
  ASSERT_NE(restarting, nullptr);
  EXPECT_THAT((*restarting)["message"].get<std::string>(),
              HasSubstr("rank 2 (pod demo-2) container trainer exited with code 137 (OOMKilled)"));
  EXPECT_THAT((*restarting)["message"].get<std::string>(),
              HasSubstr("restarting all 4 pods in 10 s (restart 1 of 3, backoff 10 s); "
                        "pod demo-2 kept for kubectl logs"));
  const auto restart_event = std::find_if(cluster.events().begin(), cluster.events().end(),
                                          [](const RecordEvent& e) { return e.reason == "Restarting"; });
  ASSERT_NE(restart_event, cluster.events().end());
  EXPECT_EQ(restart_event->type, "Warning");
  EXPECT_THAT(restart_event->message, HasSubstr("PodFailed: rank 2 (pod demo-2)"));
  // The new gang comes up after the default backoff (10 s) as attempt 1 with the same ports.
  cluster.ReconcileUntilStable(At(29));
  EXPECT_EQ(cluster.pods().size(), 1u);
  cluster.ReconcileUntilStable(At(30));
  ASSERT_EQ(cluster.pods().size(), 5u);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "demo-" + std::to_string(rank) + "-attempt-1";
    const json& pod = cluster.pods().at(name);
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "1") << name;
    // The sidecar holds out for the new attempt's rank 0 (rendezvous/store_client.h).
    EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_ATTEMPT"), "1") << name;
    EXPECT_EQ(EnvValue(Trainer(pod), "MASTER_PORT"), "61000");
    // The trainers' keys go under the new attempt's prefix in the store that rank 0's sidecar
    // kept, and torchrun's agents meet in a new rendezvous.
    EXPECT_EQ(EnvValue(Trainer(pod), "TORCHELASTIC_RESTART_COUNT"), "1") << name;
    EXPECT_EQ(EnvValue(Trainer(pod), "PET_RDZV_ID"), "job-uid-1-1") << name;
    EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_TRAINER_STORE_PORT"), rank == 0 ? "61000" : "<unset>") << name;
  }
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(31));
  EXPECT_EQ(job["status"]["state"], "Running");
  EXPECT_EQ((*FindCondition(job, "Restarting"))["status"], "False");
}

// A deleted Pod still terminating may still listen on the job's ports; the kept Pod has finished.
TEST(PlanTest, RestartWaitsForDeletedOldPodsToTerminateButNotForTheKeptOne) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.set_graceful_deletion(true);
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-0", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_FALSE(cluster.pods().at("demo-0")["metadata"].contains("deletionTimestamp")) << "kept";
  EXPECT_TRUE(cluster.pods().at("demo-1")["metadata"].contains("deletionTimestamp"));
  const Plan held = cluster.Reconcile(At(11));  // past the 10 s backoff, demo-1 still there
  EXPECT_EQ(Count<CreateObject>(held), 0);
  EXPECT_EQ(cluster.pods().size(), 2u);
  cluster.FinishDeletions();
  cluster.ReconcileUntilStable(At(12));
  ASSERT_EQ(cluster.pods().size(), 3u);
  EXPECT_EQ(cluster.pods().at("demo-0-attempt-1")["metadata"]["labels"]["ringleader.dev/attempt"], "1");
  EXPECT_EQ(cluster.pods().at("demo-1-attempt-1")["metadata"]["labels"]["ringleader.dev/attempt"], "1");
  EXPECT_EQ(cluster.pods().at("demo-0")["status"]["phase"], "Failed");
}

TEST(PlanTest, PassingBackoffLimitFailsTheJobAndDeletesItsPods) {
  json spec_job = MinimalJob("demo", 3);
  spec_job["spec"]["runPolicy"] = {{"backoffLimit", 1}};
  FakeCluster cluster(spec_job);
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.job_json()["status"]["restarts"], 1);
  cluster.ReconcileUntilStable(At(11));  // past the 10 s backoff
  cluster.SetAllPhases("Running");
  cluster.FailContainer("demo-0-attempt-1", 2, "Error");
  cluster.ReconcileUntilStable(At(12));
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["state"], "Failed");
  const json* failed = FindCondition(job, "Failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["reason"], "BackoffLimitExceeded");
  EXPECT_THAT((*failed)["message"].get<std::string>(), HasSubstr("rank 0 (pod demo-0-attempt-1)"));
  EXPECT_THAT((*failed)["message"].get<std::string>(), HasSubstr("1 of 1 restarts used"));
  EXPECT_EQ(job["status"]["restarts"], 1);
  // Running Pods were deleted; the failed one stays for its logs, and so does attempt 0's.
  EXPECT_THAT(cluster.PodNames(), ::testing::ElementsAre("demo-0-attempt-1", "demo-1"));
  EXPECT_EQ(job["status"]["portsReleased"], true);
}

TEST(PlanTest, BackoffLimitZeroFailsOnTheFirstFailure) {
  json spec_job = MinimalJob("demo", 2);
  spec_job["spec"]["runPolicy"] = {{"backoffLimit", 0}};
  FakeCluster cluster(spec_job);
  cluster.StartRunning(At(0));
  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.job_json()["status"]["state"], "Failed");
  EXPECT_EQ(cluster.job_json()["status"]["restarts"], 0);
  const auto failed_event = std::find_if(cluster.events().begin(), cluster.events().end(),
                                         [](const RecordEvent& e) { return e.reason == "Failed"; });
  ASSERT_NE(failed_event, cluster.events().end());
  EXPECT_THAT(failed_event->message, HasSubstr("BackoffLimitExceeded: rank 1 (pod demo-1)"));
}

TEST(PlanTest, PreflightFailureNamesTheRankAndRestartsTheGang) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.ReconcileUntilStable(At(0));
  for (const char* pod : {"demo-0", "demo-1", "demo-2", "demo-3"}) {
    cluster.SetSidecarStarted(pod, true);
  }
  cluster.FailPreflight("demo-3", 3, "rank 3 cannot reach rank 0 at demo-0.demo:61001");
  cluster.Reconcile(At(5));
  const json& job = cluster.job_json();
  const json* preflight = FindCondition(job, "PreflightPassed");
  ASSERT_NE(preflight, nullptr);
  EXPECT_EQ((*preflight)["status"], "False");
  EXPECT_EQ((*preflight)["reason"], "PreflightFailed");
  EXPECT_THAT((*preflight)["message"].get<std::string>(),
              HasSubstr("rank 3 (pod demo-3) preflight failed: container ringleader-preflight exited with code 3 (Error)"));
  EXPECT_THAT((*preflight)["message"].get<std::string>(), HasSubstr("cannot reach rank 0"));
  EXPECT_TRUE(HasEvent(cluster, "PreflightFailed"));
  EXPECT_EQ(job["status"]["restarts"], 1);
  EXPECT_THAT((*FindCondition(job, "Restarting"))["message"].get<std::string>(),
              HasSubstr("rank 3 (pod demo-3) preflight failed: container ringleader-preflight exited"));
}

TEST(PlanTest, PreflightPassedOnceEveryPodsPreflightExitedZero) {
  FakeCluster cluster(MinimalJob("demo", 3));
  cluster.ReconcileUntilStable(At(0));
  for (const char* pod : {"demo-0", "demo-1", "demo-2"}) {
    cluster.SetSidecarStarted(pod, true);  // a started sidecar proves nothing about the fabric
  }
  cluster.PassPreflight("demo-0");
  cluster.PassPreflight("demo-1");
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(FindCondition(cluster.job_json(), "PreflightPassed"), nullptr);
  // The trainers may still be pulling their images: the Pods are Pending, the fabric is proven.
  cluster.PassPreflight("demo-2");
  cluster.ReconcileUntilStable(At(2));
  const json* passed = FindCondition(cluster.job_json(), "PreflightPassed");
  ASSERT_NE(passed, nullptr);
  EXPECT_EQ((*passed)["status"], "True");
  EXPECT_EQ((*passed)["message"], "every rank's preflight passed");
  EXPECT_TRUE(HasEvent(cluster, "PreflightPassed"));
  EXPECT_EQ(cluster.pods().at("demo-2")["status"]["phase"], "Pending");
}

// The kubelet would only restart a native sidecar, and a restarted one cannot rejoin its attempt,
// so its non-zero exit fails the Pod whether or not it had started.
TEST(PlanTest, ASidecarThatExitsNonZeroFailsItsPodButIsNoPreflightFailure) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.StartRunning(At(0));
  cluster.FailSidecar("demo-1", 1, "ringleader-sidecar rank 1/4: failed: monitor: rank 3 of 4 is gone");
  cluster.Reconcile(At(5));
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["restarts"], 1);
  EXPECT_THAT((*FindCondition(job, "Restarting"))["message"].get<std::string>(),
              HasSubstr("rank 1 (pod demo-1) sidecar failed: container ringleader-sidecar exited with code 1 "
                        "(Error): ringleader-sidecar rank 1/4: failed: monitor: rank 3 of 4 is gone"));
  const json* preflight = FindCondition(job, "PreflightPassed");
  ASSERT_NE(preflight, nullptr);
  EXPECT_EQ((*preflight)["reason"], "Restarting");
  EXPECT_FALSE(HasEvent(cluster, "PreflightFailed"));
}

TEST(PlanTest, ATrainersFailureIsReportedBeforeItsSidecars) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  cluster.FailSidecar("demo-0", 1, "failed: monitor: rank 1 of 2 is gone");
  cluster.FailContainer("demo-0", 137, "OOMKilled");
  cluster.Reconcile(At(5));
  const std::string message = (*FindCondition(cluster.job_json(), "Restarting"))["message"];
  EXPECT_THAT(message, HasSubstr("rank 0 (pod demo-0) container trainer exited with code 137 (OOMKilled)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("sidecar failed")));
}

// Once its trainers are done the sidecar is stopped, and it may see its peers leave first.
TEST(PlanTest, ASidecarExitAfterTheTrainersSucceededIsNoFailure) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  cluster.SetAllPhases("Succeeded");
  cluster.FailSidecar("demo-1", 1, "failed: monitor: rank 0 of 2 is gone");
  cluster.ReconcileUntilStable(At(5));
  const json& job = cluster.job_json();
  EXPECT_EQ(job["status"]["state"], "Succeeded");
  EXPECT_EQ(job["status"]["restarts"], 0);
}

// Regression guard: rank 0's trainer finishing stops rank 0's sidecar, and rank 1's monitor then
// loses its peer while rank 1's trainer is finishing too. That must not restart a finished job.
TEST(PlanTest, ASidecarExitOnceAnotherRanksTrainersAreDoneIsNoFailure) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  // The kubelet has not moved demo-0 to Succeeded yet: its sidecar is still being stopped.
  cluster.pod("demo-0")["status"]["containerStatuses"] = json::array(
      {{{"name", "trainer"}, {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}});
  cluster.FailSidecar("demo-1", 1, "failed: monitor: rank 0 of 2 is gone");
  cluster.ReconcileUntilStable(At(5));
  EXPECT_EQ(cluster.job_json()["status"]["restarts"], 0);
  EXPECT_EQ(cluster.pods().size(), 2u);
  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(6));
  EXPECT_EQ(cluster.job_json()["status"]["state"], "Succeeded");
}

// Regression: the message is the tail of the sidecar's log, and the first 200 characters were
// its startup lines, which cut off the line that names the missing rank.
TEST(PlanTest, AFailureQuotesTheLastLineOfTheContainersOutput) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.ReconcileUntilStable(At(0));
  std::string log;
  for (int i = 0; i < 4; ++i) {
    log += "ringleader-sidecar rank 0/4: a startup line long enough to fill the quoted space " + std::to_string(i) + "\n";
  }
  log += "ringleader-sidecar rank 0/4: failed: rank 3 of 4 did not join within 10 s\n";
  cluster.FailPreflight("demo-0", 1, log);
  cluster.Reconcile(At(5));
  const json* preflight = FindCondition(cluster.job_json(), "PreflightPassed");
  ASSERT_NE(preflight, nullptr);
  EXPECT_THAT((*preflight)["message"].get<std::string>(),
              HasSubstr("exited with code 1 (Error): ringleader-sidecar rank 0/4: failed: rank 3 of 4 did not join"));
}

TEST(PlanTest, SuspendDeletesPodsAndReleasesThePortsWhichResumeAssignsAgain) {
  FakeCluster cluster(MinimalJob("demo", 3));
  cluster.StartRunning(At(0));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
  cluster.ReconcileUntilStable(At(10));
  const json& job = cluster.job_json();
  EXPECT_TRUE(cluster.pods().empty());
  EXPECT_EQ(job["status"]["state"], "Suspended");
  EXPECT_FALSE(job["status"].contains("startTime"));
  // The block went back to the range, and the Service that named its ports went with it.
  EXPECT_FALSE(job["status"].contains("ports"));
  EXPECT_FALSE(cluster.ledger().Find("job-uid-1").has_value());
  EXPECT_FALSE(cluster.has_service());
  EXPECT_TRUE(HasEvent(cluster, "PortsReleased"));
  EXPECT_EQ((*FindCondition(job, "Created"))["reason"], "Suspended");
  // Another job takes the freed block meanwhile; the resumed job gets the next one.
  ASSERT_TRUE(cluster.ledger().Reserve("other-job", ports::PortBlock{61000}));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = false; });
  cluster.ReconcileUntilStable(At(20));
  EXPECT_EQ(cluster.pods().size(), 3u);
  EXPECT_EQ((*FindCondition(job, "Suspended"))["status"], "False");
  EXPECT_EQ((*FindCondition(job, "Suspended"))["reason"], "Resumed");
  EXPECT_EQ(job["status"]["startTime"], "2026-01-01T00:00:20Z");
  EXPECT_EQ(job["status"]["ports"]["master"], 61004);
  EXPECT_EQ(EnvValue(Trainer(cluster.pods().at("demo-0")), "MASTER_PORT"), "61004");
  ASSERT_TRUE(cluster.has_service());
  EXPECT_EQ(cluster.service()["spec"]["ports"][0]["port"], 61004);
  EXPECT_TRUE(HasEvent(cluster, "Resumed"));
}

TEST(PlanTest, ASuspendedJobKeepsItsPortsWhileAPodStillTerminates) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  cluster.set_graceful_deletion(true);
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
  cluster.ReconcileUntilStable(At(10));
  // A terminating trainer may still listen on the master port.
  EXPECT_EQ(cluster.pods().size(), 2u);
  EXPECT_EQ(cluster.job_json()["status"]["ports"]["master"], 61000);
  EXPECT_TRUE(cluster.ledger().Find("job-uid-1").has_value());
  cluster.FinishDeletions();
  cluster.ReconcileUntilStable(At(11));
  EXPECT_FALSE(cluster.job_json()["status"].contains("ports"));
  EXPECT_FALSE(cluster.ledger().Find("job-uid-1").has_value());
}

TEST(PlanTest, JobCreatedSuspendedTakesNoPortsUntilResumed) {
  json spec_job = MinimalJob("queued", 2);
  spec_job["spec"]["runPolicy"] = {{"suspend", true}};
  FakeCluster cluster(spec_job);
  cluster.ReconcileUntilStable(At(0));
  EXPECT_FALSE(cluster.job_json()["status"].contains("ports"));
  EXPECT_EQ(cluster.ledger().jobs(), 0u);
  EXPECT_FALSE(cluster.has_service());
  EXPECT_EQ(cluster.job_json()["status"]["state"], "Suspended");
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = false; });
  cluster.ReconcileUntilStable(At(1));
  EXPECT_EQ(cluster.job_json()["status"]["ports"]["master"], 61000);
  EXPECT_EQ(cluster.pods().size(), 2u);
}

TEST(PlanTest, ActiveDeadlineRequeuesUntilItPassesThenFails) {
  json spec_job = MinimalJob("demo", 2);
  spec_job["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 100}};
  FakeCluster cluster(spec_job);
  cluster.StartRunning(At(0));  // startTime is At(0)
  const Plan waiting = cluster.PlanNow(At(40));
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(waiting.requeue_after->count(), 60);
  cluster.ReconcileUntilStable(At(101));
  const json* failed = FindCondition(cluster.job_json(), "Failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["reason"], "DeadlineExceeded");
  EXPECT_TRUE(cluster.pods().empty());
}

TEST(PlanTest, TtlDeletesTheJobOnlyAfterItExpires) {
  json spec_job = MinimalJob("demo", 1);
  spec_job["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 60}};
  FakeCluster cluster(spec_job);
  cluster.StartRunning(At(0));
  cluster.SetAllPhases("Succeeded");
  cluster.ReconcileUntilStable(At(10));
  EXPECT_FALSE(cluster.job_deleted());
  const Plan waiting = cluster.PlanNow(At(30));
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(waiting.requeue_after->count(), 40);
  cluster.Reconcile(At(70));
  EXPECT_TRUE(cluster.job_deleted());
}

TEST(PlanTest, HostNetworkDeclaresEveryJobPortAsContainerAndHostPort) {
  json spec_job = MinimalJob("demo", 2);
  spec_job["spec"]["networking"] = {{"hostNetwork", true}};
  FakeCluster cluster(spec_job);
  cluster.ReconcileUntilStable(At(0));
  const json& pod = cluster.pods().at("demo-1");
  EXPECT_EQ(pod["spec"]["hostNetwork"], true);
  EXPECT_EQ(pod["spec"]["dnsPolicy"], "ClusterFirstWithHostNet");
  std::map<std::string, int> host_ports;
  for (const json* container : {&Sidecar(pod), &Trainer(pod)}) {
    for (const json& port : (*container)["ports"]) {
      EXPECT_EQ(port["containerPort"], port["hostPort"]);
      host_ports[port["name"]] = port["hostPort"];
    }
  }
  EXPECT_EQ(host_ports, (std::map<std::string, int>{
                            {"rl-master", 61000}, {"rl-rendezvous", 61001}, {"rl-metrics", 61002}, {"rl-spare", 61003}}));
}

TEST(PlanTest, AJobThatLeavesHostNetworkUnsetTakesTheOperatorsDefault) {
  FakeCluster defaulted(MinimalJob("rdma", 2));
  defaulted.config().default_host_network = true;
  defaulted.ReconcileUntilStable(At(0));
  const json& pod = defaulted.pods().at("rdma-0");
  EXPECT_EQ(pod["spec"]["hostNetwork"], true);
  EXPECT_EQ(pod["spec"]["dnsPolicy"], "ClusterFirstWithHostNet");
  EXPECT_EQ(Sidecar(pod)["ports"][0]["hostPort"], 61000);  // rl-master: the sidecar serves the trainers' store
  EXPECT_EQ(Trainer(pod)["ports"][0]["hostPort"], 61003);  // rl-spare

  // A job that says false keeps Pod networking whatever the default.
  json explicit_job = MinimalJob("lan", 2);
  explicit_job["spec"]["networking"] = {{"hostNetwork", false}};
  FakeCluster kept(explicit_job);
  kept.config().default_host_network = true;
  kept.ReconcileUntilStable(At(0));
  EXPECT_FALSE(kept.pods().at("lan-0")["spec"].contains("hostNetwork"));
  EXPECT_FALSE(Sidecar(kept.pods().at("lan-0"))["ports"][0].contains("hostPort"));
}

TEST(PlanTest, GpuJobsGetGpuLimitsAndOneProcessPerGpu) {
  json spec_job = MinimalJob("llm", 2);
  spec_job["spec"]["gpusPerReplica"] = 8;
  FakeCluster cluster(spec_job);
  cluster.ReconcileUntilStable(At(0));
  const json& pod = cluster.pods().at("llm-0");
  EXPECT_EQ(Trainer(pod)["resources"]["limits"]["nvidia.com/gpu"], 8);
  EXPECT_EQ(EnvValue(Trainer(pod), "WORLD_SIZE"), "16");
  EXPECT_EQ(EnvValue(Trainer(pod), "LOCAL_WORLD_SIZE"), "8");
  EXPECT_EQ(EnvValue(Trainer(pod), "RANK"), "0");
  // The preflight holds the trainer's GPUs and runs the job's backend; the sidecar holds none.
  EXPECT_EQ(EnvValue(Preflight(pod), "RINGLEADER_BACKEND"), "nccl");
  EXPECT_EQ(Preflight(pod)["resources"]["limits"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_BACKEND"), "gloo");
  EXPECT_FALSE(Sidecar(pod)["resources"]["limits"].contains("nvidia.com/gpu"));
}

// With Gloo the probe buffers are host memory, about 3.6 x the largest message
// (docs/benchmarks.md), so the limit grows with it; with NCCL they are on the GPU. The sweep runs
// in the preflight container; the sidecar's buffers are the monitor's, under its own backend.
TEST(PlanTest, SidecarMemoryLimitHoldsGlooBuffersOfTheLargestMessage) {
  json small = MinimalJob("small", 2);
  FakeCluster defaults(small);
  defaults.ReconcileUntilStable(At(0));
  EXPECT_EQ(Sidecar(defaults.pods().at("small-0"))["resources"]["limits"]["memory"], "1Gi");
  EXPECT_EQ(Preflight(defaults.pods().at("small-0"))["resources"]["limits"]["memory"], "1Gi");

  json large = MinimalJob("large", 2);
  large["spec"]["communication"]["preflight"]["maxBytes"] = "1Gi";
  FakeCluster gloo(large);
  gloo.ReconcileUntilStable(At(0));
  EXPECT_EQ(Preflight(gloo.pods().at("large-0"))["resources"]["limits"]["memory"], "4224Mi");
  EXPECT_EQ(Sidecar(gloo.pods().at("large-0"))["resources"]["limits"]["memory"], "1Gi");

  large["spec"]["gpusPerReplica"] = 1;
  large["spec"]["communication"]["monitor"]["messageBytes"] = "512Mi";
  FakeCluster nccl(large);
  nccl.ReconcileUntilStable(At(0));
  EXPECT_EQ(Preflight(nccl.pods().at("large-0"))["resources"]["limits"]["memory"], "1Gi");
  // The sidecar's monitor runs Gloo over the Pod network: host buffers.
  EXPECT_EQ(Sidecar(nccl.pods().at("large-0"))["resources"]["limits"]["memory"], "2176Mi");

  api::TrainingJobSpec spec;
  spec.communication.backend = api::Backend::kGloo;
  spec.communication.preflight.enabled = false;
  spec.communication.monitor.message_bytes = std::int64_t{512} << 20;
  EXPECT_EQ(SidecarMemoryLimitBytes(spec), (std::int64_t{128} + 4 * 512) << 20);
  spec.communication.monitor.enabled = false;
  EXPECT_EQ(SidecarMemoryLimitBytes(spec), std::int64_t{1} << 30);
  spec.communication.preflight.enabled = true;
  spec.communication.preflight.max_bytes = 1'000'000;  // rounded up to whole Mi, floor 1Gi
  EXPECT_EQ(SidecarMemoryLimitBytes(spec), std::int64_t{1} << 30);
  spec.communication.preflight.max_bytes = 300'000'000;
  EXPECT_EQ(SidecarMemoryLimitBytes(spec) % (1 << 20), 0);
  EXPECT_GE(SidecarMemoryLimitBytes(spec), (std::int64_t{128} << 20) + 1'200'000'000);
}

TEST(PlanTest, InvalidSpecYieldsAConditionNamingTheFieldAndNoChildren) {
  json spec_job = MinimalJob("demo", 2);
  spec_job["spec"]["replicas"] = 0;
  FakeCluster cluster(spec_job);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_EQ(Count<CreateObject>(plan), 0);
  EXPECT_FALSE(plan.reserve_ports.has_value());
  const json* failed = FindCondition(cluster.job_json(), "Failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["reason"], "InvalidSpec");
  EXPECT_THAT((*failed)["message"].get<std::string>(), HasSubstr("spec.replicas: must be at least 1, got 0"));
  EXPECT_TRUE(cluster.PlanNow(At(1)).empty());
  // Fixing the spec clears the condition and the job proceeds.
  cluster.EditSpec([](json& spec) { spec["replicas"] = 2; });
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(FindCondition(cluster.job_json(), "Failed"), nullptr);
  EXPECT_EQ(cluster.pods().size(), 2u);
}

TEST(PlanTest, ReservedEnvNameIsAnErrorNotASilentOverride) {
  json spec_job = MinimalJob("demo", 2);
  spec_job["spec"]["template"]["spec"]["containers"][0]["env"] =
      json::array({{{"name", "MASTER_PORT"}, {"value", "29500"}}});
  FakeCluster cluster(spec_job);
  cluster.ReconcileUntilStable(At(0));
  EXPECT_TRUE(cluster.pods().empty());
  EXPECT_THAT((*FindCondition(cluster.job_json(), "Failed"))["message"].get<std::string>(),
              HasSubstr("spec.template.spec.containers[0].env[0].name: MASTER_PORT is set by ringleader"));
}

TEST(PlanTest, ExhaustedPortsGiveAConditionAndARetryNeverADuplicate) {
  FakeCluster cluster(MinimalJob("late", 1), ports::PortRange{61000, 61003});
  ASSERT_TRUE(cluster.ledger().Allocate("someone-else").has_value());
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_FALSE(plan.reserve_ports.has_value());
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 30);
  const json* created = FindCondition(cluster.job_json(), "Created");
  ASSERT_NE(created, nullptr);
  EXPECT_EQ((*created)["reason"], "PortsExhausted");
  EXPECT_THAT((*created)["message"].get<std::string>(), HasSubstr("61000-61003"));
  EXPECT_FALSE(cluster.job_json()["status"].contains("ports"));
  // Re-planning announces nothing new, only waits.
  const Plan again = cluster.Reconcile(At(5));
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(std::count_if(cluster.events().begin(), cluster.events().end(),
                          [](const RecordEvent& e) { return e.reason == "PortsExhausted"; }),
            1);
  cluster.ledger().Release("someone-else");
  cluster.ReconcileUntilStable(At(40));
  EXPECT_EQ(cluster.job_json()["status"]["ports"]["master"], 61000);
  EXPECT_EQ(cluster.pods().size(), 1u);
}

TEST(PlanTest, PodsTheJobDoesNotOwnAreNeitherCountedNorTouched) {
  FakeCluster cluster(MinimalJob("demo", 1));
  cluster.ReconcileUntilStable(At(0));
  cluster.AddForeignPod("impostor");
  const Plan plan = cluster.PlanNow(At(1));
  EXPECT_TRUE(plan.empty());
  cluster.SetPhase("demo-0", "Running");
  cluster.ReconcileUntilStable(At(2));
  EXPECT_TRUE(cluster.pods().contains("impostor"));
  EXPECT_EQ(cluster.job_json()["status"]["restarts"], 0);
  EXPECT_EQ(cluster.job_json()["status"]["replicas"]["failed"], 0);
}

TEST(PlanTest, DeletedJobPlansNothing) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.ReconcileUntilStable(At(0));
  cluster.job_json()["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z";
  EXPECT_TRUE(cluster.PlanNow(At(6)).empty());
}

TEST(PlanTest, SidecarSummaryIsCopiedIntoStatus) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  api::CommunicationStatus summary;
  summary.backend = "gloo";
  summary.last_all_reduce_bus_bandwidth = "2.5 GB/s";
  summary.last_all_reduce_bus_bandwidth_bytes = 2'500'000'000;
  summary.last_probe_time = At(3);
  summary.preflight = "Passed";
  summary.slowest_rank = "1";
  cluster.set_summary(summary);
  cluster.ReconcileUntilStable(At(4));
  const json& comm = cluster.job_json()["status"]["communication"];
  EXPECT_EQ(comm["lastAllReduceBusBandwidth"], "2.5 GB/s");
  EXPECT_EQ(comm["lastAllReduceBusBandwidthBytes"], 2'500'000'000);
  EXPECT_EQ(comm["slowestRank"], "1");
}

TEST(PlanTest, TheTrainersCollectivesAreCopiedIntoStatusTraining) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  api::CommunicationStatus summary;
  summary.backend = "nccl";
  summary.training = api::TrainingCommunicationStatus{.collective = "all_reduce",
                                                      .size = "64MiB",
                                                      .bus_bandwidth = "110 GB/s",
                                                      .bus_bandwidth_bytes = 110'000'000'000,
                                                      .ranks_reporting = 2,
                                                      .slowest_rank = "1",
                                                      .slowest_rank_bus_bandwidth = "90 GB/s",
                                                      .slowest_rank_bus_bandwidth_bytes = 90'000'000'000};
  cluster.set_summary(summary);
  cluster.ReconcileUntilStable(At(4));
  const json& training = cluster.job_json()["status"]["communication"]["training"];
  EXPECT_EQ(training["collective"], "all_reduce");
  EXPECT_EQ(training["busBandwidth"], "110 GB/s");
  EXPECT_EQ(training["busBandwidthBytes"], 110'000'000'000);
  EXPECT_EQ(training["ranksReporting"], 2);
  EXPECT_EQ(training["slowestRank"], "1");
  EXPECT_EQ(training["slowestRankBusBandwidthBytes"], 90'000'000'000);
}

int CountEvents(const FakeCluster& cluster, const std::string& reason) {
  return static_cast<int>(std::count_if(cluster.events().begin(), cluster.events().end(),
                                        [&reason](const RecordEvent& e) { return e.reason == reason; }));
}

// A trainer that names its own NCCL profiler plugin keeps it; the Event says so once per
// creation of the gang's Pods, not on every pass.
TEST(PlanTest, ATrainersOwnProfilerPluginIsAnnouncedOncePerAttempt) {
  json job = MinimalJob("demo", 3);
  job["spec"]["template"]["spec"]["containers"][0]["env"] =
      json::array({{{"name", "NCCL_PROFILER_PLUGIN"}, {"value", "inspector"}}});
  FakeCluster cluster(job);
  cluster.StartRunning(At(0));
  cluster.ReconcileUntilStable(At(2));
  ASSERT_EQ(CountEvents(cluster, "ProfilerPluginLeftAlone"), 1);
  const auto event = std::find_if(cluster.events().begin(), cluster.events().end(), [](const RecordEvent& e) {
    return e.reason == "ProfilerPluginLeftAlone";
  });
  EXPECT_EQ(event->type, "Normal");
  EXPECT_THAT(event->message, HasSubstr("trainer container trainer sets NCCL_PROFILER_PLUGIN itself"));
  EXPECT_THAT(event->message, HasSubstr("(attempt 0)"));
  for (const auto& [name, pod] : cluster.pods()) {
    EXPECT_EQ(EnvValue(Trainer(pod), "NCCL_PROFILER_PLUGIN"), "inspector") << name;
  }

  cluster.FailContainer("demo-1", 1, "Error");
  cluster.ReconcileUntilStable(At(3));
  cluster.ReconcileUntilStable(At(20));  // past the backoff: attempt 1's Pods
  ASSERT_EQ(CountEvents(cluster, "ProfilerPluginLeftAlone"), 2);
  const auto last = std::find_if(cluster.events().rbegin(), cluster.events().rend(), [](const RecordEvent& e) {
    return e.reason == "ProfilerPluginLeftAlone";
  });
  EXPECT_THAT(last->message, HasSubstr("(attempt 1)"));
}

TEST(PlanTest, NoProfilerPluginEventWithTelemetryOffOrNoTrainerSettingIt) {
  json off = MinimalJob("demo", 2);
  off["spec"]["template"]["spec"]["containers"][0]["env"] =
      json::array({{{"name", "NCCL_PROFILER_PLUGIN"}, {"value", "inspector"}}});
  off["spec"]["communication"] = {{"telemetry", {{"enabled", false}}}};
  for (const json& job : {off, MinimalJob("demo", 2)}) {
    FakeCluster cluster(job);
    cluster.StartRunning(At(0));
    EXPECT_EQ(CountEvents(cluster, "ProfilerPluginLeftAlone"), 0);
    EXPECT_EQ(CountEvents(cluster, "PodsCreated"), 1);
  }
}

TEST(PlanTest, ShrinkingReplicasWhileSuspendedLeavesNoStrayRanks) {
  FakeCluster cluster(MinimalJob("demo", 4));
  cluster.StartRunning(At(0));
  cluster.EditSpec([](json& spec) {
    spec["runPolicy"]["suspend"] = true;
  });
  cluster.ReconcileUntilStable(At(1));
  cluster.EditSpec([](json& spec) {
    spec["replicas"] = 2;
    spec["runPolicy"]["suspend"] = false;
  });
  cluster.ReconcileUntilStable(At(2));
  EXPECT_EQ(cluster.pods().size(), 2u);
  EXPECT_EQ(EnvValue(Trainer(cluster.pods().at("demo-1")), "WORLD_SIZE"), "2");
}

}  // namespace
}  // namespace ringleader::planner
