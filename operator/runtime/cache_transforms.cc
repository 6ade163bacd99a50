// Cache transforms: keep only the fields the controller and planner read.
#include "operator/runtime/cache_transforms.h"

#include <string_view>

#include "operator/api/trainingjob.h"

namespace ringleader::runtime {

using nlohmann::json;

namespace {

constexpr std::string_view kLabelPrefix = "ringleader.dev/";

// Moves object[field] into kept[field] when present.
void Keep(json& object, json& kept, const char* field) {
  if (!object.is_object()) {
    return;
  }
  if (auto it = object.find(field); it != object.end()) {
    kept[field] = std::move(*it);
  }
}

json TrimMetadata(json& meta) {
  json kept = json::object();
  if (!meta.is_object()) {
    return kept;
  }
  for (const char* field : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"}) {
    Keep(meta, kept, field);
  }
  if (auto labels = meta.find("labels"); labels != meta.end() && labels->is_object()) {
    json ours = json::object();
    for (auto& [key, value] : labels->items()) {
      // Kueue's managed label: whether Kueue took the Pod (the job's KueueManaged condition).
      if (std::string_view(key).starts_with(kLabelPrefix) || key == api::kKueueManagedLabel) {
        ours[key] = std::move(value);
      }
    }
    kept["labels"] = std::move(ours);
  }
  if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array()) {
    json controllers = json::array();
    for (json& ref : *refs) {
      if (ref.is_object() && ref.value("controller", false) == true) {
        json trimmed = json::object();
        for (const char* field : {"kind", "name", "uid", "controller"}) {
          Keep(ref, trimmed, field);
        }
        controllers.push_back(std::move(trimmed));
      }
    }
    kept["ownerReferences"] = std::move(controllers);
  }
  return kept;
}

json TrimContainerStatuses(json& statuses) {
  json kept = json::array();
  if (!statuses.is_array()) {
    return kept;
  }
  for (json& status : statuses) {
    json trimmed = json::object();
    for (const char* field : {"name", "started", "ready", "restartCount", "state", "lastState"}) {
      Keep(status, trimmed, field);
    }
    kept.push_back(std::move(trimmed));
  }
  return kept;
}

}  // namespace

void TrimPod(json& pod) {
  json kept = json::object();
  if (auto meta = pod.find("metadata"); meta != pod.end()) {
    kept["metadata"] = TrimMetadata(*meta);
  }
  if (auto status = pod.find("status"); status != pod.end() && status->is_object()) {
    json trimmed = json::object();
    for (const char* field : {"phase", "reason", "podIP"}) {
      Keep(*status, trimmed, field);
    }
    // Every condition, for the failure policy's onPodConditions and DisruptionTarget; without
    // the timestamps.
    if (auto conditions = status->find("conditions"); conditions != status->end() && conditions->is_array()) {
      json kept_conditions = json::array();
      for (json& condition : *conditions) {
        if (!condition.is_object()) {
          continue;
        }
        json trimmed_condition = json::object();
        for (const char* field : {"type", "status", "reason", "message"}) {
          Keep(condition, trimmed_condition, field);
        }
        // How long a Pod has waited for a node (the job's Scheduled condition) starts at
        // PodScheduled's; a disruption's time tells trainers that finished before it from those
        // it stopped.
        const std::string type = trimmed_condition.value("type", "");
        if (type == "PodScheduled" || type == "DisruptionTarget" || type == "TerminationTarget") {
          Keep(condition, trimmed_condition, "lastTransitionTime");
        }
        kept_conditions.push_back(std::move(trimmed_condition));
      }
      trimmed["conditions"] = std::move(kept_conditions);
    }
    for (const char* field : {"initContainerStatuses", "containerStatuses"}) {
      if (auto statuses = status->find(field); statuses != status->end()) {
        trimmed[field] = TrimContainerStatuses(*statuses);
      }
    }
    kept["status"] = std::move(trimmed);
  }
  // Where and by whom it is scheduled, for the Scheduled condition; its scheduling gates, for
  // KueueManaged (Kueue's admission gate).
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    json trimmed = json::object();
    for (const char* field : {"nodeName", "schedulerName", "schedulingGates"}) {
      Keep(*spec, trimmed, field);
    }
    kept["spec"] = std::move(trimmed);
  }
  pod = std::move(kept);
}

void TrimToOwnership(json& object) {
  json kept = json::object();
  if (auto meta = object.find("metadata"); meta != object.end()) {
    kept["metadata"] = TrimMetadata(*meta);
  }
  object = std::move(kept);
}

void TrimTrainingJob(json& job) {
  auto meta = job.find("metadata");
  if (meta == job.end() || !meta->is_object()) {
    return;
  }
  meta->erase("managedFields");
  if (auto annotations = meta->find("annotations"); annotations != meta->end() && annotations->is_object()) {
    annotations->erase("kubectl.kubernetes.io/last-applied-configuration");
  }
}

}  // namespace ringleader::runtime
