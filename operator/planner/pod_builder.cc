// One rank's Pod: the user's template plus ringleader's identity, env contract, sidecar,
// volumes and ports.
#include "operator/planner/pod_builder.h"

#include <string>

#include "operator/api/quantity.h"
#include "operator/planner/children_builder.h"
#include "sidecar/contract/contract.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
namespace env = contract::env;

constexpr std::string_view kTokenVolume = "ringleader-token";
constexpr std::string_view kRunVolume = "ringleader-run";
constexpr std::string_view kGpuResource = "nvidia.com/gpu";
// Startup probe period; the threshold is derived from the preflight timeout.
constexpr std::int64_t kStartupProbePeriodSeconds = 2;
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
  const std::string replicas = std::to_string(job.spec.replicas);
  const std::string rank_text = std::to_string(rank);
  const std::string master_port = std::to_string(ports.master);
  return json::array({
      EnvVar(env::kMasterAddr, master_addr),
      EnvVar(env::kMasterPort, master_port),
      EnvVar(env::kRank, rank_text),
      EnvVar(env::kWorldSize, std::to_string(job.spec.replicas * nproc)),
      EnvVar(env::kLocalWorldSize, std::to_string(nproc)),
      EnvVar(env::kNodeRank, rank_text),
      EnvVar(env::kPetNnodes, replicas),
      EnvVar(env::kPetNodeRank, rank_text),
      EnvVar(env::kPetNprocPerNode, std::to_string(nproc)),
      EnvVar(env::kPetMasterAddr, master_addr),
      EnvVar(env::kPetMasterPort, master_port),
      EnvVar(env::kSparePort, std::to_string(ports.spare)),
      EnvVar(env::kContractFile, std::string(contract::path::kContractFile)),
  });
}

json SidecarEnv(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt, const api::JobPorts& ports,
                const std::string& master_addr) {
  const api::TrainingJobSpec& spec = job.spec;
  const api::PreflightSpec& pf = spec.communication.preflight;
  const api::MonitorSpec& mon = spec.communication.monitor;
  auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  return json::array({
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
      EnvVar(env::kBackend, std::string(api::BackendName(spec.EffectiveBackend()))),
      EnvVar(env::kPreflightEnabled, flag(pf.enabled)),
      EnvVar(env::kPreflightMinBytes, std::to_string(pf.min_bytes)),
      EnvVar(env::kPreflightMaxBytes, std::to_string(pf.max_bytes)),
      EnvVar(env::kPreflightStepFactor, std::to_string(pf.step_factor)),
      EnvVar(env::kPreflightMinBusBandwidth, std::to_string(pf.min_bus_bandwidth)),
      EnvVar(env::kPreflightTimeoutSeconds, std::to_string(pf.timeout_seconds)),
      EnvVar(env::kMonitorEnabled, flag(mon.enabled)),
      EnvVar(env::kMonitorIntervalSeconds, std::to_string(mon.interval_seconds)),
      EnvVar(env::kMonitorMessageBytes, std::to_string(mon.message_bytes)),
      EnvVar(env::kTokenFile, std::string(contract::path::kTokenFile)),
      EnvVar(env::kRunDir, std::string(contract::path::kRunDir)),
      FieldRefEnv(env::kPodName, "metadata.name"),
      FieldRefEnv(env::kPodIp, "status.podIP"),
      FieldRefEnv(env::kNodeName, "spec.nodeName"),
  });
}

json HttpProbe(std::string_view path, std::int32_t port, std::int64_t period,
               std::int64_t failure_threshold) {
  return {{"httpGet", {{"path", path}, {"port", port}}},
          {"periodSeconds", period},
          {"timeoutSeconds", 1},
          {"failureThreshold", failure_threshold}};
}

json BuildSidecar(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt, const api::JobPorts& ports,
                  const std::string& master_addr, const PlannerConfig& config) {
  const bool host_network = HostNetwork(job, config);
  // The startup probe must outlast rendezvous plus the sweep, with a margin for process start.
  const std::int64_t startup_budget = job.spec.communication.preflight.timeout_seconds + 30;
  const std::int64_t startup_failures =
      (startup_budget + kStartupProbePeriodSeconds - 1) / kStartupProbePeriodSeconds;
  return {
      {"name", contract::kSidecarContainerName},
      {"image", config.sidecar_image},
      // A native sidecar: starts before the trainers, stops after them, never holds the Pod open.
      {"restartPolicy", "Always"},
      {"env", SidecarEnv(job, rank, attempt, ports, master_addr)},
      {"ports",
       json::array({PortEntry(contract::PortRole::kRendezvous, ports.rendezvous, host_network),
                    PortEntry(contract::PortRole::kMetrics, ports.metrics, host_network)})},
      {"startupProbe", HttpProbe(contract::endpoint::kReadyz, ports.metrics,
                                 kStartupProbePeriodSeconds, startup_failures)},
      {"livenessProbe", HttpProbe(contract::endpoint::kHealthz, ports.metrics, 10, 6)},
      {"resources",
       {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
        {"limits", {{"memory", api::FormatQuantity(SidecarMemoryLimitBytes(job.spec))}}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", json::array({"ALL"})}}}}},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      {"volumeMounts",
       json::array(
           {{{"name", kTokenVolume}, {"mountPath", contract::path::kTokenDir}, {"readOnly", true}},
            {{"name", kRunVolume}, {"mountPath", contract::path::kRunDir}}})},
  };
}

bool AsksForGpus(const json& container) {
  const json limits = container.value("/resources/limits"_json_pointer, json::object());
  return limits.is_object() && limits.contains(kGpuResource);
}

void AddTrainerParts(json& container, const json& trainer_env, bool first, const api::TrainingJob& job,
                     const api::JobPorts& ports, bool host_network) {
  // Ours first, so the user's own env values may refer to them as $(MASTER_ADDR).
  json env_list = trainer_env;
  if (container.contains("env") && container["env"].is_array()) {
    for (const json& entry : container["env"]) {
      env_list.push_back(entry);
    }
  }
  container["env"] = std::move(env_list);
  json mounts = container.value("volumeMounts", json::array());
  mounts.push_back({{"name", kRunVolume}, {"mountPath", contract::path::kRunDir}, {"readOnly", true}});
  container["volumeMounts"] = std::move(mounts);
  if (!first) {
    return;
  }
  json container_ports = container.value("ports", json::array());
  container_ports.push_back(PortEntry(contract::PortRole::kMaster, ports.master, host_network));
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

bool HostNetwork(const api::TrainingJob& job, const PlannerConfig& config) {
  return job.spec.host_network.value_or(config.default_host_network);
}

std::string PodName(const api::TrainingJob& job, std::int64_t rank) {
  return job.metadata.name + "-" + std::to_string(rank);
}

json BuildPod(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt,
              const api::JobPorts& ports, const PlannerConfig& config) {
  const json& tmpl = job.spec.template_;
  const std::string name = PodName(job, rank);
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
  spec["hostname"] = name;
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
  spec["volumes"] = std::move(volumes);

  json init = json::array({BuildSidecar(job, rank, attempt, ports, master_addr, config)});
  for (const json& container : spec.value("initContainers", json::array())) {
    init.push_back(container);
  }
  spec["initContainers"] = std::move(init);

  const json trainer_env = TrainerEnv(job, rank, ports, master_addr);
  json& containers = spec["containers"];
  for (std::size_t i = 0; i < containers.size(); ++i) {
    AddTrainerParts(containers[i], trainer_env, i == 0, job, ports, host_network);
  }

  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(metadata)}, {"spec", std::move(spec)}};
}

}  // namespace ringleader::planner
