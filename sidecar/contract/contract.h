// The public contract between the ringleader operator and its sidecar: environment variable
// names, port roles, endpoints and file paths. Owned by the sidecar; the operator includes it to
// inject Pods, so a rename here changes both sides at once.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ringleader::contract {

// The roles of the ports in a job's block, in block order: port(role) = block base + index.
enum class PortRole : std::uint8_t { kMaster = 0, kRendezvous = 1, kMetrics = 2, kSpare = 3 };
inline constexpr std::size_t kPortsPerJob = 4;
inline constexpr std::array<PortRole, kPortsPerJob> kPortRoles = {
    PortRole::kMaster, PortRole::kRendezvous, PortRole::kMetrics, PortRole::kSpare};

// The key in TrainingJob.status.ports and the Service port name for each role.
constexpr std::string_view PortRoleName(PortRole role) {
  switch (role) {
    case PortRole::kMaster: return "master";
    case PortRole::kRendezvous: return "rendezvous";
    case PortRole::kMetrics: return "metrics";
    case PortRole::kSpare: return "spare";
  }
  return "unknown";
}

// Container port names are limited to 15 characters by Kubernetes.
constexpr std::string_view PortName(PortRole role) {
  switch (role) {
    case PortRole::kMaster: return "rl-master";
    case PortRole::kRendezvous: return "rl-rendezvous";
    case PortRole::kMetrics: return "rl-metrics";
    case PortRole::kSpare: return "rl-spare";
  }
  return "rl-unknown";
}

