// Structural-schema checks, defaulting, pruning and OpenAPI validation for custom resources,
// with the API server's error wording (k8s field errors over kube-openapi messages).
#include "tests/support/structural_schema.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
// GCC 12 reports a false -Wmaybe-uninitialized inside <regex> under -O2 with the sanitizers
// (clang has no such warning).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <set>
#include <utility>

namespace ringleader::schema {
namespace {

using nlohmann::json;

constexpr const char* kIntOrString = "x-kubernetes-int-or-string";
constexpr const char* kPreserveUnknown = "x-kubernetes-preserve-unknown-fields";
constexpr const char* kEmbedded = "x-kubernetes-embedded-resource";

// --- Schema access and formatting ---------------------------------------------------------------

const json* Find(const json& schema, const char* key) {
  if (!schema.is_object()) {
    return nullptr;
  }
  auto it = schema.find(key);
  return it == schema.end() ? nullptr : &*it;
}

bool Flag(const json& schema, const char* key) {
  const json* value = Find(schema, key);
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

std::string TypeOf(const json& schema) {
  const json* type = Find(schema, "type");
  return type != nullptr && type->is_string() ? type->get<std::string>() : "";
}

std::string StringAt(const json& schema, const char* key) {
  const json* value = Find(schema, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

const json* SchemaAt(const json& schema, const char* key) {
  const json* child = Find(schema, key);
  return child != nullptr && child->is_object() ? child : nullptr;
}

std::string FieldPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string IndexPath(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

// The data type kube-openapi names in "must be of type X: \"<this>\"".
std::string JsonTypeName(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::binary:
    case json::value_t::discarded:
      break;
  }
  return "unknown";
}

std::string Quote(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Go's %v for a float64: shortest digits, exponent form below 1e-4 and from 1e6 up.
std::string GoFloat(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  char buffer[64];
  auto scientific =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string text(buffer, scientific.ptr);
  int exponent = std::stoi(text.substr(text.find('e') + 1));
  if (exponent < -4 || exponent >= 6) {
    return text;
  }
  auto fixed = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  return std::string(buffer, fixed.ptr);
}

// A bad value as the API server's field errors print it ("Invalid value: <this>").
std::string FormatValue(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return Quote(value.get<std::string>());
    case json::value_t::number_float:
      return GoFloat(value.get<double>());
    case json::value_t::null:
      return "null";
    default:
      return value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// A schema bound in a message: kube-openapi prints it as an integer when the data is one.
std::string FormatBound(const json& bound, bool integer_data) {
  if (bound.is_number_integer()) {
    return bound.dump();
  }
  double number = bound.get<double>();
  if (integer_data && std::trunc(number) == number && std::abs(number) < 9e15) {
    return std::to_string(static_cast<std::int64_t>(number));
  }
  return GoFloat(number);
}

std::string InBody(const std::string& path, const std::string& text) {
  return (path.empty() ? "" : path + " ") + "in body " + text;
}

std::size_t CountCharacters(const std::string& text) {
  std::size_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) {
      ++count;
    }
  }
  return count;
}

bool IsNonNegativeInteger(const json& value) {
  return value.is_number_unsigned() ||
         (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

// --- Where an object's field gets its schema ----------------------------------------------------

// How a node is reached: a resource (the root, or an embedded resource) always allows
// apiVersion, kind and metadata; inside metadata the server, not the schema, owns the fields.
struct Role {
  bool resource = false;
  bool open = false;
};

enum class FieldKind { kSchema, kUnchecked, kUnknown };

struct FieldSchema {
  FieldKind kind;
  const json* schema;  // set for kSchema
};

FieldSchema LookupField(const json& schema, const std::string& key, Role role) {
  if (const json* properties = SchemaAt(schema, "properties")) {
    if (const json* property = SchemaAt(*properties, key.c_str())) {
      return {FieldKind::kSchema, property};
    }
  }
  const json* additional = Find(schema, "additionalProperties");
  if (additional != nullptr && additional->is_object()) {
    return {FieldKind::kSchema, additional};
  }
  bool resource_field =
      role.resource && (key == "apiVersion" || key == "kind" || key == "metadata");
  if (resource_field || role.open || Flag(schema, kPreserveUnknown) ||
      (additional != nullptr && additional->is_boolean() && additional->get<bool>())) {
    return {FieldKind::kUnchecked, nullptr};
  }
  return {FieldKind::kUnknown, nullptr};
}

Role ChildRole(const json& child_schema, const std::string& key, Role parent) {
  return Role{Flag(child_schema, kEmbedded), parent.open || (parent.resource && key == "metadata")};
}

Role ItemRole(const json& items, Role parent) { return Role{Flag(items, kEmbedded), parent.open}; }

// The server drops a null in a non-nullable field before validation (or defaults it).
bool IsPrunedNull(const json& value, const json& schema) {
  return value.is_null() && !Flag(schema, "nullable");
}

// --- Validation ---------------------------------------------------------------------------------

// Compiled patterns, shared by one Validate() call and its junctor branches.
class RegexCache {
 public:
  // Null when `pattern` is not a valid ECMAScript regular expression.
  const std::regex* Get(const std::string& pattern) {
    auto it = compiled_.find(pattern);
    if (it == compiled_.end()) {
      std::unique_ptr<std::regex> regex;
      try {
        regex = std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        regex = nullptr;
      }
      it = compiled_.emplace(pattern, std::move(regex)).first;
    }
    return it->second.get();
  }

 private:
  std::map<std::string, std::unique_ptr<std::regex>> compiled_;
};

// One pass of OpenAPI validation; x-kubernetes-validations (CEL) rules are deliberately not
// evaluated here - api::Validate() restates them in C++.
class Validator {
 public:
  Validator(RegexCache* regexes, bool track_unknown)
      : regexes_(regexes), track_unknown_(track_unknown) {}

  void Check(const json& value, const json& schema, const std::string& path, Role role) {
    if (!schema.is_object()) {
      return;
    }
    if (value.is_null() && Flag(schema, "nullable")) {
      return;
    }
    if (!CheckType(value, schema, path)) {
      return;
    }
    CheckFormat(value, schema, path);
    CheckEnum(value, schema, path);
    if (value.is_number()) {
      CheckNumber(value, schema, path);
    } else if (value.is_string()) {
      CheckString(value.get_ref<const std::string&>(), schema, path);
    } else if (value.is_array()) {
      CheckArray(value, schema, path, role);
    } else if (value.is_object()) {
      CheckObject(value, schema, path, role);
    }
    CheckJunctors(value, schema, path, role);
  }

  ValidationResult& result() { return result_; }

 private:
  void Add(const std::string& path, std::string message) {
    result_.errors.push_back(SchemaError{path, std::move(message)});
  }

  // False (and an error) when the value has the wrong type; nothing else is checked then.
  bool CheckType(const json& value, const json& schema, const std::string& path) {
    std::string want = TypeOf(schema);
    bool ok = true;
    if (Flag(schema, kIntOrString)) {
      want = "integer,string";
      ok = value.is_number_integer() || value.is_string();
    } else if (want.empty()) {
      return true;
    } else if (want == "object") {
      ok = value.is_object();
    } else if (want == "array") {
      ok = value.is_array();
    } else if (want == "string") {
      ok = value.is_string();
    } else if (want == "integer") {
      ok = value.is_number_integer();  // 1.0 is a float in JSON, and not an integer here
    } else if (want == "number") {
      ok = value.is_number();
    } else if (want == "boolean") {
      ok = value.is_boolean();
    }
    if (!ok) {
      std::string actual = JsonTypeName(value);
      Add(path, "Invalid value: " + Quote(actual) + ": " +
                    InBody(path, "must be of type " + want + ": " + Quote(actual)));
    }
    return ok;
  }

  void CheckFormat(const json& value, const json& schema, const std::string& path) {
    const json* format = Find(schema, "format");
    if (format == nullptr || !format->is_string() || !value.is_number_integer()) {
      return;
    }
    bool fits = true;
    constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > kInt64Max) {
      fits = *format != "int32" && *format != "int64";
    } else if (*format == "int32") {
      auto number = value.get<std::int64_t>();
      fits = number >= std::numeric_limits<std::int32_t>::min() &&
             number <= std::numeric_limits<std::int32_t>::max();
    }
    if (!fits) {
      Add(path, "Invalid value: " + FormatValue(value) + ": " +
                    InBody(path, "must be of type " + format->get<std::string>()));
    }
  }

  void CheckEnum(const json& value, const json& schema, const std::string& path) {
    const json* allowed = Find(schema, "enum");
    if (allowed == nullptr || !allowed->is_array()) {
      return;
    }
    std::string supported;
    for (const json& option : *allowed) {
      if (option == value) {
        return;
      }
      supported += (supported.empty() ? "" : ", ") +
                   Quote(option.is_string() ? option.get<std::string>() : option.dump());
    }
    Add(path, "Unsupported value: " + FormatValue(value) + ": supported values: " + supported);
  }

  void CheckNumber(const json& value, const json& schema, const std::string& path) {
    // long double holds every int64 exactly, so large integers compare right.
    auto number = value.is_number_float() ? static_cast<long double>(value.get<double>())
                  : value.is_number_unsigned()
                      ? static_cast<long double>(value.get<std::uint64_t>())
                      : static_cast<long double>(value.get<std::int64_t>());
    bool integer = value.is_number_integer();
    auto bound_value = [](const json& bound) {
      return bound.is_number_integer() ? static_cast<long double>(bound.get<std::int64_t>())
                                       : static_cast<long double>(bound.get<double>());
    };
    const json* minimum = Find(schema, "minimum");
    if (minimum != nullptr && minimum->is_number()) {
      bool exclusive = Flag(schema, "exclusiveMinimum");
      long double bound = bound_value(*minimum);
      if (exclusive ? number <= bound : number < bound) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, std::string("should be greater than ") +
                                       (exclusive ? "" : "or equal to ") +
                                       FormatBound(*minimum, integer)));
      }
    }
    const json* maximum = Find(schema, "maximum");
    if (maximum != nullptr && maximum->is_number()) {
      bool exclusive = Flag(schema, "exclusiveMaximum");
      long double bound = bound_value(*maximum);
      if (exclusive ? number >= bound : number > bound) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, std::string("should be less than ") +
                                       (exclusive ? "" : "or equal to ") +
                                       FormatBound(*maximum, integer)));
      }
    }
    const json* factor = Find(schema, "multipleOf");
    if (factor != nullptr && factor->is_number() && bound_value(*factor) > 0) {
      long double quotient = number / bound_value(*factor);
      if (std::abs(quotient - std::round(quotient)) > 1e-9L * std::max(1.0L, std::abs(quotient))) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, "should be a multiple of " + FormatBound(*factor, integer)));
      }
    }
  }

  void CheckString(const std::string& text, const json& schema, const std::string& path) {
    std::size_t length = CountCharacters(text);
    const json* min_length = Find(schema, "minLength");
    if (min_length != nullptr && IsNonNegativeInteger(*min_length) &&
        length < min_length->get<std::uint64_t>()) {
      Add(path, "Invalid value: " + Quote(text) + ": " +
                    InBody(path, "should be at least " + min_length->dump() + " chars long"));
    }
    const json* max_length = Find(schema, "maxLength");
    if (max_length != nullptr && IsNonNegativeInteger(*max_length) &&
        length > max_length->get<std::uint64_t>()) {
      Add(path, "Too long: may not be longer than " + max_length->dump());
    }
    const json* pattern = Find(schema, "pattern");
    if (pattern != nullptr && pattern->is_string()) {
      const std::regex* regex = regexes_->Get(pattern->get<std::string>());
      if (regex == nullptr) {
        Add(path, "Invalid value: " + Quote(pattern->get<std::string>()) +
                      ": the schema's pattern is not a valid ECMAScript regular expression");
      } else if (!std::regex_search(text, *regex)) {
        Add(path, "Invalid value: " + Quote(text) + ": " +
                      InBody(path, "should match '" + pattern->get<std::string>() + "'"));
      }
    }
  }

  void CheckArray(const json& array, const json& schema, const std::string& path, Role role) {
    const json* min_items = Find(schema, "minItems");
    if (min_items != nullptr && IsNonNegativeInteger(*min_items) &&
        array.size() < min_items->get<std::uint64_t>()) {
      Add(path, "Invalid value: " + std::to_string(array.size()) + ": " +
                    InBody(path, "should have at least " + min_items->dump() + " items"));
    }
    const json* max_items = Find(schema, "maxItems");
    if (max_items != nullptr && IsNonNegativeInteger(*max_items) &&
        array.size() > max_items->get<std::uint64_t>()) {
      Add(path, "Too many: " + std::to_string(array.size()) + ": must have at most " +
                    max_items->dump() + " items");
    }
    CheckListType(array, schema, path);
    const json* items = SchemaAt(schema, "items");
    if (items == nullptr) {
      return;
    }
    for (std::size_t i = 0; i < array.size(); ++i) {
      Check(array[i], *items, IndexPath(path, i), ItemRole(*items, role));
    }
  }

  // x-kubernetes-list-type set: items unique; map: the list-map-keys tuple unique.
  void CheckListType(const json& array, const json& schema, const std::string& path) {
    std::string list_type = StringAt(schema, "x-kubernetes-list-type");
    if (list_type != "set" && list_type != "map") {
      return;
    }
    const json* key_names = Find(schema, "x-kubernetes-list-map-keys");
    std::vector<json> keys;
    for (std::size_t i = 0; i < array.size(); ++i) {
      json key = array[i];
      if (list_type == "map") {
        if (!array[i].is_object() || key_names == nullptr || !key_names->is_array()) {
          continue;
        }
        key = json::object();
        for (const json& name : *key_names) {
          if (name.is_string() && array[i].contains(name.get<std::string>())) {
            key[name.get<std::string>()] = array[i][name.get<std::string>()];
          }
        }
      }
      bool seen = false;
      for (const json& earlier : keys) {
        seen = seen || earlier == key;
      }
      if (seen) {
        Add(IndexPath(path, i), "Duplicate value: " + FormatValue(key));
      }
      keys.push_back(std::move(key));
    }
  }

  void CheckObject(const json& object, const json& schema, const std::string& path, Role role) {
    const json* min_properties = Find(schema, "minProperties");
    if (min_properties != nullptr && IsNonNegativeInteger(*min_properties) &&
        object.size() < min_properties->get<std::uint64_t>()) {
      Add(path, "Invalid value: " + std::to_string(object.size()) + ": " +
                    InBody(path, "should have at least " + min_properties->dump() + " properties"));
    }
    const json* max_properties = Find(schema, "maxProperties");
    if (max_properties != nullptr && IsNonNegativeInteger(*max_properties) &&
        object.size() > max_properties->get<std::uint64_t>()) {
      Add(path, "Too many: " + std::to_string(object.size()) + ": must have at most " +
                    max_properties->dump() + " items");
    }
    CheckRequired(object, schema, path, role);
    for (auto it = object.begin(); it != object.end(); ++it) {
      std::string child_path = FieldPath(path, it.key());
      FieldSchema field = LookupField(schema, it.key(), role);
      if (field.kind == FieldKind::kUnknown) {
        if (track_unknown_) {
          result_.unknown_fields.push_back(child_path);
        }
      } else if (field.kind == FieldKind::kSchema && !IsPrunedNull(*it, *field.schema)) {
        Check(*it, *field.schema, child_path, ChildRole(*field.schema, it.key(), role));
      }
    }
  }

  void CheckRequired(const json& object, const json& schema, const std::string& path, Role role) {
    const json* required = Find(schema, "required");
    if (required == nullptr || !required->is_array()) {
      return;
    }
    for (const json& name : *required) {
      if (!name.is_string()) {
        continue;
      }
      const std::string& key = name.get_ref<const std::string&>();
      auto it = object.find(key);
      bool missing = it == object.end();
      if (!missing && it->is_null()) {
        FieldSchema field = LookupField(schema, key, role);
        missing = field.kind != FieldKind::kSchema || IsPrunedNull(*it, *field.schema);
      }
      if (missing) {
        Add(FieldPath(path, key), "Required value");
      }
    }
  }

  // Junctor branches only restrict; their unknown fields are the outer schema's business.
  bool Passes(const json& value, const json& branch, const std::string& path, Role role,
              std::vector<SchemaError>* errors) {
    Validator inner(regexes_, false);
    inner.Check(value, branch, path, role);
    if (errors != nullptr) {
      errors->insert(errors->end(), inner.result_.errors.begin(), inner.result_.errors.end());
    }
    return inner.result_.errors.empty();
  }

  void CheckJunctors(const json& value, const json& schema, const std::string& path, Role role) {
    if (const json* all_of = Find(schema, "allOf"); all_of != nullptr && all_of->is_array()) {
      for (const json& branch : *all_of) {
        Passes(value, branch, path, role, &result_.errors);
      }
    }
    if (const json* any_of = Find(schema, "anyOf"); any_of != nullptr && any_of->is_array()) {
      bool any = false;
      for (const json& branch : *any_of) {
        any = any || Passes(value, branch, path, role, nullptr);
      }
      if (!any) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, "must validate at least one schema (anyOf)"));
      }
    }
    if (const json* one_of = Find(schema, "oneOf"); one_of != nullptr && one_of->is_array()) {
      int passing = 0;
      for (const json& branch : *one_of) {
        passing += Passes(value, branch, path, role, nullptr) ? 1 : 0;
      }
      if (passing != 1) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, "must validate one and only one schema (oneOf)"));
      }
    }
    if (const json* negated = SchemaAt(schema, "not")) {
      if (Passes(value, *negated, path, role, nullptr)) {
        Add(path, "Invalid value: " + FormatValue(value) + ": " +
                      InBody(path, "must not validate the schema (not)"));
      }
    }
  }

  RegexCache* regexes_;
  bool track_unknown_;
  ValidationResult result_;
};

