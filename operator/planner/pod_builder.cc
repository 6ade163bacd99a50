// One rank's Pod: the user's template plus ringleader's identity, env contract, sidecar,
// preflight init container, profiler plugin, volumes and ports.
#include "operator/planner/pod_builder.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "operator/api/quantity.h"
#include "operator/planner/children_builder.h"
#include "operator/planner/gang_scheduling.h"
#include "sidecar/contract/contract.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
namespace env = contract::env;

constexpr std::string_view kTokenVolume = "ringleader-token";
constexpr std::string_view kRunVolume = "ringleader-run";
// The sidecar copies the NCCL profiler plugin in; the trainers load it from there, read-only.
constexpr std::string_view kProfilerVolume = "ringleader-profiler";
constexpr std::string_view kGpuResource = "nvidia.com/gpu";
// The sidecar's startup probe: it only has to start serving (on rank 0, after its store
// listens); the preflight runs in its own init container and is not waited for here.
constexpr std::int64_t kStartupProbePeriodSeconds = 2;
constexpr std::int64_t kStartupBudgetSeconds = 60;
constexpr std::int64_t kMi = std::int64_t{1} << 20;
constexpr std::int64_t kGi = std::int64_t{1} << 30;

json EnvVar(std::string_view name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json FieldRefEnv(std::string_view name, std::string_view field_path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

json PortEntry(contract::PortRole role, std::int32_t port, bool host_network) {
  json entry = {{"name", contract::PortName(role)}, {"containerPort", port}, {"protocol", "TCP"}};
  if (host_network) {
    // Declared so the scheduler refuses two users of the port on one node.
    entry["hostPort"] = port;
  }
  return entry;
}

// The torch env:// contract and torchrun's PET_* equivalents.
json TrainerEnv(const api::TrainingJob& job, std::int64_t rank, const api::JobPorts& ports,
                const std::string& master_addr) {
  const std::int64_t nproc = job.spec.EffectiveProcessesPerReplica();
  const std::string rank_text = std::to_string(rank);
  const std::string master_port = std::to_string(ports.master);
  const std::optional<api::ElasticPolicy>& elastic = job.spec.elastic_policy;
  // An elastic job's torchrun admits min..max nodes; WORLD_SIZE and the rest say the size the Pod
  // was created at, and torchrun gives its workers the size of each world it forms.
  const std::string nnodes = elastic.has_value() ? std::to_string(elastic->min_replicas) + ":" +
                                                       std::to_string(elastic->max_replicas)
                                                 : std::to_string(job.spec.replicas);
  json entries = json::array({
      EnvVar(env::kMasterAddr, master_addr),
      EnvVar(env::kMasterPort, master_port),
      EnvVar(env::kRank, rank_text),
      EnvVar(env::kWorldSize, std::to_string(job.spec.replicas * nproc)),
      EnvVar(env::kLocalWorldSize, std::to_string(nproc)),
      EnvVar(env::kNodeRank, rank_text),
      EnvVar(env::kPetNnodes, nnodes),
      EnvVar(env::kPetNodeRank, rank_text),
      EnvVar(env::kPetNprocPerNode, std::to_string(nproc)),
      EnvVar(env::kPetMasterAddr, master_addr),
      EnvVar(env::kPetMasterPort, master_port),
      EnvVar(env::kSparePort, std::to_string(ports.spare)),
      EnvVar(env::kContractFile, std::string(contract::path::kContractFile)),
  });
  if (elastic.has_value()) {
    entries.push_back(EnvVar(env::kPetMaxRestarts, std::to_string(elastic->max_restarts)));
  }
  return entries;
}

// The names a container's own env entries set (by value or valueFrom).
std::set<std::string, std::less<>> OwnEnvNames(const json& container) {
  std::set<std::string, std::less<>> names;
  const auto env_list = container.find("env");
  if (env_list == container.end() || !env_list->is_array()) {
    return names;
  }
  for (const json& entry : *env_list) {
    const json name = entry.is_object() ? entry.value("name", json()) : json();
    if (name.is_string()) {
      names.insert(name.get<std::string>());
    }
  }
  return names;
}

// A container whose own env names the rendezvous endpoint, or a backend other than a plain c10d,
// runs torchrun's rendezvous its own way: our endpoint, id and is_host=false would only break it.
bool OwnsTorchrunRendezvous(const json& container) {
  const auto env_list = container.find("env");
  if (env_list == container.end() || !env_list->is_array()) {
    return false;
  }
  for (const json& entry : *env_list) {
    if (!entry.is_object()) {
      continue;
    }
    const json name = entry.value("name", json());
    if (name == env::kPetRdzvEndpoint) {
      return true;
    }
    if (name == env::kPetRdzvBackend &&
        !(entry.contains("value") && entry["value"] == "c10d" && !entry.contains("valueFrom"))) {
      return true;
    }
  }
  return false;
}

// With spec.communication.trainerStore Sidecar, what makes each of `container`'s processes a
// client of the store rank 0's sidecar serves on the master port, never its host: torch's env://
// connects every rank there when TORCHELASTIC_USE_AGENT_STORE is "True" (keys under
// /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, so each gang attempt starts clean), and torchrun's
// agents meet there through c10d rendezvous with is_host=false. A name the container sets itself
// is left to it.
json TrainerStoreEnv(const api::TrainingJob& job, std::int64_t attempt, const api::JobPorts& ports,
                     const std::string& master_addr, const json& container) {
  json entries = json::array();
  if (job.spec.communication.trainer_store != api::TrainerStore::kSidecar) {
    return entries;
  }
  const auto own = OwnEnvNames(container);
  auto add = [&](std::string_view name, const std::string& value) {
    if (!own.contains(name)) {
      entries.push_back(EnvVar(name, value));
    }
  };
  add(env::kTorchelasticUseAgentStore, "True");
  add(env::kTorchelasticRestartCount, std::to_string(attempt));
  const bool elastic = job.spec.elastic_policy.has_value();
  if (elastic) {
    // torch 2.4+ shares rendezvous rank 0's agent store with its workers across worlds, and an
    // agent that joins a running world then waits forever for that store's address (seen with
    // torch 2.15, docs/elastic.md); unshared, each world's rank 0 worker hosts its own store.
    add(env::kTorchDisableShareRdzvTcpStore, "1");
  }
  if (!OwnsTorchrunRendezvous(container)) {
    add(env::kPetRdzvBackend, "c10d");
    add(env::kPetRdzvEndpoint, master_addr + ":" + std::to_string(ports.master));
    // A new id per attempt: a restarted gang never meets an earlier attempt's rendezvous state.
    add(env::kPetRdzvId, job.metadata.uid + "-" + std::to_string(attempt));
    // An elastic job's worlds re-form below maxReplicas, and torchrun waits last_call_timeout
    // (30 s by default) for more agents each time; its Pods already exist by then (docs/elastic.md).
    add(env::kPetRdzvConf, elastic ? "is_host=false,last_call_timeout=5" : "is_host=false");
    // The address the agent gives its peers: the one that becomes rendezvous rank 0 hosts its
    // workers' store there (torch 2.4+), and its default, the host's FQDN, need not resolve to
    // this Pod (it never does for a Pod whose hostname is not in DNS).
    if (!own.contains(env::kPetLocalAddr)) {
      entries.push_back(FieldRefEnv(env::kPetLocalAddr, "status.podIP"));
    }
  }
  return entries;
}

// What both of ringleader's containers read; `backend` is the one that container runs and `mode`
// the part it plays (contract::mode).
json SidecarEnv(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt, const api::JobPorts& ports,
                const std::string& master_addr, api::Backend backend, std::string_view mode,
                PreflightScope scope) {
  const api::TrainingJobSpec& spec = job.spec;
  const api::PreflightSpec& pf = spec.communication.preflight;
  const api::MonitorSpec& mon = spec.communication.monitor;
  const bool elastic = spec.elastic_policy.has_value();
  auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  json entries = json::array({
      EnvVar(env::kJobName, job.metadata.name),
      EnvVar(env::kJobNamespace, job.metadata.namespace_),
      EnvVar(env::kJobUid, job.metadata.uid),
      EnvVar(env::kSidecarRank, std::to_string(rank)),
      EnvVar(env::kReplicas, std::to_string(spec.replicas)),
      EnvVar(env::kAttempt, std::to_string(attempt)),
      EnvVar(env::kGpusPerReplica, std::to_string(spec.gpus_per_replica)),
      EnvVar(env::kRendezvousAddr, master_addr),
      EnvVar(env::kRendezvousPort, std::to_string(ports.rendezvous)),
      EnvVar(env::kMetricsPort, std::to_string(ports.metrics)),
      EnvVar(env::kBackend, std::string(api::BackendName(backend))),
      EnvVar(env::kPreflightEnabled, flag(pf.enabled)),
      EnvVar(env::kPreflightMinBytes, std::to_string(pf.min_bytes)),
      EnvVar(env::kPreflightMaxBytes, std::to_string(pf.max_bytes)),
      EnvVar(env::kPreflightStepFactor, std::to_string(pf.step_factor)),
      EnvVar(env::kPreflightMinBusBandwidth, std::to_string(pf.min_bus_bandwidth)),
      EnvVar(env::kPreflightTimeoutSeconds, std::to_string(pf.timeout_seconds)),
      // An elastic job's sidecars probe no cross-Pod world: it changes under them with every
      // scale and recreation. Its bandwidth comes from the trainers' own collectives (telemetry).
      EnvVar(env::kMonitorEnabled, flag(mon.enabled && !elastic)),
      EnvVar(env::kMonitorIntervalSeconds, std::to_string(mon.interval_seconds)),
      EnvVar(env::kMonitorMessageBytes, std::to_string(mon.message_bytes)),
      EnvVar(env::kTokenFile, std::string(contract::path::kTokenFile)),
      EnvVar(env::kRunDir, std::string(contract::path::kRunDir)),
      FieldRefEnv(env::kPodName, "metadata.name"),
      FieldRefEnv(env::kPodIp, "status.podIP"),
      FieldRefEnv(env::kNodeName, "spec.nodeName"),
      EnvVar(env::kMode, std::string(mode)),
  });
  if (elastic) {
    entries.push_back(EnvVar(env::kMaxReplicas, std::to_string(spec.elastic_policy->max_replicas)));
    entries.push_back(EnvVar(env::kPreflightScope, scope == PreflightScope::kJob ? "Job" : "Pod"));
  }
  return entries;
}

json HttpProbe(std::string_view path, std::int32_t port, std::int64_t period,
               std::int64_t failure_threshold) {
  return {{"httpGet", {{"path", path}, {"port", port}}},
          {"periodSeconds", period},
          {"timeoutSeconds", 1},
          {"failureThreshold", failure_threshold}};
}

json RestrictedSecurityContext(bool ipc_lock) {
  json capabilities = {{"drop", json::array({"ALL"})}};
  if (ipc_lock) {
    capabilities["add"] = json::array({"IPC_LOCK"});
  }
  return {{"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"capabilities", std::move(capabilities)}};
}

json RingleaderMounts() {
  return json::array(
      {{{"name", kTokenVolume}, {"mountPath", contract::path::kTokenDir}, {"readOnly", true}},
       {{"name", kRunVolume}, {"mountPath", contract::path::kRunDir}}});
}

const json& ObjectAt(const json& object, const json::json_pointer& pointer) {
  static const json kEmpty = json::object();
  if (!object.contains(pointer)) {
    return kEmpty;
  }
  const json& value = object.at(pointer);
  return value.is_object() ? value : kEmpty;
}

const json& ArrayAt(const json& object, const json::json_pointer& pointer) {
  static const json kEmpty = json::array();
  if (!object.contains(pointer)) {
    return kEmpty;
  }
  const json& value = object.at(pointer);
  return value.is_array() ? value : kEmpty;
}

// The DRA claims the app containers reference (resources.claims), once per claim name, in the
// order first seen.
json AppClaims(const json& containers) {
  json claims = json::array();
  std::set<std::string> seen;
  for (const json& container : containers) {
    for (const json& claim : ArrayAt(container, "/resources/claims"_json_pointer)) {
      const json name = claim.is_object() ? claim.value("name", json()) : json();
      if (name.is_string() && seen.insert(name.get<std::string>()).second) {
        claims.push_back(claim);
      }
    }
  }
  return claims;
}

json BuildSidecar(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt, const api::JobPorts& ports,
                  const std::string& master_addr, const json& app_claims, const PlannerConfig& config,
                  PreflightScope scope) {
  const bool host_network = HostNetwork(job, config);
  // Without DRA the sidecar holds no device and measures the Pod network with Gloo. A DRA claim
  // can be shared by several containers, so with claims it holds the trainers' devices too.
  const bool shares_claims = !app_claims.empty();
  api::TrainingJobSpec runs = job.spec;
  if (!shares_claims) {
    runs.communication.backend = api::Backend::kGloo;
  }
  // The sweep runs in the preflight container; the sidecar's buffers are the monitor's.
  runs.communication.preflight.enabled = false;
  if (job.spec.elastic_policy.has_value()) {
    runs.communication.monitor.enabled = false;  // SidecarEnv: no monitor in elastic jobs
  }
  json env_list = SidecarEnv(job, rank, attempt, ports, master_addr, runs.EffectiveBackend(),
                             contract::mode::kSidecar, scope);
  const bool serves_trainer_store = job.spec.communication.trainer_store == api::TrainerStore::kSidecar;
  if (serves_trainer_store && rank == 0) {
    env_list.push_back(EnvVar(env::kTrainerStorePort, std::to_string(ports.master)));
  }
  json mounts = RingleaderMounts();
  // Telemetry is the sidecar's alone: the preflight's sweep is no training.
  const bool telemetry = job.spec.communication.telemetry.enabled;
  env_list.push_back(EnvVar(env::kTelemetryEnabled, telemetry ? "true" : "false"));
  if (telemetry) {
    // Rank 0's sidecar names a stall after this long (sidecar/service/training_stall.h).
    env_list.push_back(
        EnvVar(env::kStallSeconds, std::to_string(job.spec.communication.telemetry.stall_seconds)));
    // Filled by the sidecar before its startup probe passes, so before any trainer starts. The
    // directory is spelled out, as the run dir is, for a kubelet that maps mount paths in env.
    env_list.push_back(EnvVar(env::kProfilerPluginDir, std::string(contract::path::kProfilerPluginDir)));
    mounts.push_back({{"name", kProfilerVolume}, {"mountPath", contract::path::kProfilerPluginDir}});
  }
  json resources = {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                    {"limits", {{"memory", api::FormatQuantity(SidecarMemoryLimitBytes(runs))}}}};
  if (shares_claims) {
    resources["claims"] = app_claims;
  }
  constexpr std::int64_t startup_failures =
      (kStartupBudgetSeconds + kStartupProbePeriodSeconds - 1) / kStartupProbePeriodSeconds;
  // The master port is declared on every rank, as the trainer declares it with trainerStore
  // Trainer: each Pod holds the whole block on its node (hostPort), whoever binds it.
  json sidecar_ports = json::array();
  if (serves_trainer_store) {
    sidecar_ports.push_back(PortEntry(contract::PortRole::kMaster, ports.master, host_network));
  }
  sidecar_ports.push_back(PortEntry(contract::PortRole::kRendezvous, ports.rendezvous, host_network));
  sidecar_ports.push_back(PortEntry(contract::PortRole::kMetrics, ports.metrics, host_network));
  return {
      {"name", contract::kSidecarContainerName},
      {"image", config.sidecar_image},
      // A native sidecar: starts before the trainers, stops after them, never holds the Pod open.
      {"restartPolicy", "Always"},
      {"env", std::move(env_list)},
      {"ports", std::move(sidecar_ports)},
      {"startupProbe", HttpProbe(contract::endpoint::kHealthz, ports.metrics,
                                 kStartupProbePeriodSeconds, startup_failures)},
      {"livenessProbe", HttpProbe(contract::endpoint::kHealthz, ports.metrics, 10, 6)},
      {"resources", std::move(resources)},
      {"securityContext", RestrictedSecurityContext(false)},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      {"volumeMounts", std::move(mounts)},
  };
}

// The trainers' env that steers their fabric, which the preflight needs to measure the same one.
bool IsFabricEnv(std::string_view name) {
  if (name.starts_with(env::kReservedPrefix)) {
    return false;  // validation refuses these in trainers; never let one override ours
  }
  if (name == env::kNcclProfilerPlugin) {
    return false;  // the sweep is no training, and a trainer's plugin path is not mounted there
  }
  return name.starts_with("NCCL_") || name.starts_with("UCX_") || name.starts_with("GLOO_") ||
         name == "TP_SOCKET_IFNAME" || name == "CUDA_VISIBLE_DEVICES";
}

// The app containers' fabric env entries, verbatim (value or valueFrom); the first container to
// set a name wins.
json FabricEnv(const json& containers) {
  json entries = json::array();
  std::set<std::string> seen;
  for (const json& container : containers) {
    for (const json& entry : ArrayAt(container, "/env"_json_pointer)) {
      const json name = entry.is_object() ? entry.value("name", json()) : json();
      if (name.is_string() && IsFabricEnv(name.get<std::string>()) &&
          seen.insert(name.get<std::string>()).second) {
        entries.push_back(entry);
      }
    }
  }
  return entries;
}

// Every envFrom source of the app containers, once each: the operator cannot see which keys a
// ConfigMap or Secret holds. The container's own env entries win over these.
json AppEnvFrom(const json& containers) {
  json sources = json::array();
  for (const json& container : containers) {
    for (const json& source : ArrayAt(container, "/envFrom"_json_pointer)) {
      if (std::find(sources.begin(), sources.end(), source) == sources.end()) {
        sources.push_back(source);
      }
    }
  }
  return sources;
}

// The app containers' mounts of shared memory and RDMA device nodes, one per path, first seen.
json FabricMounts(const json& containers) {
  json mounts = json::array();
  std::set<std::string> seen;
  for (const json& container : containers) {
    for (const json& mount : ArrayAt(container, "/volumeMounts"_json_pointer)) {
      const json path = mount.is_object() ? mount.value("mountPath", json()) : json();
      if (!path.is_string()) {
        continue;
      }
      const std::string& text = path.get_ref<const std::string&>();
      if ((text == "/dev/shm" || text.starts_with("/dev/infiniband")) && seen.insert(text).second) {
        mounts.push_back(mount);
      }
    }
  }
  return mounts;
}

// RDMA registers (locks) memory; a trainer given IPC_LOCK for that passes it to the preflight.
bool AddsIpcLock(const json& containers) {
  for (const json& container : containers) {
    for (const json& capability : ArrayAt(container, "/securityContext/capabilities/add"_json_pointer)) {
      if (capability == "IPC_LOCK" || capability == "CAP_IPC_LOCK") {
        return true;
      }
    }
  }
  return false;
}

// Devices and other extended resources; cpu, memory, ephemeral-storage and hugepages stay with
// the trainers.
bool IsDeviceResource(const std::string& name) {
  return name != "cpu" && name != "memory" && name != "ephemeral-storage" && !name.starts_with("hugepages-");
}

std::optional<std::int64_t> IntegerAmount(const json& value) {
  if (value.is_number_integer()) {
    const auto amount = value.get<std::int64_t>();
    return amount >= 0 ? std::optional(amount) : std::nullopt;
  }
  if (value.is_string()) {
    return api::ParseIntegerQuantity(value.get_ref<const std::string&>());
  }
  return std::nullopt;
}

// Per device resource, the sum over the app containers of each one's request (else its limit).
// The kubelet's device manager hands the devices it allocated to a regular init container to the
// app containers that request the same resource after it, and the scheduler counts the larger of
// the largest init container and the app containers' sum. So the trainers get exactly the devices
// the preflight tested, and the preflight costs the job no extra device.
json DeviceAmounts(const json& containers) {
  struct Amount {
    json first;  // the first container's value, kept as written when they cannot be summed
    std::int64_t sum = 0;
    bool integral = true;
  };
  std::map<std::string, Amount> amounts;
  for (const json& container : containers) {
    const json& requests = ObjectAt(container, "/resources/requests"_json_pointer);
    const json& limits = ObjectAt(container, "/resources/limits"_json_pointer);
    std::set<std::string> names;
    for (const json* side : {&requests, &limits}) {
      for (const auto& [name, value] : side->items()) {
        names.insert(name);
      }
    }
    for (const std::string& name : names) {
      if (!IsDeviceResource(name)) {
        continue;
      }
      const json& value = requests.contains(name) ? requests[name] : limits[name];
      auto [it, inserted] = amounts.try_emplace(name);
      Amount& amount = it->second;
      if (inserted) {
        amount.first = value;
      }
      const std::optional<std::int64_t> count = IntegerAmount(value);
      // Extended resources are whole numbers; anything else is passed on, not summed.
      if (!count || __builtin_add_overflow(amount.sum, *count, &amount.sum)) {
        amount.integral = false;
      }
    }
  }
  json out = json::object();
  for (const auto& [name, amount] : amounts) {
    out[name] = amount.integral ? json(api::FormatQuantity(amount.sum)) : amount.first;
  }
  return out;
}

// The device resources that look like RDMA devices by name (rdma/rdma_shared_device_a,
// nvidia.com/sriov_rdma_vf, ...), comma-separated: the preflight then reports NCCL falling back to
// sockets. The sidecar accepts at most 1024 characters.
std::string RdmaResources(const json& devices) {
  std::string names;
  for (const auto& [name, amount] : devices.items()) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("rdma") != std::string::npos && names.size() + 1 + name.size() <= 1024) {
      names += (names.empty() ? "" : ",") + name;
    }
  }
  return names;
}

// A regular init container, last: it runs the preflight with the trainers' devices, fabric env
// and mounts right before they start, and its exit (0: passed) is what lets them start.
json BuildPreflight(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt, const api::JobPorts& ports,
                    const std::string& master_addr, const json& containers, const PlannerConfig& config,
                    PreflightScope scope) {
  json env_list = SidecarEnv(job, rank, attempt, ports, master_addr, job.spec.EffectiveBackend(),
                             contract::mode::kPodPreflight, scope);
  const json devices = DeviceAmounts(containers);
  if (const std::string rdma = RdmaResources(devices); !rdma.empty()) {
    env_list.push_back(EnvVar(env::kRdmaResources, rdma));
  }
  for (json& entry : FabricEnv(containers)) {
    env_list.push_back(std::move(entry));
  }
  json requests = {{"cpu", "100m"}, {"memory", "128Mi"}};
  json limits = {{"memory", api::FormatQuantity(SidecarMemoryLimitBytes(job.spec))}};
  for (const auto& [name, amount] : devices.items()) {
    requests[name] = amount;
    limits[name] = amount;
  }
  json resources = {{"requests", std::move(requests)}, {"limits", std::move(limits)}};
  if (json claims = AppClaims(containers); !claims.empty()) {
    resources["claims"] = std::move(claims);
  }
  json mounts = RingleaderMounts();
  for (json& mount : FabricMounts(containers)) {
    mounts.push_back(std::move(mount));
  }
  // No probes, lifecycle, ports or restartPolicy: the API server refuses probes on a regular init
  // container, and the trainers' ports are not its to declare.
  json preflight = {
      {"name", contract::kPreflightContainerName},
      {"image", config.sidecar_image},
      {"env", std::move(env_list)},
      {"resources", std::move(resources)},
      {"securityContext", RestrictedSecurityContext(AddsIpcLock(containers))},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      {"volumeMounts", std::move(mounts)},
  };
  if (json sources = AppEnvFrom(containers); !sources.empty()) {
    preflight["envFrom"] = std::move(sources);
    // An env entry wins over envFrom, and NCCL takes an empty NCCL_PROFILER_PLUGIN for an unset
    // one: a ConfigMap's plugin never reaches the sweep.
    preflight["env"].push_back(EnvVar(env::kNcclProfilerPlugin, ""));
  }
  return preflight;
}

// Whether the container's own env names NCCL_PROFILER_PLUGIN (by value or valueFrom).
bool SetsProfilerPlugin(const json& container) {
  for (const json& entry : ArrayAt(container, "/env"_json_pointer)) {
    if (entry.is_object() && entry.value("name", json()) == env::kNcclProfilerPlugin) {
      return true;
    }
  }
  return false;
}

bool AsksForGpus(const json& container) {
  const json limits = container.value("/resources/limits"_json_pointer, json::object());
  return limits.is_object() && limits.contains(kGpuResource);
}

void AddTrainerParts(json& container, const json& trainer_env, bool first, const api::TrainingJob& job,
                     std::int64_t attempt, const api::JobPorts& ports, const std::string& master_addr,
                     bool host_network) {
  // Ours first, so the user's own env values may refer to them as $(MASTER_ADDR).
  json env_list = trainer_env;
  for (json& entry : TrainerStoreEnv(job, attempt, ports, master_addr, container)) {
    env_list.push_back(std::move(entry));
  }
  const bool load_plugin = job.spec.communication.telemetry.enabled && !SetsProfilerPlugin(container);
  if (load_plugin) {
    // NCCL dlopen()s the value as given first, so a full path works (2.23-2.26 and 2.27.5 on;
    // 2.27.3 only tried libnccl-profiler-<value>.so, NVIDIA/nccl#1732), while a plain name
    // becomes libnccl-profiler-<name>.so on the loader's search path, which this volume is not on.
    env_list.push_back(EnvVar(env::kNcclProfilerPlugin, std::string(contract::path::kProfilerPlugin)));
  }
  if (container.contains("env") && container["env"].is_array()) {
    for (const json& entry : container["env"]) {
      env_list.push_back(entry);
    }
  }
  container["env"] = std::move(env_list);
  json mounts = container.value("volumeMounts", json::array());
  mounts.push_back({{"name", kRunVolume}, {"mountPath", contract::path::kRunDir}, {"readOnly", true}});
  if (load_plugin) {
    mounts.push_back(
        {{"name", kProfilerVolume}, {"mountPath", contract::path::kProfilerPluginDir}, {"readOnly", true}});
  }
  container["volumeMounts"] = std::move(mounts);
  if (!first) {
    return;
  }
  json container_ports = container.value("ports", json::array());
  if (job.spec.communication.trainer_store == api::TrainerStore::kTrainer) {
    container_ports.push_back(PortEntry(contract::PortRole::kMaster, ports.master, host_network));  // it binds it
  }
  container_ports.push_back(PortEntry(contract::PortRole::kSpare, ports.spare, host_network));
  container["ports"] = std::move(container_ports);
  if (job.spec.gpus_per_replica > 0 && !AsksForGpus(container)) {
    container["resources"]["limits"][kGpuResource] = job.spec.gpus_per_replica;
  }
}

}  // namespace

std::int64_t SidecarMemoryLimitBytes(const api::TrainingJobSpec& spec) {
  if (spec.EffectiveBackend() != api::Backend::kGloo) {
    return kGi;
  }
  std::int64_t largest = 0;
  if (spec.communication.preflight.enabled) {
    largest = std::max(largest, spec.communication.preflight.max_bytes);
  }
  if (spec.communication.monitor.enabled) {
    largest = std::max(largest, spec.communication.monitor.message_bytes);
  }
  // Measured peak with Gloo: about 3.6 x the largest message plus 25 MiB
  // (tests/bench/sidecar_memory.sh, docs/benchmarks.md); 4 x plus 128Mi leaves a margin.
  const std::int64_t limit = 128 * kMi + 4 * largest;
  return std::max(kGi, (limit + kMi - 1) / kMi * kMi);  // whole Mi
}

std::vector<std::string> TrainersWithOwnProfilerPlugin(const api::TrainingJob& job) {
  std::vector<std::string> names;
  if (!job.spec.communication.telemetry.enabled) {
    return names;
  }
  for (const json& container : ArrayAt(job.spec.template_, "/spec/containers"_json_pointer)) {
    if (SetsProfilerPlugin(container)) {
      const json name = container.value("name", json());
      names.push_back(name.is_string() ? name.get<std::string>() : "");
    }
  }
  return names;
}

bool HostNetwork(const api::TrainingJob& job, const PlannerConfig& config) {
  return job.spec.host_network.value_or(config.default_host_network);
}

std::string PodHostname(const api::TrainingJob& job, std::int64_t rank) {
  return job.metadata.name + "-" + std::to_string(rank);
}

std::string PodName(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt) {
  // Attempt 0 keeps the plain name: a job that never restarts looks as it always did.
  const std::string hostname = PodHostname(job, rank);
  return attempt == 0 ? hostname : hostname + "-attempt-" + std::to_string(attempt);
}

json BuildPod(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt,
              const api::JobPorts& ports, const PlannerConfig& config, PreflightScope scope) {
  const json& tmpl = job.spec.template_;
  const std::string name = PodName(job, rank, attempt);
  const std::string master_addr = MasterAddr(job, config);

  json metadata = ChildMetadata(job, name);
  json labels = tmpl.value("/metadata/labels"_json_pointer, json::object());
  for (const auto& [key, value] : metadata["labels"].items()) {
    labels[key] = value;
  }
  labels[kRankLabel] = std::to_string(rank);
  labels[kAttemptLabel] = std::to_string(attempt);
  metadata["labels"] = std::move(labels);
  if (const json annotations = tmpl.value("/metadata/annotations"_json_pointer, json());
      annotations.is_object()) {
    metadata["annotations"] = annotations;
  }

  json spec = tmpl.value("spec", json::object());
  spec["hostname"] = PodHostname(job, rank);
  spec["subdomain"] = job.metadata.name;
  spec["restartPolicy"] = "Never";
  const bool host_network = HostNetwork(job, config);
  if (host_network) {
    spec["hostNetwork"] = true;
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  }

  json volumes = spec.value("volumes", json::array());
  volumes.push_back({{"name", kTokenVolume}, {"secret", {{"secretName", SecretName(job)}, {"defaultMode", 0440}}}});
  volumes.push_back({{"name", kRunVolume}, {"emptyDir", json::object()}});
  if (job.spec.communication.telemetry.enabled) {
    volumes.push_back({{"name", kProfilerVolume}, {"emptyDir", json::object()}});
  }
  spec["volumes"] = std::move(volumes);

  const json trainer_env = TrainerEnv(job, rank, ports, master_addr);
  json& containers = spec["containers"];
  for (std::size_t i = 0; i < containers.size(); ++i) {
    AddTrainerParts(containers[i], trainer_env, i == 0, job, attempt, ports, master_addr, host_network);
  }

  // The sidecar first (it serves the store before anyone joins), the user's init containers, and
  // the preflight last, built from the finished trainers, so the fabric is checked just before
  // they start.
  json init = json::array({BuildSidecar(job, rank, attempt, ports, master_addr, AppClaims(containers), config, scope)});
  for (const json& container : spec.value("initContainers", json::array())) {
    init.push_back(container);
  }
  init.push_back(BuildPreflight(job, rank, attempt, ports, master_addr, containers, config, scope));
  spec["initContainers"] = std::move(init);

  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(metadata)}, {"spec", std::move(spec)}};
  DecoratePod(job, attempt, pod);  // the gang-scheduling provider's labels, annotations, scheduler
  return pod;
}

}  // namespace ringleader::planner
