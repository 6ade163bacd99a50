// Suspend gives a job's port block back (a block held by every suspended job, say by a queue
// controller that suspends many, would drain the range), and resume takes a block again, through
// the real kubectl, operator, sidecars and trainers on devcluster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

bool HasPorts(const json& job) { return job.value("status", json::object()).contains("ports"); }

int MasterPort(const json& job) { return job["status"]["ports"]["master"].get<int>(); }

TEST(SuspendTest, ASuspendedJobsBlockGoesToAnotherJobAndResumeTakesANewOne) {
  std::string why;
  if (!EndToEnd::Supported(&why)) {
    GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
  }
  EndToEnd bed;
  ASSERT_EQ(bed.Apply("first", JobYaml({.name = "first", .replicas = 2, .steps = 600, .step_delay_ms = 100}))
                .exit_code,
            0);
  const json running = bed.WaitForJob("first", JobRunning, seconds(120));
  ASSERT_EQ(JobState(running), "Running") << running.dump(2) << bed.Diagnostics();
  const int first_port = MasterPort(running);

  const CommandOutput suspend = bed.Kubectl(
      {"patch", "trainingjob", "first", "--type", "merge", "-p", R"({"spec":{"runPolicy":{"suspend":true}}})"});
  ASSERT_EQ(suspend.exit_code, 0) << suspend.output;
  const json suspended = bed.WaitForJob(
      "first", [](const json& job) { return JobState(job) == "Suspended" && !HasPorts(job); }, seconds(60));
  ASSERT_FALSE(HasPorts(suspended)) << suspended.dump(2) << bed.Diagnostics();
  EXPECT_FALSE(bed.Get("service", "first").is_object()) << "the Service named the old block's ports";

  // The freed block is the lowest, so the next job is handed exactly it.
  ASSERT_EQ(bed.Apply("second", JobYaml({.name = "second", .replicas = 2, .steps = 300, .step_delay_ms = 100}))
                .exit_code,
            0);
  const json second = bed.WaitForJob("second", JobRunning, seconds(120));
  ASSERT_EQ(JobState(second), "Running") << second.dump(2) << bed.Diagnostics();
  EXPECT_EQ(MasterPort(second), first_port);

  const CommandOutput resume = bed.Kubectl(
      {"patch", "trainingjob", "first", "--type", "merge", "-p", R"({"spec":{"runPolicy":{"suspend":false}}})"});
  ASSERT_EQ(resume.exit_code, 0) << resume.output;
  const json resumed = bed.WaitForJob("first", JobRunning, seconds(120));
  ASSERT_EQ(JobState(resumed), "Running") << resumed.dump(2) << bed.Diagnostics();
  EXPECT_NE(MasterPort(resumed), first_port);
  EXPECT_NE(MasterPort(resumed), MasterPort(second));
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "first", "second"}).exit_code, 0);
}

}  // namespace
}  // namespace ringleader::testing
