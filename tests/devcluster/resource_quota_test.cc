// ResourceQuota admission: kube-apiserver's wording and arithmetic, pure and through Api::Create.
#include "tests/devcluster/resource_quota.h"

#include <gtest/gtest.h>

#include "tests/devcluster/api.h"
#include "tests/devcluster/catalog.h"
#include "tests/devcluster/machinery/status.h"
#include "tests/devcluster/store.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Pod(const std::string& name, json requests = json::object(), json limits = json::object(),
         const std::string& phase = "Running") {
  json resources = json::object();
  if (!requests.empty()) {
    resources["requests"] = requests;
  }
  if (!limits.empty()) {
    resources["limits"] = limits;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team"}}},
          {"spec", {{"containers", {{{"name", "trainer"}, {"image", "busybox"}, {"resources", resources}}}}}},
          {"status", {{"phase", phase}}}};
}

json Quota(const std::string& name, json hard) {
  return {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", name}, {"namespace", "team"}}},
          {"spec", {{"hard", hard}}}};
}

std::string Refusal(const json& pod, const std::vector<json>& existing, const std::vector<json>& quotas) {
  QuotaAdmission admission{"pods", "", &pod, {}, {}, std::chrono::system_clock::now()};
  for (const json& other : existing) {
    admission.existing.push_back(&other);
  }
  for (const json& quota : quotas) {
    admission.quotas.push_back(&quota);
  }
  return QuotaRefusal(admission);
}

TEST(ResourceQuotaTest, QuantitiesPrintAsKubernetesPrintsThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1", "1"},     {"500m", "500m"}, {"1.5", "1500m"}, {"2000m", "2"},   {"1000", "1k"},
      {"1Gi", "1Gi"}, {"1536Mi", "1536Mi"}, {"1500", "1500"}, {"2e3", "2k"}, {"0", "0"},
      {"1024Ki", "1Mi"}, {"128974848", "128974848"}};
  for (const auto& [text, printed] : cases) {
    const auto quantity = ParseQuotaQuantity(text);
    ASSERT_TRUE(quantity.has_value()) << text;
    EXPECT_EQ(FormatQuotaQuantity(*quantity), printed) << text;
  }
  EXPECT_FALSE(ParseQuotaQuantity("two").has_value());
  EXPECT_FALSE(ParseQuotaQuantity("1Xi").has_value());
  EXPECT_FALSE(ParseQuotaQuantity("").has_value());
}

TEST(ResourceQuotaTest, PodsBeyondTheCountAreRefusedInTheServersWords) {
  const std::vector<json> quotas = {Quota("pods-2", {{"pods", "2"}})};
  const std::vector<json> running = {Pod("a"), Pod("b")};
  EXPECT_EQ(Refusal(Pod("c"), running, quotas), "exceeded quota: pods-2, requested: pods=1, used: pods=2, limited: pods=2");
  EXPECT_EQ(Refusal(Pod("c"), {Pod("a")}, quotas), "");
}

TEST(ResourceQuotaTest, TerminalPodsDoNotCountButCountPodsDoes) {
  const std::vector<json> existing = {Pod("a"), Pod("b", {}, {}, "Succeeded"), Pod("c", {}, {}, "Failed")};
  EXPECT_EQ(Refusal(Pod("d"), existing, {Quota("q", {{"pods", "2"}})}), "");
  EXPECT_EQ(Refusal(Pod("d"), existing, {Quota("q", {{"count/pods", "3"}})}),
            "exceeded quota: q, requested: count/pods=1, used: count/pods=3, limited: count/pods=3");
}

TEST(ResourceQuotaTest, ComputeAndExtendedResourcesListEveryExceededResourceSorted) {
  const json quota = Quota("gpus", {{"requests.nvidia.com/gpu", "4"}, {"requests.cpu", "2"}, {"limits.memory", "2Gi"},
                                    {"pods", "10"}});
  const json used = Pod("a", {{"cpu", "1500m"}, {"nvidia.com/gpu", "4"}}, {{"memory", "1Gi"}, {"nvidia.com/gpu", "4"}});
  const json wanted = Pod("b", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}, {{"memory", "1536Mi"}, {"nvidia.com/gpu", "1"}});
  EXPECT_EQ(Refusal(wanted, {used}, {quota}),
            "exceeded quota: gpus, requested: limits.memory=1536Mi,requests.cpu=1,requests.nvidia.com/gpu=1, "
            "used: limits.memory=1Gi,requests.cpu=1500m,requests.nvidia.com/gpu=4, "
            "limited: limits.memory=2Gi,requests.cpu=2,requests.nvidia.com/gpu=4");
}

