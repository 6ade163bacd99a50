// Scheduling gates as kube-apiserver judges them: the rules alone, then through the Api (no HTTP):
// the SchedulingGated condition in the create's answer, and updates that may only remove gates.
#include "tests/devcluster/scheduling_gates.h"

#include <gtest/gtest.h>

#include "tests/devcluster/api.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json GatedPod(const std::string& name, json gates) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"schedulingGates", std::move(gates)}, {"containers", {{{"name", "main"}, {"image", "x"}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

json Gates(std::initializer_list<const char*> names) {
  json gates = json::array();
  for (const char* name : names) {
    gates.push_back({{"name", name}});
  }
  return gates;
}

const char* const kAddedX0 =
    "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'";
const char* const kAddedX1 =
    "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'";

std::vector<std::string> Texts(const std::vector<schema::SchemaError>& errors) {
  std::vector<std::string> out;
  for (const schema::SchemaError& error : errors) {
    out.push_back(error.ToString());
  }
  return out;
}

TEST(SchedulingGatedConditionTest, AGatedPodGetsTheConditionWithoutTimes) {
  json pod = GatedPod("g", Gates({"example.com/quota"}));
  AddSchedulingGatedCondition(pod);
  EXPECT_EQ(pod["status"]["conditions"], json::parse(R"([{"type": "PodScheduled", "status": "False",
    "lastProbeTime": null, "lastTransitionTime": null, "reason": "SchedulingGated",
    "message": "Scheduling is blocked due to non-empty scheduling gates"}])"));
}

TEST(SchedulingGatedConditionTest, NoGatesOrAPodScheduledConditionAlreadyThereLeaveThePodAlone) {
  json ungated = GatedPod("u", json::array());
  AddSchedulingGatedCondition(ungated);
  EXPECT_FALSE(ungated["status"].contains("conditions"));
  json scheduled = GatedPod("s", Gates({"a"}));
  scheduled["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  const json before = scheduled;
  AddSchedulingGatedCondition(scheduled);
  EXPECT_EQ(scheduled, before);
}

TEST(SchedulingGateRulesTest, RemovingGatesIsAllowed) {
  EXPECT_TRUE(SchedulingGateUpdateErrors(GatedPod("g", Gates({"a", "b"})), GatedPod("g", Gates({"b"}))).empty());
  EXPECT_TRUE(SchedulingGateUpdateErrors(GatedPod("g", Gates({"a", "b"})), GatedPod("g", json::array())).empty());
  json dropped = GatedPod("g", json::array());
  dropped["spec"].erase("schedulingGates");
  EXPECT_TRUE(SchedulingGateUpdateErrors(GatedPod("g", Gates({"a"})), dropped).empty());
}

TEST(SchedulingGateRulesTest, AnAddedGateIsForbiddenAtItsIndexInTheServersWords) {
  EXPECT_EQ(Texts(SchedulingGateUpdateErrors(GatedPod("g", Gates({"a"})), GatedPod("g", Gates({"a", "x"})))),
            std::vector<std::string>{kAddedX1});
  // Replacing one gate by another is an addition too; several come in index order.
  EXPECT_EQ(Texts(SchedulingGateUpdateErrors(GatedPod("g", Gates({"a", "b"})), GatedPod("g", Gates({"y", "b", "z"})))),
            (std::vector<std::string>{
                "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'y'",
                "spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate "
                "'z'"}));
}

TEST(SchedulingGateRulesTest, GatesCannotBeAddedToAPodCreatedWithout) {
  json ungated = GatedPod("u", json::array());
  ungated["spec"].erase("schedulingGates");
  EXPECT_EQ(Texts(SchedulingGateUpdateErrors(ungated, GatedPod("u", Gates({"x"})))),
            std::vector<std::string>{kAddedX0});
}

TEST(SchedulingGateRulesTest, ABoundPodCannotBeCreatedWithGates) {
  json pod = GatedPod("g", Gates({"a"}));
  EXPECT_TRUE(SchedulingGateCreateErrors(pod).empty());
  pod["spec"]["nodeName"] = "node-a";
  EXPECT_EQ(Texts(SchedulingGateCreateErrors(pod)),
            std::vector<std::string>{
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"});
}

class SchedulingGatesApiTest : public ::testing::Test {
 protected:
  SchedulingGatesApiTest() : store_(1000), api_(store_, catalog_), pods_(*catalog_.Find("", "v1", "pods")) {
    api_.EnsureNamespace("default");
  }

  // The 422 an update is answered with, or "" when it goes through.
  std::string UpdateRefusal(const std::string& name, json gates) {
    json pod = api_.Get(pods_, "default", name);
    pod["spec"]["schedulingGates"] = std::move(gates);
    try {
      api_.Update(pods_, "default", name, "", pod, {});
    } catch (const ApiError& error) {
      return std::to_string(error.code) + " " + error.message;
    }
    return "";
  }

  Store store_;
  Catalog catalog_;
  Api api_;
  ResourceInfo pods_;
};

TEST_F(SchedulingGatesApiTest, TheCreatesAnswerCarriesTheSchedulingGatedCondition) {
  const WriteResult created = api_.Create(pods_, "default", GatedPod("gated", Gates({"example.com/quota"})), {});
  ASSERT_EQ(created.code, 201);
  const json& conditions = created.object["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0]["reason"], "SchedulingGated");
  EXPECT_EQ(conditions[0]["message"], "Scheduling is blocked due to non-empty scheduling gates");
  // A client's own status is replaced, as the Pod strategy resets it at create.
  json claimed = GatedPod("claimed", Gates({"a"}));
  claimed["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  EXPECT_EQ(api_.Create(pods_, "default", claimed, {}).object["status"]["conditions"][0]["reason"], "SchedulingGated");
  json plain = GatedPod("plain", json::array());
  EXPECT_FALSE(api_.Create(pods_, "default", plain, {}).object["status"].contains("conditions"));
}

TEST_F(SchedulingGatesApiTest, AnUpdateMayRemoveGatesButNotAddThem) {
  api_.Create(pods_, "default", GatedPod("gated", Gates({"example.com/quota"})), {});
  EXPECT_EQ(UpdateRefusal("gated", Gates({"example.com/quota", "x"})),
            "422 Pod \"gated\" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but "
            "found new scheduling gate 'x'");
  EXPECT_EQ(UpdateRefusal("gated", json::array()), "");
  EXPECT_EQ(UpdateRefusal("gated", Gates({"example.com/quota"})),
            "422 Pod \"gated\" is invalid: spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but "
            "found new scheduling gate 'example.com/quota'");
  // A merge patch goes through the same rule.
  try {
    api_.Patch(pods_, "default", "gated", "", "application/merge-patch+json",
               {{"spec", {{"schedulingGates", Gates({"late"})}}}}, {});
    ADD_FAILURE() << "a patch adding a gate went through";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 422);
    EXPECT_EQ(error.details["causes"][0]["field"], "spec.schedulingGates[0].name");
  }
}

TEST_F(SchedulingGatesApiTest, APodCannotBeCreatedBoundAndGated) {
  json pod = GatedPod("bound", Gates({"a"}));
  pod["spec"]["nodeName"] = "node-a";
  try {
    api_.Create(pods_, "default", pod, {});
    ADD_FAILURE() << "the create went through";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 422);
    EXPECT_EQ(error.message,
              "Pod \"bound\" is invalid: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been "
              "cleared");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
