// BuildPod's init containers: the native sidecar (no devices, Gloo unless the trainers use DRA
// claims) and the preflight container, which copies the trainers' devices, claims, fabric env,
// shared-memory and RDMA mounts and IPC_LOCK, and nothing else; and the NCCL profiler plugin the
// sidecar hands the trainers (spec.communication.telemetry).
#include "operator/planner/pod_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::EnvValue;
using testing::MinimalJob;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

const api::JobPorts kPorts = {.master = 61000, .rendezvous = 61001, .metrics = 61002, .spare = 61003};

// `edit` changes the job's JSON (its spec.template.spec is `pod`) before the Pod is built.
json Build(const std::function<void(json& job, json& pod)>& edit = {}) {
  json object = MinimalJob("demo", 2);
  object["metadata"]["uid"] = "job-uid-1";
  if (edit) {
    edit(object, object["spec"]["template"]["spec"]);
  }
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  EXPECT_TRUE(errors.empty()) << api::JoinErrors(errors);
  PlannerConfig config;
  config.sidecar_image = "example/ringleader-sidecar:test";
  return BuildPod(job, 1, 0, kPorts, config);
}

const json& Init(const json& pod, const std::string& name) {
  for (const json& container : pod["spec"]["initContainers"]) {
    if (container["name"] == name) {
      return container;
    }
  }
  throw std::runtime_error("no init container " + name);
}
const json& Sidecar(const json& pod) { return Init(pod, "ringleader-sidecar"); }
const json& Preflight(const json& pod) { return Init(pod, "ringleader-preflight"); }

json Trainer(const std::string& name) { return {{"name", name}, {"image", "example/trainer:1"}}; }

// The entries the preflight copied from the trainers: those after its own RINGLEADER_* list.
std::vector<json> CopiedEnv(const json& preflight) {
  std::vector<json> copied;
  for (const json& entry : preflight["env"]) {
    if (!entry["name"].get<std::string>().starts_with("RINGLEADER_")) {
      copied.push_back(entry);
    }
  }
  return copied;
}

TEST(PodBuilderTest, InitContainersAreTheSidecarThenTheUsersThenThePreflightLast) {
  const json pod = Build([](json&, json& spec) {
    spec["initContainers"] = json::array({Trainer("fetch-data"), Trainer("warm-cache")});
  });
  std::vector<std::string> names;
  for (const json& container : pod["spec"]["initContainers"]) {
    names.push_back(container["name"]);
  }
  EXPECT_THAT(names, ElementsAre("ringleader-sidecar", "fetch-data", "warm-cache", "ringleader-preflight"));
  EXPECT_EQ(Sidecar(pod)["restartPolicy"], "Always");
}

TEST(PodBuilderTest, ThePreflightIsAPlainInitContainerOfTheSidecarImage) {
  const json pod = Build();
  const json& preflight = Preflight(pod);
  EXPECT_EQ(preflight["image"], "example/ringleader-sidecar:test");
  EXPECT_EQ(preflight["terminationMessagePolicy"], "FallbackToLogsOnError");
  // The API server refuses probes on a regular init container.
  for (const char* absent : {"startupProbe", "livenessProbe", "readinessProbe", "lifecycle", "ports",
                             "restartPolicy", "envFrom"}) {
    EXPECT_FALSE(preflight.contains(absent)) << absent;
  }
  EXPECT_EQ(preflight["volumeMounts"],
            json::array({{{"name", "ringleader-token"}, {"mountPath", "/var/run/ringleader/token"}, {"readOnly", true}},
                         {{"name", "ringleader-run"}, {"mountPath", "/var/run/ringleader/run"}}}));
  EXPECT_EQ(preflight["resources"],
            json({{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"memory", "1Gi"}}}}));
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_RDMA_RESOURCES"), "<unset>");
  EXPECT_EQ(preflight["securityContext"],
            json({{"allowPrivilegeEscalation", false},
                  {"readOnlyRootFilesystem", true},
                  {"capabilities", {{"drop", {"ALL"}}}}}));
}

