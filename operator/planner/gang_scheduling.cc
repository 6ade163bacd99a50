// PodGroups and Pod decoration for the gang-scheduling providers (Kubernetes, Coscheduling,
// Volcano, Kueue), each after its own project's documentation and source (docs/operations.md, "Gang
// scheduling", gives the sources).
#include "operator/planner/gang_scheduling.h"

#include "operator/planner/children_builder.h"
#include "operator/planner/plan.h"

namespace ringleader::planner {

using nlohmann::json;

std::optional<std::string_view> MissingProviderCrd(const api::TrainingJob& job,
                                                   const SchedulingProviders& providers) {
  switch (job.spec.run_policy.scheduling_policy.provider) {
    case api::SchedulingProvider::kNone:
      return std::nullopt;
    case api::SchedulingProvider::kCoscheduling:
      return providers.coscheduling ? std::nullopt : std::optional(kCoschedulingCrd);
    case api::SchedulingProvider::kVolcano:
      return providers.volcano ? std::nullopt : std::optional(kVolcanoCrd);
    case api::SchedulingProvider::kKueue:
      return providers.kueue ? std::nullopt : std::optional(kKueueCrd);
    case api::SchedulingProvider::kKubernetes:
      return providers.kubernetes ? std::nullopt : std::optional(kKubernetesPodGroups);
  }
  return std::nullopt;
}

std::optional<json> BuildPodGroup(const api::TrainingJob& job, std::int64_t attempt) {
  const api::SchedulingPolicy& policy = job.spec.run_policy.scheduling_policy;
  if (policy.provider == api::SchedulingProvider::kKubernetes) {
    // No Workload: a standalone PodGroup carries its own policy (workloadRef is optional).
    const std::int64_t min_count = policy.EffectiveMinAvailable(job.spec.replicas);
    json spec = {{"schedulingPolicy", {{"gang", {{"minCount", min_count}}}}}};
    if (policy.topology.has_value()) {
      // Required only (validation refuses Preferred): every Pod in one domain of the label.
      spec["schedulingConstraints"] = {{"topology", json::array({{{"key", policy.topology->key}}})}};
    }
    return json{{"apiVersion", kKubernetesApiVersion},
                {"kind", kPodGroupKind},
                {"metadata", ChildMetadata(job, KubernetesPodGroupName(job, attempt))},
                {"spec", std::move(spec)}};
  }
  json spec = {{"minMember", policy.EffectiveMinAvailable(job.spec.replicas)}};
  std::string_view api_version;
  if (policy.provider == api::SchedulingProvider::kCoscheduling) {
    api_version = kCoschedulingApiVersion;
    if (policy.schedule_timeout_seconds.has_value()) {
      spec["scheduleTimeoutSeconds"] = *policy.schedule_timeout_seconds;
    }
  } else if (policy.provider == api::SchedulingProvider::kVolcano) {
    api_version = kVolcanoApiVersion;
    if (policy.queue.has_value()) {
      spec["queue"] = *policy.queue;
    }
    if (policy.priority_class_name.has_value()) {
      spec["priorityClassName"] = *policy.priority_class_name;
    }
  } else {
    return std::nullopt;
  }
  return json{{"apiVersion", api_version},
              {"kind", kPodGroupKind},
              {"metadata", ChildMetadata(job, job.metadata.name)},
              {"spec", std::move(spec)}};
}

std::string AttemptGroupName(const api::TrainingJob& job, std::int64_t attempt) {
  const std::string uid = job.metadata.uid.substr(0, kGroupUidCharacters);
  return job.metadata.name + (uid.empty() ? "" : "-" + uid) + "-" + std::to_string(attempt);
}

void DecoratePod(const api::TrainingJob& job, std::int64_t attempt, json& pod) {
  const api::SchedulingPolicy& policy = job.spec.run_policy.scheduling_policy;
  json& metadata = pod["metadata"];
  json& labels = metadata["labels"];
  auto annotations = [&metadata]() -> json& {
    json& out = metadata["annotations"];
    if (!out.is_object()) {
      out = json::object();
    }
    return out;
  };
  switch (policy.provider) {
    case api::SchedulingProvider::kNone:
      break;
    case api::SchedulingProvider::kCoscheduling:
      labels[std::string(api::kCoschedulingPodGroupLabel)] = job.metadata.name;
      break;
    case api::SchedulingProvider::kVolcano:
      annotations()[std::string(api::kVolcanoGroupNameAnnotation)] = job.metadata.name;
      break;
    case api::SchedulingProvider::kKueue: {
      const auto queue = job.metadata.labels.find(std::string(api::kKueueQueueLabel));
      if (queue != job.metadata.labels.end()) {
        labels[std::string(api::kKueueQueueLabel)] = queue->second;
      }
      labels[std::string(api::kKueuePodGroupNameLabel)] = KueueGroupName(job, attempt);
      json& notes = annotations();
      // Kueue admits the group once this many Pods of it exist: the whole gang.
      notes[std::string(api::kKueuePodGroupTotalCountAnnotation)] = std::to_string(job.spec.replicas);
      // ringleader restarts the gang itself, as a new group; Kueue must not wait for replacement
      // Pods in this one, and finishes its Workload (releasing the quota and the Pods' finalizers)
      // once none of its Pods runs.
      notes[std::string(api::kKueueRetriableInGroupAnnotation)] = "false";
      // Every rank's Pod has the same shape, so Kueue would find one role (pod set) anyway; naming
      // it spares Kueue hashing each Pod's spec and keeps the pod set's name stable ("trainer").
      notes[std::string(api::kKueueRoleHashAnnotation)] = "trainer";
      if (policy.topology.has_value()) {
        notes[std::string(policy.topology->mode == api::TopologyMode::kRequired
                              ? api::kKueueRequiredTopologyAnnotation
                              : api::kKueuePreferredTopologyAnnotation)] = policy.topology->key;
        // Kueue's topology-aware scheduling places the group's Pods in this label's order, so
        // consecutive ranks share the closest domain, as NCCL's rings and trees want.
        notes[std::string(api::kKueuePodIndexLabelAnnotation)] = std::string(kRankLabel);
      }
      break;
    }
    case api::SchedulingProvider::kKubernetes:
      pod["spec"]["schedulingGroup"] = {{"podGroupName", KubernetesPodGroupName(job, attempt)}};
      break;
  }
  if (const std::optional<std::string> scheduler = policy.EffectiveSchedulerName()) {
    pod["spec"]["schedulerName"] = *scheduler;
  }
}

}  // namespace ringleader::planner
