// The node agent against a real control plane (etcd, kube-apiserver, controller manager and
// scheduler; one for the program), running real processes: the Node registers Ready and keeps its
// Lease, the scheduler binds to it, native sidecar ordering gated by a startup probe, status
// through pods/status, a failed container's exit code and log tail, downward API env, cluster DNS
// names inside the Pods, API volumes, a deleted Pod's processes killed, graceful deletion ended
// with the kubelet's DELETE, the devices each container sees, and pods/log through the API server.
// Each test has its own namespace and its own Node (and agent).
#include "tests/devcluster/kubelet/kubelet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "tests/devcluster/control_plane.h"
#include "tests/devcluster/kubelet/cluster_dns.h"
#include "tests/devcluster/kubelet/node_heartbeat.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr const char* kShell = "devcluster.test/sh:1";  // an image that stands for /bin/sh
constexpr int kNodes = 64;                              // node tokens: one Node per test

// Polls `done` every 50 ms until it holds or `timeout` passes; returns whether it held.
bool Eventually(const std::function<bool()>& done, milliseconds timeout = milliseconds(30000)) {
  return ringleader::testing::WaitUntil(done, timeout, milliseconds(50));
}

// Run with isolation (network and mount namespaces, as root) and with the fallback every
// machine has (no namespaces, Pods at their Node's 127.0.N.1).
class KubeletTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(ringleader::testing::MakeTempDir("kubelet-test"));
    ControlPlaneOptions options;
    options.dir = *dir_ / "plane";
    for (int i = 0; i < kNodes; ++i) {
      options.node_names.push_back("node-" + std::to_string(i));
    }
    plane_ = ControlPlane::Start(options).release();
    admin_ = kube::MakeClient(ConfigFor(plane_->admin_token())).release();
  }

  static void TearDownTestSuite() {
    delete admin_;
    delete plane_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  static kube::Config ConfigFor(const std::string& token) {
    kube::Config config;
    config.server = plane_->url();
    config.ca_pem = plane_->ca_pem();
    config.token = kube::MakeStaticTokenSource(token);
    return config;
  }

  void SetUp() override {
    const int index = next_node_++;
    ASSERT_LT(index, kNodes) << "more tests than node tokens";
    node_ = "node-" + std::to_string(index);
    ns_ = "t" + std::to_string(index);
    work_ = *dir_ / ns_;
    std::filesystem::create_directories(work_);
    admin_->Create(kube::Namespaces(), "",
                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}});
    // Pods are refused until the controller manager made the namespace's default ServiceAccount.
    ASSERT_TRUE(Eventually([&] { return Exists({"", "v1", "serviceaccounts", true}, "default"); }));
    std::string why;
    if (GetParam() && PodNetwork::Supported(&why)) {
      NetworkOptions network;
      network.prefix = "rlk" + std::to_string(::getpid());
      network.subnet = "auto";
      network.connect_host = true;
      network_ = PodNetwork::Create(network);
    }
    dns_ = std::make_unique<ClusterDns>(ConfigFor(plane_->admin_token()), work_ / "hosts");
    kubelet_ = StartAgent(NodeConfig{.name = node_});
  }

  void TearDown() override {
    kubelet_.reset();
    dns_.reset();
    if (network_) {
      network_->Destroy();
    }
  }

  std::unique_ptr<Kubelet> StartAgent(const NodeConfig& node) {
    KubeletOptions options;
    options.root_dir = work_ / "kubelet";
    options.images.programs[kShell] = "/bin/sh";
    options.isolate = GetParam();
    options.max_grace = milliseconds(2000);
    options.restart_backoff = milliseconds(200);
    options.heartbeat.lease_renew_interval = milliseconds(500);
    return std::make_unique<Kubelet>(ConfigFor(plane_->node_token(node.name)), node, network_.get(),
                                     dns_->hosts_file(), options);
  }

  bool Exists(const kube::Resource& resource, const std::string& name) {
    try {
      admin_->Get(resource, ns_, name);
      return true;
    } catch (const kube::ApiError& e) {
      if (kube::IsNotFound(e)) {
        return false;
      }
      throw;
    }
  }

  // A Pod bound to this test's Node whose one container runs `script` with /bin/sh.
  json ShellPod(const std::string& name, const std::string& script) const {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", {{"app", name}}}}},
            {"spec",
             {{"nodeName", node_},
              {"restartPolicy", "Never"},
              {"terminationGracePeriodSeconds", 2},
              {"containers", json::array({{{"name", "main"}, {"image", kShell}, {"args", {"-c", script}}}})}}}};
  }

  json Create(const kube::Resource& resource, const json& object) { return admin_->Create(resource, ns_, object); }

  // The Pod, or null once it is gone.
  json Get(const std::string& name) {
    try {
      return admin_->Get(kube::Pods(), ns_, name);
    } catch (const kube::ApiError& e) {
      if (kube::IsNotFound(e)) {
        return nullptr;
      }
      throw;
    }
  }

  // Waits until the Pod's status satisfies `done`; returns the Pod.
  json WaitFor(const std::string& name, const std::function<bool(const json& status)>& done,
               milliseconds timeout = milliseconds(30000)) {
    json pod;
    const bool reached = Eventually(
        [&] {
          pod = Get(name);
          return pod.is_object() && pod.contains("status") && done(pod["status"]);
        },
        timeout);
    if (!reached) {
      ADD_FAILURE() << "pod " << name << " never got there; agent: " << kubelet_->LastError()
                    << "; last: " << pod.dump(2);
    }
    return pod;
  }

  static std::function<bool(const json&)> Phase(const std::string& phase) {
    return [phase](const json& status) { return status.value("phase", "") == phase; };
  }

  static std::function<bool(const json&)> Ended() {
    return [](const json& status) {
      const std::string phase = status.value("phase", "");
      return phase == "Succeeded" || phase == "Failed";
    };
  }

  // GET `path` on the API server as the admin.
  static kube::HttpResponse ApiGet(const std::string& path) {
    kube::Config config = ConfigFor(plane_->admin_token());
    return kube::MakeCpprestTransport(config)->Send({"GET", path, plane_->admin_token(), "", ""});
  }

  std::string LogPath(const std::string& pod, const std::string& query) const {
    return "/api/v1/namespaces/" + ns_ + "/pods/" + pod + "/log?" + query;
  }

  static std::filesystem::path* dir_;
  static ControlPlane* plane_;
  static kube::Client* admin_;
  static std::atomic<int> next_node_;

  std::string node_;
  std::string ns_;
  std::filesystem::path work_;
  std::unique_ptr<PodNetwork> network_;
  std::unique_ptr<ClusterDns> dns_;
  std::unique_ptr<Kubelet> kubelet_;
};
std::filesystem::path* KubeletTest::dir_ = nullptr;
ControlPlane* KubeletTest::plane_ = nullptr;
kube::Client* KubeletTest::admin_ = nullptr;
std::atomic<int> KubeletTest::next_node_{0};