TEST(PodBuilderTest, BothRingleaderContainersGetTheSidecarEnvAndTheirMode) {
  const json pod = Build([](json& job, json&) { job["spec"]["gpusPerReplica"] = 2; });
  const json& sidecar = Sidecar(pod);
  const json& preflight = Preflight(pod);
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_MODE"), "sidecar");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_MODE"), "pod-preflight");
  // The sidecar holds no GPU and measures the Pod network; the preflight runs the job's backend.
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_BACKEND"), "gloo");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_BACKEND"), "nccl");
  // Otherwise the same list, in the same order; the sidecar's telemetry entries come last.
  ASSERT_EQ(sidecar["env"].size(), preflight["env"].size() + 3);
  EXPECT_EQ(sidecar["env"][sidecar["env"].size() - 3]["name"], "RINGLEADER_TELEMETRY_ENABLED");
  EXPECT_EQ(sidecar["env"][sidecar["env"].size() - 2]["name"], "RINGLEADER_STALL_SECONDS");
  EXPECT_EQ(sidecar["env"].back()["name"], "RINGLEADER_PROFILER_PLUGIN_DIR");
  for (std::size_t i = 0; i < preflight["env"].size(); ++i) {
    const std::string name = sidecar["env"][i]["name"];
    EXPECT_EQ(preflight["env"][i]["name"], name);
    if (name != "RINGLEADER_MODE" && name != "RINGLEADER_BACKEND") {
      EXPECT_EQ(preflight["env"][i], sidecar["env"][i]) << name;
    }
  }
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_RANK"), "1");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_GPUS_PER_REPLICA"), "2");
}

