// Eviction bodies and the DisruptionTarget condition, as kube-apiserver's EvictionREST has them.
#include "tests/devcluster/eviction.h"

#include <gtest/gtest.h>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Eviction(const std::string& name) {
  return {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", name}, {"namespace", "ml"}}}};
}

std::string Refusal(const json& body) {
  try {
    ParseEviction(body, "ml", "job-0", false);
  } catch (const ApiError& error) {
    return std::to_string(error.code) + " " + error.message;
  }
  return "accepted";
}

TEST(EvictionTest, BodiesAreCheckedAgainstTheUrlInTheServersWords) {
  EXPECT_EQ(Refusal(Eviction("job-0")), "accepted");
  json v1beta1 = Eviction("job-0");
  v1beta1["apiVersion"] = "policy/v1beta1";
  EXPECT_EQ(Refusal(v1beta1), "accepted");
  EXPECT_EQ(Refusal(Eviction("job-1")), "400 name in URL does not match name in Eviction object");
  json other_ns = Eviction("job-0");
  other_ns["metadata"]["namespace"] = "default";
  EXPECT_EQ(Refusal(other_ns),
            "400 the namespace of the provided object does not match the namespace sent on the request");
  json pod = Eviction("job-0");
  pod["apiVersion"] = "v1";
  EXPECT_EQ(Refusal(pod), "400 the API version in the data (v1) does not match the expected API version (policy/v1)");
}

TEST(EvictionTest, DeleteOptionsAndDryRunComeFromTheBodyOrTheQuery) {
  json body = Eviction("job-0");
  body["deleteOptions"] = {{"gracePeriodSeconds", 3}};
  EvictionRequest request = ParseEviction(body, "ml", "job-0", false);
  EXPECT_EQ(request.delete_options["gracePeriodSeconds"], 3);
  EXPECT_FALSE(request.dry_run);
  EXPECT_TRUE(ParseEviction(body, "ml", "job-0", true).dry_run);
  body["deleteOptions"]["dryRun"] = {"All"};
  EXPECT_TRUE(ParseEviction(body, "ml", "job-0", false).dry_run);
}

TEST(EvictionTest, TheConditionIsAddedOnceAndKeepsItsTransitionTime) {
  const Time first = *ParseTime("2026-01-01T00:00:00Z");
  json pod = {{"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  pod = WithEvictionCondition(pod, first);
  ASSERT_EQ(pod["status"]["conditions"].size(), 2u);
  EXPECT_EQ(pod["status"]["conditions"][1],
            json({{"type", "DisruptionTarget"},
                  {"status", "True"},
                  {"lastProbeTime", nullptr},
                  {"lastTransitionTime", "2026-01-01T00:00:00Z"},
                  {"reason", "EvictionByEvictionAPI"},
                  {"message", "Eviction API: evicting"}}));
  pod = WithEvictionCondition(pod, first + std::chrono::minutes(1));
  ASSERT_EQ(pod["status"]["conditions"].size(), 2u);
  EXPECT_EQ(pod["status"]["conditions"][1]["lastTransitionTime"], "2026-01-01T00:00:00Z");
}

TEST(EvictionTest, PreconditionsAreWordedAsTheEvictionChecksThem) {
  const json pod = {{"metadata", {{"name", "job-0"}, {"uid", "u-1"}, {"resourceVersion", "7"}}}};
  EXPECT_NO_THROW(CheckEvictionPreconditions(pod, {{"preconditions", {{"uid", "u-1"}, {"resourceVersion", "7"}}}}));
  try {
    CheckEvictionPreconditions(pod, {{"preconditions", {{"uid", "u-2"}}}});
    FAIL() << "another uid was taken";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 409);
    EXPECT_EQ(error.message,
              "Operation cannot be fulfilled on Pod \"job-0\": the UID in the precondition (u-2) does not match the "
              "UID in record (u-1). The object might have been deleted and then recreated");
  }
}

TEST(EvictionTest, TheAnswerIsAStatusSuccessWithCode201) {
  EXPECT_EQ(EvictionSucceeded(),
            json({{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}}));
}

}  // namespace
}  // namespace ringleader::devcluster