// Environment every trainer container receives: the torch.distributed env:// contract, torchrun's
// PET_* equivalents (DeepSpeed's launcher reads the same values) and ringleader's own extras.
namespace env {
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";
inline constexpr std::string_view kMasterPort = "MASTER_PORT";
inline constexpr std::string_view kRank = "RANK";
inline constexpr std::string_view kWorldSize = "WORLD_SIZE";
inline constexpr std::string_view kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kNodeRank = "NODE_RANK";
inline constexpr std::string_view kPetNnodes = "PET_NNODES";
inline constexpr std::string_view kPetNodeRank = "PET_NODE_RANK";
inline constexpr std::string_view kPetNprocPerNode = "PET_NPROC_PER_NODE";
inline constexpr std::string_view kPetMasterAddr = "PET_MASTER_ADDR";
inline constexpr std::string_view kPetMasterPort = "PET_MASTER_PORT";
inline constexpr std::string_view kSparePort = "RINGLEADER_SPARE_PORT";
inline constexpr std::string_view kContractFile = "RINGLEADER_CONTRACT_FILE";
// With spec.communication.trainerStore Sidecar, for trainers whose own env leaves them unset (not
// reserved: a container's own entry wins). torch's env:// then makes every rank, rank 0 included,
// a client of the store at MASTER_ADDR:MASTER_PORT (rank 0's sidecar), its keys under
// /worker/attempt_<TORCHELASTIC_RESTART_COUNT>; the value must be exactly "True".
inline constexpr std::string_view kTorchelasticUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
// The gang attempt the Pod was created for (the value of RINGLEADER_ATTEMPT).
inline constexpr std::string_view kTorchelasticRestartCount = "TORCHELASTIC_RESTART_COUNT";
// torchrun's --rdzv-backend, --rdzv-endpoint, --rdzv-id and --rdzv-conf: c10d rendezvous of the
// agents on the sidecar's store (<MASTER_ADDR>:<MASTER_PORT>), id <job uid>-<attempt>, conf
// "is_host=false" so no agent tries to host it.
inline constexpr std::string_view kPetRdzvBackend = "PET_RDZV_BACKEND";
inline constexpr std::string_view kPetRdzvEndpoint = "PET_RDZV_ENDPOINT";
inline constexpr std::string_view kPetRdzvId = "PET_RDZV_ID";
inline constexpr std::string_view kPetRdzvConf = "PET_RDZV_CONF";
// torchrun's --local-addr, with the four above: the Pod's IP (status.podIP).
inline constexpr std::string_view kPetLocalAddr = "PET_LOCAL_ADDR";
// Elastic jobs: torchrun's --max-restarts (spec.elasticPolicy.maxRestarts); PET_NNODES is then
// "<minReplicas>:<maxReplicas>".
inline constexpr std::string_view kPetMaxRestarts = "PET_MAX_RESTARTS";
// Elastic jobs with trainerStore Sidecar, unless the trainer sets it: "1", so torchrun's workers
// never share its agents' rendezvous store (a node joining a running world would wait forever).
inline constexpr std::string_view kTorchDisableShareRdzvTcpStore = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE";

// Environment the sidecar reads (it never talks to the Kubernetes API).
inline constexpr std::string_view kJobName = "RINGLEADER_JOB_NAME";
inline constexpr std::string_view kJobNamespace = "RINGLEADER_JOB_NAMESPACE";
inline constexpr std::string_view kJobUid = "RINGLEADER_JOB_UID";
inline constexpr std::string_view kSidecarRank = "RINGLEADER_RANK";
inline constexpr std::string_view kReplicas = "RINGLEADER_REPLICAS";
// Elastic jobs: the most Pods the job may have (spec.elasticPolicy.maxReplicas). Rank 0's store
// accepts ranks below it and sizes its caps for it; unset means RINGLEADER_REPLICAS.
inline constexpr std::string_view kMaxReplicas = "RINGLEADER_MAX_REPLICAS";
// What the preflight covers: "Job" (unset: every Pod of the attempt meets in one world of
// RINGLEADER_REPLICAS Pods) or "Pod" (a Pod that joins an elastic job's running world, after a
// scale-up or alone after a failure: the preflight runs on its own ranks only and proves it
// reaches rank 0's store; the trainers' collectives with the others are measured by the profiler).
inline constexpr std::string_view kPreflightScope = "RINGLEADER_PREFLIGHT_SCOPE";
// The gang attempt the Pod was created for (status.restarts then); the rendezvous checks it.
inline constexpr std::string_view kAttempt = "RINGLEADER_ATTEMPT";
inline constexpr std::string_view kGpusPerReplica = "RINGLEADER_GPUS_PER_REPLICA";
inline constexpr std::string_view kRendezvousAddr = "RINGLEADER_RENDEZVOUS_ADDR";
inline constexpr std::string_view kRendezvousPort = "RINGLEADER_RENDEZVOUS_PORT";
inline constexpr std::string_view kMetricsPort = "RINGLEADER_METRICS_PORT";
// Set on rank 0's native sidecar when spec.communication.trainerStore is Sidecar: the port (the
// job's master port) on which it serves PyTorch's TCPStore protocol for the trainers, from before
// any trainer starts until the Pod ends. Unset: the trainers host their own store.
inline constexpr std::string_view kTrainerStorePort = "RINGLEADER_TRAINER_STORE_PORT";
inline constexpr std::string_view kBackend = "RINGLEADER_BACKEND";
inline constexpr std::string_view kPreflightEnabled = "RINGLEADER_PREFLIGHT_ENABLED";
inline constexpr std::string_view kPreflightMinBytes = "RINGLEADER_PREFLIGHT_MIN_BYTES";
inline constexpr std::string_view kPreflightMaxBytes = "RINGLEADER_PREFLIGHT_MAX_BYTES";
inline constexpr std::string_view kPreflightStepFactor = "RINGLEADER_PREFLIGHT_STEP_FACTOR";
inline constexpr std::string_view kPreflightMinBusBandwidth = "RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH";
inline constexpr std::string_view kPreflightTimeoutSeconds = "RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS";
inline constexpr std::string_view kMonitorEnabled = "RINGLEADER_MONITOR_ENABLED";
inline constexpr std::string_view kMonitorIntervalSeconds = "RINGLEADER_MONITOR_INTERVAL_SECONDS";
inline constexpr std::string_view kMonitorMessageBytes = "RINGLEADER_MONITOR_MESSAGE_BYTES";
inline constexpr std::string_view kTokenFile = "RINGLEADER_TOKEN_FILE";
inline constexpr std::string_view kRunDir = "RINGLEADER_RUN_DIR";
inline constexpr std::string_view kPodName = "RINGLEADER_POD_NAME";
inline constexpr std::string_view kPodIp = "RINGLEADER_POD_IP";
inline constexpr std::string_view kNodeName = "RINGLEADER_NODE_NAME";
// The RDMA resources (comma-separated names) the operator gave the preflight container: RDMA was
// asked for, and NCCL falling back to sockets is reported.
inline constexpr std::string_view kRdmaResources = "RINGLEADER_RDMA_RESOURCES";
// Which part of a Pod this process plays (mode:: below); a local run leaves it unset ("run").
inline constexpr std::string_view kMode = "RINGLEADER_MODE";
// Read by the NCCL profiler plugin inside each trainer (sidecar/profiler): the Unix socket it
// sends snapshots to (default path::kProfilerSocket) and how often, in milliseconds (5000).
inline constexpr std::string_view kProfilerSocket = "RINGLEADER_PROFILER_SOCKET";
inline constexpr std::string_view kProfilerIntervalMs = "RINGLEADER_PROFILER_INTERVAL_MS";
// Read by the native sidecar: "false" when spec.communication.telemetry.enabled is false (no
// plugin copied, no profiler socket); anything else, or unset, means on.
inline constexpr std::string_view kTelemetryEnabled = "RINGLEADER_TELEMETRY_ENABLED";
// Read by the native sidecar (rank 0's compares the ranks): how long, in seconds, some ranks of a
// communicator must wait in a collective that others never entered before /summary names it a
// stall (spec.communication.telemetry.stallSeconds: the CRD allows 10 to 86400, default 120).
inline constexpr std::string_view kStallSeconds = "RINGLEADER_STALL_SECONDS";
// Read by the native sidecar: the directory it copies the profiler plugin into before it starts
// serving (default path::kProfilerPluginDir, the trainers' read-only mount of the same volume).
inline constexpr std::string_view kProfilerPluginDir = "RINGLEADER_PROFILER_PLUGIN_DIR";
// NCCL's own setting that names the profiler plugin to load; the operator sets it on trainers to
// path::kProfilerPlugin unless a trainer sets it itself.
inline constexpr std::string_view kNcclProfilerPlugin = "NCCL_PROFILER_PLUGIN";

// Names a user may not set in a trainer container: ringleader sets them and would otherwise be
// silently overridden (or silently override the user).
inline constexpr std::array<std::string_view, 13> kReservedTrainerEnv = {
    kMasterAddr, kMasterPort, kRank, kWorldSize, kLocalWorldSize, kNodeRank, kPetNnodes,
    kPetNodeRank, kPetNprocPerNode, kPetMasterAddr, kPetMasterPort, kSparePort, kContractFile};

// Any RINGLEADER_* name is reserved as well.
inline constexpr std::string_view kReservedPrefix = "RINGLEADER_";
}  // namespace env

