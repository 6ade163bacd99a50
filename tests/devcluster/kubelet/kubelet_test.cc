// The kubelet over a real Store with real processes: native sidecar ordering gated by a startup
// probe, status written back, a failed container's exit code and log tail, cluster DNS names
// inside the Pods, a deleted Pod's processes killed, and the devices each container sees.
#include "tests/devcluster/kubelet/kubelet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr const char* kPods = "/pods";
constexpr const char* kShell = "devcluster.test/sh:1";  // an image that stands for /bin/sh

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Run with isolation (network and mount namespaces, as root) and with the fallback every
// machine has (no namespaces, Pods at their Node's 127.0.N.1).
class KubeletTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = ringleader::testing::MakeTempDir("kubelet-test");
    KubeletOptions options;
    options.root_dir = dir_ / "kubelet";
    options.images.programs[kShell] = "/bin/sh";
    options.network_prefix = "rlk" + std::to_string(::getpid());
    options.isolate = GetParam();
    options.max_grace = milliseconds(2000);
    options.restart_backoff = milliseconds(200);
    NodeConfig node;
    node.name = "node-a";
    kubelet_ = std::make_unique<Kubelet>(store_, std::vector<NodeConfig>{node}, options);
  }

  void TearDown() override {
    kubelet_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A Pod bound to node-a whose one container runs `script` with /bin/sh.
  static json ShellPod(const std::string& name, const std::string& script) {
    return {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}, {"labels", {{"app", name}}}}},
        {"spec",
         {{"nodeName", "node-a"},
          {"restartPolicy", "Never"},
          {"containers", json::array({{{"name", "main"}, {"image", kShell}, {"args", {"-c", script}}}})}}}};
  }

  void Put(const std::string& resource, json object) {
    store_.Write([&](Store::Txn& txn) { txn.Put(resource, std::move(object)); });
  }

  json Get(const std::string& name) {
    json pod;
    store_.Read([&](const Store::Txn& txn) {
      if (const json* found = txn.Get(kPods, "default", name)) {
        pod = *found;
      }
    });
    return pod;
  }

  // Waits until the Pod's status satisfies `done`; returns the Pod.
  json WaitFor(const std::string& name, const std::function<bool(const json& status)>& done,
               milliseconds timeout = milliseconds(15000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    json pod;
    while (std::chrono::steady_clock::now() < deadline) {
      pod = Get(name);
      if (pod.contains("status") && done(pod["status"])) {
        return pod;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    ADD_FAILURE() << "pod " << name << " never got there; last: " << pod.dump(2);
    return pod;
  }

  static std::function<bool(const json&)> Phase(const std::string& phase) {
    return [phase](const json& status) { return status.value("phase", "") == phase; };
  }

  std::filesystem::path dir_;
  Store store_{1000};
  std::unique_ptr<Kubelet> kubelet_;
};

TEST_P(KubeletTest, ASucceedingContainerMakesThePodSucceed) {
  Put(kPods, ShellPod("ok", "echo hello; exit 0"));
  const json pod = WaitFor("ok", Phase("Succeeded"));
  const json& container = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(container["name"], "main");
  EXPECT_EQ(container["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(container["state"]["terminated"]["reason"], "Completed");
  EXPECT_FALSE(pod["status"].value("podIP", "").empty());
  EXPECT_FALSE(pod["status"].value("startTime", "").empty());
}

TEST_P(KubeletTest, AFailingContainerFailsThePodWithItsExitCodeAndLastOutput) {
  Put(kPods, ShellPod("bad", "echo 'rank 3 of 4 did not join' >&2; exit 3"));
  const json pod = WaitFor("bad", Phase("Failed"));
  const json& terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 3);
  EXPECT_EQ(terminated["reason"], "Error");
  EXPECT_THAT(terminated.value("message", ""), HasSubstr("rank 3 of 4 did not join"));
}

TEST_P(KubeletTest, ASidecarStartsFirstAndItsStartupProbeGatesTheMainContainer) {
  const std::filesystem::path order = dir_ / "order";
  json pod = ShellPod("gated", "echo main >> " + order.string() + "; exit 0");
  // The sidecar becomes "started" only once its marker exists, 600 ms after it starts.
  json sidecar = {{"name", "sidecar"},
                  {"image", kShell},
                  {"restartPolicy", "Always"},
                  {"args",
                   {"-c", "echo sidecar >> " + order.string() + "; sleep 0.6; touch " + (dir_ / "ready").string() +
                              "; exec sleep 1000"}},
                  {"startupProbe",
                   {{"exec", {{"command", {"/bin/sh", "-c", "test -f " + (dir_ / "ready").string()}}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 30}}}};
  pod["spec"]["initContainers"] = json::array({sidecar});
  Put(kPods, pod);
  const json done = WaitFor("gated", Phase("Succeeded"));
  EXPECT_EQ(ReadFile(order), "sidecar\nmain\n");
  const json& init = done["status"]["initContainerStatuses"][0];
  EXPECT_EQ(init["name"], "sidecar");
  // Stopped once the main container ended, and its exit does not fail the Pod.
  EXPECT_TRUE(init["state"].contains("terminated")) << init.dump();
}

TEST_P(KubeletTest, ASidecarThatExitsBeforeStartingIsRestartedAndShowsItsLastExit) {
  json pod = ShellPod("crashing", "exit 0");
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "sidecar"},
        {"image", kShell},
        {"restartPolicy", "Always"},
        {"args", {"-c", "exit 2"}},
        {"startupProbe", {{"exec", {{"command", {"/bin/false"}}}}, {"periodSeconds", 1}, {"failureThreshold", 100}}}}});
  Put(kPods, pod);
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
  json pod = ShellPod("env", "test \"$POD_NAME\" = env && test -n \"$POD_IP\" && test \"$NODE\" = node-a");
  pod["spec"]["containers"][0]["env"] =
      json::array({{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                   {{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                   {{"name", "NODE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}});
  Put(kPods, pod);
  WaitFor("env", Phase("Succeeded"));
}

TEST_P(KubeletTest, PodsResolveEachOtherByTheirHeadlessServiceNames) {
  if (kubelet_->network() == nullptr) {
    GTEST_SKIP() << "cluster DNS needs network and mount namespaces (root)";
  }
  Put("/services", {{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata", {{"name", "peers"}, {"namespace", "default"}, {"uid", "svc"}}},
                    {"spec", {{"clusterIP", "None"}, {"selector", {{"job", "dns"}}}}}});
  json server = ShellPod("server", "exec sleep 1000");
  json client = ShellPod("client", "getent hosts server.peers.default.svc.cluster.local");
  for (json* pod : {&server, &client}) {
    (*pod)["metadata"]["labels"]["job"] = "dns";
    (*pod)["spec"]["subdomain"] = "peers";
    (*pod)["spec"]["hostname"] = (*pod)["metadata"]["name"];
  }
  Put(kPods, server);
  const json running = WaitFor("server", Phase("Running"));
  Put(kPods, client);
  const json resolved = WaitFor("client", [](const json& status) {
    const std::string phase = status.value("phase", "");
    return phase == "Succeeded" || phase == "Failed";
  });
  EXPECT_EQ(resolved["status"]["phase"], "Succeeded") << resolved["status"].dump(2);
  EXPECT_NE(running["status"]["podIP"], resolved["status"]["podIP"]);  // each Pod has its own address
}

TEST_P(KubeletTest, SecretAndEmptyDirVolumesAppearAtTheirMountPathsAndTheMountPointsGoAfterwards) {
  if (kubelet_->network() == nullptr) {
    GTEST_SKIP() << "mount paths inside a script need a mount namespace (root)";
  }
  const std::string root = "/var/run/rlk-test-" + std::to_string(::getpid());
  Put("/secrets", {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "job-token"}, {"namespace", "default"}, {"uid", "secret"}}},
                   {"data", {{"token", "czNjcjN0"}}}});  // base64 of "s3cr3t"
  json pod = ShellPod("volumes", "test \"$(cat " + root + "/token/token)\" = s3cr3t && echo hi > " + root +
                                     "/scratch/out && test ! -w " + root + "/token/token");
  pod["spec"]["volumes"] =
      json::array({{{"name", "token"}, {"secret", {{"secretName", "job-token"}, {"defaultMode", 288}}}},
                   {{"name", "scratch"}, {"emptyDir", json::object()}}});
  pod["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "token"}, {"mountPath", root + "/token"}, {"readOnly", true}},
                   {{"name", "scratch"}, {"mountPath", root + "/scratch"}}});
  Put(kPods, pod);
  const json done = WaitFor("volumes", [](const json& status) {
    const std::string phase = status.value("phase", "");
    return phase == "Succeeded" || phase == "Failed";
  });
  EXPECT_EQ(done["status"]["phase"], "Succeeded") << done["status"].dump(2);
  kubelet_.reset();
  EXPECT_FALSE(std::filesystem::exists(root)) << "the kubelet left its mount points on the host";
}

TEST_P(KubeletTest, DeletingAPodKillsItsProcesses) {
  const std::filesystem::path pid_file = dir_ / "pid";
  // $$ is Kubernetes' escape for $, so the shell sees $$ (its pid).
  Put(kPods, ShellPod("doomed", "echo $$$$ > " + pid_file.string() + "; exec sleep 1000"));
  WaitFor("doomed", Phase("Running"));
  pid_t pid = 0;
  for (int i = 0; i < 100 && pid == 0; ++i) {
    std::istringstream(ReadFile(pid_file)) >> pid;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, 0), 0);
  store_.Write([](Store::Txn& txn) { txn.Remove(kPods, "default", "doomed"); });
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_NE(::kill(pid, 0), 0) << "process " << pid << " outlived its Pod";
}

// What a graceful DELETE leaves to the kubelet: the Pod is marked (deletionTimestamp, 1 s of
// grace); its process ignores SIGTERM, so it is killed when the grace ends; the final status
// (Failed, 137, an eviction's DisruptionTarget kept) is written before the Pod is removed.
TEST_P(KubeletTest, APodMarkedForDeletionIsStoppedAfterItsGraceReportedAndRemoved) {
  Put(kPods, ShellPod("marked", "trap '' TERM; while true; do sleep 0.1; done"));
  WaitFor("marked", Phase("Running"));
  std::uint64_t before = 0;
  const auto marked_at = std::chrono::steady_clock::now();
  store_.Write([&](Store::Txn& txn) {
    json pod = *txn.Get(kPods, "default", "marked");
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z";
    pod["metadata"]["deletionGracePeriodSeconds"] = 1;
    pod["status"]["conditions"].push_back(
        {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "EvictionByEvictionAPI"}});
    before = txn.rv();
    txn.Put(kPods, std::move(pod));
  });
  const auto deadline = std::chrono::steady_clock::now() + seconds(15);
  while (!Get("marked").is_null() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(Get("marked").is_null()) << "the kubelet never removed the Pod";
  EXPECT_GE(std::chrono::steady_clock::now() - marked_at, milliseconds(1000)) << "killed before its grace ended";
  const Store::Batch batch = store_.WaitForEvents(before, std::chrono::steady_clock::now(), [] { return true; });
  ASSERT_FALSE(batch.expired);
  json last_status;
  for (const EventPtr& event : batch.events) {
    if (event->resource == kPods && event->type == EventType::kModified && event->object["metadata"]["name"] == "marked") {
      last_status = event->object["status"];
    }
  }
  ASSERT_TRUE(batch.events.back()->type == EventType::kDeleted);
  EXPECT_EQ(last_status["phase"], "Failed") << last_status.dump(2);
  EXPECT_EQ(last_status["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  bool disruption_kept = false;
  for (const json& condition : last_status["conditions"]) {
    disruption_kept = disruption_kept || condition["type"] == "DisruptionTarget";
  }
  EXPECT_TRUE(disruption_kept) << "the kubelet dropped a condition it does not own";
}

// The preflight's shape on node-a's 4 GPUs: a native sidecar without GPUs, a regular init
// container and the trainer with 2 each. The trainer sees the devices the preflight saw, the two
// Pods see different ones, a Pod that finds none free is rejected, and ended Pods free theirs.
TEST_P(KubeletTest, ContainersSeeTheirDevicesInNvidiaVisibleDevicesAsTheDeviceManagerHandsThemOut) {
  const std::filesystem::path release = dir_ / "release";
  const auto gpu_container = [&](const std::string& pod, const std::string& name, int gpus, const std::string& then) {
    return json{{"name", name},
                {"image", kShell},
                {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}},
                {"args",
                 {"-c", "echo \"${NVIDIA_VISIBLE_DEVICES-unset}\" > " + (dir_ / (pod + "-" + name)).string() + "; " +
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
    Put(kPods, pod);
    WaitFor(name, Phase("Running"));
  }
  std::map<std::string, std::string> seen;
  for (const std::string pod : {"job-0", "job-1"}) {
    for (const std::string container : {"sidecar", "preflight", "trainer"}) {
      seen[pod + "/" + container] = ReadFile(dir_ / (pod + "-" + container));
    }
  }
  EXPECT_EQ(seen, (std::map<std::string, std::string>{{"job-0/sidecar", "unset\n"},
                                                      {"job-0/preflight", "0,1\n"},
                                                      {"job-0/trainer", "0,1\n"},
                                                      {"job-1/sidecar", "unset\n"},
                                                      {"job-1/preflight", "2,3\n"},
                                                      {"job-1/trainer", "2,3\n"}}));

  // The scheduler would not bind it; bound by hand, the kubelet refuses it as a real one does.
  json greedy = ShellPod("greedy", "exit 0");
  greedy["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  Put(kPods, greedy);
  const json rejected = WaitFor("greedy", Phase("Failed"));
  EXPECT_EQ(rejected["status"]["reason"], "UnexpectedAdmissionError");
  EXPECT_EQ(rejected["status"]["message"],
            "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
            "Requested: 1, Available: 0, which is unexpected");

  std::ofstream(release).put('\n');
  WaitFor("job-0", Phase("Succeeded"));
  WaitFor("job-1", Phase("Succeeded"));
  json after = ShellPod("after", "");
  after["spec"]["containers"] = json::array({gpu_container("after", "main", 4, "exit 0")});
  Put(kPods, after);
  WaitFor("after", Phase("Succeeded"));
  EXPECT_EQ(ReadFile(dir_ / "after-main"), "0,1,2,3\n");
}

TEST_P(KubeletTest, APodGetsItsNodesAddressWithoutIsolation) {
  if (GetParam()) {
    GTEST_SKIP() << "the fallback's addressing";
  }
  Put(kPods, ShellPod("loopback", "exit 0"));
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
