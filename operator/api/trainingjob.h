// The TrainingJob custom resource (ringleader.dev/v1alpha1) as C++ types. Parsing keeps the
// original JSON, and ToJson() writes the typed fields back over it, so fields this version does
// not know (and the user's pod template) survive a round trip untouched.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/field_error.h"
#include "sidecar/contract/summary.h"

namespace ringleader::api {

inline constexpr std::string_view kGroup = "ringleader.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "ringleader.dev/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";
inline constexpr std::string_view kPlural = "trainingjobs";

using Time = std::chrono::system_clock::time_point;

enum class Backend { kAuto, kNccl, kGloo };

// Defaults here match the CRD's schema defaults; a test keeps the two equal.
struct PreflightSpec {
  bool enabled = true;
  std::int64_t min_bytes = 1 << 20;          // quantity, bytes
  std::int64_t max_bytes = 64 << 20;         // quantity, bytes
  std::int64_t step_factor = 2;
  std::int64_t min_bus_bandwidth = 0;        // quantity, bytes per second; 0 = no floor
  std::int64_t timeout_seconds = 300;
};

struct MonitorSpec {
  bool enabled = true;
  std::int64_t interval_seconds = 60;
  std::int64_t message_bytes = 16 << 20;     // quantity, bytes
};

// spec.communication.telemetry.onStall: what a stalled collective does to the job.
enum class StallAction {
  kReport,   // the Stalled condition and a Warning Event; the job keeps running
  kRestart,  // also a gang restart, counted against backoffLimit like a failed Pod's
};

// The trainers' own collectives, timed by the NCCL profiler plugin the sidecar hands them.
struct TelemetrySpec {
  bool enabled = true;
  // How long some ranks of a communicator wait in a collective that others never entered before
  // rank 0's sidecar names a stall (RINGLEADER_STALL_SECONDS); 10 to 86400.
  std::int64_t stall_seconds = 120;
  StallAction on_stall = StallAction::kReport;
};

// spec.communication.trainerStore: who serves the trainers' torch.distributed store on the job's
// master port (operator/planner/pod_builder.cc injects what each needs).
enum class TrainerStore {
  kSidecar,  // rank 0's native sidecar serves PyTorch's TCPStore protocol; every trainer connects
  kTrainer,  // rank 0's trainer (or torchrun's agent) binds the port and hosts it, as torch does
};

struct CommunicationSpec {
  Backend backend = Backend::kAuto;
  TrainerStore trainer_store = TrainerStore::kSidecar;
  PreflightSpec preflight;
  MonitorSpec monitor;
  TelemetrySpec telemetry;
};

// spec.runPolicy.failurePolicy, after batch/v1 Job's podFailurePolicy: what a failed Pod means
// for the gang. The planner applies it (operator/planner/plan.cc).
enum class FailureAction {
  kFailJob,     // the job fails at once
  kRestartJob,  // a gang restart counted against backoffLimit
  kIgnore,      // a gang restart that is not counted
};
enum class ExitCodeOperator { kIn, kNotIn };

// Matches when some terminated container (app or init, ringleader's included) that exited
// non-zero has a code In (or NotIn) `values`; `container_name` narrows it to one container.
struct ExitCodeRequirement {
  std::optional<std::string> container_name;
  ExitCodeOperator op = ExitCodeOperator::kIn;
  std::vector<std::int64_t> values;  // sorted, unique, 0-255; no 0 with In
  bool operator==(const ExitCodeRequirement&) const = default;
};

// Matches a Pod condition of this type and status.
struct PodConditionPattern {
  std::string type;
  std::string status = "True";
  bool operator==(const PodConditionPattern&) const = default;
};

// Exactly one of on_exit_codes and on_pod_conditions is set (Validate() checks it).
struct FailurePolicyRule {
  FailureAction action = FailureAction::kRestartJob;
  std::optional<ExitCodeRequirement> on_exit_codes;
  std::optional<std::vector<PodConditionPattern>> on_pod_conditions;
  bool operator==(const FailurePolicyRule&) const = default;
};

// The wait between a gang restart and its new attempt's Pods.
struct RestartBackoff {
  std::int64_t initial_seconds = 10;  // 0: no wait
  std::int64_t max_seconds = 300;
  // The wait before the Pods of the `restart`-th gang restart (1, 2, ...): initial x 2^(k-1),
  // at most max_seconds.
  std::chrono::seconds Delay(std::int64_t restart) const;
  bool operator==(const RestartBackoff&) const = default;
};

struct FailurePolicy {
  std::vector<FailurePolicyRule> rules;  // the first that matches a failed Pod decides
  RestartBackoff restart_backoff;
  bool operator==(const FailurePolicy&) const = default;
};

// spec.runPolicy.successPolicy: whose success is the job's. Named after Kubeflow's
// successPolicy (all workers, or the chief alone) and JobSet's (All, or Any of chosen jobs).
enum class SuccessPolicy {
  kAllRanks,  // every rank's Pod succeeds
  kRankZero,  // rank 0's trainers exit 0; the other ranks' Pods still running are stopped
};

// spec.runPolicy.schedulingPolicy.provider: who places the gang (operator/planner/gang_scheduling.h).
enum class SchedulingProvider {
  kNone,          // the Pods go to the cluster's scheduler one by one
  kCoscheduling,  // scheduler-plugins' coscheduling: a scheduling.x-k8s.io/v1alpha1 PodGroup
  kVolcano,       // Volcano: a scheduling.volcano.sh/v1beta1 PodGroup
  kKueue,         // Kueue's plain-Pod groups: the whole gang admitted together
  kKubernetes,    // Kubernetes' own gang scheduling: a scheduling.k8s.io/v1beta1 PodGroup per attempt
};

// The scheduler names a provider's Pods get unless spec.runPolicy.schedulingPolicy.schedulerName
// says otherwise: scheduler-plugins' second-scheduler install and Volcano's own.
inline constexpr std::string_view kCoschedulingSchedulerName = "scheduler-plugins-scheduler";
inline constexpr std::string_view kVolcanoSchedulerName = "volcano";
// The TrainingJob label Kueue's queue is named by, copied to every Pod.
inline constexpr std::string_view kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
// What each provider reads on a Pod (operator/planner/gang_scheduling.cc sets them; a template
// that sets one itself is refused).
inline constexpr std::string_view kCoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kVolcanoGroupNameAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kKueuePodGroupNameLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr std::string_view kKueuePodGroupTotalCountAnnotation = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr std::string_view kKueueRetriableInGroupAnnotation = "kueue.x-k8s.io/retriable-in-group";
inline constexpr std::string_view kKueueRoleHashAnnotation = "kueue.x-k8s.io/role-hash";
// What Kueue's Pod webhook puts on every Pod it takes: this label ("true") and this scheduling gate
// (removed once the group is admitted). A Pod with neither was never seen by Kueue.
inline constexpr std::string_view kKueueManagedLabel = "kueue.x-k8s.io/managed";
inline constexpr std::string_view kKueueAdmissionGate = "kueue.x-k8s.io/admission";
// A Kueue group is named <job>-<uid8>-<n> (planner::KueueGroupName), a label value of at most 63
// characters; names this long leave room for a nine-digit attempt.
inline constexpr std::size_t kMaxKueueJobNameLength = 44;

// spec.runPolicy.schedulingPolicy.topology: keep the gang inside one domain of a node label
// (a rack, a block). Required: all or nothing; Preferred: as far as it fits (Kueue only).
enum class TopologyMode { kRequired, kPreferred };
struct TopologyPolicy {
  TopologyMode mode = TopologyMode::kRequired;
  std::string key;  // the node label whose value names the domain
  bool operator==(const TopologyPolicy&) const = default;
};
// What Kueue's topology-aware scheduling reads on a Pod: the pod set's topology, and the label
// that orders the group's Pods so consecutive ranks share the closest domain.
inline constexpr std::string_view kKueueRequiredTopologyAnnotation = "kueue.x-k8s.io/podset-required-topology";
inline constexpr std::string_view kKueuePreferredTopologyAnnotation = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr std::string_view kKueuePodIndexLabelAnnotation = "kueue.x-k8s.io/pod-group-pod-index-label";

struct SchedulingPolicy {
  SchedulingProvider provider = SchedulingProvider::kNone;
  std::optional<std::int64_t> min_available;             // unset: spec.replicas
  std::optional<std::int64_t> schedule_timeout_seconds;  // Coscheduling only
  std::optional<std::string> queue;                      // Volcano only
  std::optional<std::string> priority_class_name;        // Volcano only
  std::optional<std::string> scheduler_name;             // overrides the provider's default
  std::optional<TopologyPolicy> topology;                // Kubernetes (Required) and Kueue
  bool operator==(const SchedulingPolicy&) const = default;

