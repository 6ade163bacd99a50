// Cluster DNS against a real control plane: the EndpointSlice controller lists the Pods of
// headless Services, and the hosts file follows - names for published not-ready Pods, names only
// once Ready otherwise, and none once the Service is gone. The test writes the Pods' status itself
// (as their kubelet would), so no node agent runs.
#include "tests/devcluster/kubelet/cluster_dns.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/devcluster/control_plane.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

bool Eventually(const std::function<bool()>& done, milliseconds timeout = milliseconds(30000)) {
  return ringleader::testing::WaitUntil(done, timeout, milliseconds(50));
}

class ClusterDnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ringleader::testing::MakeTempDir("cluster-dns-test");
    ControlPlaneOptions options;
    options.dir = dir_ / "plane";
    plane_ = ControlPlane::Start(options);
    kube::Config config;
    config.server = plane_->url();
    config.ca_pem = plane_->ca_pem();
    config.token = kube::MakeStaticTokenSource(plane_->admin_token());
    admin_config_ = config;
    admin_ = kube::MakeClient(config);
    // Without its Node the EndpointSlice controller skips a Pod unless its Service publishes it.
    admin_->Create({"", "v1", "nodes", false}, "",
                   {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-a"}}}});
  }

  void TearDown() override {
    dns_.reset();
    admin_.reset();
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Service(const std::string& name, bool publish_not_ready) {
    admin_->Create(kube::Services(), "default",
                   {{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata", {{"name", name}}},
                    {"spec",
                     {{"clusterIP", "None"},
                      {"publishNotReadyAddresses", publish_not_ready},
                      {"selector", {{"job", name}}}}}});
  }

  // A Pod of the Service's job with its address, Running, Ready or not (as its kubelet reports).
  void RunningPod(const std::string& service, const std::string& name, const std::string& ip, bool ready) {
    json pod = admin_->Create(
        kube::Pods(), "default",
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", name}, {"labels", {{"job", service}}}}},
         {"spec",
          {{"nodeName", "node-a"},
           {"hostname", name},
           {"subdomain", service},
           {"containers", json::array({{{"name", "main"}, {"image", "devcluster.test/sh:1"}}})}}}});
    SetReady(pod, ip, ready);
  }

  void SetReady(json pod, const std::string& ip, bool ready) {
    const std::string value = ready ? "True" : "False";
    pod["status"]["phase"] = "Running";
    pod["status"]["podIP"] = ip;
    pod["status"]["podIPs"] = json::array({{{"ip", ip}}});
    pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", value}},
                                               {{"type", "ContainersReady"}, {"status", value}}});
    admin_->UpdateStatus(kube::Pods(), "default", pod);
  }

  bool HostsHas(const std::string& line) { return ringleader::testing::ReadLog(dns_->hosts_file()).find(line) != std::string::npos; }

  std::filesystem::path dir_;
  std::unique_ptr<ControlPlane> plane_;
  kube::Config admin_config_;
  std::unique_ptr<kube::Client> admin_;
  std::unique_ptr<ClusterDns> dns_;
};

TEST_F(ClusterDnsTest, TheHostsFileFollowsHeadlessServicesEndpointSlices) {
  dns_ = std::make_unique<ClusterDns>(admin_config_, dir_ / "hosts");
  EXPECT_NE(ringleader::testing::ReadLog(dir_ / "hosts").find("127.0.0.1\tlocalhost"), std::string::npos) << "written at once";
  ASSERT_TRUE(Eventually([&] { return dns_->Synced(); })) << dns_->LastError();

  Service("gang", true);
  Service("strict", false);
  RunningPod("gang", "gang-0", "10.250.0.10", false);
  RunningPod("strict", "strict-0", "10.250.0.11", false);
  EXPECT_TRUE(Eventually([&] { return HostsHas("10.250.0.10\tgang-0.gang.default.svc.cluster.local\n"); }))
      << ringleader::testing::ReadLog(dns_->hosts_file());
  EXPECT_TRUE(HostsHas("10.250.0.10\tgang.default.svc.cluster.local\n"));
  EXPECT_FALSE(HostsHas("strict-0")) << "a not-ready Pod of a Service that does not publish it has no name";

  SetReady(admin_->Get(kube::Pods(), "default", "strict-0"), "10.250.0.11", true);
  EXPECT_TRUE(Eventually([&] { return HostsHas("10.250.0.11\tstrict-0.strict.default.svc.cluster.local\n"); }))
      << ringleader::testing::ReadLog(dns_->hosts_file());

  admin_->Delete(kube::Services(), "default", "gang");
  EXPECT_TRUE(Eventually([&] { return !HostsHas("gang"); })) << ringleader::testing::ReadLog(dns_->hosts_file());
  EXPECT_TRUE(HostsHas("strict-0.strict.default.svc.cluster.local"));
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