ValidationResult ValidateWithRole(const json& value, const json& schema, const std::string& path,
                                  Role role) {
  RegexCache regexes;
  Validator validator(&regexes, true);
  validator.Check(value, schema, path, role);
  return std::move(validator.result());
}

// --- Defaulting and pruning ---------------------------------------------------------------------

bool DefaultsNull(const json& value, const json& schema) {
  return IsPrunedNull(value, schema) && Find(schema, "default") != nullptr;
}

void PruneWithRole(json& value, const json& schema, Role role) {
  if (!schema.is_object()) {
    return;
  }
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      FieldSchema field = LookupField(schema, it.key(), role);
      bool drop = field.kind == FieldKind::kUnknown ||
                  (field.kind == FieldKind::kSchema && IsPrunedNull(*it, *field.schema) &&
                   Find(*field.schema, "default") == nullptr);
      if (drop) {
        it = value.erase(it);
        continue;
      }
      if (field.kind == FieldKind::kSchema) {
        PruneWithRole(*it, *field.schema, ChildRole(*field.schema, it.key(), role));
      }
      ++it;
    }
  } else if (const json* items = SchemaAt(schema, "items"); items != nullptr && value.is_array()) {
    for (json& item : value) {
      PruneWithRole(item, *items, ItemRole(*items, role));
    }
  }
}

