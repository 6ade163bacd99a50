// spec.runPolicy.failurePolicy through the real kubectl, operator, sidecars and example trainer on
// devcluster: an exit code a FailJob rule names fails the job at once, and any other failure
// restarts the gang after the restart backoff, which status and an Event show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "operator/api/trainingjob.h"
#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string State(const json& job) { return job.value("status", json::object()).value("state", ""); }

bool Finished(const json& job) { return State(job) == "Succeeded" || State(job) == "Failed"; }

const json* Condition(const json& job, const std::string& type) {
  const json& conditions = job["status"]["conditions"];
  for (const json& condition : conditions) {
    if (condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

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

// The messages of the job's Events with this reason.
std::vector<std::string> EventMessages(EndToEnd& bed, const std::string& job, const std::string& reason) {
  std::vector<std::string> out;
  const CommandOutput got = bed.Kubectl({"get", "events", "-o", "json"});
  const json events = json::parse(got.output, nullptr, false);
  if (!events.is_object()) {
    return out;
  }
  for (const json& event : events.value("items", json::array())) {
    if (event["involvedObject"].value("name", "") == job && event.value("reason", "") == reason) {
      out.push_back(event.value("message", ""));
    }
  }
  return out;
}

class FailurePolicyEndToEndTest : public BedTest {};

TEST_F(FailurePolicyEndToEndTest, AnExitCodeAFailJobRuleNamesFailsTheJobAtOnce) {
  const CommandOutput applied = bed_->Apply("fatal", FailingJobYaml("fatal", 42, false));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json job = bed_->WaitForJob("fatal", Finished, seconds(40));
  ASSERT_EQ(State(job), "Failed") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 0) << job.dump(2);
  const json* failed = Condition(job, "Failed");
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
  EXPECT_TRUE(EventMessages(*bed_, "fatal", "Restarting").empty());
}

TEST_F(FailurePolicyEndToEndTest, AnotherExitCodeRestartsTheGangAfterTheBackoffAndTheJobSucceeds) {
  const CommandOutput applied = bed_->Apply("flaky", FailingJobYaml("flaky", 3, true));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const json waiting = bed_->WaitForJob(
      "flaky", [](const json& job) { return job["status"].contains("nextRestartTime") || Finished(job); },
      seconds(40));
  ASSERT_TRUE(waiting.is_object() && waiting["status"].contains("nextRestartTime"))
      << waiting.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(State(waiting), "Restarting");
  EXPECT_EQ(waiting["status"]["restarts"], 1);
  EXPECT_EQ(waiting["status"]["countedRestarts"], 1);
  const json* restarting = Condition(waiting, "Restarting");
  ASSERT_NE(restarting, nullptr);
  EXPECT_THAT(restarting->value("message", ""), HasSubstr("rank 1 (pod flaky-1) container trainer exited with code 3"));
  EXPECT_THAT(restarting->value("message", ""), HasSubstr("restarting all 2 pods in 4 s (restart 1 of 2, backoff 4 s)"));
  const std::optional<api::Time> next_restart = api::ParseTime(waiting["status"]["nextRestartTime"].get<std::string>());
  ASSERT_TRUE(next_restart.has_value());

  const json job = bed_->WaitForJob("flaky", Finished, seconds(40));
  ASSERT_EQ(State(job), "Succeeded") << job.dump(2) << bed_->Diagnostics();
  EXPECT_EQ(job["status"]["restarts"], 1);
  EXPECT_EQ(job["status"]["countedRestarts"], 1);
  EXPECT_FALSE(job["status"].contains("nextRestartTime")) << job.dump(2);
  // The new attempt's Pods were created no earlier than the backoff allowed.
  for (const char* name : {"flaky-0", "flaky-1"}) {
    const json pod = bed_->Get("pod", name);
    ASSERT_TRUE(pod.is_object()) << name;
    EXPECT_EQ(pod["metadata"]["labels"]["ringleader.dev/attempt"], "1") << name;
    const std::optional<api::Time> created = api::ParseTime(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.has_value()) << pod.dump(2);
    EXPECT_GE(*created, *next_restart) << name;
  }
  const std::vector<std::string> events = EventMessages(*bed_, "flaky", "Restarting");
  ASSERT_EQ(events.size(), 1u) << bed_->Diagnostics();
  EXPECT_THAT(events[0], ::testing::StartsWith("PodFailed: "));
  EXPECT_THAT(events[0], HasSubstr("rank 1 (pod flaky-1) container trainer exited with code 3"));
  EXPECT_THAT(events[0], HasSubstr("in 4 s (restart 1 of 2, backoff 4 s)"));
}

}  // namespace
}  // namespace ringleader::testing
