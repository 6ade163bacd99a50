// The legacy resource lists (/api/v1, /apis/G/V) as kubectl drain and kubectl api-resources read
// them: every subresource devcluster serves, with the kind, group, version and verbs
// kube-apiserver 1.32 lists for it.
#include "tests/devcluster/discovery.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Get(const Catalog& catalog, std::vector<std::string> segments) {
  Request request;
  request.method = "GET";
  request.segments = std::move(segments);
  request.accept = "application/json";
  const std::optional<Response> response = ServeDiscovery(request, catalog, "127.0.0.1:6443");
  EXPECT_TRUE(response.has_value());
  return response ? json::parse(response->body) : json();
}

// The entries whose name starts with `prefix` ("pods" gives pods, pods/eviction, ...), in order.
json Entries(const json& list, const std::string& prefix) {
  json out = json::array();
  for (const json& entry : list["resources"]) {
    const std::string name = entry["name"];
    if (name == prefix || name.rfind(prefix + "/", 0) == 0) {
      out.push_back(entry);
    }
  }
  return out;
}

TEST(LegacyDiscoveryTest, ApiV1ListsThePodSubresourcesAsKubeApiserverDoes) {
  const Catalog catalog;
  const json list = Get(catalog, {"api", "v1"});
  const json pods = Entries(list, "pods");
  ASSERT_EQ(pods.size(), 4u) << pods.dump(2);
  EXPECT_EQ(pods[0]["name"], "pods");
  // kubectl drain's CheckEvictionSupport needs name, kind Eviction, and a group and version.
  EXPECT_EQ(pods[1], json::parse(R"({"name": "pods/eviction", "singularName": "", "namespaced": true,
                                     "group": "policy", "version": "v1", "kind": "Eviction",
                                     "verbs": ["create"]})"));
  EXPECT_EQ(pods[2], json::parse(R"({"name": "pods/log", "singularName": "", "namespaced": true,
                                     "kind": "Pod", "verbs": ["get"]})"));
  EXPECT_EQ(pods[3], json::parse(R"({"name": "pods/status", "singularName": "", "namespaced": true,
                                     "kind": "Pod", "verbs": ["get", "patch", "update"]})"));
}

TEST(LegacyDiscoveryTest, ApiV1ListsTheServiceAccountTokenSubresource) {
  const Catalog catalog;
  const json accounts = Entries(Get(catalog, {"api", "v1"}), "serviceaccounts");
  ASSERT_EQ(accounts.size(), 2u) << accounts.dump(2);
  EXPECT_EQ(accounts[1], json::parse(R"({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                                         "group": "authentication.k8s.io", "version": "v1",
                                         "kind": "TokenRequest", "verbs": ["create"]})"));
}

TEST(LegacyDiscoveryTest, AGroupsStatusSubresourceHasNoGroupOrVersion) {
  const Catalog catalog;
  const json deployments = Entries(Get(catalog, {"apis", "apps", "v1"}), "deployments");
  ASSERT_EQ(deployments.size(), 2u) << deployments.dump(2);
  EXPECT_EQ(deployments[1], json::parse(R"({"name": "deployments/status", "singularName": "", "namespaced": true,
                                            "kind": "Deployment", "verbs": ["get", "patch", "update"]})"));
}

}  // namespace
}  // namespace ringleader::devcluster