TEST(PodBuilderTest, TheSidecarStartsOnHealthzWithinAMinute) {
  const json sidecar = Sidecar(Build([](json& job, json&) {
    job["spec"]["communication"]["preflight"]["timeoutSeconds"] = 3600;  // no longer its business
  }));
  EXPECT_EQ(sidecar["startupProbe"],
            json({{"httpGet", {{"path", "/healthz"}, {"port", 61002}}},
                  {"periodSeconds", 2},
                  {"timeoutSeconds", 1},
                  {"failureThreshold", 30}}));
  EXPECT_EQ(sidecar["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(sidecar["livenessProbe"]["failureThreshold"], 6);
}

// The device manager hands a regular init container's devices to the app containers that
// request the same resource after it, and the scheduler counts max(init, sum of app containers):
// the preflight requests exactly the trainers' sum, so they get the devices it tested.
TEST(PodBuilderTest, ThePreflightRequestsTheSumOfTheTrainersDevicesAndNothingElseOfTheirs) {
  const json pod = Build([](json&, json& spec) {
    json first = Trainer("trainer");
    first["resources"] = {{"limits",
                           {{"nvidia.com/gpu", "4"},
                            {"rdma/rdma_shared_device_a", 1},
                            {"hugepages-2Mi", "1Gi"},
                            {"cpu", "16"},
                            {"memory", "64Gi"},
                            {"ephemeral-storage", "10Gi"}}},
                          {"requests", {{"cpu", "8"}, {"memory", "64Gi"}, {"hugepages-2Mi", "1Gi"}}}};
    json second = Trainer("helper");
    second["resources"] = {{"requests", {{"nvidia.com/gpu", 2}, {"memory", "1Gi"}}}};
    json third = Trainer("logger");
    third["resources"] = {{"limits", {{"cpu", "1"}}}};
    spec["containers"] = json::array({first, second, third});
  });
  const json& preflight = Preflight(pod);
  EXPECT_EQ(preflight["resources"]["requests"], json({{"cpu", "100m"},
                                                      {"memory", "128Mi"},
                                                      {"nvidia.com/gpu", "6"},
                                                      {"rdma/rdma_shared_device_a", "1"}}));
  EXPECT_EQ(preflight["resources"]["limits"], json({{"memory", "1Gi"},
                                                    {"nvidia.com/gpu", "6"},
                                                    {"rdma/rdma_shared_device_a", "1"}}));
  EXPECT_FALSE(preflight["resources"].contains("claims"));
  // RDMA was asked for: the preflight reports NCCL falling back to sockets.
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_RDMA_RESOURCES"), "rdma/rdma_shared_device_a");
  // The trainers keep theirs as written.
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "4");
}

TEST(PodBuilderTest, TheGpusPerReplicaLimitAddedToTheTrainerCounts) {
  const json pod = Build([](json& job, json& spec) {
    job["spec"]["gpusPerReplica"] = 8;
    spec["containers"][0]["resources"] = {{"limits", {{"rdma/hca", "1"}}}};
  });
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 8);
  const json& resources = Preflight(pod)["resources"];
  EXPECT_EQ(resources["requests"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(resources["limits"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(resources["limits"]["rdma/hca"], "1");
  EXPECT_EQ(EnvValue(Preflight(pod), "RINGLEADER_RDMA_RESOURCES"), "rdma/hca");
}

// Extended resources are whole numbers; anything else is passed on as the first container wrote it.
TEST(PodBuilderTest, AQuantityThatIsNoWholeNumberIsCopiedFromTheFirstContainerNotSummed) {
  const json pod = Build([](json&, json& spec) {
    json first = Trainer("a");
    first["resources"] = {{"limits", {{"example.com/slice", "500m"}, {"example.com/big", "2k"}}}};
    json second = Trainer("b");
    second["resources"] = {{"limits", {{"example.com/slice", "1"}, {"example.com/big", "1"}}}};
    spec["containers"] = json::array({first, second});
  });
  const json& limits = Preflight(pod)["resources"]["limits"];
  EXPECT_EQ(limits["example.com/slice"], "500m");
  EXPECT_EQ(limits["example.com/big"], "2001");
}

TEST(PodBuilderTest, TheSidecarRequestsNoDeviceWithoutClaims) {
  const json pod = Build([](json& job, json& spec) {
    job["spec"]["gpusPerReplica"] = 8;
    job["spec"]["communication"]["backend"] = "nccl";
    spec["containers"][0]["resources"] = {{"limits", {{"rdma/hca", "1"}, {"example.com/fpga", 2}}}};
  });
  const json& sidecar = Sidecar(pod);
  EXPECT_EQ(sidecar["resources"],
            json({{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"memory", "1Gi"}}}}));
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_BACKEND"), "gloo");
  EXPECT_EQ(EnvValue(Preflight(pod), "RINGLEADER_BACKEND"), "nccl");
}

// A DRA claim can be shared by containers, so with claims both of ringleader's containers hold the
// trainers' devices, and the sidecar runs the job's backend on them.
TEST(PodBuilderTest, DraClaimsAreSharedWithBothRingleaderContainers) {
  const json pod = Build([](json& job, json& spec) {
    job["spec"]["communication"]["backend"] = "nccl";
    spec["resourceClaims"] = json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "eight-gpus"}},
                                          {{"name", "nic"}, {"resourceClaimTemplateName", "rdma-nic"}},
                                          {{"name", "scratch"}, {"resourceClaimName", "scratch"}}});
    json first = Trainer("trainer");
    first["resources"] = {{"claims", json::array({{{"name", "gpus"}}, {{"name", "nic"}}})}};
    json second = Trainer("helper");
    second["resources"] = {{"claims", json::array({{{"name", "gpus"}, {"request", "other"}},
                                                   {{"name", "scratch"}, {"request", "disk"}}})}};
    spec["containers"] = json::array({first, second});
  });
  const json claims = json::array({{{"name", "gpus"}}, {{"name", "nic"}}, {{"name", "scratch"}, {"request", "disk"}}});
  EXPECT_EQ(Preflight(pod)["resources"]["claims"], claims);
  const json& sidecar = Sidecar(pod);
  EXPECT_EQ(sidecar["resources"]["claims"], claims);
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_BACKEND"), "nccl");
  EXPECT_EQ(sidecar["resources"]["requests"], json({{"cpu", "100m"}, {"memory", "128Mi"}}));
}

