// Volumes from API objects: the projected kube-api-access volume the ServiceAccount admission
// plugin adds to every Pod, configMap and secret volumes, and waiting for what does not exist yet.
#include "tests/devcluster/kubelet/api_volumes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The volume kube-apiserver's ServiceAccount admission plugin adds (v1.37).
json KubeApiAccess() {
  return json::parse(R"({"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
      {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
      {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
      {"downwardAPI": {"items": [{"path": "namespace",
                                  "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})");
}

json Pod() {
  return {{"metadata", {{"name", "job-0"}, {"namespace", "ml"}, {"uid", "u1"}, {"labels", {{"b", "2"}, {"a", "1"}}}}}};
}

class ApiVolumesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ringleader::testing::MakeTempDir("api-volumes-test");
    sources_.secret = [this](const std::string& name) -> std::optional<json> {
      if (name != "job-token") {
        return std::nullopt;
      }
      return json{{"metadata", {{"name", name}}}, {"data", {{"token", "czNjcjN0"}}}};
    };
    sources_.config_map = [this](const std::string& name) -> std::optional<json> {
      if (name == "forbidden") {
        throw std::runtime_error("configmaps \"forbidden\" is forbidden: no relationship found");
      }
      if (name != "kube-root-ca.crt" || !ca_published_) {
        return std::nullopt;
      }
      return json{{"metadata", {{"name", name}}}, {"data", {{"ca.crt", "-----BEGIN CERTIFICATE-----\n"}}}};
    };
    sources_.service_account_token = [this](const std::string& audience, std::int64_t seconds) {
      requested_ = audience + "/" + std::to_string(seconds);
      return std::string("eyJhbGciOi");
    };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  VolumeSources sources_;
  bool ca_published_ = true;
  std::string requested_;
};

TEST_F(ApiVolumesTest, TheKubeApiAccessVolumeHoldsTokenCaAndNamespace) {
  ASSERT_TRUE(IsApiVolume(KubeApiAccess()));
  EXPECT_EQ(WriteApiVolume(Pod(), KubeApiAccess(), dir_, sources_), std::nullopt);
  EXPECT_EQ(ReadFile(dir_ / "token"), "eyJhbGciOi");
  EXPECT_EQ(ReadFile(dir_ / "ca.crt"), "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(ReadFile(dir_ / "namespace"), "ml");
  EXPECT_EQ(requested_, "/3607");
  EXPECT_EQ(std::filesystem::status(dir_ / "token").permissions() & std::filesystem::perms::all,
            static_cast<std::filesystem::perms>(0644));
}

TEST_F(ApiVolumesTest, AMissingConfigMapIsWaitedForAndAReadFailureIsNamed) {
  ca_published_ = false;
  EXPECT_EQ(WriteApiVolume(Pod(), KubeApiAccess(), dir_, sources_), "configmap \"kube-root-ca.crt\" not found");
  json volume = {{"name", "x"}, {"configMap", {{"name", "forbidden"}}}};
  EXPECT_EQ(WriteApiVolume(Pod(), volume, dir_, sources_),
            "cannot read configmap \"forbidden\": configmaps \"forbidden\" is forbidden: no relationship found");
  volume = {{"name", "x"}, {"configMap", {{"name", "absent"}, {"optional", true}}}};
  EXPECT_EQ(WriteApiVolume(Pod(), volume, dir_, sources_), std::nullopt);
}

TEST_F(ApiVolumesTest, SecretAndConfigMapVolumesWriteTheirKeysWithTheirModes) {
  const json secret = {{"name", "token"}, {"secret", {{"secretName", "job-token"}, {"defaultMode", 288}}}};
  EXPECT_EQ(WriteApiVolume(Pod(), secret, dir_ / "s", sources_), std::nullopt);
  EXPECT_EQ(ReadFile(dir_ / "s" / "token"), "s3cr3t");
  EXPECT_EQ(std::filesystem::status(dir_ / "s" / "token").permissions() & std::filesystem::perms::all,
            static_cast<std::filesystem::perms>(0440));
  EXPECT_EQ(WriteApiVolume(Pod(), {{"name", "t"}, {"secret", {{"secretName", "gone"}}}}, dir_ / "t", sources_),
            "secret \"gone\" not found");
  const json config_map = {{"name", "ca"}, {"configMap", {{"name", "kube-root-ca.crt"}}}};
  EXPECT_EQ(WriteApiVolume(Pod(), config_map, dir_ / "c", sources_), std::nullopt);
  EXPECT_EQ(ReadFile(dir_ / "c" / "ca.crt"), "-----BEGIN CERTIFICATE-----\n");
}

TEST_F(ApiVolumesTest, DownwardApiItemsWriteLabelsAsTheKubeletDoesAndRefuseWhatItCannot) {
  const json labels = {{"name", "info"},
                       {"projected",
                        {{"sources",
                          {{{"downwardAPI",
                             {{"items",
                               {{{"path", "labels"}, {"fieldRef", {{"fieldPath", "metadata.labels"}}}},
                                {{"path", "a"}, {"fieldRef", {{"fieldPath", "metadata.labels['a']"}}}}}}}}}}}}}};
  EXPECT_EQ(WriteApiVolume(Pod(), labels, dir_, sources_), std::nullopt);
  EXPECT_EQ(ReadFile(dir_ / "labels"), "a=\"1\"\nb=\"2\"\n");
  EXPECT_EQ(ReadFile(dir_ / "a"), "1");
  json cpu = labels;
  cpu["projected"]["sources"][0]["downwardAPI"]["items"] =
      json::array({{{"path", "cpu"}, {"resourceFieldRef", {{"resource", "limits.cpu"}}}}});
  EXPECT_THROW(WriteApiVolume(Pod(), cpu, dir_, sources_), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