TEST_P(KubeletTest, TheNodeRegistersReadyWithItsCapacityAndTheSchedulerBindsAPodToIt) {
  WaitForNodesReady(*admin_, {node_}, std::chrono::steady_clock::now() + seconds(60));
  const json node = admin_->Get({"", "v1", "nodes", false}, "", node_);
  EXPECT_EQ(node["status"]["capacity"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "8");
  EXPECT_EQ(node["metadata"]["labels"]["kubernetes.io/hostname"], node_);
  EXPECT_EQ(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], kubelet_->port());
  // Not bound by hand: the scheduler places it, on this Node because of the selector.
  json pod = ShellPod("scheduled", "exit 0");
  pod["spec"].erase("nodeName");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node_}};
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  Create(kube::Pods(), pod);
  const json done = WaitFor("scheduled", Phase("Succeeded"));
  EXPECT_EQ(done["spec"]["nodeName"], node_);
}

TEST_P(KubeletTest, TheNodesLeaseIsRenewed) {
  const kube::Resource leases = kube::Leases();
  std::string first;
  ASSERT_TRUE(Eventually([&] {
    try {
      first = admin_->Get(leases, "kube-node-lease", node_)["spec"].value("renewTime", "");
    } catch (const kube::ApiError&) {
    }
    return !first.empty();
  })) << kubelet_->LastError();
  const json lease = admin_->Get(leases, "kube-node-lease", node_);
  EXPECT_EQ(lease["spec"]["holderIdentity"], node_);
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(lease["metadata"]["ownerReferences"][0]["name"], node_) << "the Lease goes with its Node";
  EXPECT_TRUE(Eventually([&] {
    return admin_->Get(leases, "kube-node-lease", node_)["spec"].value("renewTime", "") != first;
  })) << "renewTime stayed " << first;
}

