// What kube-apiserver's Pod strategy and validation do with spec.schedulingGates: the
// SchedulingGated condition written at create, and gates that may only be set at creation and
// then only removed (pkg/registry/core/pod/strategy.go, pkg/apis/core/validation).
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "tests/support/field_errors.h"

namespace ringleader::devcluster {

// Whether `pod` has a non-empty spec.schedulingGates.
bool HasSchedulingGates(const nlohmann::json& pod);

// At create, a Pod with gates and no PodScheduled condition gets PodScheduled=False, reason
// SchedulingGated, message "Scheduling is blocked due to non-empty scheduling gates", with null
// lastProbeTime and lastTransitionTime as the server writes it (it sets no time).
void AddSchedulingGatedCondition(nlohmann::json& pod);

// ValidatePodCreate's rule: `spec.nodeName: Forbidden: cannot be set until all schedulingGates
// have been cleared`.
std::vector<schema::SchemaError> SchedulingGateCreateErrors(const nlohmann::json& pod);

// ValidatePodUpdate's validateOnlyDeletedSchedulingGates: every gate of `updated` whose name
// `current` lacks is `spec.schedulingGates[i].name: Forbidden: only deletion is allowed, but found
// new scheduling gate 'x'` (i the gate's last index), in index order. A Pod without gates can get
// none.
std::vector<schema::SchemaError> SchedulingGateUpdateErrors(const nlohmann::json& current,
                                                            const nlohmann::json& updated);

}  // namespace ringleader::devcluster
