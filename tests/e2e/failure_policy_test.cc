// spec.runPolicy.failurePolicy through the real kubectl, operator, sidecars and example trainer on
// devcluster: an exit code a FailJob rule names fails the job at once, and any other failure
// restarts the gang after the restart backoff, which status and an Event show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "operator/api/trainingjob.h"
#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

// Two ranks of the example trainer; rank 1 exits with `code` at step 3 (in attempt 0 only when
// `first_attempt_only`: the trainer reads its attempt from the Pod's label). One FailJob rule
// names exit code 42 of the trainer.
std::string FailingJobYaml(const std::string& name, int code, bool first_attempt_only) {
  std::string args = R"("--steps", "20", "--step-delay-ms", "50", "--exit-code-at-step", "3:)" +
                     std::to_string(code) + R"(", "--fail-rank", "1")";
  if (first_attempt_only) {
    args += R"x(, "--fail-attempt", "0", "--attempt", "$(ATTEMPT)")x";
  }
  return "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + name +
         "\n  namespace: default\nspec:\n  replicas: 2\n"
         "  communication:\n    backend: gloo\n"
         "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 60}\n"
         "    monitor: {intervalSeconds: 5, messageBytes: 64Ki}\n"
         "  runPolicy:\n    backoffLimit: 2\n    failurePolicy:\n      rules:\n"
         "        - action: FailJob\n"
         "          onExitCodes: {containerName: trainer, operator: In, values: [42]}\n"
         "      restartBackoff: {initialSeconds: 4, maxSeconds: 60}\n"
         "  template:\n    spec:\n      containers:\n        - name: trainer\n"
         "          image: ringleader/example-trainer:0.1.0\n"
         "          env:\n            - name: ATTEMPT\n"
         "              valueFrom: {fieldRef: {fieldPath: \"metadata.labels['ringleader.dev/attempt']\"}}\n"
         "          args: [" + args + "]\n";
}

class FailurePolicyEndToEndTest : public BedTest {};

