// Gang scheduling through the scheduler the cluster runs (spec.runPolicy.schedulingPolicy): the
// PodGroup a provider reads (scheduler-plugins' coscheduling, Volcano), the labels, annotations
// and scheduler name every Pod of the gang gets (those two and Kueue's plain-Pod groups), and
// which provider's API the cluster lacks. Pure functions; the planner decides when to use them.
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
  bool operator==(const SchedulingProviders&) const = default;
};

inline constexpr std::string_view kPodGroupKind = "PodGroup";
inline constexpr std::string_view kCoschedulingApiVersion = "scheduling.x-k8s.io/v1alpha1";
inline constexpr std::string_view kVolcanoApiVersion = "scheduling.volcano.sh/v1beta1";
// The CRDs each provider is known by, as a missing one is named in the Scheduled condition.
inline constexpr std::string_view kCoschedulingCrd = "podgroups.scheduling.x-k8s.io";
inline constexpr std::string_view kVolcanoCrd = "podgroups.scheduling.volcano.sh";
inline constexpr std::string_view kKueueCrd = "workloads.kueue.x-k8s.io";

// The CRD of the job's provider when discovery did not find it; nullopt when the job needs none
// (provider None) or the cluster has it.
std::optional<std::string_view> MissingProviderCrd(const api::TrainingJob& job,
                                                   const SchedulingProviders& providers);

// The PodGroup of a Coscheduling or Volcano job, named after the job and owned by it; nullopt
// for None and Kueue, which need no object of their own.
std::optional<nlohmann::json> BuildPodGroup(const api::TrainingJob& job);

// Kueue's group name for one attempt: <job>-<first 8 characters of the job's UID>-<n>. Each gang
// restart is a new group, so Kueue queues and admits it as a fresh Workload (see DecoratePod); the
// UID keeps a job made again under the same name out of the old job's Workload, which may outlive
// it until garbage collection removes it.
inline constexpr std::size_t kKueueGroupUidCharacters = 8;
std::string KueueGroupName(const api::TrainingJob& job, std::int64_t attempt);

// Adds to a built Pod (BuildPod) what the job's provider reads: the PodGroup label or
// annotation, Kueue's group labels and annotations, and the effective spec.schedulerName.
void DecoratePod(const api::TrainingJob& job, std::int64_t attempt, nlohmann::json& pod);

}  // namespace ringleader::planner