// --- Structural checks --------------------------------------------------------------------------

// The JSON shape each schema keyword must have: the API server decodes a schema into typed
// fields, so a keyword of the wrong shape rejects the whole CRD.
enum class Shape {
  kAny,
  kBoolean,
  kString,
  kCount,
  kNumber,
  kObject,
  kSchemaOrBoolean,
  kList,
  kNonEmptyList,
};

const std::map<std::string, Shape, std::less<>>& KeywordShapes() {
  static const std::map<std::string, Shape, std::less<>> kShapes = {
      {"type", Shape::kString},
      {"format", Shape::kString},
      {"title", Shape::kString},
      {"description", Shape::kString},
      {"pattern", Shape::kString},
      {"$schema", Shape::kString},
      {"x-kubernetes-list-type", Shape::kString},
      {"x-kubernetes-map-type", Shape::kString},
      {"nullable", Shape::kBoolean},
      {"uniqueItems", Shape::kBoolean},
      {"exclusiveMaximum", Shape::kBoolean},
      {"exclusiveMinimum", Shape::kBoolean},
      {kPreserveUnknown, Shape::kBoolean},
      {kEmbedded, Shape::kBoolean},
      {kIntOrString, Shape::kBoolean},
      {"maxLength", Shape::kCount},
      {"minLength", Shape::kCount},
      {"maxItems", Shape::kCount},
      {"minItems", Shape::kCount},
      {"maxProperties", Shape::kCount},
      {"minProperties", Shape::kCount},
      {"maximum", Shape::kNumber},
      {"minimum", Shape::kNumber},
      {"multipleOf", Shape::kNumber},
      {"properties", Shape::kObject},
      {"not", Shape::kObject},
      {"externalDocs", Shape::kObject},
      {"additionalProperties", Shape::kSchemaOrBoolean},
      {"allOf", Shape::kList},
      {"anyOf", Shape::kList},
      {"oneOf", Shape::kList},
      {"required", Shape::kList},
      {"x-kubernetes-list-map-keys", Shape::kList},
      {"enum", Shape::kNonEmptyList},
      {"x-kubernetes-validations", Shape::kNonEmptyList},
      {"default", Shape::kAny},
      {"example", Shape::kAny},
      {"items", Shape::kAny},  // a schema; the array form is reported by CheckShape
  };
  return kShapes;
}