TEST(PodBuilderTest, ThePreflightCopiesTheTrainersFabricEnvFirstSetterWins) {
  const json config_map_key = {{"configMapKeyRef", {{"name", "fabric"}, {"key", "ifname"}}}};
  const json pod = Build([&](json&, json& spec) {
    json first = Trainer("trainer");
    first["env"] = json::array({{{"name", "NCCL_IB_HCA"}, {"value", "mlx5_0:1"}},
                                {{"name", "NCCL_SOCKET_IFNAME"}, {"valueFrom", config_map_key}},
                                {{"name", "HF_HOME"}, {"value", "/cache"}},
                                {{"name", "UCX_TLS"}, {"value", "rc,cuda_copy"}},
                                {{"name", "GLOO_SOCKET_IFNAME"}, {"value", "eth1"}},
                                {{"name", "TP_SOCKET_IFNAME"}, {"value", "eth1"}},
                                {{"name", "CUDA_VISIBLE_DEVICES"}, {"value", "0,1"}},
                                {{"name", "RINGLEADER_BACKEND"}, {"value", "nccl"}},
                                {{"name", "NCCL"}, {"value", "no underscore"}}});
    first["envFrom"] = json::array({{{"configMapRef", {{"name", "nccl-settings"}}}}});
    json second = Trainer("helper");
    second["env"] = json::array({{{"name", "NCCL_IB_HCA"}, {"value", "mlx5_9:1"}},
                                 {{"name", "NCCL_DEBUG"}, {"value", "INFO"}}});
    second["envFrom"] = json::array({{{"configMapRef", {{"name", "nccl-settings"}}}},
                                     {{"secretRef", {{"name", "ucx"}}}, {"prefix", "UCX_"}}});
    spec["containers"] = json::array({first, second});
  });
  const json& preflight = Preflight(pod);
  EXPECT_THAT(CopiedEnv(preflight),
              ElementsAreArray(std::vector<json>{{{"name", "NCCL_IB_HCA"}, {"value", "mlx5_0:1"}},
                                                 {{"name", "NCCL_SOCKET_IFNAME"}, {"valueFrom", config_map_key}},
                                                 {{"name", "UCX_TLS"}, {"value", "rc,cuda_copy"}},
                                                 {{"name", "GLOO_SOCKET_IFNAME"}, {"value", "eth1"}},
                                                 {{"name", "TP_SOCKET_IFNAME"}, {"value", "eth1"}},
                                                 {{"name", "CUDA_VISIBLE_DEVICES"}, {"value", "0,1"}},
                                                 {{"name", "NCCL_DEBUG"}, {"value", "INFO"}},
                                                 // envFrom could carry a profiler plugin: masked.
                                                 {{"name", "NCCL_PROFILER_PLUGIN"}, {"value", ""}}}));
  // A RINGLEADER_ name from a trainer never reaches it (nor the trainers' own contract env).
  std::set<std::string> names;
  for (const json& entry : preflight["env"]) {
    EXPECT_TRUE(names.insert(entry["name"]).second) << entry["name"] << " set twice";
  }
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_BACKEND"), "gloo");
  EXPECT_FALSE(names.contains("RINGLEADER_SPARE_PORT"));
  EXPECT_FALSE(names.contains("MASTER_ADDR"));
  // Every envFrom source once: the operator cannot see which keys it holds.
  EXPECT_EQ(preflight["envFrom"], json::array({{{"configMapRef", {{"name", "nccl-settings"}}}},
                                               {{"secretRef", {{"name", "ucx"}}}, {"prefix", "UCX_"}}}));
  // The sidecar gets none of it.
  EXPECT_EQ(EnvValue(Sidecar(pod), "NCCL_IB_HCA"), "<unset>");
  EXPECT_FALSE(Sidecar(pod).contains("envFrom"));
}

