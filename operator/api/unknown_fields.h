// Strict field checking: the fields of an object that its OpenAPI v3 structural schema does not
// declare, named as kube-apiserver's strict field validation names them (what `kubectl apply`
// refuses with `strict decoding error: unknown field "spec.bogusField"`).
#pragma once

#include <nlohmann/json.hpp>

#include "operator/api/field_error.h"

namespace ringleader::api {

// One FieldError "<path>: unknown field" per field of `object` that `schema` (a CRD version's
// openAPIV3Schema) does not declare, at every depth, as the API server's pruning reports them:
// - an object's keys must be its `properties`, unless the schema has `additionalProperties`
//   (a map: every key allowed, each value checked against it) or
//   `x-kubernetes-preserve-unknown-fields: true` (undeclared keys are kept, declared ones are
//   still checked);
// - `x-kubernetes-embedded-resource: true` also allows apiVersion, kind and metadata, whose
//   metadata is checked as ObjectMeta;
// - the root's metadata is checked as ObjectMeta (the server decodes it as one; a CRD may not
//   describe it beyond name and generateName);
// - array items are checked against `items`; under an undeclared field nothing is checked.
// Values of the wrong type are left to the type checks (ParseAndValidate), as is a missing field.
FieldErrors UnknownFields(const nlohmann::json& object, const nlohmann::json& schema);

}  // namespace ringleader::api