// Empty when `value` has `shape`, else what it should have been.
std::string ShapeMismatch(Shape shape, const json& value) {
  switch (shape) {
    case Shape::kAny:
      return "";
    case Shape::kBoolean:
      return value.is_boolean() ? "" : "a boolean";
    case Shape::kString:
      return value.is_string() ? "" : "a string";
    case Shape::kCount:
      return IsNonNegativeInteger(value) ? "" : "a non-negative integer";
    case Shape::kNumber:
      return value.is_number() ? "" : "a number";
    case Shape::kObject:
      return value.is_object() ? "" : "an object";
    case Shape::kSchemaOrBoolean:
      return value.is_object() || value.is_boolean() ? "" : "a schema or a boolean";
    case Shape::kList:
      return value.is_array() ? "" : "a list";
    case Shape::kNonEmptyList:
      return value.is_array() && !value.empty() ? "" : "a non-empty list";
  }
  return "";
}

// Keywords JSONSchemaProps has but a CRD schema may not use.
const std::map<std::string, std::string, std::less<>>& UnsupportedKeywords() {
  static const std::map<std::string, std::string, std::less<>> kUnsupported = {
      {"$ref", "$ref is not supported"},
      {"id", "id is not supported"},
      {"definitions", "definitions is not supported"},
      {"dependencies", "dependencies is not supported"},
      {"patternProperties", "patternProperties is not supported"},
      {"additionalItems", "additionalItems is not supported"}};
  return kUnsupported;
}

