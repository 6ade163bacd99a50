// Helpers for TrainingJob status: conditions per the Kubernetes API conventions (keyed by type,
// lastTransitionTime moves only when status changes) and the one-word state for kubectl get.
#pragma once

#include <string_view>

#include "operator/api/trainingjob.h"

namespace ringleader::planner {

// Sets a condition; returns true when its status changed (or it is new), which is when an
// Event is worth recording.
bool SetCondition(api::TrainingJobStatus& status, std::string_view type, bool value,
                  std::string_view reason, std::string_view message, api::Time now,
                  std::int64_t generation);
void RemoveCondition(api::TrainingJobStatus& status, std::string_view type);

// Failed > Succeeded > Suspended > Restarting > Running > Created > Pending.
std::string DeriveState(const api::TrainingJobStatus& status);

}  // namespace ringleader::planner