TEST_F(FailurePolicyEndToEndTest, AnExitCodeAFailJobRuleNamesFailsTheJobAtOnce) {
  const CommandOutput applied = bed_->Apply("fatal", FailingJobYaml("fatal", 42, false));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("fatal", JobFinished, seconds(40));
  ASSERT_EQ(JobState(job), "Failed") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 0) << job.dump(2);
  const json* failed = FindJobCondition(job, "Failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->value("reason", ""), "FailJobRule");
  const std::string message = failed->value("message", "");
  EXPECT_THAT(message, HasSubstr("rank 1 (pod fatal-1) container trainer exited with code 42"));
  EXPECT_THAT(message, HasSubstr("spec.runPolicy.failurePolicy.rules[0] (FailJob on exit codes In [42] of "
                                 "container trainer) matched: container trainer exited with code 42"));
  // The trainer's own last line reaches the condition through its termination message.
  EXPECT_THAT(message, HasSubstr("exiting with code 42 at step 3"));
  // The failed Pod stays for kubectl logs.
  const json pod = bed_->Get("pod", "fatal-1");
  ASSERT_TRUE(pod.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(pod["status"].value("phase", ""), "Failed");
  EXPECT_TRUE(JobEventMessages(*bed_, "fatal", "Restarting").empty());
}

TEST_F(FailurePolicyEndToEndTest, AnotherExitCodeRestartsTheGangAfterTheBackoffAndTheJobSucceeds) {
  const CommandOutput applied = bed_->Apply("flaky", FailingJobYaml("flaky", 3, true));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json waiting = bed_->WaitForJob(
      "flaky", [](const json& job) { return job.value("status", json::object()).contains("nextRestartTime") || JobFinished(job); },
      seconds(40));
  ASSERT_TRUE(waiting.is_object() && waiting["status"].contains("nextRestartTime"))
      << waiting.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(JobState(waiting), "Restarting");
  EXPECT_EQ(waiting["status"]["restarts"], 1);
  EXPECT_EQ(waiting["status"]["countedRestarts"], 1);
  const json* restarting = FindJobCondition(waiting, "Restarting");
  ASSERT_NE(restarting, nullptr);
  EXPECT_THAT(restarting->value("message", ""), HasSubstr("rank 1 (pod flaky-1) container trainer exited with code 3"));
  EXPECT_THAT(restarting->value("message", ""), HasSubstr("restarting all 2 pods in 4 s (restart 1 of 2, backoff 4 s)"));
  const std::optional<api::Time> next_restart = api::ParseTime(waiting["status"]["nextRestartTime"].get<std::string>());
  ASSERT_TRUE(next_restart.has_value());

  const json job = bed_->WaitForJob("flaky", JobFinished, seconds(40));
  ASSERT_EQ(JobState(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 1);
  EXPECT_EQ(job["status"]["countedRestarts"], 1);
  EXPECT_FALSE(job["status"].contains("nextRestartTime")) << job.dump(2);
  // The new attempt's Pods, named for it, were created no earlier than the backoff allowed.
  for (const char* name : {"flaky-0-attempt-1", "flaky-1-attempt-1"}) {
    const json pod = bed_->Get("pod", name);
    ASSERT_TRUE(pod.is_object()) << name;
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "1") << name;
    const std::optional<api::Time> created = api::ParseTime(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.has_value()) << pod.dump(2);
    EXPECT_GE(*created, *next_restart) << name;
  }
  const std::vector<std::string> events = JobEventMessages(*bed_, "flaky", "Restarting");
  ASSERT_EQ(events.size(), 1u) << bed_->Diagnostics();
  EXPECT_THAT(events[0], ::testing::StartsWith("PodFailed: "));
  EXPECT_THAT(events[0], HasSubstr("rank 1 (pod flaky-1) container trainer exited with code 3"));
  EXPECT_THAT(events[0], HasSubstr("in 4 s (restart 1 of 2, backoff 4 s)"));
  // Rank 0 may have failed in the same second, for want of rank 1: then both are kept.
  EXPECT_THAT(events[0], ::testing::AnyOf(::testing::EndsWith("; pod flaky-1 kept for kubectl logs"),
                                          ::testing::EndsWith("; pods flaky-0, flaky-1 kept for kubectl logs")));

  // The failed rank's Pod of attempt 0 stayed: kubectl logs shows its trainer's last lines.
  const json kept = bed_->Get("pod", "flaky-1");
  ASSERT_TRUE(kept.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(kept["metadata"]["labels"]["ringleader.dev/attempt"], "0");
  EXPECT_EQ(kept["status"].value("phase", ""), "Failed");
  const CommandOutput logs = bed_->Kubectl({"logs", "flaky-1", "-c", "trainer", "--tail", "2"});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, HasSubstr("exiting with code 3 at step 3 (--exit-code-at-step)"));
}

// Two ranks training for a while; the test evicts rank 1 through the Eviction API, as a node
// drain or a preemption would.
std::string LongJobYaml(const std::string& name) {
  return "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + name +
         "\n  namespace: default\nspec:\n  replicas: 2\n"
         "  communication:\n    backend: gloo\n"
         "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 60}\n"
         "    monitor: {intervalSeconds: 5, messageBytes: 64Ki}\n"
         "  runPolicy:\n    backoffLimit: 0\n"
         "    failurePolicy:\n      restartBackoff: {initialSeconds: 2, maxSeconds: 60}\n"
         "  template:\n    spec:\n      containers:\n        - name: trainer\n"
         "          image: ringleader/example-trainer:0.1.0\n"
         "          args: [\"--steps\", \"1000\", \"--step-delay-ms\", \"20\"]\n";
}

TEST_F(FailurePolicyEndToEndTest, AnEvictedPodRestartsTheGangWithoutCountingIt) {
  // backoffLimit 0: a counted restart would fail the job, so only an uncounted one lets it run on.
  const CommandOutput applied = bed_->Apply("evicted", LongJobYaml("evicted"));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json running = bed_->WaitForJob("evicted", JobRunning, seconds(60));
  ASSERT_TRUE(running.is_object()) << bed_->Diagnostics();

  const std::filesystem::path body = bed_->dir() / "eviction.json";
  std::ofstream(body) << R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted-1","namespace":"default"}})";
  const CommandOutput evicted =
      bed_->Kubectl({"create", "--raw", "/api/v1/namespaces/default/pods/evicted-1/eviction", "-f", body.string()});
  ASSERT_EQ(evicted.exit_code, 0) << evicted.output;

  const json restarted = bed_->WaitForJob(
      "evicted", [](const json& job) { return job.value("status", json::object()).value("restarts", 0) >= 1 || JobFinished(job); },
      seconds(60));
  ASSERT_TRUE(restarted.is_object()) << bed_->Get("trainingjob", "evicted").dump(2) << bed_->Diagnostics();
  EXPECT_EQ(restarted["status"]["restarts"], 1) << restarted.dump(2);
  EXPECT_EQ(restarted["status"]["countedRestarts"], 0) << restarted.dump(2);
  const json& disruption = restarted["status"]["disruption"];
  EXPECT_EQ(disruption.value("pod", ""), "evicted-1") << restarted.dump(2);
  EXPECT_EQ(disruption.value("reason", ""), "EvictionByEvictionAPI") << restarted.dump(2);
  const json* restarting = FindJobCondition(restarted, "Restarting");
  ASSERT_NE(restarting, nullptr) << restarted.dump(2);
  EXPECT_EQ(restarting->value("reason", ""), "PodDisrupted");
  EXPECT_THAT(restarting->value("message", ""), HasSubstr("not counted against backoffLimit"));
  const std::vector<std::string> disrupted = JobEventMessages(*bed_, "evicted", "PodDisrupted");
  ASSERT_FALSE(disrupted.empty()) << bed_->Diagnostics();
  EXPECT_THAT(disrupted[0], HasSubstr("pod evicted-1 (rank 1) has DisruptionTarget=True (EvictionByEvictionAPI)"));

  // The new attempt runs, with nothing counted against the limit of 0.
  const json again = bed_->WaitForJob(
      "evicted",
      [](const json& job) { return JobFinished(job) || (JobRunning(job) && job.value("status", json::object()).value("restarts", 0) == 1); },
      seconds(60));
  ASSERT_TRUE(again.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(JobState(again), "Running") << again.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(again["status"]["countedRestarts"], 0);
  EXPECT_TRUE(bed_->Get("pod", "evicted-1-attempt-1").is_object());
}

}  // namespace
}  // namespace ringleader::testing