enum class NodeKind { kRoot, kProperty, kAdditionalProperties, kItems };

struct NodeContext {
  NodeKind kind;
  std::string value_path;  // where values of this node sit in an object, for default errors
  bool descriptions_waived;
};

class StructuralChecker {
 public:
  explicit StructuralChecker(bool require_descriptions)
      : require_descriptions_(require_descriptions) {}

  void CheckRoot(const json& schema) {
    CheckNode(schema, "openAPIV3Schema", NodeContext{NodeKind::kRoot, "", false});
  }

  std::vector<SchemaError> Take() { return std::move(errors_); }

 private:
  static std::string At(const std::string& path, const std::string& key) {
    return path + "." + key;
  }

  void Add(const std::string& path, std::string message) {
    errors_.push_back(SchemaError{path, std::move(message)});
  }

  void CheckNode(const json& node, const std::string& path, const NodeContext& context) {
    if (!node.is_object()) {
      Add(path, "Invalid value: " + FormatValue(node) + ": must be a schema object");
      return;
    }
    CheckKeywords(node, path);
    CheckType(node, path, context.kind);
    CheckShape(node, path);
    CheckRequiredNames(node, path, context.kind == NodeKind::kRoot);
    CheckDescription(node, path, context);
    CheckDefault(node, path, context.value_path);
    if (context.kind == NodeKind::kRoot) {
      if (const json* properties = SchemaAt(node, "properties")) {
        if (const json* metadata = Find(*properties, "metadata")) {
          CheckMetadata(*metadata, At(path, "properties[metadata]"));
        }
      }
    }
    CheckChildren(node, path, context);
    CheckJunctors(node, path, node, Flag(node, kIntOrString));
  }

