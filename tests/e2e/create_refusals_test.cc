// Creates the API refuses (issue 19): a ResourceQuota's 403 and a Pod name taken by someone else
// show on the TrainingJob as a Created=False condition with the API's words and an Event, the
// operator tries again with backoff (kube-apiserver's audit log counts its Pod creates), and the
// job runs once the obstacle is gone, through the real kubectl, API server (its ResourceQuota
// admission, the controller manager's quota controller), operator, sidecars and trainers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/audit_log.h"
#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string CreatedReason(const json& job) {
  const json* created = FindJobCondition(job, "Created");
  return created != nullptr ? created->value("reason", "") : "";
}

// Pod creates in namespace default that reached the API server so far, whoever sent them and
// whatever the answer.
int PodCreates(const std::filesystem::path& audit_log) {
  const std::vector<AuditedRequest> requests = ReadAuditLog(audit_log);
  return static_cast<int>(std::count_if(requests.begin(), requests.end(), [](const AuditedRequest& request) {
    return request.verb == "create" && request.resource == "pods" && request.subresource.empty() &&
           request.namespace_ == "default";
  }));
}

class CreateRefusalsTest : public BedTest {
 protected:
  std::filesystem::path audit_log() const { return bed_->cluster().audit_log(); }
};

TEST_F(CreateRefusalsTest, AQuotaRefusalShowsTheQuotasMessageWithoutATightLoopAndClearsWhenTheQuotaGoes) {
  EndToEnd& bed = *bed_;
  ASSERT_EQ(bed.Apply("quota", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods-2\n  namespace: default\n"
                               "spec:\n  hard:\n    pods: \"2\"\n")
                .exit_code,
            0);
  // The quota admission refuses every Pod ("status unknown for quota") until the controller
  // manager's quota controller has written what the quota holds and what is used.
  const bool counted = WaitUntil(
      [&] {
        const json quota = bed.Get("resourcequota", "pods-2");
        const json status = quota.is_object() ? quota.value("status", json::object()) : json::object();
        return status.value("hard", json::object()).contains("pods") &&
               status.value("used", json::object()).contains("pods");
      },
      seconds(60), std::chrono::milliseconds(100));
  ASSERT_TRUE(counted) << bed.Get("resourcequota", "pods-2").dump(2);
  ASSERT_EQ(
      bed.Apply("capped", JobYaml({.name = "capped", .replicas = 4, .steps = 20, .preflight_timeout_seconds = 120}))
          .exit_code,
      0);
  const json refused =
      bed.WaitForJob("capped", [](const json& job) { return CreatedReason(job) == "CreateRefused"; }, seconds(60));
  ASSERT_EQ(CreatedReason(refused), "CreateRefused") << refused.dump(2) << bed.Diagnostics();
  const json& created = *FindJobCondition(refused, "Created");
  EXPECT_EQ(created["status"], "False");
  // kube-apiserver's own words for its quota admission, carried unedited.
  EXPECT_THAT(created["message"].get<std::string>(),
              ::testing::HasSubstr("pods \"capped-2\" is forbidden: exceeded quota: pods-2, requested: pods=1, "
                                   "used: pods=2, limited: pods=2"));
  EXPECT_EQ(JobState(refused), "Pending");

  // The observation window: Pod status changes keep enqueueing the job, yet the operator's
  // creates follow the backoff (5 s, 10 s, 20 s ...): a handful in 20 s, not a tight loop.
  const int before = PodCreates(audit_log());
  std::this_thread::sleep_for(seconds(20));
  const int tries = PodCreates(audit_log()) - before;
  EXPECT_GE(tries, 1);
  EXPECT_LE(tries, 4) << "Pod creates in 20 s";
  EXPECT_EQ(JobEventMessages(bed, "capped", "CreateRefused").size(), 1u) << "one Event per refusal, not per try";

  ASSERT_EQ(bed.Kubectl({"delete", "resourcequota", "pods-2"}).exit_code, 0);
  const json done =
      bed.WaitForJob("capped", [](const json& job) { return JobState(job) == "Succeeded"; }, seconds(120));
  ASSERT_EQ(JobState(done), "Succeeded") << done.dump(2) << bed.Diagnostics();
  EXPECT_EQ(CreatedReason(done), "PodsCreated");
  EXPECT_EQ((*FindJobCondition(done, "Created"))["status"], "True");
}

TEST_F(CreateRefusalsTest, APodNameTakenByAnotherPodIsANameConflictWithBackoff) {
  EndToEnd& bed = *bed_;
  // Not the job's: no owner reference, and no node it could run on.
  ASSERT_EQ(bed.Apply("squatter", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: taken-1\n  namespace: default\n"
                                  "spec:\n  nodeSelector:\n    nowhere: \"true\"\n  containers:\n"
                                  "    - name: c\n      image: ringleader/example-trainer:0.1.0\n")
                .exit_code,
            0);
  ASSERT_EQ(
      bed.Apply("taken", JobYaml({.name = "taken", .replicas = 2, .steps = 20, .preflight_timeout_seconds = 120}))
          .exit_code,
      0);
  const json conflict =
      bed.WaitForJob("taken", [](const json& job) { return CreatedReason(job) == "NameConflict"; }, seconds(60));
  ASSERT_EQ(CreatedReason(conflict), "NameConflict") << conflict.dump(2) << bed.Diagnostics();
  EXPECT_THAT((*FindJobCondition(conflict, "Created"))["message"].get<std::string>(),
              ::testing::HasSubstr("Pod taken-1 already exists and is not owned by this TrainingJob"));

  const int before = PodCreates(audit_log());
  std::this_thread::sleep_for(seconds(15));  // the observation window
  const int tries = PodCreates(audit_log()) - before;
  EXPECT_GE(tries, 1);
  EXPECT_LE(tries, 4) << "Pod creates in 15 s";
  EXPECT_EQ(JobEventMessages(bed, "taken", "NameConflict").size(), 1u);

  ASSERT_EQ(bed.Kubectl({"delete", "pod", "taken-1", "--wait=true"}).exit_code, 0);
  const json done =
      bed.WaitForJob("taken", [](const json& job) { return JobState(job) == "Succeeded"; }, seconds(120));
  ASSERT_EQ(JobState(done), "Succeeded") << done.dump(2) << bed.Diagnostics();
  EXPECT_EQ(CreatedReason(done), "PodsCreated");
}

}  // namespace
}  // namespace ringleader::testing
