// Semantic validation of a TrainingJob: every rule the CRD's schema and CEL rules state, checked
// again in C++ so the operator never acts on a spec a cluster without CEL let through.
#pragma once

#include <cstdint>

#include "operator/api/field_error.h"
#include "operator/api/trainingjob.h"

namespace ringleader::api {

struct ValidationOptions {
  // The operator's port range: user-declared ports inside it could collide with job blocks.
  std::int32_t port_range_first = 61000;
  std::int32_t port_range_last = 65535;
};

// Empty when the job is valid. Each error names the field path and the bad value.
FieldErrors Validate(const TrainingJob& job, const ValidationOptions& options);

// Parse and validate in one step, as the operator does with an object from the API.
FieldErrors ParseAndValidate(const nlohmann::json& object, const ValidationOptions& options,
                             TrainingJob* job);

}  // namespace ringleader::api