  void CheckKeywords(const json& node, const std::string& path) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string& key = it.key();
      if (auto unsupported = UnsupportedKeywords().find(key);
          unsupported != UnsupportedKeywords().end()) {
        Add(At(path, key), "Forbidden: " + unsupported->second);
      } else if (auto shape = KeywordShapes().find(key); shape == KeywordShapes().end()) {
        Add(At(path, key), "unknown field " + Quote(key));
      } else if (std::string expected = ShapeMismatch(shape->second, *it); !expected.empty()) {
        Add(At(path, key), "Invalid value: " + FormatValue(*it) + ": must be " + expected);
      } else {
        CheckKeywordRules(key, *it, At(path, key));
      }
    }
  }

  // What a keyword of the right shape may still get wrong.
  void CheckKeywordRules(const std::string& key, const json& value, const std::string& path) {
    if (key == "type") {
      static const std::set<std::string, std::less<>> kTypes = {"array",  "boolean", "integer",
                                                                "number", "object",  "string"};
      if (!kTypes.contains(value.get<std::string>())) {
        Add(path, "Unsupported value: " + FormatValue(value) +
                      ": supported values: \"array\", \"boolean\", \"integer\", \"number\", "
                      "\"object\", \"string\"");
      }
    } else if (key == "pattern" && regexes_.Get(value.get<std::string>()) == nullptr) {
      Add(path, "Invalid value: " + FormatValue(value) +
                    ": must be a valid ECMAScript regular expression");
    } else if (key == "multipleOf" && value.get<double>() <= 0) {
      Add(path, "Invalid value: " + FormatValue(value) + ": must be positive");
    } else if (key == "uniqueItems" && value.get<bool>()) {
      Add(path,
          "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
          "becomes quadratic");
    } else if (key == kPreserveUnknown && !value.get<bool>()) {
      Add(path, "Invalid value: false: must be true or undefined");
    } else if (key == "additionalProperties" && value.is_boolean() && !value.get<bool>()) {
      Add(path, "Forbidden: additionalProperties cannot be set to false");
    } else if (key == "x-kubernetes-list-type") {
      const std::string& list_type = value.get_ref<const std::string&>();
      if (list_type != "atomic" && list_type != "set" && list_type != "map") {
        Add(path, "Unsupported value: " + FormatValue(value) +
                      ": supported values: \"atomic\", \"set\", \"map\"");
      }
    } else if (key == "x-kubernetes-map-type") {
      const std::string& map_type = value.get_ref<const std::string&>();
      if (map_type != "atomic" && map_type != "granular") {
        Add(path, "Unsupported value: " + FormatValue(value) +
                      ": supported values: \"atomic\", \"granular\"");
      }
    }
  }

  void CheckType(const json& node, const std::string& path, NodeKind kind) {
    bool int_or_string = Flag(node, kIntOrString);
    bool has_type = node.contains("type");
    if (int_or_string && has_type) {
      Add(At(path, "type"), "Forbidden: must be empty when x-kubernetes-int-or-string is true");
    }
    if (!has_type && !int_or_string && !Flag(node, kPreserveUnknown)) {
      static const std::map<NodeKind, std::string> kWhere = {
          {NodeKind::kRoot, "at the root"},
          {NodeKind::kProperty, "for specified object fields"},
          {NodeKind::kAdditionalProperties, "for specified object fields"},
          {NodeKind::kItems, "for specified array items"}};
      Add(At(path, "type"), "Required value: must not be empty " + kWhere.at(kind));
    }
    if (kind == NodeKind::kRoot && has_type && TypeOf(node) != "object") {
      Add(At(path, "type"),
          "Invalid value: " + FormatValue(node["type"]) + ": must be object at the root");
    }
    if (Flag(node, kEmbedded)) {
      if (TypeOf(node) != "object") {
        Add(At(path, "type"), "Invalid value: " + FormatValue(node.value("type", json())) +
                                  ": must be object if x-kubernetes-embedded-resource is true");
      }
      if (!node.contains("properties") && !Flag(node, kPreserveUnknown)) {
        Add(At(path, kPreserveUnknown),
            "Required value: must be true if x-kubernetes-embedded-resource is true and there "
            "are no properties");
      }
    }
  }

  // Which keywords go with which type, and what arrays need.
  void CheckShape(const json& node, const std::string& path) {
    std::string type = TypeOf(node);
    if (node.contains("properties") && node.contains("additionalProperties")) {
      Add(At(path, "additionalProperties"),
          "Forbidden: additionalProperties and properties are mutual exclusive");
    }
    if (const json* additional = Find(node, "additionalProperties");
        additional != nullptr && additional->is_boolean() && additional->get<bool>()) {
      Add(At(path, "additionalProperties"),
          "Invalid value: true: must be a schema with a type to be structural");
    }
    if (!type.empty() && type != "object") {
      for (const char* key : {"properties", "additionalProperties", "required"}) {
        if (node.contains(key)) {
          Add(At(path, key), "Forbidden: must be empty unless type is object");
        }
      }
    }
    if (!type.empty() && type != "array" && node.contains("items")) {
      Add(At(path, "items"), "Forbidden: must be empty unless type is array");
    }
    if (type == "array" && !node.contains("items")) {
      Add(At(path, "items"), "Required value: must be specified");
    }
    if (const json* items = Find(node, "items"); items != nullptr && items->is_array()) {
      Add(At(path, "items"), "Forbidden: items must be a schema object and not an array");
    }
    if (StringAt(node, "x-kubernetes-list-type") == "map") {
      const json* keys = Find(node, "x-kubernetes-list-map-keys");
      if (keys == nullptr || !keys->is_array() || keys->empty()) {
        Add(At(path, "x-kubernetes-list-map-keys"),
            "Required value: must not be empty if x-kubernetes-list-type is map");
      }
    }
  }

  // A required field the schema does not define would always be pruned, so never present.
  void CheckRequiredNames(const json& node, const std::string& path, bool root) {
    const json* required = Find(node, "required");
    if (required == nullptr || !required->is_array()) {
      return;
    }
    const json* properties = SchemaAt(node, "properties");
    bool open = Flag(node, kPreserveUnknown) || SchemaAt(node, "additionalProperties") != nullptr;
    bool resource = root || Flag(node, kEmbedded);
    for (std::size_t i = 0; i < required->size(); ++i) {
      const json& name = (*required)[i];
      std::string entry_path = IndexPath(At(path, "required"), i);
      if (!name.is_string()) {
        Add(entry_path, "Invalid value: " + FormatValue(name) + ": must be a string");
        continue;
      }
      bool resource_field =
          resource && (name == "apiVersion" || name == "kind" || name == "metadata");
      bool defined = properties != nullptr && properties->contains(name.get<std::string>());
      if (!defined && !open && !resource_field) {
        Add(entry_path, "Invalid value: " + FormatValue(name) +
                            ": is not in properties, so it would always be pruned");
      }
    }
  }

  void CheckDescription(const json& node, const std::string& path, const NodeContext& context) {
    bool needs = context.kind == NodeKind::kRoot || context.kind == NodeKind::kProperty;
    if (!require_descriptions_ || !needs || context.descriptions_waived) {
      return;
    }
    const json* description = Find(node, "description");
    if (description == nullptr || !description->is_string() ||
        description->get<std::string>().find_first_not_of(" \t\n") == std::string::npos) {
      Add(At(path, "description"), "Required value: must not be empty");
    }
  }

  // The API server rejects a CRD whose default (once itself defaulted and pruned of nothing)
  // does not validate against the schema it sits in.
  void CheckDefault(const json& node, const std::string& path, const std::string& value_path) {
    const json* default_value = Find(node, "default");
    if (default_value == nullptr) {
      return;
    }
    std::string default_path = At(path, "default");
    if (default_value->is_null() && !Flag(node, "nullable")) {
      Add(default_path, "Forbidden: must not be null for a field that is not nullable");
      return;
    }
    json defaulted = *default_value;
    ApplyDefaults(defaulted, node);
    ValidationResult result =
        ValidateWithRole(defaulted, node, value_path, Role{Flag(node, kEmbedded), false});
    for (const SchemaError& error : result.errors) {
      Add(default_path + RelativePath(error.path, value_path), error.message);
    }
    for (const std::string& unknown : result.unknown_fields) {
      Add(default_path + RelativePath(unknown, value_path),
          "Forbidden: must not have unknown fields (they would be pruned)");
    }
  }

  static std::string RelativePath(const std::string& path, const std::string& base) {
    std::string rest = path.substr(std::min(base.size(), path.size()));
    return rest.empty() || rest.front() == '[' || rest.front() == '.' ? rest : "." + rest;
  }

  // Only name and generateName may be restricted: the server owns the rest of ObjectMeta.
  void CheckMetadata(const json& metadata, const std::string& path) {
    if (!metadata.is_object()) {
      return;
    }
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      bool allowed = it.key() == "type" || it.key() == "description" || it.key() == "properties";
      if (!allowed) {
        Add(At(path, it.key()),
            "Forbidden: must not be specified, metadata only allows restrictions on name and "
            "generateName");
      }
    }
    const json* properties = SchemaAt(metadata, "properties");
    if (properties == nullptr) {
      return;
    }
    for (auto it = properties->begin(); it != properties->end(); ++it) {
      if (it.key() != "name" && it.key() != "generateName") {
        Add(At(path, "properties[" + it.key() + "]"),
            "Forbidden: must not be specified, metadata only allows restrictions on name and "
            "generateName");
      } else if (it->is_object() && TypeOf(*it) != "string") {
        Add(At(path, "properties[" + it.key() + "].type"),
            "Invalid value: " + FormatValue(it->value("type", json())) + ": must be string");
      }
    }
  }

  void CheckChildren(const json& node, const std::string& path, const NodeContext& context) {
    bool waived = context.descriptions_waived ||
                  (Flag(node, kPreserveUnknown) && !node.contains("properties"));
    if (const json* properties = SchemaAt(node, "properties")) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        CheckNode(
            *it, At(path, "properties[" + it.key() + "]"),
            NodeContext{NodeKind::kProperty, FieldPath(context.value_path, it.key()), waived});
      }
    }
    if (const json* additional = SchemaAt(node, "additionalProperties")) {
      CheckNode(*additional, At(path, "additionalProperties"),
                NodeContext{NodeKind::kAdditionalProperties, FieldPath(context.value_path, "<key>"),
                            waived});
    }
    if (const json* items = SchemaAt(node, "items")) {
      CheckNode(*items, At(path, "items"),
                NodeContext{NodeKind::kItems, context.value_path + "[0]", waived});
    }
  }

  // Structural rules 2 and 3: a junctor only restricts what the schema outside it specifies,
  // and sets no type, description, default, additionalProperties or nullable of its own.
  void CheckJunctors(const json& node, const std::string& path, const json& outer,
                     bool int_or_string) {
    for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
      const json* branches = Find(node, junctor);
      if (branches == nullptr || !branches->is_array()) {
        continue;
      }
      for (std::size_t i = 0; i < branches->size(); ++i) {
        CheckJunctorBranch((*branches)[i], IndexPath(At(path, junctor), i), outer, int_or_string);
      }
    }
    if (const json* negated = Find(node, "not")) {
      CheckJunctorBranch(*negated, At(path, "not"), outer, int_or_string);
    }
  }

  void CheckJunctorBranch(const json& branch, const std::string& path, const json& outer,
                          bool int_or_string) {
    if (!branch.is_object()) {
      Add(path, "Invalid value: " + FormatValue(branch) + ": must be a schema object");
      return;
    }
    CheckKeywords(branch, path);
    // The int-or-string idiom: anyOf: [{type: integer}, {type: string}].
    bool int_or_string_branch = int_or_string && branch.size() == 1 &&
                                (TypeOf(branch) == "integer" || TypeOf(branch) == "string");
    for (const char* key : {"type", "description", "default", "additionalProperties", "nullable",
                            kPreserveUnknown, kEmbedded, kIntOrString}) {
      if (branch.contains(key) && !(int_or_string_branch && std::string(key) == "type")) {
        Add(At(path, key), "Forbidden: must not be set inside allOf, anyOf, oneOf or not");
      }
    }
    if (const json* properties = SchemaAt(branch, "properties")) {
      const json* outer_properties = SchemaAt(outer, "properties");
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        std::string property_path = At(path, "properties[" + it.key() + "]");
        const json* outer_property =
            outer_properties != nullptr ? SchemaAt(*outer_properties, it.key().c_str()) : nullptr;
        if (outer_property == nullptr) {
          Add(property_path,
              "Required value: must be specified outside of allOf, anyOf, oneOf "
              "and not too");
          continue;
        }
        CheckJunctorBranch(*it, property_path, *outer_property,
                           Flag(*outer_property, kIntOrString));
      }
    }
    if (const json* items = SchemaAt(branch, "items")) {
      const json* outer_items = SchemaAt(outer, "items");
      if (outer_items == nullptr) {
        Add(At(path, "items"),
            "Required value: must be specified outside of allOf, anyOf, oneOf and not too");
      } else {
        CheckJunctorBranch(*items, At(path, "items"), *outer_items,
                           Flag(*outer_items, kIntOrString));
      }
    }
    CheckJunctors(branch, path, outer, int_or_string);
  }

  bool require_descriptions_;
  RegexCache regexes_;
  std::vector<SchemaError> errors_;
};

