// Graceful deletion and eviction through the Api (no HTTP, no kubelet): what is stored and
// answered for each DELETE and Eviction, with finalizers and later updates.
#include <gtest/gtest.h>

#include "tests/devcluster/api.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

class PodDeletionApiTest : public ::testing::Test {
 protected:
  PodDeletionApiTest() : store_(1000), api_(store_, catalog_), pods_(*catalog_.Find("", "v1", "pods")) {
    api_.EnsureNamespace("default");
  }

  // A Pod bound to node-a and Running, as the scheduler and kubelet would leave it.
  void CreateRunning(const std::string& name, json extra_meta = json::object()) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}}},
                {"spec", {{"nodeName", "node-a"}, {"containers", {{{"name", "main"}, {"image", "x"}}}}}}};
    pod["metadata"].update(extra_meta);
    api_.Create(pods_, "default", pod, {});
    store_.Write([&](Store::Txn& txn) {
      json stored = *txn.Get("/pods", "default", name);
      stored["status"]["phase"] = "Running";
      txn.Put("/pods", std::move(stored));
    });
  }
  json Stored(const std::string& name) {
    json out;
    store_.Read([&](const Store::Txn& txn) {
      if (const json* pod = txn.Get("/pods", "default", name)) {
        out = *pod;
      }
    });
    return out;
  }

  Store store_;
  Catalog catalog_;
  Api api_;
  ResourceInfo pods_;
};

TEST_F(PodDeletionApiTest, ARunningPodIsMarkedAndAnswered200UntilItsKubeletDeletesItWithGraceZero) {
  CreateRunning("p");
  const WriteResult marked = api_.Delete(pods_, "default", "p", {{"gracePeriodSeconds", 20}}, false);
  EXPECT_EQ(marked.code, 200);
  EXPECT_EQ(marked.object["metadata"]["deletionGracePeriodSeconds"], 20);
  EXPECT_EQ(Stored("p")["metadata"]["deletionGracePeriodSeconds"], 20);
  // A longer period changes nothing; the answer is the Pod as it is.
  const WriteResult again = api_.Delete(pods_, "default", "p", {{"gracePeriodSeconds", 60}}, false);
  EXPECT_EQ(again.code, 200);
  EXPECT_EQ(again.object["metadata"]["resourceVersion"], marked.object["metadata"]["resourceVersion"]);
  // An update while the grace period runs keeps the Pod (no finalizers, but grace is not 0).
  api_.Patch(pods_, "default", "p", "", "application/merge-patch+json", {{"metadata", {{"labels", {{"a", "b"}}}}}}, {});
  EXPECT_FALSE(Stored("p").is_null());
  const std::string uid = Stored("p")["metadata"]["uid"];
  EXPECT_EQ(api_.Delete(pods_, "default", "p", {{"gracePeriodSeconds", 0}, {"preconditions", {{"uid", uid}}}}, false).code,
            200);
  EXPECT_TRUE(Stored("p").is_null());
}

TEST_F(PodDeletionApiTest, FinalizersHoldAPodAfterItsKubeletsDeleteUntilTheyAreRemoved) {
  CreateRunning("held", {{"finalizers", {"example.com/keep"}}});
  api_.Delete(pods_, "default", "held", json::object(), false);
  EXPECT_EQ(Stored("held")["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(api_.Delete(pods_, "default", "held", {{"gracePeriodSeconds", 0}}, false).code, 202);
  EXPECT_EQ(Stored("held")["metadata"]["deletionGracePeriodSeconds"], 0);
  api_.Patch(pods_, "default", "held", "", "application/merge-patch+json", {{"metadata", {{"finalizers", nullptr}}}}, {});
  EXPECT_TRUE(Stored("held").is_null());
}

TEST_F(PodDeletionApiTest, AnEvictionAddsDisruptionTargetThenDeletesGracefully) {
  CreateRunning("victim");
  const json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", "victim"}}},
                         {"deleteOptions", {{"gracePeriodSeconds", 5}}}};
  const WriteResult dry = api_.Evict("default", "victim", eviction, true);
  EXPECT_EQ(dry.code, 201);
  EXPECT_FALSE(Stored("victim")["metadata"].contains("deletionTimestamp")) << "a dry run changed the Pod";
  const WriteResult result = api_.Evict("default", "victim", eviction, false);
  EXPECT_EQ(result.code, 201);
  EXPECT_EQ(result.object["status"], "Success");
  const json pod = Stored("victim");
  EXPECT_EQ(pod["metadata"]["deletionGracePeriodSeconds"], 5);
  ASSERT_TRUE(pod["status"].contains("conditions"));
  EXPECT_EQ(pod["status"]["conditions"].back()["reason"], "EvictionByEvictionAPI");
  try {
    api_.Evict("default", "ghost", {{"metadata", {{"name", "ghost"}}}}, false);
    FAIL() << "a missing Pod was evicted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 404);
    EXPECT_EQ(error.message, "pods \"ghost\" not found");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
