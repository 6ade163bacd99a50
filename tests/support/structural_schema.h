// Kubernetes structural-schema checks, defaulting, pruning and validation for custom resources,
// as the API server does them, for tests and the in-process API server (devcluster).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringleader::schema {

struct SchemaError {
  std::string path;     // e.g. "spec.template.spec.containers[0].name"
  std::string message;  // in the API server's words, e.g. "Required value"

  // "spec.replicas: Required value", the way the API server prints a field error.
  std::string ToString() const;
  bool operator==(const SchemaError&) const = default;
};

// Checks that `schema` (a CRD version's openAPIV3Schema as JSON) is structural in the Kubernetes
// sense: every node has a `type` (unless x-kubernetes-int-or-string or
// x-kubernetes-preserve-unknown-fields stands in), int-or-string nodes have no type,
// `properties` and `additionalProperties` are not both set, arrays have `items`, logical
// junctors (allOf/anyOf/oneOf/not) only restrict fields specified outside them, `metadata`
// restricts only name/generateName, unknown or unsupported keywords are absent, and each
// `default` (itself defaulted) validates against its own schema. With require_descriptions,
// the root and every property also need a non-empty `description`, except below a
// preserve-unknown-fields node that has no `properties`. Paths look like
// "properties[spec].properties[replicas].type".
std::vector<SchemaError> CheckStructural(const nlohmann::json& schema, bool require_descriptions);

// Applies `default`s in place as the API server does: in each object, absent properties (and
// null ones whose schema is not nullable) get a copy of their default, which is then defaulted
// in turn; array items and additionalProperties values are defaulted the same way.
void ApplyDefaults(nlohmann::json& value, const nlohmann::json& schema);

// Removes what the API server prunes before validation: fields the schema does not define
// (exactly Validate()'s unknown_fields) and nulls in non-nullable fields without a default.
void Prune(nlohmann::json& value, const nlohmann::json& schema);

struct ValidationResult {
  std::vector<SchemaError> errors;
  // Paths of fields the schema does not define ("spec.foo"): the server prunes them, and
  // Strict field validation rejects them as `unknown field "spec.foo"`.
  std::vector<std::string> unknown_fields;

  bool ok() const { return errors.empty(); }
};

// Validates a custom resource against its schema as the API server's OpenAPI validator does:
// type (a JSON float is never an integer, even 1.0), nullable, enum, required, properties,
// additionalProperties, items, minimum/maximum (and exclusive), minLength/maxLength (in
// characters), pattern (std::regex ECMAScript, searched anywhere in the string, as Go's
// regexp.MatchString does), minItems/maxItems, minProperties/maxProperties, multipleOf,
// allOf/anyOf/oneOf/not, format int32/int64 ranges, x-kubernetes-list-type set/map uniqueness,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields (listed properties are still
// checked) and x-kubernetes-embedded-resource (apiVersion, kind and metadata allowed).
// The root is a resource: its apiVersion, kind and metadata are never unknown. A null in a
// non-nullable object field counts as absent, since the server prunes it first. Not checked:
// x-kubernetes-validations (CEL rules), string formats other than int32/int64, and ObjectMeta
// rules for metadata.
ValidationResult Validate(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace ringleader::schema
