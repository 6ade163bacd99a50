// Kubernetes 1.32's CRD schema rules (structural schemas, defaults, list and map types) and what
// the API server does to a custom resource with that schema (prune, default, validate), for tests
// and the in-process API server (devcluster).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/field_errors.h"

namespace ringleader::schema {

// ---- The CRD side: is this openAPIV3Schema acceptable? ------------------------------------------

// The CEL seam. The API server (apiextensions validation.go, 1.32) compiles x-kubernetes-
// validations only where all of this holds:
//  - the schema is checked as structural: always for apiextensions.k8s.io/v1 (preserveUnknownFields
//    false), unless an update ratchets a stored CRD that already was not structural;
//  - NewStructural succeeds, ValidateStructural reports nothing and ValidateDefaults reports
//    nothing; only then does it make the root CEL context (RootCELContext), so one structural or
//    default error anywhere in the version's schema means no rule of that schema is compiled;
//  - the node is reached through properties, additionalProperties or items (junctors, `not` and
//    dependencies get no CEL context);
//  - the node and everything below it have no schema errors of their own (specStandardValidatorV3,
//    list/map types, the rule entries' rule/message/messageExpression/reason/fieldPath checks).
// Compile errors are kept apart and listed after every schema error of the version. The per-CRD
// cost total is checked after the walk, only when the root CEL context existed.
struct CelCompileRequest {
  const nlohmann::json& node;  // the schema node holding x-kubernetes-validations
  const nlohmann::json& root;  // the whole openAPIV3Schema
  // Where the node's rules are, e.g.
  // "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations".
  std::string rules_path;
  // Non-empty: oldSelf is forbidden here ("oldSelf cannot be used on the uncorrelatable portion of
  // the schema within <this path>"), because of a list that is not a map list, or a map that is
  // not correlatable, at this path.
  std::string uncorrelatable_parent;
  // On update, for a version whose schema did not change: per-expression cost limits are not
  // enforced (they still count toward the per-CRD total).
  bool suppress_per_expression_cost = false;
  // On update, rules and messageExpressions found anywhere in the stored CRD: these compile with
  // the stored-expression CEL environment (everything the server has ever allowed).
  const std::set<std::string>* preexisting_rules = nullptr;
  const std::set<std::string>* preexisting_message_expressions = nullptr;
};
// Returns the node's compile errors (Invalid/Required at `rules_path`[i].rule or
// .messageExpression, Forbidden per-expression cost, Invalid oldSelf/optionalOldSelf misuse).
using CelCompiler = std::function<std::vector<SchemaError>(const CelCompileRequest&)>;
// The per-CRD cost refusals for the schema at `schema_path` ("...openAPIV3Schema") after its walk:
// Forbidden "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3
// schema" at the most expensive rules, then the total at `schema_path`.
using CelTotalCost = std::function<std::vector<SchemaError>(const std::string& schema_path)>;
// A fresh compiler for one openAPIV3Schema (the cost total is per schema, not per CRD object).
struct CelSchemaCompiler {
  CelCompiler compile;
  CelTotalCost total_cost_errors;
};
using CelCompilerFactory = std::function<CelSchemaCompiler()>;

struct SchemaCheckOptions {
  // The version serves /status: the root may then only hold a few fields.
  bool status_subresource = false;
  // On update the server does not tighten rules the stored CRD already broke; these are false
  // when the old CRD broke them (see OldSchemaBreaks).
  bool require_valid_property_type = true;
  bool require_structural = true;
  bool require_pruned_defaults = true;
  bool require_atomic_set_type = true;
  bool require_map_list_keys_map_set_validation = true;
  // Unset: x-kubernetes-validations rules are not compiled, so a rule that does not compile is
  // accepted although the real server refuses it (CheckStructural; devcluster sets
  // cel::CrdCelCompilers(), tests/support/cel/crd_rules.h).
  CelCompiler compile_cel;
  // Called once after the walk when the rules were compiled (see above); may be unset.
  CelTotalCost cel_total_cost_errors;
  // Passed on in every CelCompileRequest (see there).
  bool suppress_per_expression_cost = false;
  std::set<std::string> preexisting_rules;
  std::set<std::string> preexisting_message_expressions;
};

// Every error the API server reports for one CRD version's openAPIV3Schema (`schema`) found at
// `path` ("spec.validation.openAPIV3Schema" for a schema every version shares, else
// "spec.versions[1].schema.openAPIV3Schema"), in the server's order: the status-subresource root
// rules, nullable at the root, the structural invariants (sorted, as ValidateStructural sorts
// them), the defaults (only when the schema is otherwise structural), then the per-node rules
// (specStandardValidatorV3, list and map types, x-kubernetes-validations), and CEL errors last.
// `schema` is the decoded JSON; keys the API type does not have are ignored (see
// UnknownSchemaFields).
std::vector<SchemaError> ValidateSchema(const nlohmann::json& schema, const std::string& path,
                                        const SchemaCheckOptions& options);

// Which of the ratcheted rules an old (stored) schema already broke.
struct SchemaBreaks {
  bool invalid_property_type = false;
  bool non_structural = false;
  bool unpruned_defaults = false;
  bool non_atomic_set_items = false;
  bool invalid_map_list_keys = false;
};
SchemaBreaks OldSchemaBreaks(const nlohmann::json& schema);
// Whether a schema holds a default, or a Kubernetes extension (x-kubernetes-*), anywhere.
bool SchemaHasDefaults(const nlohmann::json& schema);
bool SchemaHasKubernetesExtensions(const nlohmann::json& schema);

// Keys in `schema` that JSONSchemaProps does not have, as field paths below `path`
// ("spec.versions[0].schema.openAPIV3Schema.properties.spec.requried"): with
// fieldValidation=Strict (kubectl's default) the server refuses them with 400 `strict decoding
// error: unknown field "..."`; otherwise it drops them.
std::vector<std::string> UnknownSchemaFields(const nlohmann::json& schema, const std::string& path);

// Why the API server could not decode `schema` into JSONSchemaProps (a keyword of the wrong JSON
// type), in encoding/json's words with the Go field path `go_path`
// ("spec.versions.schema.openAPIV3Schema"), or "". The server answers that with 400 BadRequest
// before any validation. (Go reports the first such error; struct fields only, no map keys.)
std::string SchemaDecodeError(const nlohmann::json& schema, const std::string& go_path);

// The schema checks a CRD gets from the API server on create (ValidateSchema at
// "openAPIV3Schema" with a version that has no /status), plus the decoding error
// (SchemaDecodeError) and `unknown field "..."` for keys Strict decoding refuses. With
// require_descriptions it also applies this project's lint (DescriptionLint), which no API server
// has.
std::vector<SchemaError> CheckStructural(const nlohmann::json& schema, bool require_descriptions);

// Project lint, not a server rule: the root and every property need a non-empty description,
// except the root's metadata (where the server forbids one) and below a preserve-unknown-fields
// node without properties. Paths look like
// "openAPIV3Schema.properties[spec].description".
std::vector<SchemaError> DescriptionLint(const nlohmann::json& schema);

// ---- The custom-resource side -----------------------------------------------------------------

// What the API server removes from a custom resource before defaulting and validation, in its
// order: unknown fields (pruning: fields no property or additionalProperties describe, every
// field of an object or array item with no schema, never below x-kubernetes-preserve-unknown-
// fields unless a listed property says otherwise), then nulls in non-nullable fields that have no
// default, then unknown and malformed ObjectMeta fields of embedded resources (and of the root's
// metadata). The root's and embedded resources' apiVersion, kind and metadata are never pruned
// by the schema. Returns the pruned field paths, as Strict field validation names them
// (`spec[0].replicas`, `metadata.foo`), sorted within each step.
std::vector<std::string> Prune(nlohmann::json& value, const nlohmann::json& schema);

// Applies `default`s in place as the API server does: in each object, absent properties (and
// null ones whose schema is not nullable) get a copy of their default, which is then defaulted in
// turn; null array items and null additionalProperties values get their schema's default.
void ApplyDefaults(nlohmann::json& value, const nlohmann::json& schema);

struct ValidationResult {
  std::vector<SchemaError> errors;
  // What Prune() would remove as unknown (Strict field validation refuses these as
  // `unknown field "spec.foo"`).
  std::vector<std::string> unknown_fields;

  bool ok() const { return errors.empty(); }
  // Whether the server would skip x-kubernetes-validations (CEL) rules for this object.
  bool BlocksCel() const;
};

// Validates a custom resource as the API server's customresource strategy does, after it pruned
// nulls in non-nullable fields: the OpenAPI schema (kube-openapi's validator with the API
// server's field-error wording: types, nullable, enum, required, min/max, lengths, RE2 patterns,
// the string formats the server keeps, items, min/max items and properties, additionalProperties,
// allOf/anyOf/oneOf/not), then the apiVersion, kind and ObjectMeta of embedded resources, then the
// uniqueness of x-kubernetes-list-type set and map items. Not checked here: the root's apiVersion,
// kind and metadata (the caller's, with the request), and x-kubernetes-validations (CEL) rules.
ValidationResult Validate(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace ringleader::schema
