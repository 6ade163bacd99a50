// The Coscheduling stand-in, table-style: when the PodGroup CRD counts as served, and the gang
// decision - a group that fits, one that does not (none bound, the plugin's words), too few
// siblings, minMember below the Pod count, bound and finished siblings, the 10% gap, gated siblings.
#include "tests/devcluster/coscheduling.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/devcluster/scheduler.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Node(const std::string& name, const std::string& gpus = "4") {
  const json allocatable = {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}, {kGpuResource, gpus}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status", {{"allocatable", allocatable}, {"capacity", allocatable}}}};
}

// A Pod of PodGroup `group` asking for `gpus` GPUs.
json GangPod(const std::string& name, const std::string& group, int gpus) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{kPodGroupLabel, group}}}}},
              {"spec",
               {{"schedulerName", kSchedulerPluginsName},
                {"containers",
                 json::array({{{"name", "main"},
                               {"image", "trainer"},
                               {"resources", {{"limits", {{kGpuResource, std::to_string(gpus)}}}}}}})}}},
              {"status", {{"phase", "Pending"}}}};
  return pod;
}

json PodGroup(const std::string& name, int min_member) {
  return {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"minMember", min_member}}}};
}

std::vector<std::size_t> All(const std::vector<json>& pods) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    out.push_back(i);
  }
  return out;
}

const std::vector<json> kTwoNodes = {Node("node-a"), Node("node-b")};

TEST(ServesPodGroupsTest, OnlyAnEstablishedCrdServingV1alpha1) {
  json crd = {{"metadata", {{"name", kPodGroupCrdName}}},
              {"spec", {{"versions", json::array({{{"name", "v1alpha1"}, {"served", true}, {"storage", true}}})}}},
              {"status", {{"conditions", json::array({{{"type", "Established"}, {"status", "True"}}})}}}};
  EXPECT_TRUE(ServesPodGroups(&crd));
  EXPECT_FALSE(ServesPodGroups(nullptr));
  json deleting = crd;
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(ServesPodGroups(&deleting));
  json not_served = crd;
  not_served["spec"]["versions"][0]["served"] = false;
  EXPECT_FALSE(ServesPodGroups(&not_served));
  json other_version = crd;
  other_version["spec"]["versions"][0]["name"] = "v1beta1";
  EXPECT_FALSE(ServesPodGroups(&other_version));
  json not_established = crd;
  not_established["status"]["conditions"][0]["status"] = "False";
  EXPECT_FALSE(ServesPodGroups(&not_established));
}

TEST(PodGroupNotFoundTest, PermitsWordsWhenANodeFitsElseTheFitErrorWithPostFiltersWords) {
  EXPECT_EQ(PodGroupNotFoundMessage(""), "PodGroup not found");
  EXPECT_EQ(PodGroupNotFoundMessage("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. can not find pod group.");
}

TEST(PlanGangTest, AGroupThatFitsIsBoundWholeEachPlacedPodCountingForTheNext) {
  const std::vector<json> pods = {GangPod("g-0", "g", 2), GangPod("g-1", "g", 2), GangPod("g-2", "g", 2),
                                  GangPod("g-3", "g", 2)};
  const GangDecision decision = PlanGang(PodGroup("g", 4), All(pods), kTwoNodes, pods);
  EXPECT_TRUE(decision.refuse.empty());
  ASSERT_EQ(decision.bind.size(), 4u);
  int on_a = 0;
  for (const auto& [index, node] : decision.bind) {
    on_a += node == "node-a" ? 1 : 0;
  }
  EXPECT_EQ(on_a, 2);  // 2 GPUs each: two per node, never three on one
}

TEST(PlanGangTest, AGroupThatDoesNotFitBindsNoneAndEveryPendingPodCarriesTheFirstMisfitsMessage) {
  const std::vector<json> pods = {GangPod("g-0", "g", 3), GangPod("g-1", "g", 3), GangPod("g-2", "g", 3),
                                  GangPod("g-3", "g", 3)};
  const GangDecision decision = PlanGang(PodGroup("g", 4), All(pods), kTwoNodes, pods);
  EXPECT_TRUE(decision.bind.empty());
  ASSERT_EQ(decision.refuse.size(), 4u);
  const std::string message =
      "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
      "PodGroup default/g gets rejected due to Pod g-2 is unschedulable even after PostFilter.";
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(decision.refuse[i].first, i);
    EXPECT_EQ(decision.refuse[i].second, message);
  }
}

TEST(PlanGangTest, TooFewSiblingsIsPreFiltersRefusalForEachPod) {
  const std::vector<json> pods = {GangPod("g-0", "g", 1), GangPod("g-1", "g", 1)};
  const GangDecision decision = PlanGang(PodGroup("g", 4), All(pods), kTwoNodes, pods);
  EXPECT_TRUE(decision.bind.empty());
  ASSERT_EQ(decision.refuse.size(), 2u);
  EXPECT_EQ(decision.refuse[1].second,
            "0/2 nodes are available: pre-filter pod g-1 cannot find enough sibling pods, current pods number: 2, "
            "minMember of group: 4. PodGroup default/g gets rejected due to Pod g-1 is unschedulable even after "
            "PostFilter.");
}