// Values of RINGLEADER_MODE the operator sets. In an operator-made Pod the native sidecar
// (kSidecarContainerName) serves the endpoints and, on rank 0, the store for the job's life; the
// regular init container kPreflightContainerName holds the trainers' devices and fabric
// settings, joins the store, runs the preflight, writes the contract and its result into the run
// dir and exits (0: passed), so the kubelet starts the trainers only after a passing preflight.
namespace mode {
inline constexpr std::string_view kSidecar = "sidecar";
inline constexpr std::string_view kPodPreflight = "pod-preflight";
}  // namespace mode

// Sidecar HTTP endpoints, all served on the metrics port.
namespace endpoint {
inline constexpr std::string_view kMetrics = "/metrics";
// 200 while the process serves: the native sidecar's startup and liveness probe (on rank 0 the
// store listens before the endpoints do, so a started sidecar means a reachable store).
inline constexpr std::string_view kHealthz = "/healthz";
// 200 once the preflight passed (or is disabled). In a local run ("run" mode) it is what holds
// trainers back; in an operator-made Pod the preflight init container's exit does that.
inline constexpr std::string_view kReadyz = "/readyz";
// JSON communication summary that the operator reads from rank 0.
inline constexpr std::string_view kSummary = "/summary";
}  // namespace endpoint

// Files shared between the operator-injected volumes, the sidecar and the trainer.
namespace path {
inline constexpr std::string_view kTokenDir = "/var/run/ringleader/token";
inline constexpr std::string_view kTokenFile = "/var/run/ringleader/token/token";
inline constexpr std::string_view kRunDir = "/var/run/ringleader/run";
// Written by the sidecar after rendezvous: rank 0's IP, ports, ranks, world size.
inline constexpr std::string_view kContractFile = "/var/run/ringleader/run/contract.json";
// Written by the preflight init container for the sidecar: its table, verdict and transport.
inline constexpr std::string_view kPreflightResultFile = "/var/run/ringleader/run/preflight.json";
// The sidecar listens here for the profiler plugin's snapshots (profiler/snapshot_protocol.h).
inline constexpr std::string_view kProfilerSocket = "/var/run/ringleader/run/profiler.sock";
// An emptyDir the native sidecar fills with the plugin from its image, mounted read-only in
// each trainer: NCCL_PROFILER_PLUGIN points at kProfilerPlugin.
inline constexpr std::string_view kProfilerPluginDir = "/var/run/ringleader/profiler";
inline constexpr std::string_view kProfilerPlugin =
    "/var/run/ringleader/profiler/libnccl-profiler-ringleader.so";
}  // namespace path

// The plugin's file name, in the sidecar's image beside the sidecar's executable and in
// path::kProfilerPluginDir.
inline constexpr std::string_view kProfilerPluginFileName = "libnccl-profiler-ringleader.so";

// Key of the job token inside the job's Secret.
inline constexpr std::string_view kTokenSecretKey = "token";
inline constexpr std::string_view kSidecarContainerName = "ringleader-sidecar";
inline constexpr std::string_view kPreflightContainerName = "ringleader-preflight";

}  // namespace ringleader::contract
