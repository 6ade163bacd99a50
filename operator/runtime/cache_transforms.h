// What the operator's caches keep of each object. The planner reads a few fields of every
// child; with thousands of Pods the rest (spec, image ids, timestamps, managed fields) would
// be most of the operator's memory. Applied by the informers before an object is stored.
#pragma once

#include <nlohmann/json.hpp>

namespace ringleader::runtime {

// A Pod as the planner and controller read it: name, namespace, uid, ringleader labels,
// controller owner reference, deletionTimestamp; status phase, reason, podIP, the conditions
// (type, status, reason, message) and container statuses without images and ids.
void TrimPod(nlohmann::json& pod);

// A Service or Secret: only the identity, ringleader labels, controller owner reference and
// deletionTimestamp (a Secret's data never stays in memory).
void TrimToOwnership(nlohmann::json& object);

// A TrainingJob: everything but managedFields and kubectl's last-applied annotation (a second
// copy of the spec). Status writes go to /status, which ignores metadata, so nothing is lost.
void TrimTrainingJob(nlohmann::json& job);

}  // namespace ringleader::runtime