TEST(PlanGangTest, WithMinMemberBelowThePodCountThePodsThatFitAreBoundAndTheRestGetThePlainFitError) {
  const std::vector<json> pods = {GangPod("g-0", "g", 3), GangPod("g-1", "g", 3), GangPod("g-2", "g", 3),
                                  GangPod("g-3", "g", 3)};
  const GangDecision decision = PlanGang(PodGroup("g", 2), All(pods), kTwoNodes, pods);
  ASSERT_EQ(decision.bind.size(), 2u);
  EXPECT_EQ(decision.bind[0].first, 0u);
  EXPECT_EQ(decision.bind[1].first, 1u);
  EXPECT_NE(decision.bind[0].second, decision.bind[1].second);
  ASSERT_EQ(decision.refuse.size(), 2u);
  EXPECT_EQ(decision.refuse[0].first, 2u);
  EXPECT_EQ(decision.refuse[0].second, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
}

TEST(PlanGangTest, BoundSiblingsCountTowardsMinMemberAndFinishedOnesDoNot) {
  std::vector<json> pods = {GangPod("g-0", "g", 2), GangPod("g-1", "g", 2), GangPod("g-2", "g", 2),
                            GangPod("g-3", "g", 2)};
  pods[0]["spec"]["nodeName"] = "node-a";
  pods[0]["status"]["phase"] = "Running";
  pods[1]["spec"]["nodeName"] = "node-a";
  pods[1]["status"]["phase"] = "Running";
  GangDecision decision = PlanGang(PodGroup("g", 4), {2, 3}, kTwoNodes, pods);
  ASSERT_EQ(decision.bind.size(), 2u);
  EXPECT_EQ(decision.bind[0].second, "node-b");
  EXPECT_EQ(decision.bind[1].second, "node-b");

  pods[1]["status"]["phase"] = "Succeeded";  // a finished sibling is gone for the scheduler
  decision = PlanGang(PodGroup("g", 4), {2, 3}, kTwoNodes, pods);
  EXPECT_TRUE(decision.bind.empty());
  ASSERT_EQ(decision.refuse.size(), 2u);
  EXPECT_EQ(decision.refuse[0].second,
            "0/2 nodes are available: pre-filter pod g-2 cannot find enough sibling pods, current pods number: 3, "
            "minMember of group: 4. PodGroup default/g gets rejected due to Pod g-2 is unschedulable even after "
            "PostFilter.");
}

TEST(PlanGangTest, AGapOfAtMostTenPercentIsNotRejectedByPostFilterButStillNotBound) {
  std::vector<json> pods;
  for (int i = 0; i < 10; ++i) {
    pods.push_back(GangPod("g-" + std::to_string(i), "g", 1));
  }
  const GangDecision decision = PlanGang(PodGroup("g", 10), All(pods), {Node("node-a", "9")}, pods);
  EXPECT_TRUE(decision.bind.empty());
  ASSERT_EQ(decision.refuse.size(), 10u);
  EXPECT_EQ(decision.refuse[0].second, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST(PlanGangTest, PodsWaitingForGatedSiblingsAreNeitherBoundNorRefused) {
  std::vector<json> pods = {GangPod("g-0", "g", 1), GangPod("g-1", "g", 1)};
  pods[1]["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}});
  const GangDecision decision = PlanGang(PodGroup("g", 2), {0}, kTwoNodes, pods);
  EXPECT_TRUE(decision.bind.empty());
  EXPECT_TRUE(decision.refuse.empty());
}

TEST(PlanGangTest, OtherGroupsAndNamespacesAreNotSiblings) {
  std::vector<json> pods = {GangPod("g-0", "g", 1), GangPod("h-0", "h", 1), GangPod("g-1", "g", 1)};
  pods[2]["metadata"]["namespace"] = "other";
  const GangDecision decision = PlanGang(PodGroup("g", 2), {0}, kTwoNodes, pods);
  ASSERT_EQ(decision.refuse.size(), 1u);
  EXPECT_NE(decision.refuse[0].second.find("current pods number: 1, minMember of group: 2"), std::string::npos);
}

TEST(PlanGangTest, NoNodesIsKubeSchedulersOwnAnswer) {
  const std::vector<json> pods = {GangPod("g-0", "g", 1)};
  const GangDecision decision = PlanGang(PodGroup("g", 1), All(pods), {}, pods);
  ASSERT_EQ(decision.refuse.size(), 1u);
  EXPECT_EQ(decision.refuse[0].second, "no nodes available to schedule pods");
}

}  // namespace
}  // namespace ringleader::devcluster