TEST(PodBuilderTest, ThePreflightMountsTheTrainersSharedMemoryAndRdmaDevicesOnly) {
  const json pod = Build([](json&, json& spec) {
    spec["volumes"] = json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}},
                                   {{"name", "ib"}, {"hostPath", {{"path", "/dev/infiniband"}}}},
                                   {{"name", "data"}, {"emptyDir", json::object()}},
                                   {{"name", "other-shm"}, {"emptyDir", {{"medium", "Memory"}}}}});
    json first = Trainer("trainer");
    first["volumeMounts"] = json::array({{{"name", "data"}, {"mountPath", "/data"}},
                                         {{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
    json second = Trainer("helper");
    second["volumeMounts"] = json::array({{{"name", "other-shm"}, {"mountPath", "/dev/shm"}},
                                          {{"name", "ib"}, {"mountPath", "/dev/infiniband"}}});
    spec["containers"] = json::array({first, second});
  });
  EXPECT_EQ(Preflight(pod)["volumeMounts"],
            json::array({{{"name", "ringleader-token"}, {"mountPath", "/var/run/ringleader/token"}, {"readOnly", true}},
                         {{"name", "ringleader-run"}, {"mountPath", "/var/run/ringleader/run"}},
                         {{"name", "dshm"}, {"mountPath", "/dev/shm"}},
                         {{"name", "ib"}, {"mountPath", "/dev/infiniband"}}}));
  EXPECT_EQ(Sidecar(pod)["volumeMounts"].size(), 3u);  // token, run dir, profiler plugin
}

TEST(PodBuilderTest, ThePreflightGetsIpcLockOnlyWhenATrainerHasItAndNeverPrivilege) {
  struct Case {
    std::string name;
    json trainer_security;
    json expected_add;  // null: no "add"
  };
  const std::vector<Case> cases = {
      {"none", json(), json()},
      {"other capabilities", {{"capabilities", {{"add", {"NET_ADMIN"}}}}}, json()},
      {"ipc lock", {{"capabilities", {{"add", {"SYS_PTRACE", "IPC_LOCK"}}}}}, {"IPC_LOCK"}},
      {"privileged with ipc lock",
       {{"privileged", true}, {"allowPrivilegeEscalation", true}, {"capabilities", {{"add", {"IPC_LOCK"}}}}},
       {"IPC_LOCK"}},
      {"privileged alone", {{"privileged", true}}, json()},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    const json pod = Build([&](json&, json& spec) {
      json helper = Trainer("helper");
      if (!test.trainer_security.is_null()) {
        helper["securityContext"] = test.trainer_security;
      }
      spec["containers"].push_back(helper);
    });
    json expected = {{"allowPrivilegeEscalation", false},
                     {"readOnlyRootFilesystem", true},
                     {"capabilities", {{"drop", {"ALL"}}}}};
    if (!test.expected_add.is_null()) {
      expected["capabilities"]["add"] = test.expected_add;
    }
    EXPECT_EQ(Preflight(pod)["securityContext"], expected);
    EXPECT_FALSE(Sidecar(pod)["securityContext"]["capabilities"].contains("add"));
  }
}

TEST(PodBuilderTest, ThePreflightsMemoryLimitHoldsTheSweepsGlooBuffers) {
  const json pod = Build([](json& job, json&) {
    job["spec"]["communication"]["preflight"]["maxBytes"] = "1Gi";
  });
  EXPECT_EQ(Preflight(pod)["resources"]["limits"]["memory"], "4224Mi");
  EXPECT_EQ(Sidecar(pod)["resources"]["limits"]["memory"], "1Gi");
}

constexpr char kPluginPath[] = "/var/run/ringleader/profiler/libnccl-profiler-ringleader.so";

const json* FindByName(const json& list, const std::string& name) {
  for (const json& entry : list) {
    if (entry.value("name", "") == name) {
      return &entry;
    }
  }
  return nullptr;
}

int CountEnv(const json& container, const std::string& name) {
  int n = 0;
  for (const json& entry : container.value("env", json::array())) {
    n += entry.value("name", "") == name ? 1 : 0;
  }
  return n;
}

TEST(PodBuilderTest, TelemetryHandsEveryTrainerThePluginReadOnlyFromTheSidecarsVolume) {
  const json pod = Build([](json&, json& spec) { spec["containers"].push_back(Trainer("helper")); });
  const json* volume = FindByName(pod["spec"]["volumes"], "ringleader-profiler");
  ASSERT_NE(volume, nullptr) << pod["spec"]["volumes"].dump();
  EXPECT_EQ(*volume, json({{"name", "ringleader-profiler"}, {"emptyDir", json::object()}}));

  // The sidecar fills the volume, so its mount is writable.
  const json& sidecar = Sidecar(pod);
  const json* sidecar_mount = FindByName(sidecar["volumeMounts"], "ringleader-profiler");
  ASSERT_NE(sidecar_mount, nullptr);
  EXPECT_EQ(*sidecar_mount, json({{"name", "ringleader-profiler"}, {"mountPath", "/var/run/ringleader/profiler"}}));
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_TELEMETRY_ENABLED"), "true");
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_STALL_SECONDS"), "120");  // the CRD's default
  // Spelled out like the run dir, so a kubelet that maps mount paths in env maps it too.
  EXPECT_EQ(EnvValue(sidecar, "RINGLEADER_PROFILER_PLUGIN_DIR"), "/var/run/ringleader/profiler");
  EXPECT_EQ(CountEnv(sidecar, "NCCL_PROFILER_PLUGIN"), 0);

  for (const json& trainer : pod["spec"]["containers"]) {
    SCOPED_TRACE(trainer["name"].get<std::string>());
    EXPECT_EQ(EnvValue(trainer, "NCCL_PROFILER_PLUGIN"), kPluginPath);
    EXPECT_EQ(CountEnv(trainer, "NCCL_PROFILER_PLUGIN"), 1);
    const json* mount = FindByName(trainer["volumeMounts"], "ringleader-profiler");
    ASSERT_NE(mount, nullptr);
    EXPECT_EQ(*mount, json({{"name", "ringleader-profiler"},
                            {"mountPath", "/var/run/ringleader/profiler"},
                            {"readOnly", true}}));
  }

  // The preflight's sweep is no training: neither the plugin nor its volume.
  const json& preflight = Preflight(pod);
  EXPECT_EQ(CountEnv(preflight, "NCCL_PROFILER_PLUGIN"), 0);
  EXPECT_EQ(FindByName(preflight["volumeMounts"], "ringleader-profiler"), nullptr);
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_TELEMETRY_ENABLED"), "<unset>");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_STALL_SECONDS"), "<unset>");
  EXPECT_EQ(EnvValue(preflight, "RINGLEADER_PROFILER_PLUGIN_DIR"), "<unset>");
}