  std::int64_t EffectiveMinAvailable(std::int64_t replicas) const { return min_available.value_or(replicas); }
  // The Pods' spec.schedulerName: scheduler_name, else the provider's default; unset for None and
  // Kueue without an override (the template's own, or the cluster's default scheduler).
  std::optional<std::string> EffectiveSchedulerName() const;
};

struct RunPolicy {
  std::int64_t backoff_limit = 3;
  std::optional<std::int64_t> active_deadline_seconds;
  std::optional<std::int64_t> ttl_seconds_after_finished;
  bool suspend = false;
  SuccessPolicy success_policy = SuccessPolicy::kAllRanks;
  FailurePolicy failure_policy;
  SchedulingPolicy scheduling_policy;
};

// spec.elasticPolicy: the job runs with any number of Pods from min_replicas to max_replicas, and
// spec.replicas may change while it runs (`kubectl scale`, an HPA). torchrun re-forms the world
// through its c10d rendezvous on rank 0's sidecar store; a failed Pod other than rank 0 is
// recreated alone (docs/elastic.md).
struct ElasticPolicy {
  std::int64_t min_replicas = 1;
  std::int64_t max_replicas = 1;
  // torchrun's --max-restarts (PET_MAX_RESTARTS): how often its agents may restart the workers
  // after a failure. Each Pod recreated alone costs the surviving agents one, so the operator
  // fails the job once status.elasticRestarts exceeds it.
  std::int64_t max_restarts = 3;
  // How long fewer than min_replicas Pods may be running, once the job has run, before it fails.
  std::int64_t min_replicas_timeout_seconds = 300;
  bool operator==(const ElasticPolicy&) const = default;
};

struct TrainingJobSpec {
  std::int64_t replicas = 1;
  std::int64_t gpus_per_replica = 0;
  // Unset means max(1, gpusPerReplica): one process per GPU.
  std::optional<std::int64_t> processes_per_replica;
  nlohmann::json template_;  // a PodTemplateSpec, kept as JSON
  // spec.networking.hostNetwork; unset takes the operator's default (--default-host-network).
  std::optional<bool> host_network;
  CommunicationSpec communication;
  RunPolicy run_policy;
  std::optional<ElasticPolicy> elastic_policy;  // unset: a rigid job (replicas fixed while it runs)