void DefaultNode(json& value, const json& schema) {
  if (!schema.is_object()) {
    return;
  }
  if (value.is_object()) {
    const json* properties = SchemaAt(schema, "properties");
    if (properties != nullptr) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        const json* default_value = Find(*it, "default");
        if (default_value == nullptr) {
          continue;
        }
        auto field = value.find(it.key());
        if (field == value.end() || DefaultsNull(*field, *it)) {
          value[it.key()] = *default_value;
        }
      }
    }
    const json* additional = SchemaAt(schema, "additionalProperties");
    for (auto it = value.begin(); it != value.end(); ++it) {
      const json* property =
          properties != nullptr ? SchemaAt(*properties, it.key().c_str()) : nullptr;
      if (property != nullptr) {
        DefaultNode(*it, *property);
      } else if (additional != nullptr) {
        if (DefaultsNull(*it, *additional)) {
          *it = (*additional)["default"];
        }
        DefaultNode(*it, *additional);
      }
    }
  } else if (const json* items = SchemaAt(schema, "items"); items != nullptr && value.is_array()) {
    for (json& item : value) {
      if (DefaultsNull(item, *items)) {
        item = (*items)["default"];
      }
      DefaultNode(item, *items);
    }
  }
}

}  // namespace

std::string SchemaError::ToString() const { return path.empty() ? message : path + ": " + message; }

std::vector<SchemaError> CheckStructural(const nlohmann::json& schema, bool require_descriptions) {
  StructuralChecker checker(require_descriptions);
  checker.CheckRoot(schema);
  return checker.Take();
}

void ApplyDefaults(nlohmann::json& value, const nlohmann::json& schema) {
  DefaultNode(value, schema);
}

void Prune(nlohmann::json& value, const nlohmann::json& schema) {
  PruneWithRole(value, schema, Role{true, false});
}

ValidationResult Validate(const nlohmann::json& value, const nlohmann::json& schema) {
  return ValidateWithRole(value, schema, "", Role{true, false});
}

}  // namespace ringleader::schema