TEST_P(KubeletTest, ASucceedingContainerMakesThePodSucceed) {
  Create(kube::Pods(), ShellPod("ok", "echo hello; exit 0"));
  const json pod = WaitFor("ok", Phase("Succeeded"));
  const json& container = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(container["name"], "main");
  EXPECT_EQ(container["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(container["state"]["terminated"]["reason"], "Completed");
  EXPECT_FALSE(pod["status"].value("podIP", "").empty());
  EXPECT_FALSE(pod["status"].value("startTime", "").empty());
  EXPECT_EQ(pod["status"]["qosClass"], "BestEffort") << "the API server's field was kept";
}

TEST_P(KubeletTest, AFailingContainerFailsThePodWithItsExitCodeAndLastOutput) {
  Create(kube::Pods(), ShellPod("bad", "echo 'rank 3 of 4 did not join' >&2; exit 3"));
  const json pod = WaitFor("bad", Phase("Failed"));
  const json& terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 3);
  EXPECT_EQ(terminated["reason"], "Error");
  EXPECT_THAT(terminated.value("message", ""), HasSubstr("rank 3 of 4 did not join"));
}

// Peers find a Pod (EndpointSlices, cluster DNS) by its address from its start: the first status
// the agent writes has the podIP, and no container has run yet.
TEST_P(KubeletTest, ThePodIpIsWrittenBeforeAnyContainerStarts) {
  json first_with_ip;
  std::atomic<bool> seen{false};
  const json created = Create(kube::Pods(), ShellPod("early", "exit 0"));
  std::jthread watcher([&](std::stop_token stop) {
    kube::WatchOptions options;
    options.resource_version = created["metadata"].value("resourceVersion", "");
    options.field_selector = "metadata.name=early";
    admin_->Watch(
        kube::Pods(), ns_, options,
        [&](const kube::WatchEvent& event) {
          if (event.object.contains("status") && event.object["status"].contains("podIP")) {
            first_with_ip = event.object["status"];
            seen = true;
            return false;
          }
          return true;
        },
        stop);
  });
  WaitFor("early", Phase("Succeeded"));
  EXPECT_TRUE(Eventually([&] { return seen.load(); }));
  watcher.request_stop();
  watcher.join();
  ASSERT_TRUE(seen);
  EXPECT_EQ(first_with_ip["phase"], "Pending");
  EXPECT_TRUE(first_with_ip["containerStatuses"][0]["state"].contains("waiting")) << first_with_ip.dump(2);
  bool sandbox_ready = false;
  for (const json& condition : first_with_ip["conditions"]) {
    sandbox_ready =
        sandbox_ready || (condition["type"] == "PodReadyToStartContainers" && condition["status"] == "True");
  }
  EXPECT_TRUE(sandbox_ready) << first_with_ip.dump(2);
}

TEST_P(KubeletTest, ASidecarStartsFirstAndItsStartupProbeGatesTheMainContainer) {
  const std::filesystem::path order = work_ / "order";
  json pod = ShellPod("gated", "echo main >> " + order.string() + "; exit 0");
  // The sidecar becomes "started" only once its marker exists, 600 ms after it starts.
  json sidecar = {{"name", "sidecar"},
                  {"image", kShell},
                  {"restartPolicy", "Always"},
                  {"args",
                   {"-c", "echo sidecar >> " + order.string() + "; sleep 0.6; touch " + (work_ / "ready").string() +
                              "; exec sleep 1000"}},
                  {"startupProbe",
                   {{"exec", {{"command", {"/bin/sh", "-c", "test -f " + (work_ / "ready").string()}}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 30}}}};
  pod["spec"]["initContainers"] = json::array({sidecar});
  const bool account_dir_existed = std::filesystem::exists("/var/run/secrets/kubernetes.io/serviceaccount");
  Create(kube::Pods(), pod);
  const json done = WaitFor("gated", Phase("Succeeded"));
  EXPECT_EQ(ringleader::testing::ReadLog(order), "sidecar\nmain\n");
  const json& init = done["status"]["initContainerStatuses"][0];
  EXPECT_EQ(init["name"], "sidecar");
  // Stopped once the main container ended, and its exit does not fail the Pod.
  EXPECT_TRUE(init["state"].contains("terminated")) << init.dump();
  // Regression: the exec probe of a Pod run without isolation made the kube-api-access mount
  // point on the host, and nothing removed it.
  kubelet_.reset();
  if (!account_dir_existed) {
    EXPECT_FALSE(std::filesystem::exists("/var/run/secrets/kubernetes.io/serviceaccount"));
  }
}

TEST_P(KubeletTest, ASidecarThatExitsBeforeStartingIsRestartedAndShowsItsLastExit) {
  json pod = ShellPod("crashing", "exit 0");
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "sidecar"},
        {"image", kShell},
        {"restartPolicy", "Always"},
        {"args", {"-c", "exit 2"}},
        {"startupProbe", {{"exec", {{"command", {"/bin/false"}}}}, {"periodSeconds", 1}, {"failureThreshold", 100}}}}});
  Create(kube::Pods(), pod);
  const json seen = WaitFor("crashing", [](const json& status) {
    return status.contains("initContainerStatuses") && status["initContainerStatuses"][0].value("restartCount", 0) >= 2;
  });
  const json& init = seen["status"]["initContainerStatuses"][0];
  EXPECT_FALSE(init.value("started", true));
  const json& last =
      init["lastState"].contains("terminated") ? init["lastState"]["terminated"] : init["state"]["terminated"];
  EXPECT_EQ(last["exitCode"], 2) << init.dump();
  EXPECT_EQ(seen["status"]["phase"], "Pending");
}

