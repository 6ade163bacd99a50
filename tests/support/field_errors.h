// Kubernetes field errors (k8s.io/apimachinery/pkg/util/validation/field) as the 1.32 API server
// prints them, and the Go formatting of the values inside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::schema {

// field.ErrorType. kUnspecified means "read it from the message's leading words".
enum class ErrorType {
  kUnspecified,
  kNotFound,
  kRequired,
  kDuplicate,
  kInvalid,
  kNotSupported,
  kForbidden,
  kTooLong,
  kTooMany,
  kInternal,
  kTypeInvalid,  // prints "Invalid value" like kInvalid, but blocks CEL rules
};

struct SchemaError {
  std::string path;     // e.g. "spec.template.spec.containers[0].name"; "<nil>" for the root
  std::string message;  // in the API server's words, e.g. "Required value"
  // Set by the constructors below; hand-built {path, message} errors leave it unspecified.
  ErrorType type = ErrorType::kUnspecified;

  // "spec.replicas: Required value", the way the API server prints a field error.
  std::string ToString() const;
  // The error's type, from `type` or else from the message ("Invalid value: ..." is kInvalid).
  ErrorType Type() const;
  // The metav1.CauseType for status details.causes[].reason: "FieldValueRequired", ...
  std::string CauseType() const;
  // Whether the API server skips x-kubernetes-validations (CEL) rules once this error is found
  // (customresource strategy's hasBlockingErr: NotSupported, Required, TooLong, TooMany and
  // TypeInvalid, i.e. a wrong type, a missing field, a bad enum value or a size limit).
  bool BlocksCel() const;

  bool operator==(const SchemaError& other) const {
    return path == other.path && message == other.message && Type() == other.Type();
  }
};

// The error the server adds instead of running CEL rules when BlocksCel() holds for one of the
// errors found so far: `<nil>: Invalid value: "null": some validation rules were not checked ...`.
SchemaError CelRulesSkipped();

// --- Constructors, worded as field.Required, field.Invalid, ... in Kubernetes 1.32 --------------
// `value` arguments are already formatted (see GoValue); `detail` may be empty.

SchemaError Required(std::string path, std::string_view detail);
SchemaError Forbidden(std::string path, std::string_view detail);
SchemaError Invalid(std::string path, std::string_view value, std::string_view detail);
SchemaError TypeInvalid(std::string path, std::string_view value, std::string_view detail);
SchemaError Duplicate(std::string path, std::string_view value);
SchemaError NotFound(std::string path, std::string_view value);
// `supported` are printed with strconv.Quote: `supported values: "a", "b"`.
SchemaError NotSupported(std::string path, std::string_view value,
                         const std::vector<std::string>& supported);
// "Too long: may not be more than 5 bytes" (a negative max: "value is too long").
SchemaError TooLong(std::string path, std::int64_t max_length);
// "Too many: 3: must have at most 2 items" (a negative actual omits the value).
SchemaError TooMany(std::string path, std::int64_t actual, std::int64_t max);
SchemaError InternalError(std::string path, std::string_view detail);

// --- Go value formatting --------------------------------------------------------------------

// strconv.Quote: "a\"b", with \n, \t, \x01, \u00a0 escapes and printable UTF-8 kept.
std::string GoQuote(std::string_view text);
// fmt's %v for a float64: shortest digits, exponent form below 1e-4 and from 1e6 up ("2.5e+06").
std::string GoFloat(double value);
// How field.Error prints a bad value decoded from JSON: strings quoted, numbers and booleans
// bare, null as "null", objects and arrays as Go's %#v of map[string]interface{} and
// []interface{} (`map[string]interface {}{"a":1}`).
std::string GoValue(const nlohmann::json& value);
// %#v of a []string: `[]string{"a", "b"}`, or `[]string(nil)` when `values` is null.
std::string GoStringSlice(const std::optional<std::vector<std::string>>& values);
// What Go's encoding/json writes for a value decoded into interface{} (floats as %g-like
// shortest digits, map keys sorted, no spaces): enum values in NotSupported details.
std::string GoJson(const nlohmann::json& value);

// The value a JSON number has once the API server decodes it into interface{}: int64 when it is
// an integer literal that fits, float64 otherwise.
bool IsGoInt64(const nlohmann::json& value);
double AsDouble(const nlohmann::json& value);

}  // namespace ringleader::schema
