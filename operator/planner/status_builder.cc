// Condition bookkeeping and the derived state word.
#include "operator/planner/status_builder.h"

#include <algorithm>

#include "operator/planner/plan.h"

namespace ringleader::planner {

bool SetCondition(api::TrainingJobStatus& status, std::string_view type, bool value,
                  std::string_view reason, std::string_view message, api::Time now,
                  std::int64_t generation) {
  const std::string wanted = value ? "True" : "False";
  for (api::Condition& condition : status.conditions) {
    if (condition.type != type) {
      continue;
    }
    const bool changed = condition.status != wanted;
    if (changed) {
      condition.last_transition_time = now;
    }
    condition.status = wanted;
    condition.reason = reason;
    condition.message = message;
    condition.observed_generation = generation;
    return changed;
  }
  status.conditions.push_back(api::Condition{.type = std::string(type),
                                             .status = wanted,
                                             .reason = std::string(reason),
                                             .message = std::string(message),
                                             .last_transition_time = now,
                                             .observed_generation = generation});
  return true;
}

void RemoveCondition(api::TrainingJobStatus& status, std::string_view type) {
  std::erase_if(status.conditions, [type](const api::Condition& c) { return c.type == type; });
}

std::string DeriveState(const api::TrainingJobStatus& status) {
  for (std::string_view type : {kFailed, kSucceeded, kSuspended, kRestarting, kRunning, kCreated}) {
    if (status.IsTrue(type)) {
      return std::string(type);
    }
  }
  return "Pending";
}

}  // namespace ringleader::planner
