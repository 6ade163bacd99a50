// The operator's brain: a pure function from what is observed about one TrainingJob (the job,
// the Pods, Service, Secret and NetworkPolicy it owns, the port ledger) to the actions that move the cluster
// toward what the job asks for. No I/O, no clock, no randomness: everything comes in Observed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/api/validation.h"
#include "operator/planner/gang_scheduling.h"
#include "operator/ports/port_ledger.h"

namespace ringleader::planner {

// Operator-wide settings the plan depends on.
struct PlannerConfig {
  std::string sidecar_image = "ringleader/sidecar:0.1.0";
  std::string cluster_domain = "cluster.local";
  api::ValidationOptions validation;
  // hostNetwork for jobs whose spec.networking.hostNetwork is unset (--default-host-network).
  bool default_host_network = false;
  // How long to wait before trying again when every port block is taken.
  std::chrono::seconds exhausted_retry{30};
  // A current Pod unscheduled this long turns the job's Scheduled condition False
  // (--unschedulable-after).
  std::chrono::seconds unschedulable_after{60};
  // How soon a job whose gang-scheduling provider the cluster lacks is looked at again.
  std::chrono::seconds missing_provider_retry{60};
  // Give each job a NetworkPolicy (BuildNetworkPolicy) that admits its store and rendezvous
  // ports only from its own Pods (--network-policies).
  bool network_policy = true;
};

struct Observed {
  api::TrainingJob job;
  // Pods whose controller owner reference is this job; others are ignored even if labelled.
  std::vector<nlohmann::json> pods;
  std::optional<nlohmann::json> service;
  std::optional<nlohmann::json> secret;
  // Always unset while PlannerConfig::network_policy is off (nothing watches them then).
  std::optional<nlohmann::json> network_policy;
  const ports::PortLedger* ledger = nullptr;
  // Random job token, used only if the Secret has to be created.
  std::string fresh_token;
  // The rank-0 sidecar's last communication summary, when the operator could read one.
  std::optional<api::CommunicationStatus> summary;
  api::Time now;
  // The gang-scheduling providers the API server serves, as discovery last found them.
  SchedulingProviders providers;
  // Why Kueue holds the current attempt's gated Pods, from its Workload (QueueVerdict); read
  // only while a Pod waits SchedulingGated, for the Scheduled condition's message.
  std::optional<std::string> queue_verdict;
};

struct CreateObject {
  nlohmann::json object;
  bool operator==(const CreateObject&) const = default;
};
struct DeleteObject {
  std::string kind;  // "Pod", "Service", "Secret" or "NetworkPolicy" (PodGroups go with the job)
  std::string name;
  std::string uid;   // a precondition, so a newer object of the same name is never deleted
  bool operator==(const DeleteObject&) const = default;
};
// Replaces .status through the /status subresource (optimistic concurrency on the job's RV).
struct UpdateStatus {
  nlohmann::json status;
  bool operator==(const UpdateStatus&) const = default;
};
struct RecordEvent {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
  bool operator==(const RecordEvent&) const = default;
};
// ttlSecondsAfterFinished passed: delete the job; garbage collection takes its children.
struct DeleteJob {
  bool operator==(const DeleteJob&) const = default;
};

using Action = std::variant<CreateObject, DeleteObject, UpdateStatus, RecordEvent, DeleteJob>;

struct Plan {
  // In order; the applier stops at the first failure and the job is planned again.
  std::vector<Action> actions;
  std::optional<std::chrono::seconds> requeue_after;
  // The block the status update assigns; the runtime reserves it in the ledger before writing.
  std::optional<ports::PortBlock> reserve_ports;
  // The job finished and its Pods are gone: the runtime frees its block.
  bool release_ports = false;

  bool empty() const { return actions.empty(); }
};

Plan MakePlan(const Observed& observed, const PlannerConfig& config);

// Labels on everything the operator creates for a job.
inline constexpr std::string_view kJobNameLabel = "ringleader.dev/job-name";
inline constexpr std::string_view kJobUidLabel = "ringleader.dev/job-uid";
inline constexpr std::string_view kRankLabel = "ringleader.dev/rank";
inline constexpr std::string_view kAttemptLabel = "ringleader.dev/attempt";
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "ringleader";

// Condition types.
inline constexpr std::string_view kCreated = "Created";
inline constexpr std::string_view kRunning = "Running";
inline constexpr std::string_view kRestarting = "Restarting";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kFailed = "Failed";
inline constexpr std::string_view kSuspended = "Suspended";
inline constexpr std::string_view kPreflightPassed = "PreflightPassed";
// True once every current Pod is placed; False once one waits past unschedulable_after, or when
// the job's gang-scheduling provider is not installed (reason kSchedulerNotInstalled).
inline constexpr std::string_view kScheduled = "Scheduled";
inline constexpr std::string_view kSchedulerNotInstalled = "SchedulerNotInstalled";
// True while rank 0's sidecar reports, for the current attempt, ranks that never entered a
// collective the others have waited in for spec.communication.telemetry.stallSeconds (reason
// kCollectiveStalled, with a Warning Event of the same words once per stall); False once they
// entered it (StallEnded), the gang restarted (Restarting) or the job finished (JobFinished).
inline constexpr std::string_view kStalled = "Stalled";
inline constexpr std::string_view kCollectiveStalled = "CollectiveStalled";
// Provider Kueue only, once the current attempt's Pods are seen: True when Kueue's webhook took
// every one (label kueue.x-k8s.io/managed or gate kueue.x-k8s.io/admission); False, reason
// kNotManagedByKueue with a Warning Event of the same words, when one has neither, so the gang is
// neither queued nor placed whole: the namespace is not selected by Kueue's
// managedJobsNamespaceSelector, or Kueue's pod integration is off.
inline constexpr std::string_view kKueueManaged = "KueueManaged";
inline constexpr std::string_view kNotManagedByKueue = "NotManagedByKueue";

// The Pod condition Kubernetes sets on a Pod it preempts, evicts or drains.
inline constexpr std::string_view kDisruptionTarget = "DisruptionTarget";
// The one Kueue sets on each plain Pod of a Workload it preempts or evicts, before deleting it
// (Kueue never sets DisruptionTarget); both are disruptions, not failures.
inline constexpr std::string_view kTerminationTarget = "TerminationTarget";

}  // namespace ringleader::planner
