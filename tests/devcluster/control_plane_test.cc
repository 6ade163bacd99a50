// The real control plane as devcluster starts it: a real Kubernetes release answers, serves
// OpenAPI for kubectl explain and its own metrics, writes the audit log, and its components run
// as processes that go when it stops.
#include "tests/devcluster/control_plane.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster {
namespace {

class ControlPlaneTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::MakeTempDir("control-plane"));
    ControlPlaneOptions options;
    options.dir = *dir_;
    options.node_names = {"node-a"};
    plane_ = ControlPlane::Start(options).release();
  }
  static void TearDownTestSuite() {
    delete plane_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  static kube::HttpResponse Get(const std::string& path, const std::string& token) {
    kube::Config config;
    config.server = plane_->url();
    config.ca_pem = plane_->ca_pem();
    return kube::MakeCpprestTransport(config)->Send({"GET", path, token, "", ""});
  }

  static std::filesystem::path* dir_;
  static ControlPlane* plane_;
};
std::filesystem::path* ControlPlaneTest::dir_ = nullptr;
ControlPlane* ControlPlaneTest::plane_ = nullptr;

TEST_F(ControlPlaneTest, ServesARealKubernetesReleaseOfAtLeast134) {
  const kube::HttpResponse version = Get("/version", plane_->admin_token());
  ASSERT_EQ(version.status, 200) << version.body;
  const nlohmann::json info = nlohmann::json::parse(version.body);
  EXPECT_EQ(info.value("major", ""), "1");
  EXPECT_GE(std::stoi(info.value("minor", "0")), 34) << version.body;
  EXPECT_EQ(info.value("gitVersion", "").rfind("v1.", 0), 0u) << version.body;
}

TEST_F(ControlPlaneTest, ServesItsOwnMetricsAndOpenApiToTheAdmin) {
  const kube::HttpResponse metrics = Get("/metrics", plane_->admin_token());
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("apiserver_request_total"), std::string::npos);
  const kube::HttpResponse openapi = Get("/openapi/v3", plane_->admin_token());
  ASSERT_EQ(openapi.status, 200);
  EXPECT_NE(openapi.body.find("apis/apiextensions.k8s.io/v1"), std::string::npos);
}

TEST_F(ControlPlaneTest, RefusesAnUnknownTokenAndHoldsANodeToRbacAndTheNodeAuthorizer) {
  EXPECT_EQ(Get("/api/v1/namespaces/default/secrets", "not-a-token").status, 401);
  // A Node may not list Secrets (the Node authorizer grants only those its Pods mount).
  EXPECT_EQ(Get("/api/v1/namespaces/default/secrets", plane_->node_token("node-a")).status, 403);
  EXPECT_EQ(Get("/api/v1/namespaces/default/secrets", plane_->admin_token()).status, 200);
}

TEST_F(ControlPlaneTest, TheControllerManagerRunsItsControllers) {
  // The default ServiceAccount and the root CA ConfigMap come from its controllers.
  EXPECT_EQ(Get("/api/v1/namespaces/default/serviceaccounts/default", plane_->admin_token()).status, 200);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline &&
         (status = Get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt", plane_->admin_token()).status) != 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(status, 200);
}

TEST_F(ControlPlaneTest, WritesTheAuditLogAndRunsEveryComponentAsAProcess) {
  Get("/api/v1/namespaces", plane_->admin_token());
  const std::string audit = testing::ReadLog(plane_->audit_log());
  EXPECT_NE(audit.find("\"user\":{\"username\":\"devcluster-admin\""), std::string::npos);
  const auto pids = plane_->pids();
  for (const char* component : {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
    ASSERT_EQ(pids.count(component), 1u) << component;
    EXPECT_EQ(::kill(pids.at(component), 0), 0) << component << " is not running";
  }
}

TEST(ControlPlaneStopTest, StopEndsEveryComponent) {
  const std::filesystem::path dir = testing::MakeTempDir("control-plane-stop");
  ControlPlaneOptions options;
  options.dir = dir;
  auto plane = ControlPlane::Start(options);
  const auto pids = plane->pids();
  plane->Stop();
  for (const auto& [component, pid] : pids) {
    EXPECT_NE(::kill(pid, 0), 0) << component << " still runs after Stop";
  }
  std::filesystem::remove_all(dir);
}

TEST(ControlPlaneStartTest, AMissingProgramIsNamed) {
  ControlPlaneOptions options;
  options.dir = testing::MakeTempDir("control-plane-missing");
  options.bin_dir = options.dir / "nowhere";
  try {
    ControlPlane::Start(options);
    FAIL() << "started without its programs";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere/etcd is missing; scripts/setup builds it"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(options.dir);
}

}  // namespace
}  // namespace ringleader::devcluster
