// Helpers shared by the CRD-side and value-side halves of the structural-schema code and by CEL
// (tests/support/cel): reading a decoded JSONSchemaProps (a null field is an absent one), field
// paths, Go's formatting and Go-compatible regular expressions.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/field_errors.h"

namespace re2 {
class RE2;
}

namespace ringleader::schema::internal {

using nlohmann::json;

inline constexpr const char* kIntOrString = "x-kubernetes-int-or-string";
inline constexpr const char* kPreserveUnknown = "x-kubernetes-preserve-unknown-fields";
inline constexpr const char* kEmbedded = "x-kubernetes-embedded-resource";
inline constexpr const char* kListType = "x-kubernetes-list-type";
inline constexpr const char* kListMapKeys = "x-kubernetes-list-map-keys";
inline constexpr const char* kMapType = "x-kubernetes-map-type";
inline constexpr const char* kValidations = "x-kubernetes-validations";

// The field `key` of a schema node, or null when it is absent or JSON null (Go decodes a null
// into the zero value, so the API server cannot tell them apart).
const json* Field(const json& node, std::string_view key);
// A sub-schema: the field when it is a JSON object.
const json* SubSchema(const json& node, std::string_view key);
// A boolean field that is true.
bool Flag(const json& node, std::string_view key);
// A string field, or "" (also for a field of another JSON type).
std::string Text(const json& node, std::string_view key);
// A non-empty object field (Go keeps len()==0 maps as unset in most checks).
const json* NonEmptyObject(const json& node, std::string_view key);
// A non-empty array field.
const json* NonEmptyArray(const json& node, std::string_view key);
// A string-array field's entries (non-strings skipped).
std::vector<std::string> Strings(const json& node, std::string_view key);

// The additionalProperties schema of a node, or null when it is absent or a boolean.
const json* AdditionalSchema(const json& node);
// Whether additionalProperties is set at all (a schema, true or false).
bool HasAdditionalProperties(const json& node);
// Whether the old value of this object can be correlated with the new one (ratcheting, oldSelf):
// x-kubernetes-map-type is unset, granular or atomic.
bool MapIsCorrelatable(const json& node);

// field.Path's text: Child "a.b" (an empty parent is the root), Key "a[b]", Index "a[0]".
std::string Child(const std::string& parent, std::string_view name);
std::string Key(const std::string& parent, std::string_view key);
std::string Index(const std::string& parent, std::size_t index);

// cel.ValidFieldPath: the field path ("spec.ports[http]") that a JSON path of .name and ['name']
// steps names in `schema` through properties and additionalProperties, or nullopt when it is
// malformed or names a field the schema does not define.
std::optional<std::string> ValidFieldPath(std::string_view field_path, const json& schema);

// strings.TrimSpace for ASCII whitespace.
std::string TrimSpace(std::string_view text);
// Go's %#v of a pointer of `type` ("*string"): "(*string)(nil)", or a fixed address standing in
// for the real one, which differs on every request.
std::string GoPointer(std::string_view type, bool set);
// encoding/json's "json: cannot unmarshal <what> into Go <target>" for `value`, with `target`
// e.g. "value of type v1.ObjectMeta" or "struct field ObjectMeta.labels of type string";
// `integer_target`: a fraction reads "number 1.5", as it does for an int64 field.
std::string UnmarshalError(const json& value, std::string_view target, bool integer_target = false);

// A pattern compiled with Go's regexp semantics (RE2). `error` is Go's regexp.Compile message,
// "error parsing regexp: missing closing ]: `[a`", when it does not compile.
struct GoRegexp {
  std::shared_ptr<const re2::RE2> re;
  std::string error;
};
// Compiled patterns are cached for the process (patterns come from CRDs, a small set).
GoRegexp CompileGoRegexp(const std::string& pattern);
// regexp.MatchString: an unanchored search.
bool GoRegexpMatch(const GoRegexp& regexp, std::string_view text);
// A fixed pattern written in Go syntax; aborts if it does not compile.
bool FullMatch(std::string_view text, const std::string& pattern);

// The number of runes, as utf8.RuneCountInString counts them (each invalid byte is one).
std::size_t RuneCount(std::string_view text);

// apimachinery's util/validation: the messages of IsDNS1035Label, IsDNS1123Label,
// IsDNS1123Subdomain and IsQualifiedName (empty when valid).
std::vector<std::string> Dns1035LabelErrors(std::string_view value);
std::vector<std::string> Dns1123LabelErrors(std::string_view value);
std::vector<std::string> Dns1123SubdomainErrors(std::string_view value);
std::vector<std::string> QualifiedNameErrors(std::string_view value);
std::vector<std::string> LabelValueErrors(std::string_view value);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

// Default-value checks the CRD side borrows from the value side (schema_values.cc), as
// defaulting/validation.go runs them: kube-openapi's validation of `value` against `node` with
// field errors under `base`; embedded-resource coercion and ObjectMeta checks; and whether
// pruning with `node` leaves the value as it is.
std::vector<SchemaError> ValidateDefaultValue(const json& node, const json& value,
                                              const std::string& base);
std::vector<SchemaError> ValidateEmbeddedDefault(const json& node, const json& value,
                                                 const std::string& base);
bool DefaultIsPruned(const json& node, const json& value);

}  // namespace ringleader::schema::internal
