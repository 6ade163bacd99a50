// The Scheduled condition's verdict from the Pods' PodScheduled conditions.
#include "operator/planner/scheduling_state.h"

#include <algorithm>

namespace ringleader::planner {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const json& PlacementField(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string PlacementText(const json& object, const char* key) {
  const json& value = PlacementField(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

// The scheduler's message can list every node's verdict; the condition keeps the start.
std::string ShortenedSchedulerMessage(std::string text) {
  if (text.size() > 400) {
    text = text.substr(0, 400) + "...";
  }
  return text;
}

}  // namespace

PodPlacement ReadPlacement(const json& pod) {
  PodPlacement out;
  const json& spec = PlacementField(pod, "spec");
  const json& status = PlacementField(pod, "status");
  out.scheduler_name = PlacementText(spec, "schedulerName");
  const std::string phase = PlacementText(status, "phase");
  if (!PlacementText(spec, "nodeName").empty() || (!phase.empty() && phase != "Pending")) {
    out.scheduled = true;
    return out;
  }
  const json& conditions = PlacementField(status, "conditions");
  if (conditions.is_array()) {
    for (const json& condition : conditions) {
      if (PlacementText(condition, "type") != "PodScheduled") {
        continue;
      }
      if (PlacementText(condition, "status") == "True") {
        out.scheduled = true;
        return out;
      }
      out.reason = PlacementText(condition, "reason");
      out.message = PlacementText(condition, "message");
      out.waiting_since = api::ParseTime(PlacementText(condition, "lastTransitionTime"));
    }
  }
  if (!out.waiting_since.has_value()) {
    out.waiting_since = api::ParseTime(PlacementText(PlacementField(pod, "metadata"), "creationTimestamp"));
  }
  return out;
}

SchedulingVerdict JudgeScheduling(const std::vector<RankPod>& pods, std::int64_t replicas, api::Time now,
                                  seconds threshold) {
  SchedulingVerdict verdict;
  const RankPod* longest = nullptr;
  PodPlacement longest_placement;
  bool all = pods.size() == static_cast<std::size_t>(std::max<std::int64_t>(replicas, 0));
  for (const RankPod& rank : pods) {
    PodPlacement placement = ReadPlacement(*rank.pod);
    if (placement.scheduled) {
      continue;
    }
    all = false;
    if (!placement.waiting_since.has_value()) {
      continue;  // no time to judge by; the next look will have one
    }
    if (longest == nullptr || *placement.waiting_since < *longest_placement.waiting_since) {
      longest = &rank;
      longest_placement = std::move(placement);
    }
  }
  if (all) {
    verdict.state = SchedulingVerdict::State::kAllScheduled;
    return verdict;
  }
  if (longest == nullptr) {
    return verdict;  // waiting for Pods to exist or to be looked at
  }
  const auto waited = std::chrono::duration_cast<seconds>(now - *longest_placement.waiting_since);
  if (waited < threshold) {
    verdict.recheck_after = threshold - waited;
    return verdict;
  }
  verdict.state = SchedulingVerdict::State::kUnschedulable;
  std::string why;
  if (!longest_placement.reason.empty() || !longest_placement.message.empty()) {
    verdict.reason = longest_placement.reason.empty() ? "Unschedulable" : longest_placement.reason;
    why = ShortenedSchedulerMessage(longest_placement.message.empty() ? verdict.reason : longest_placement.message);
  } else {
    // No scheduler has written PodScheduled: none by the Pod's schedulerName is running.
    verdict.reason = "NotScheduled";
    why = "no scheduler has looked at it; is " +
          (longest_placement.scheduler_name.empty() ? std::string("its scheduler")
                                                    : "\"" + longest_placement.scheduler_name + "\"") +
          " running?";
  }
  // The threshold, not the time waited, so that the message (and status) stays the same pass to pass.
  verdict.message = "rank " + std::to_string(longest->rank) + " (pod " + longest->name +
                    ") is not scheduled after more than " + std::to_string(threshold.count()) + " s: " + why;
  return verdict;
}

}  // namespace ringleader::planner