TEST(PodBuilderTest, TheSidecarGetsTheJobsStallSeconds) {
  const json pod = Build([](json& job, json&) { job["spec"]["communication"]["telemetry"]["stallSeconds"] = 45; });
  EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_STALL_SECONDS"), "45");
}

TEST(PodBuilderTest, TelemetryOffAddsNoPluginVolumeMountOrEnv) {
  const json pod = Build([](json& job, json& spec) {
    job["spec"]["communication"]["telemetry"]["enabled"] = false;
    spec["containers"].push_back(Trainer("helper"));
    spec["containers"][0]["envFrom"] = json::array({{{"configMapRef", {{"name", "nccl"}}}}});
  });
  EXPECT_EQ(FindByName(pod["spec"]["volumes"], "ringleader-profiler"), nullptr);
  EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_TELEMETRY_ENABLED"), "false");
  EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_PROFILER_PLUGIN_DIR"), "<unset>");
  EXPECT_EQ(EnvValue(Sidecar(pod), "RINGLEADER_STALL_SECONDS"), "<unset>");  // no plugin, no stalls
  EXPECT_EQ(Sidecar(pod)["volumeMounts"].size(), 2u);
  for (const json& trainer : pod["spec"]["containers"]) {
    SCOPED_TRACE(trainer["name"].get<std::string>());
    EXPECT_EQ(CountEnv(trainer, "NCCL_PROFILER_PLUGIN"), 0);
    EXPECT_EQ(FindByName(trainer["volumeMounts"], "ringleader-profiler"), nullptr);
  }
  // The envFrom mask stays: a ConfigMap's plugin must not reach the sweep either way.
  EXPECT_EQ(EnvValue(Preflight(pod), "NCCL_PROFILER_PLUGIN"), "");
  EXPECT_EQ(CountEnv(Preflight(pod), "NCCL_PROFILER_PLUGIN"), 1);
}

