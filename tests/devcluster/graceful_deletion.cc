// PlanPodDeletion: BeforeDelete and CheckGracefulDelete over a Pod's JSON.
#include "tests/devcluster/graceful_deletion.h"

#include <string>

#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

const json* GraceMember(const json& object, const char* key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string GraceString(const json& object, const char* outer, const char* inner) {
  const json* parent = GraceMember(object, outer);
  const json* value = parent != nullptr ? GraceMember(*parent, inner) : nullptr;
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

std::optional<std::int64_t> GraceInteger(const json& object, const char* outer, const char* inner) {
  const json* parent = GraceMember(object, outer);
  const json* value = parent != nullptr ? GraceMember(*parent, inner) : nullptr;
  if (value == nullptr || !value->is_number_integer()) {
    return std::nullopt;
  }
  return value->get<std::int64_t>();
}

}  // namespace

PodDeletion PlanPodDeletion(const json& pod, std::optional<std::int64_t> grace_period_seconds,
                            std::chrono::system_clock::time_point now) {
  // BeforeDelete: a negative period means 1 s.
  if (grace_period_seconds && *grace_period_seconds < 0) {
    grace_period_seconds = 1;
  }
  PodDeletion plan{PodDeletionStep::kNow, pod};
  json& meta = plan.pod["metadata"];
  const std::string deletion = GraceString(pod, "metadata", "deletionTimestamp");
  if (!deletion.empty()) {
    const std::optional<std::int64_t> current = GraceInteger(pod, "metadata", "deletionGracePeriodSeconds");
    if (!current || *current == 0) {
      return plan;  // marked without a grace period (finalizers): it goes at once
    }
    if (!grace_period_seconds || *grace_period_seconds >= *current) {
      plan.step = PodDeletionStep::kPending;
      return plan;
    }
    // Only a shorter period is taken: the deadline moves back by the difference.
    const std::optional<Time> marked_at = ParseTime(deletion);
    const Time deadline = marked_at.value_or(now) - std::chrono::seconds(*current) +
                          std::chrono::seconds(*grace_period_seconds);
    meta["deletionTimestamp"] = FormatTime(deadline);
    meta["deletionGracePeriodSeconds"] = *grace_period_seconds;
    plan.step = *grace_period_seconds > 0 ? PodDeletionStep::kGraceful : PodDeletionStep::kNow;
    return plan;
  }
  // CheckGracefulDelete: the asked period, else the Pod's own; 0 for a Pod no kubelet runs
  // (unbound) or that has finished.
  std::int64_t period = grace_period_seconds.value_or(
      GraceInteger(pod, "spec", "terminationGracePeriodSeconds").value_or(kDefaultTerminationGracePeriodSeconds));
  const std::string phase = GraceString(pod, "status", "phase");
  if (GraceString(pod, "spec", "nodeName").empty() || phase == "Failed" || phase == "Succeeded") {
    period = 0;
  }
  if (period < 0) {
    period = 1;
  }
  if (period == 0) {
    return plan;
  }
  meta["deletionTimestamp"] = FormatTime(now + std::chrono::seconds(period));
  meta["deletionGracePeriodSeconds"] = period;
  if (const std::optional<std::int64_t> generation = GraceInteger(pod, "metadata", "generation");
      generation && *generation > 0) {
    meta["generation"] = *generation + 1;
  }
  plan.step = PodDeletionStep::kGraceful;
  return plan;
}

std::optional<std::int64_t> GracePeriodSeconds(const json& delete_options) {
  const json* value = GraceMember(delete_options, "gracePeriodSeconds");
  if (value == nullptr) {
    return std::nullopt;
  }
  if (!value->is_number_integer()) {
    throw BadRequest("json: cannot unmarshal " + std::string(value->is_string() ? "string" : value->type_name()) +
                     " into Go struct field DeleteOptions.gracePeriodSeconds of type int64");
  }
  return value->get<std::int64_t>();
}

}  // namespace ringleader::devcluster