  std::int64_t EffectiveProcessesPerReplica() const;
  // kAuto resolves to NCCL when the job has GPUs, Gloo otherwise.
  Backend EffectiveBackend() const;
};

struct Condition {
  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;
  std::string message;
  Time last_transition_time{};
  std::int64_t observed_generation = 0;
  bool operator==(const Condition&) const = default;
};

// The job's port block by role, as written to status before any Pod exists.
struct JobPorts {
  std::int32_t master = 0;
  std::int32_t rendezvous = 0;
  std::int32_t metrics = 0;
  std::int32_t spare = 0;
  bool operator==(const JobPorts&) const = default;
};

struct ReplicaCounts {
  std::int64_t active = 0;
  std::int64_t ready = 0;
  std::int64_t succeeded = 0;
  std::int64_t failed = 0;
  bool operator==(const ReplicaCounts&) const = default;
};

// The trainers' own collectives compared across the Pod ranks at one collective and size, as the
// rank-0 sidecar gathered them from every rank's profiler plugin.
struct TrainingCommunicationStatus {
  std::string collective;              // e.g. "all_reduce"
  std::string size;                    // the size bucket, e.g. "64MiB"
  std::string bus_bandwidth;           // the reporting ranks' median, human form, e.g. "110 GB/s"
  std::int64_t bus_bandwidth_bytes = 0;  // the same in bytes per second
  std::int64_t ranks_reporting = 0;
  std::string slowest_rank;            // e.g. "3", empty when unknown
  std::string slowest_rank_bus_bandwidth;  // human form, empty when slowest_rank is
  std::int64_t slowest_rank_bus_bandwidth_bytes = 0;
  bool operator==(const TrainingCommunicationStatus&) const = default;
};

// What the rank-0 sidecar last reported, copied into status by the operator.
struct CommunicationStatus {
  std::string backend{};                 // "nccl" or "gloo", as resolved
  // The job's bus bandwidth as `kubectl get tj` shows it (the BusBW column): the trainers' own
  // (training.busBandwidth) once they report, else the preflight's all-reduce at its largest
  // size, else the last all-reduce probe's.
  std::string bus_bandwidth{};
  std::string last_all_reduce_bus_bandwidth{};  // human form, e.g. "11.8 GB/s"
  std::int64_t last_all_reduce_bus_bandwidth_bytes = 0;  // bytes per second, for machines
  std::optional<Time> last_probe_time{};
  std::string preflight{};               // "", "Passed" or "Failed"
  std::string slowest_rank{};            // e.g. "3", empty when unknown
  std::string transport{};               // the preflight's, e.g. "NET/IB (mlx5_0:1, GDRDMA)"
  std::optional<TrainingCommunicationStatus> training{};
  // The rank-0 sidecar's stall, as /summary's `stall` member says it. Not written to
  // status.communication: the planner turns it into the Stalled condition (operator/planner).
  std::optional<contract::StallSummary> stall{};
  bool operator==(const CommunicationStatus&) const = default;
};

// The first Pod of an attempt seen with the condition DisruptionTarget=True.
struct Disruption {
  std::int64_t attempt = 0;
  std::string pod;
  std::string reason;   // the condition's, e.g. PreemptionByScheduler or EvictionByEvictionAPI
  std::string message;  // the condition's
  bool operator==(const Disruption&) const = default;
};

struct TrainingJobStatus {
  std::int64_t observed_generation = 0;
  std::string state;  // Pending, Created, Running, Restarting, Succeeded, Failed, Suspended
  std::vector<Condition> conditions;
  std::optional<JobPorts> ports;
  bool ports_released = false;  // set once a finished job's Pods are gone and its ports are free
  std::string master_addr;
  ReplicaCounts replicas;
  // Gang restarts so far, counted or not: the current attempt's number (the Pods' attempt label).
  std::int64_t restarts = 0;
  // The restarts counted against spec.runPolicy.backoffLimit (the failure policy's RestartJob).
  std::int64_t counted_restarts = 0;
  // Elastic jobs: Pods recreated alone after they failed (not gang restarts), each one of
  // torchrun's restarts in the surviving agents; the job fails once it exceeds maxRestarts.
  std::int64_t elastic_restarts = 0;
  // Elastic jobs: since when fewer than minReplicas Pods of the job are running (cleared when
  // enough run again); the job fails after elasticPolicy.minReplicasTimeoutSeconds of it.
  std::optional<Time> below_min_replicas_since;
  // The label selector of the job's Pods in its string form, for the scale subresource
  // (labelSelectorPath .status.selector), which an HPA reads.
  std::string selector;
  // After a gang restart, when the new attempt's Pods may be created; cleared once they are.
  std::optional<Time> next_restart_time;
  // A Pod of this attempt carried DisruptionTarget=True (preempted, evicted, drained), so the
  // other ranks' failures are taken for its consequence.
  std::optional<Disruption> disruption;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<CommunicationStatus> communication;

