// Gang scheduling through the scheduler the cluster runs (spec.runPolicy.schedulingPolicy): the
// PodGroup a provider reads (scheduler-plugins' coscheduling, Volcano, Kubernetes' own Workload
// API), the labels, annotations, scheduling group and scheduler name every Pod of the gang gets
// (those and Kueue's plain-Pod groups), and which provider's API the cluster lacks. Pure
// functions; the planner decides when to use them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"

namespace ringleader::planner {

// What API discovery found the cluster serving (operator/runtime/provider_discovery.h).
struct SchedulingProviders {
  bool coscheduling = false;  // podgroups.scheduling.x-k8s.io, v1alpha1
  bool volcano = false;       // podgroups.scheduling.volcano.sh, v1beta1
  bool kueue = false;         // workloads.kueue.x-k8s.io
  bool kubernetes = false;    // podgroups.scheduling.k8s.io, v1beta1 (kube-apiserver's GenericWorkload)
  bool operator==(const SchedulingProviders&) const = default;
};

inline constexpr std::string_view kPodGroupKind = "PodGroup";
inline constexpr std::string_view kCoschedulingApiVersion = "scheduling.x-k8s.io/v1alpha1";
inline constexpr std::string_view kVolcanoApiVersion = "scheduling.volcano.sh/v1beta1";
// Kubernetes' in-tree PodGroup (1.37: beta, served with the feature gate GenericWorkload and
// --runtime-config=scheduling.k8s.io/v1beta1=true); kube-scheduler's GangScheduling plugin reads it.
inline constexpr std::string_view kKubernetesApiVersion = "scheduling.k8s.io/v1beta1";
// The CRDs each provider is known by, as a missing one is named in the Scheduled condition.
inline constexpr std::string_view kCoschedulingCrd = "podgroups.scheduling.x-k8s.io";
inline constexpr std::string_view kVolcanoCrd = "podgroups.scheduling.volcano.sh";
inline constexpr std::string_view kKueueCrd = "workloads.kueue.x-k8s.io";
inline constexpr std::string_view kKubernetesPodGroups = "podgroups.scheduling.k8s.io/v1beta1";

// The CRD of the job's provider when discovery did not find it; nullopt when the job needs none
// (provider None) or the cluster has it.
std::optional<std::string_view> MissingProviderCrd(const api::TrainingJob& job,
                                                   const SchedulingProviders& providers);

// The PodGroup of a Coscheduling or Volcano job, named after the job, or of a Kubernetes job's
// attempt (KubernetesPodGroupName), owned by the job; nullopt for None and Kueue, which need no
// object of their own.
std::optional<nlohmann::json> BuildPodGroup(const api::TrainingJob& job, std::int64_t attempt);

// One attempt's group name, <job>-<first 8 characters of the job's UID>-<attempt>: each gang
// restart is a new group, so the scheduler or Kueue places or admits it afresh, and a finished
// attempt's group never holds the next one back; the UID keeps a job made again under the same
// name out of the old job's group, which may outlive it until garbage collection removes it.
inline constexpr std::size_t kGroupUidCharacters = 8;
std::string AttemptGroupName(const api::TrainingJob& job, std::int64_t attempt);

// Kueue's group name (label kueue.x-k8s.io/pod-group-name) and the Kubernetes PodGroup's name for
// one attempt: both AttemptGroupName.
inline std::string KueueGroupName(const api::TrainingJob& job, std::int64_t attempt) {
  return AttemptGroupName(job, attempt);
}
inline std::string KubernetesPodGroupName(const api::TrainingJob& job, std::int64_t attempt) {
  return AttemptGroupName(job, attempt);
}

// Adds to a built Pod (BuildPod) what the job's provider reads: the PodGroup label or
// annotation, Kueue's group labels and annotations, the Kubernetes PodGroup in
// spec.schedulingGroup, and the effective spec.schedulerName.
void DecoratePod(const api::TrainingJob& job, std::int64_t attempt, nlohmann::json& pod);

}  // namespace ringleader::planner
