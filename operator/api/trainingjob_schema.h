// The TrainingJob CRD's openAPIV3Schema, built into the binary from crds/, and the strict field
// check `ringleader-operator validate` and `render` run with it, as kubectl's server-side
// strict field validation does.
#pragma once

#include <nlohmann/json.hpp>

#include "operator/api/field_error.h"

namespace ringleader::api {

// The served version's openAPIV3Schema from crds/ringleader.dev_trainingjobs.yaml, parsed once.
const nlohmann::json& TrainingJobSchema();

// UnknownFields(object, TrainingJobSchema()): "spec.bogusField: unknown field", ...
FieldErrors UnknownTrainingJobFields(const nlohmann::json& object);

}  // namespace ringleader::api
