// PlanPodDeletion: which DELETEs of a Pod wait for its kubelet, and what they write.
#include "tests/devcluster/graceful_deletion.h"

#include <gtest/gtest.h>

#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

const Time kNow = *ParseTime("2026-01-01T00:00:00Z");

json BoundPod() {
  return {{"metadata", {{"name", "p"}, {"generation", 1}}},
          {"spec", {{"nodeName", "node-a"}, {"terminationGracePeriodSeconds", 10}}},
          {"status", {{"phase", "Running"}}}};
}

TEST(GracefulDeletionTest, ABoundRunningPodIsMarkedWithItsOwnGracePeriod) {
  const PodDeletion plan = PlanPodDeletion(BoundPod(), std::nullopt, kNow);
  EXPECT_EQ(plan.step, PodDeletionStep::kGraceful);
  EXPECT_EQ(plan.pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:10Z");
  EXPECT_EQ(plan.pod["metadata"]["deletionGracePeriodSeconds"], 10);
  EXPECT_EQ(plan.pod["metadata"]["generation"], 2);
}

TEST(GracefulDeletionTest, TheAskedPeriodWinsAndWithoutAnyItIsThirtySeconds) {
  EXPECT_EQ(PlanPodDeletion(BoundPod(), 3, kNow).pod["metadata"]["deletionGracePeriodSeconds"], 3);
  json pod = BoundPod();
  pod["spec"].erase("terminationGracePeriodSeconds");
  EXPECT_EQ(PlanPodDeletion(pod, std::nullopt, kNow).pod["metadata"]["deletionGracePeriodSeconds"], 30);
  // BeforeDelete: a negative period is 1 s.
  EXPECT_EQ(PlanPodDeletion(BoundPod(), -5, kNow).pod["metadata"]["deletionGracePeriodSeconds"], 1);
}

TEST(GracefulDeletionTest, UnboundFinishedOrZeroGraceGoAtOnce) {
  json unbound = BoundPod();
  unbound["spec"].erase("nodeName");
  json failed = BoundPod();
  failed["status"]["phase"] = "Failed";
  json succeeded = BoundPod();
  succeeded["status"]["phase"] = "Succeeded";
  for (const json& pod : {unbound, failed, succeeded}) {
    const PodDeletion plan = PlanPodDeletion(pod, std::nullopt, kNow);
    EXPECT_EQ(plan.step, PodDeletionStep::kNow) << pod.dump();
    EXPECT_FALSE(plan.pod["metadata"].contains("deletionTimestamp"));
  }
  EXPECT_EQ(PlanPodDeletion(BoundPod(), 0, kNow).step, PodDeletionStep::kNow);
}

TEST(GracefulDeletionTest, ASecondDeleteMayShortenTheGracePeriodButNeverLengthenIt) {
  const json marked = PlanPodDeletion(BoundPod(), std::nullopt, kNow).pod;  // deadline 00:00:10, 10 s
  EXPECT_EQ(PlanPodDeletion(marked, std::nullopt, kNow).step, PodDeletionStep::kPending);
  EXPECT_EQ(PlanPodDeletion(marked, 10, kNow).step, PodDeletionStep::kPending);
  EXPECT_EQ(PlanPodDeletion(marked, 60, kNow).step, PodDeletionStep::kPending);
  const PodDeletion shorter = PlanPodDeletion(marked, 4, kNow + std::chrono::seconds(2));
  EXPECT_EQ(shorter.step, PodDeletionStep::kGraceful);
  EXPECT_EQ(shorter.pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:04Z");  // moved back 6 s
  EXPECT_EQ(shorter.pod["metadata"]["deletionGracePeriodSeconds"], 4);
  EXPECT_EQ(shorter.pod["metadata"]["generation"], 2) << "only the first mark bumps the generation";
  // The kubelet's DELETE with 0 ends it.
  const PodDeletion last = PlanPodDeletion(marked, 0, kNow);
  EXPECT_EQ(last.step, PodDeletionStep::kNow);
  EXPECT_EQ(last.pod["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(last.pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
}

TEST(GracefulDeletionTest, GracePeriodSecondsMustBeAnInteger) {
  EXPECT_EQ(GracePeriodSeconds(json::object()), std::nullopt);
  EXPECT_EQ(GracePeriodSeconds({{"gracePeriodSeconds", nullptr}}), std::nullopt);
  EXPECT_EQ(GracePeriodSeconds({{"gracePeriodSeconds", 7}}), 7);
  try {
    GracePeriodSeconds({{"gracePeriodSeconds", "7"}});
    FAIL() << "a string was taken";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 400);
    EXPECT_EQ(error.message,
              "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