TEST(ResourceQuotaTest, QuotaOnCpuMakesEveryContainerStateIt) {
  json pod = Pod("b", {{"memory", "1Gi"}});
  pod["spec"]["initContainers"] = {{{"name", "setup"}, {"image", "busybox"}}};
  EXPECT_EQ(Refusal(pod, {}, {Quota("compute", {{"requests.cpu", "4"}, {"limits.memory", "8Gi"}})}),
            "failed quota: compute: must specify limits.memory for: setup,trainer; requests.cpu for: setup,trainer");
}

TEST(ResourceQuotaTest, InitContainersCountAtTheirPeakAndSidecarsAlways) {
  json pod = Pod("b", {{"cpu", "1"}});
  pod["spec"]["initContainers"] = {
      {{"name", "sidecar"}, {"restartPolicy", "Always"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}},
      {{"name", "preflight"}, {"resources", {{"requests", {{"cpu", "3"}}}}}}};
  const ResourceUsage usage = PodUsage(pod, std::chrono::system_clock::now());
  EXPECT_EQ(FormatQuotaQuantity(usage.at("requests.cpu")), "3500m");  // preflight + sidecar
  EXPECT_EQ(FormatQuotaQuantity(usage.at("pods")), "1");
}

TEST(ResourceQuotaTest, SpecsDevclusterCannotEnforceAreRefused) {
  EXPECT_TRUE(QuotaSpecErrors(Quota("q", {{"pods", "4"}, {"count/services", "1"}, {"secrets", "3"}})).empty());
  const auto errors = QuotaSpecErrors(Quota("q", {{"services.nodeports", "1"}, {"pods", "-1"}}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].ToString(), "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0");
  EXPECT_EQ(errors[1].ToString(), "spec.hard[services.nodeports]: Forbidden: devcluster does not enforce quota on this resource");
  json scoped = Quota("q", {{"pods", "1"}});
  scoped["spec"]["scopes"] = {"BestEffort"};
  EXPECT_EQ(QuotaSpecErrors(scoped).size(), 1u);
}

class QuotaApiTest : public ::testing::Test {
 protected:
  QuotaApiTest() : store_(1000), api_(store_, catalog_) { api_.EnsureNamespace("team"); }

  ResourceInfo Info(const std::string& plural) { return *catalog_.Find("", "v1", plural); }

  Store store_;
  Catalog catalog_;
  Api api_;
};

TEST_F(QuotaApiTest, ACreateOverQuotaIsA403ForbiddenNamingThePod) {
  api_.Create(Info("resourcequotas"), "team", Quota("pods-2", {{"pods", "2"}}), {});
  for (const char* name : {"job-0", "job-1"}) {
    EXPECT_EQ(api_.Create(Info("pods"), "team", Pod(name), {}).code, 201);
  }
  try {
    api_.Create(Info("pods"), "team", Pod("job-2"), {});
    FAIL() << "the third pod was admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code, 403);
    EXPECT_EQ(e.reason, "Forbidden");
    EXPECT_EQ(e.message, "pods \"job-2\" is forbidden: exceeded quota: pods-2, requested: pods=1, used: pods=2, "
                         "limited: pods=2");
  }
  // A name already taken is still refused by the quota first, as admission runs before storage.
  try {
    api_.Create(Info("pods"), "team", Pod("job-1"), {});
    FAIL() << "admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code, 403);
  }
  api_.Delete(Info("resourcequotas"), "team", "pods-2", nullptr, false);
  EXPECT_EQ(api_.Create(Info("pods"), "team", Pod("job-2"), {}).code, 201);
}

TEST_F(QuotaApiTest, ObjectCountsCoverServicesAndSecrets) {
  api_.Create(Info("resourcequotas"), "team", Quota("objects", {{"count/secrets", "1"}}), {});
  const json secret = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "a"}}}};
  api_.Create(Info("secrets"), "team", secret, {});
  json second = secret;
  second["metadata"]["name"] = "b";
  try {
    api_.Create(Info("secrets"), "team", second, {});
    FAIL() << "admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.message, "secrets \"b\" is forbidden: exceeded quota: objects, requested: count/secrets=1, "
                         "used: count/secrets=1, limited: count/secrets=1");
  }
}

TEST_F(QuotaApiTest, AQuotaDevclusterCannotEnforceIsInvalid) {
  try {
    api_.Create(Info("resourcequotas"), "team", Quota("lb", {{"services.loadbalancers", "1"}}), {});
    FAIL() << "admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code, 422);
    EXPECT_EQ(e.message, "ResourceQuota \"lb\" is invalid: spec.hard[services.loadbalancers]: Forbidden: "
                         "devcluster does not enforce quota on this resource");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
