// Whether the current attempt's Pods have been placed, read from each Pod's PodScheduled
// condition, for the job's Scheduled condition: True once every rank is placed; False, in the
// scheduler's own words, once some rank has waited longer than the threshold.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"

namespace ringleader::planner {

// One Pod as the scheduler left it.
struct PodPlacement {
  bool scheduled = false;  // PodScheduled=True, a node assigned, or a phase past Pending
  std::string reason;      // PodScheduled=False's reason (Unschedulable, SchedulingGated, ...)
  std::string message;     // and its message
  // Since when it has been waiting: PodScheduled=False's lastTransitionTime, else its creation.
  std::optional<api::Time> waiting_since;
  std::string scheduler_name;  // spec.schedulerName, for a Pod no scheduler has looked at
};

PodPlacement ReadPlacement(const nlohmann::json& pod);

struct RankPod {
  std::int64_t rank = 0;
  std::string name;
  const nlohmann::json* pod = nullptr;
};

struct SchedulingVerdict {
  enum class State {
    kAllScheduled,   // every rank's Pod is placed
    kWaiting,        // some are not, none past the threshold (yet): recheck_after says when
    kUnschedulable,  // a rank has waited past the threshold: reason and message say why
  };
  State state = State::kWaiting;
  std::string reason;
  std::string message;
  std::optional<std::chrono::seconds> recheck_after;
};

// `pods` are the current attempt's, one per rank present; `replicas` ranks are expected.
SchedulingVerdict JudgeScheduling(const std::vector<RankPod>& pods, std::int64_t replicas, api::Time now,
                                  std::chrono::seconds threshold);

}  // namespace ringleader::planner