TEST(PodBuilderTest, ATrainerThatSetsTheProfilerPluginItselfIsLeftAlone) {
  const json secret_ref = {{"secretKeyRef", {{"name", "profiler"}, {"key", "path"}}}};
  json object = MinimalJob("demo", 2);
  json& containers = object["spec"]["template"]["spec"]["containers"];
  containers[0]["env"] = json::array({{{"name", "NCCL_PROFILER_PLUGIN"}, {"value", "/opt/inspector/libnccl-profiler-inspector.so"}}});
  containers.push_back(Trainer("helper"));
  json from_secret = Trainer("logger");
  from_secret["env"] = json::array({{{"name", "NCCL_PROFILER_PLUGIN"}, {"valueFrom", secret_ref}}});
  containers.push_back(from_secret);
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  ASSERT_TRUE(errors.empty()) << api::JoinErrors(errors);
  EXPECT_THAT(TrainersWithOwnProfilerPlugin(job), ElementsAre("trainer", "logger"));

  const json pod = BuildPod(job, 0, 0, kPorts, PlannerConfig{});
  const json& built = pod["spec"]["containers"];
  // Their own entry, once, and no mount of ours.
  EXPECT_EQ(EnvValue(built[0], "NCCL_PROFILER_PLUGIN"), "/opt/inspector/libnccl-profiler-inspector.so");
  EXPECT_EQ(CountEnv(built[0], "NCCL_PROFILER_PLUGIN"), 1);
  EXPECT_EQ(FindByName(built[0]["volumeMounts"], "ringleader-profiler"), nullptr);
  EXPECT_EQ(*FindByName(built[2]["env"], "NCCL_PROFILER_PLUGIN"),
            json({{"name", "NCCL_PROFILER_PLUGIN"}, {"valueFrom", secret_ref}}));
  EXPECT_EQ(CountEnv(built[2], "NCCL_PROFILER_PLUGIN"), 1);
  EXPECT_EQ(FindByName(built[2]["volumeMounts"], "ringleader-profiler"), nullptr);
  // The others still get ringleader's.
  EXPECT_EQ(EnvValue(built[1], "NCCL_PROFILER_PLUGIN"), kPluginPath);
  EXPECT_NE(FindByName(built[1]["volumeMounts"], "ringleader-profiler"), nullptr);
  // The user's plugin path is not mounted in the preflight: never copied there.
  EXPECT_EQ(CountEnv(Preflight(pod), "NCCL_PROFILER_PLUGIN"), 0);

  object["spec"]["communication"]["telemetry"]["enabled"] = false;
  EXPECT_TRUE(TrainersWithOwnProfilerPlugin(api::TrainingJob::FromJson(object, &errors)).empty());
}

}  // namespace
}  // namespace ringleader::planner