  const Condition* FindCondition(std::string_view type) const;
  bool IsTrue(std::string_view type) const;
  bool operator==(const TrainingJobStatus&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

struct TrainingJob {
  ObjectMeta metadata;
  TrainingJobSpec spec;
  TrainingJobStatus status;
  nlohmann::json raw = nlohmann::json::object();  // the object as parsed, unknown fields included

  // Parses a TrainingJob, filling defaults for absent fields. Type errors (a string where an
  // integer belongs) are returned with their field path; semantic checks live in Validate().
  static TrainingJob FromJson(const nlohmann::json& object, FieldErrors* errors);
  // raw with the typed fields written over it.
  nlohmann::json ToJson() const;
  // "namespace/name", the work-queue key.
  std::string Key() const { return metadata.namespace_ + "/" + metadata.name; }
};

nlohmann::json StatusToJson(const TrainingJobStatus& status);
TrainingJobStatus StatusFromJson(const nlohmann::json& status, FieldErrors* errors);

std::string_view BackendName(Backend backend);
std::string_view FailureActionName(FailureAction action);
std::string_view SuccessPolicyName(SuccessPolicy policy);
std::string_view ExitCodeOperatorName(ExitCodeOperator op);
std::string_view SchedulingProviderName(SchedulingProvider provider);
std::string_view StallActionName(StallAction action);  // "Report", "Restart"
std::string_view TrainerStoreName(TrainerStore store);  // "Sidecar", "Trainer"

// RFC 3339 with second precision, as the Kubernetes API writes timestamps.
std::string FormatTime(Time time);
std::optional<Time> ParseTime(std::string_view text);

}  // namespace ringleader::api