TEST_P(KubeletTest, DownwardApiEnvReachesTheProcess) {
  json pod = ShellPod("env", "test \"$POD_NAME\" = env && test -n \"$POD_IP\" && test \"$NODE\" = " + node_);
  pod["spec"]["containers"][0]["env"] =
      json::array({{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                   {{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                   {{"name", "NODE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}});
  Create(kube::Pods(), pod);
  const json done = WaitFor("env", Ended());
  EXPECT_EQ(done["status"]["phase"], "Succeeded") << done["status"].dump(2);
}

TEST_P(KubeletTest, PodsResolveEachOtherByTheirHeadlessServiceNames) {
  if (!network_) {
    GTEST_SKIP() << "cluster DNS needs network and mount namespaces (root)";
  }
  Create(kube::Services(), {{"apiVersion", "v1"},
                            {"kind", "Service"},
                            {"metadata", {{"name", "peers"}, {"namespace", ns_}}},
                            {"spec",
                             {{"clusterIP", "None"},
                              {"publishNotReadyAddresses", true},
                              {"selector", {{"job", "dns"}}}}}});
  json server = ShellPod("server", "exec sleep 1000");
  json client = ShellPod("client", "getent hosts server.peers." + ns_ + ".svc.cluster.local");
  for (json* pod : {&server, &client}) {
    (*pod)["metadata"]["labels"]["job"] = "dns";
    (*pod)["spec"]["subdomain"] = "peers";
    (*pod)["spec"]["hostname"] = (*pod)["metadata"]["name"];
  }
  Create(kube::Pods(), server);
  const json running = WaitFor("server", Phase("Running"));
  // The EndpointSlice controller lists the Pod, and cluster DNS writes its name.
  const std::string record =
      running["status"].value("podIP", "") + "\tserver.peers." + ns_ + ".svc.cluster.local\n";
  ASSERT_TRUE(Eventually([&] { return ringleader::testing::ReadLog(dns_->hosts_file()).find(record) != std::string::npos; }))
      << ringleader::testing::ReadLog(dns_->hosts_file());
  Create(kube::Pods(), client);
  const json resolved = WaitFor("client", Ended());
  EXPECT_EQ(resolved["status"]["phase"], "Succeeded") << resolved["status"].dump(2);
  EXPECT_NE(running["status"]["podIP"], resolved["status"]["podIP"]);  // each Pod has its own address
}

TEST_P(KubeletTest, SecretConfigMapEmptyDirAndServiceAccountVolumesAppearAndTheMountPointsGoAfterwards) {
  if (!network_) {
    GTEST_SKIP() << "mount paths inside a script need a mount namespace (root)";
  }
  const std::string root = "/var/run/rlk-test-" + std::to_string(::getpid());
  Create(kube::Secrets(), {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", "job-token"}, {"namespace", ns_}}},
                           {"data", {{"token", "czNjcjN0"}}}});  // base64 of "s3cr3t"
  Create(kube::ConfigMaps(), {{"apiVersion", "v1"},
                              {"kind", "ConfigMap"},
                              {"metadata", {{"name", "settings"}, {"namespace", ns_}}},
                              {"data", {{"mode", "fast"}}}});
  const std::string account = "/var/run/secrets/kubernetes.io/serviceaccount";
  json pod = ShellPod("volumes", "test \"$(cat " + root + "/token/token)\" = s3cr3t && echo hi > " + root +
                                     "/scratch/out && test ! -w " + root + "/token/token && test \"$(cat " + root +
                                     "/settings/mode)\" = fast && test -s " + account + "/token && test -s " +
                                     account + "/ca.crt && test \"$(cat " + account + "/namespace)\" = " + ns_);
  pod["spec"]["volumes"] =
      json::array({{{"name", "token"}, {"secret", {{"secretName", "job-token"}, {"defaultMode", 288}}}},
                   {{"name", "settings"}, {"configMap", {{"name", "settings"}}}},
                   {{"name", "scratch"}, {"emptyDir", json::object()}}});
  pod["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "token"}, {"mountPath", root + "/token"}, {"readOnly", true}},
                   {{"name", "settings"}, {"mountPath", root + "/settings"}},
                   {{"name", "scratch"}, {"mountPath", root + "/scratch"}}});
  const json created = Create(kube::Pods(), pod);
  // The ServiceAccount admission plugin added the kube-api-access volume and its mount.
  EXPECT_THAT(created["spec"]["volumes"].dump(), HasSubstr("kube-api-access-"));
  const json done = WaitFor("volumes", Ended());
  EXPECT_EQ(done["status"]["phase"], "Succeeded") << done["status"].dump(2);
  kubelet_.reset();
  EXPECT_FALSE(std::filesystem::exists(root)) << "the agent left its mount points on the host";
}

TEST_P(KubeletTest, APodWaitsForAMissingSecretAndStartsOnceItExists) {
  json pod = ShellPod("waiting", "exit 0");
  pod["spec"]["volumes"] = json::array({{{"name", "token"}, {"secret", {{"secretName", "late"}}}}});
  Create(kube::Pods(), pod);
  const json waiting = WaitFor("waiting", [](const json& status) {
    return status.contains("containerStatuses") &&
           status["containerStatuses"][0]["state"].value("/waiting/message"_json_pointer, std::string())
                   .find("secret \"late\" not found") != std::string::npos;
  });
  EXPECT_EQ(waiting["status"]["phase"], "Pending");
  Create(kube::Secrets(), {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", "late"}, {"namespace", ns_}}},
                           {"data", {{"token", "czNjcjN0"}}}});
  WaitFor("waiting", Phase("Succeeded"));
}

// What the preflight container does with the trainers' envFrom: the agent reads the Secrets and
// ConfigMaps the env names (the Node authorizer lets it read exactly those).
TEST_P(KubeletTest, EnvFromAndKeyRefsReadTheirSecretsAndConfigMaps) {
  Create(kube::Secrets(), {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", "creds"}, {"namespace", ns_}}},
                           {"data", {{"token", "czNjcjN0"}}}});
  Create(kube::ConfigMaps(), {{"apiVersion", "v1"},
                              {"kind", "ConfigMap"},
                              {"metadata", {{"name", "nccl"}, {"namespace", ns_}}},
                              {"data", {{"NCCL_DEBUG", "INFO"}}}});
  json pod = ShellPod("env-from", "test \"$NCCL_DEBUG\" = INFO && test \"$TOKEN\" = s3cr3t");
  pod["spec"]["containers"][0]["envFrom"] = json::array({{{"configMapRef", {{"name", "nccl"}}}}});
  pod["spec"]["containers"][0]["env"] = json::array(
      {{{"name", "TOKEN"}, {"valueFrom", {{"secretKeyRef", {{"name", "creds"}, {"key", "token"}}}}}}});
  Create(kube::Pods(), pod);
  const json done = WaitFor("env-from", Ended());
  EXPECT_EQ(done["status"]["phase"], "Succeeded") << done["status"].dump(2);
}

TEST_P(KubeletTest, DeletingAPodKillsItsProcesses) {
  const std::filesystem::path pid_file = work_ / "pid";
  // $$ is Kubernetes' escape for $, so the shell sees $$ (its pid).
  Create(kube::Pods(), ShellPod("doomed", "echo $$$$ > " + pid_file.string() + "; exec sleep 1000"));
  WaitFor("doomed", Phase("Running"));
  pid_t pid = 0;
  ASSERT_TRUE(Eventually([&] {
    std::istringstream(ringleader::testing::ReadLog(pid_file)) >> pid;
    return pid > 0;
  }));
  ASSERT_EQ(::kill(pid, 0), 0);
  // A forced deletion: the Pod leaves the API at once, and the agent finds it missing.
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  admin_->Delete(kube::Pods(), ns_, "doomed", now);
  EXPECT_TRUE(Eventually([&] { return ::kill(pid, 0) != 0; }, milliseconds(10000)))
      << "process " << pid << " outlived its Pod";
}

// What a graceful deletion leaves to the kubelet, here through the Eviction API: the Pod is marked
// (deletionTimestamp, 1 s of grace, DisruptionTarget); its process ignores SIGTERM, so it is
// killed when the grace ends; the final status (Failed, 137, DisruptionTarget kept) is written
// before the agent's DELETE removes the Pod.
TEST_P(KubeletTest, AnEvictedPodIsStoppedAfterItsGraceReportedAndRemoved) {
  Create(kube::Pods(), ShellPod("marked", "trap '' TERM; while true; do sleep 0.1; done"));
  const json running = WaitFor("marked", Phase("Running"));
  std::vector<json> statuses;
  std::atomic<bool> deleted{false};
  std::jthread watcher([&](std::stop_token stop) {
    kube::WatchOptions options;
    options.resource_version = running["metadata"].value("resourceVersion", "");
    options.field_selector = "metadata.name=marked";
    admin_->Watch(
        kube::Pods(), ns_, options,
        [&](const kube::WatchEvent& event) {
          if (event.type == kube::WatchEventType::kModified) {
            statuses.push_back(event.object["status"]);
          }
          deleted = event.type == kube::WatchEventType::kDeleted;
          return !deleted;
        },
        stop);
  });
  const auto evicted_at = std::chrono::steady_clock::now();
  const json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", "marked"}, {"namespace", ns_}}},
                         {"deleteOptions", {{"gracePeriodSeconds", 1}}}};
  const kube::HttpResponse answer = kube::MakeCpprestTransport(ConfigFor(plane_->admin_token()))
                                        ->Send({"POST", "/api/v1/namespaces/" + ns_ + "/pods/marked/eviction",
                                                plane_->admin_token(), "application/json", eviction.dump()});
  ASSERT_EQ(answer.status, 201) << answer.body;
  ASSERT_TRUE(Eventually([&] { return Get("marked").is_null(); })) << "the agent never removed the Pod";
  EXPECT_GE(std::chrono::steady_clock::now() - evicted_at, milliseconds(1000)) << "killed before its grace ended";
  EXPECT_TRUE(Eventually([&] { return deleted.load(); }));
  watcher.request_stop();
  watcher.join();
  ASSERT_TRUE(deleted);
  ASSERT_FALSE(statuses.empty());
  const json& last_status = statuses.back();
  EXPECT_EQ(last_status["phase"], "Failed") << last_status.dump(2);
  EXPECT_EQ(last_status["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  bool disruption_kept = false;
  for (const json& condition : last_status["conditions"]) {
    disruption_kept = disruption_kept || condition["type"] == "DisruptionTarget";
  }
  EXPECT_TRUE(disruption_kept) << "the agent dropped a condition it does not own";
}

// The preflight's shape on the Node's 4 GPUs: a native sidecar without GPUs, a regular init
// container and the trainer with 2 each. The trainer sees the devices the preflight saw, the two
// Pods see different ones, a Pod that finds none free is rejected, and ended Pods free theirs.
TEST_P(KubeletTest, ContainersSeeTheirDevicesInNvidiaVisibleDevicesAsTheDeviceManagerHandsThemOut) {
  const std::filesystem::path release = work_ / "release";
  const auto gpu_container = [&](const std::string& pod, const std::string& name, int gpus, const std::string& then) {
    return json{{"name", name},
                {"image", kShell},
                {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}},
                {"args",
                 {"-c", "echo \"${NVIDIA_VISIBLE_DEVICES-unset}\" > " + (work_ / (pod + "-" + name)).string() + "; " +
                            then}}};
  };
  for (const std::string name : {"job-0", "job-1"}) {
    json pod = ShellPod(name, "");
    json sidecar = gpu_container(name, "sidecar", 0, "exec sleep 1000");
    sidecar.erase("resources");
    sidecar["restartPolicy"] = "Always";
    pod["spec"]["initContainers"] = json::array({sidecar, gpu_container(name, "preflight", 2, "exit 0")});
    pod["spec"]["containers"] = json::array(
        {gpu_container(name, "trainer", 2, "while [ ! -f " + release.string() + " ]; do sleep 0.05; done")});
    Create(kube::Pods(), pod);
    WaitFor(name, Phase("Running"));
  }
  // Running says the trainer started, not that its first line has run: each file is read once
  // it has its line.
  std::map<std::string, std::string> seen;
  for (const std::string pod : {"job-0", "job-1"}) {
    for (const std::string container : {"sidecar", "preflight", "trainer"}) {
      const std::filesystem::path file = work_ / (pod + "-" + container);
      Eventually([&] { return ringleader::testing::ReadLog(file).ends_with('\n'); }, milliseconds(10000));
      seen[pod + "/" + container] = ringleader::testing::ReadLog(file);
    }
  }
  EXPECT_EQ(seen, (std::map<std::string, std::string>{{"job-0/sidecar", "unset\n"},
                                                      {"job-0/preflight", "0,1\n"},
                                                      {"job-0/trainer", "0,1\n"},
                                                      {"job-1/sidecar", "unset\n"},
                                                      {"job-1/preflight", "2,3\n"},
                                                      {"job-1/trainer", "2,3\n"}}));

  // The scheduler would not bind it; bound by hand, the agent refuses it as a kubelet does.
  json greedy = ShellPod("greedy", "exit 0");
  greedy["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  Create(kube::Pods(), greedy);
  const json rejected = WaitFor("greedy", Phase("Failed"));
  EXPECT_EQ(rejected["status"]["reason"], "UnexpectedAdmissionError");
  EXPECT_EQ(rejected["status"]["message"],
            "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
            "Requested: 1, Available: 0, which is unexpected");
  kube::ListOptions about_greedy;
  about_greedy.field_selector = "involvedObject.name=greedy";
  std::vector<json> events;
  EXPECT_TRUE(Eventually([&] {
    events = admin_->List(kube::Events(), ns_, about_greedy).items;
    return !events.empty();
  })) << "no Event for the rejection";
  if (!events.empty()) {
    EXPECT_EQ(events[0]["reason"], "UnexpectedAdmissionError");
    EXPECT_EQ(events[0]["type"], "Warning");
    EXPECT_EQ(events[0]["source"]["host"], node_);
  }

  std::ofstream(release).put('\n');
  WaitFor("job-0", Phase("Succeeded"));
  WaitFor("job-1", Phase("Succeeded"));
  json after = ShellPod("after", "");
  after["spec"]["containers"] = json::array({gpu_container("after", "main", 4, "exit 0")});
  Create(kube::Pods(), after);
  WaitFor("after", Phase("Succeeded"));
  EXPECT_EQ(ringleader::testing::ReadLog(work_ / "after-main"), "0,1,2,3\n");
}

TEST_P(KubeletTest, PodLogsComeThroughTheApiServerFromTheAgentsEndpoint) {
  json pod = ShellPod("talker", "");
  pod["spec"]["restartPolicy"] = "OnFailure";
  // Run 1 fails, run 2 prints and succeeds: the current run and the previous one are apart.
  const std::filesystem::path once = work_ / "once";
  pod["spec"]["containers"][0]["args"] = {
      "-c", "if [ ! -f " + once.string() + " ]; then touch " + once.string() +
                "; echo first run; exit 1; fi; printf 'one\\ntwo\\nthree\\n'; exit 0"};
  Create(kube::Pods(), pod);
  WaitFor("talker", Phase("Succeeded"));
  const kube::HttpResponse tail = ApiGet(LogPath("talker", "container=main&tailLines=2"));
  ASSERT_EQ(tail.status, 200) << tail.body;
  EXPECT_EQ(tail.body, "two\nthree\n");
  EXPECT_EQ(ApiGet(LogPath("talker", "container=main&limitBytes=5")).body, "one\nt");
  EXPECT_EQ(ApiGet(LogPath("talker", "container=main&previous=true")).body, "first run\n");
  const kube::HttpResponse unknown = ApiGet(LogPath("talker", "container=nope"));
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  const kube::HttpResponse times = ApiGet(LogPath("talker", "container=main&timestamps=true"));
  EXPECT_EQ(times.status, 400);
  EXPECT_THAT(times.body, HasSubstr("cannot serve container logs with timestamps=true"));

  json single = ShellPod("single", "echo only");
  Create(kube::Pods(), single);
  WaitFor("single", Phase("Succeeded"));
  const kube::HttpResponse previous = ApiGet(LogPath("single", "previous=true"));
  EXPECT_EQ(previous.status, 400);
  EXPECT_THAT(previous.body, HasSubstr("previous terminated container \\\"main\\\" in pod \\\"single\\\" not found"));
}

TEST_P(KubeletTest, AFollowedLogStreamsUntilTheContainerEnds) {
  const std::filesystem::path release = work_ / "release";
  Create(kube::Pods(), ShellPod("follow", "echo one; while [ ! -f " + release.string() +
                                              " ]; do sleep 0.05; done; echo two"));
  WaitFor("follow", Phase("Running"));
  ASSERT_TRUE(Eventually([&] { return ApiGet(LogPath("follow", "container=main")).body == "one\n"; }));
  std::string followed;
  std::thread reader([&] { followed = ApiGet(LogPath("follow", "container=main&follow=true")).body; });
  std::ofstream(release).put('\n');
  reader.join();  // the stream ends when the container does
  EXPECT_EQ(followed, "one\ntwo\n");
}

TEST_P(KubeletTest, AnAgentRunsOnlyItsOwnNodesPodsAndMayNotWriteAnothers) {
  json other = ShellPod("elsewhere", "exit 0");
  other["spec"]["nodeName"] = "node-unserved";
  Create(kube::Pods(), other);
  Create(kube::Pods(), ShellPod("mine", "exit 0"));
  WaitFor("mine", Phase("Succeeded"));
  EXPECT_FALSE(Get("elsewhere")["status"].contains("containerStatuses"));
  // NodeRestriction: this Node's identity cannot write another Node's Pod's status.
  auto as_node = kube::MakeClient(ConfigFor(plane_->node_token(node_)));
  json pod = Get("elsewhere");
  pod["status"]["phase"] = "Failed";
  try {
    as_node->UpdateStatus(kube::Pods(), ns_, pod);
    ADD_FAILURE() << "a node wrote the status of another node's Pod";
  } catch (const kube::ApiError& e) {
    EXPECT_TRUE(kube::IsForbidden(e)) << e.what();
  }
}

TEST_P(KubeletTest, APodGetsItsNodesAddressWithoutIsolation) {
  if (GetParam()) {
    GTEST_SKIP() << "the fallback's addressing";
  }
  Create(kube::Pods(), ShellPod("loopback", "exit 0"));
  const json pod = WaitFor("loopback", Phase("Succeeded"));
  EXPECT_EQ(pod["status"]["podIP"], "127.0.1.1");
  EXPECT_EQ(pod["status"]["hostIP"], "127.0.1.1");
}

INSTANTIATE_TEST_SUITE_P(Isolation, KubeletTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Namespaces" : "Fallback";
                         });

}  // namespace
}  // namespace ringleader::devcluster::kubelet
