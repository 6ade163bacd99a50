// The API server's checks of a CRD version's openAPIV3Schema (Kubernetes 1.32): the status
// subresource's root rules, the structural invariants and completeness (schema/validation.go,
// schema/complete.go), default values (schema/defaulting/validation.go), and the per-node rules of
// apiextensions/validation/validation.go (specStandardValidatorV3, list and map types,
// x-kubernetes-validations), with the real paths and wording.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "tests/support/schema_internal.h"
#include "tests/support/structural_schema.h"

namespace ringleader::schema {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): this library's own helpers

std::string PropertyPath(const std::string& path, const std::string& key) {
  return path + ".properties[" + key + "]";
}

bool Present(const json& node, std::string_view key) { return Field(node, key) != nullptr; }

// ---- Go's %#v of the internal JSONSchemaProps (the value of two Invalid errors) ---------------

std::string GoSchemaDump(const json& node);

std::string GoSchemaSlice(const json& node, std::string_view key) {
  const json* list = Field(node, key);
  if (list == nullptr || !list->is_array()) {
    return "[]apiextensions.JSONSchemaProps(nil)";
  }
  std::string out = "[]apiextensions.JSONSchemaProps{";
  for (std::size_t i = 0; i < list->size(); ++i) {
    out += (i == 0 ? "" : ", ") + GoSchemaDump((*list)[i]);
  }
  return out + "}";
}

std::string GoSchemaMap(const json& node, std::string_view key, std::string_view type) {
  const json* map = Field(node, key);
  if (map == nullptr || !map->is_object()) {
    return std::string(type) + "(nil)";
  }
  std::string out = std::string(type) + "{";
  bool first = true;
  for (auto it = map->begin(); it != map->end(); ++it) {
    out += (first ? "" : ", ") + GoQuote(it.key()) + ":" + GoSchemaDump(*it);
    first = false;
  }
  return out + "}";
}

std::string GoSchemaDump(const json& node) {
  auto text = [&](std::string_view key) { return GoQuote(Text(node, key)); };
  auto flag = [&](std::string_view key) { return std::string(Flag(node, key) ? "true" : "false"); };
  auto pointer = [&](std::string_view key, std::string_view type) {
    return GoPointer(type, Present(node, key));
  };
  std::optional<std::vector<std::string>> required;
  if (Present(node, "required")) {
    required = Strings(node, "required");
  }
  std::optional<std::vector<std::string>> map_keys;
  if (Present(node, kListMapKeys)) {
    map_keys = Strings(node, kListMapKeys);
  }
  std::string enum_text = "[]apiextensions.JSON(nil)";
  if (const json* options = Field(node, "enum"); options != nullptr && options->is_array()) {
    enum_text = "[]apiextensions.JSON{";
    for (std::size_t i = 0; i < options->size(); ++i) {
      enum_text += (i == 0 ? "" : ", ") + GoValue((*options)[i]);
    }
    enum_text += "}";
  }
  return "apiextensions.JSONSchemaProps{ID:" + text("id") + ", Schema:" + text("$schema") +
         ", Ref:" + pointer("$ref", "*string") + ", Description:" + text("description") +
         ", Type:" + text("type") + ", Nullable:" + flag("nullable") +
         ", Format:" + text("format") + ", Title:" + text("title") +
         ", Default:" + pointer("default", "*apiextensions.JSON") +
         ", Maximum:" + pointer("maximum", "*float64") +
         ", ExclusiveMaximum:" + flag("exclusiveMaximum") +
         ", Minimum:" + pointer("minimum", "*float64") +
         ", ExclusiveMinimum:" + flag("exclusiveMinimum") +
         ", MaxLength:" + pointer("maxLength", "*int64") +
         ", MinLength:" + pointer("minLength", "*int64") + ", Pattern:" + text("pattern") +
         ", MaxItems:" + pointer("maxItems", "*int64") +
         ", MinItems:" + pointer("minItems", "*int64") + ", UniqueItems:" + flag("uniqueItems") +
         ", MultipleOf:" + pointer("multipleOf", "*float64") + ", Enum:" + enum_text +
         ", MaxProperties:" + pointer("maxProperties", "*int64") +
         ", MinProperties:" + pointer("minProperties", "*int64") +
         ", Required:" + GoStringSlice(required) +
         ", Items:" + pointer("items", "*apiextensions.JSONSchemaPropsOrArray") +
         ", AllOf:" + GoSchemaSlice(node, "allOf") + ", OneOf:" + GoSchemaSlice(node, "oneOf") +
         ", AnyOf:" + GoSchemaSlice(node, "anyOf") +
         ", Not:" + pointer("not", "*apiextensions.JSONSchemaProps") + ", Properties:" +
         GoSchemaMap(node, "properties", "map[string]apiextensions.JSONSchemaProps") +
         ", AdditionalProperties:" +
         pointer("additionalProperties", "*apiextensions.JSONSchemaPropsOrBool") +
         ", PatternProperties:" +
         GoSchemaMap(node, "patternProperties", "map[string]apiextensions.JSONSchemaProps") +
         ", Dependencies:" +
         (Present(node, "dependencies") ? "apiextensions.JSONSchemaDependencies{...}"
                                        : "apiextensions.JSONSchemaDependencies(nil)") +
         ", AdditionalItems:" + pointer("additionalItems", "*apiextensions.JSONSchemaPropsOrBool") +
         ", Definitions:" +
         GoSchemaMap(node, "definitions", "apiextensions.JSONSchemaDefinitions") +
         ", ExternalDocs:" + pointer("externalDocs", "*apiextensions.ExternalDocumentation") +
         ", Example:" + pointer("example", "*apiextensions.JSON") +
         ", XPreserveUnknownFields:" + pointer(kPreserveUnknown, "*bool") +
         ", XEmbeddedResource:" + flag(kEmbedded) + ", XIntOrString:" + flag(kIntOrString) +
         ", XListMapKeys:" + GoStringSlice(map_keys) +
         ", XListType:" + pointer(kListType, "*string") +
         ", XMapType:" + pointer(kMapType, "*string") + ", XValidations:" +
         (Present(node, kValidations) ? "apiextensions.ValidationRules{...}"
                                      : "apiextensions.ValidationRules(nil)") +
         "}";
}

// ---- NewStructural's refusals (schema/convert.go) --------------------------------------------

// The first reason NewStructural cannot convert the schema, or "".
std::string NewStructuralError(const json& node) {
  if (!node.is_object()) {
    return "";
  }
  static const std::pair<std::string_view, std::string_view> kUnsupported[] = {
      {"id", "id"},
      {"$schema", "schema"},
      {"$ref", "$ref"},
      {"patternProperties", "patternProperties"},
      {"dependencies", "dependencies"},
      {"additionalItems", "additionalItems"},
      {"definitions", "definitions"}};
  for (const auto& [key, name] : kUnsupported) {
    const json* value = Field(node, key);
    bool set =
        value != nullptr && !(value->is_string() && value->get_ref<const std::string&>().empty()) &&
        !((value->is_object() || value->is_array()) && value->empty() && key != "additionalItems");
    if (set) {
      return "OpenAPIV3Schema '" + std::string(name) + "' is not supported";
    }
  }
  for (const char* junctor : {"not", "allOf", "anyOf", "oneOf"}) {
    if (const json* value = Field(node, junctor)) {
      if (value->is_object()) {
        if (std::string error = NewStructuralError(*value); !error.empty()) {
          return error;
        }
      } else if (value->is_array()) {
        for (const json& branch : *value) {
          if (std::string error = NewStructuralError(branch); !error.empty()) {
            return error;
          }
        }
      }
    }
  }
  if (const json* additional = AdditionalSchema(node)) {
    if (std::string error = NewStructuralError(*additional); !error.empty()) {
      return error;
    }
  }
  if (const json* preserve = Field(node, kPreserveUnknown);
      preserve != nullptr && preserve->is_boolean() && !preserve->get<bool>()) {
    return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
  }
  if (const json* items = Field(node, "items")) {
    if (items->is_array()) {
      return "OpenAPIV3Schema 'items' must be a schema, but is an array";
    }
    if (std::string error = NewStructuralError(*items); !error.empty()) {
      return error;
    }
  }
  if (const json* properties = SubSchema(node, "properties")) {
    for (const json& property : *properties) {
      if (std::string error = NewStructuralError(property); !error.empty()) {
        return error;
      }
    }
  }
  return "";
}

// ---- ValidateStructural (schema/validation.go, schema/complete.go) ----------------------------

enum class Level { kRoot, kItem, kField };

// A junctor branch exactly {type: <type>} as NestedValueValidation sees it (example and
// externalDocs are not part of it; zero values are as good as absent).
bool IsBareType(const json& branch, std::string_view type) {
  if (!branch.is_object() || Text(branch, "type") != type) {
    return false;
  }
  for (auto it = branch.begin(); it != branch.end(); ++it) {
    const json& value = *it;
    bool zero = value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
                (value.is_string() && value.get_ref<const std::string&>().empty());
    if (it.key() != "type" && it.key() != "example" && it.key() != "externalDocs" && !zero) {
      return false;
    }
  }
  return true;
}

bool IsIntOrStringAnyOf(const json* any_of) {
  return any_of != nullptr && any_of->is_array() && any_of->size() == 2 &&
         IsBareType((*any_of)[0], "integer") && IsBareType((*any_of)[1], "string");
}

class StructuralChecker {
 public:
  std::vector<SchemaError> Check(const json& root, const std::string& path) {
    Invariants(root, Level::kRoot, path);
    Completeness(root, &root, path, path);
    std::sort(errors_.begin(), errors_.end(), [](const SchemaError& a, const SchemaError& b) {
      return a.ToString() < b.ToString();
    });
    return std::move(errors_);
  }

 private:
  void Invariants(const json& s, Level level, const std::string& path) {
    std::string type = Text(s, "type");
    const json* items = SubSchema(s, "items");
    if (type == "array" && items == nullptr) {
      errors_.push_back(Required(path + ".items", "must be specified"));
    }
    if (items != nullptr) {
      Invariants(*items, Level::kItem, path + ".items");
    }
    const json* properties = NonEmptyObject(s, "properties");
    if (properties != nullptr) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        if (it->is_object()) {
          Invariants(*it, Level::kField, PropertyPath(path, it.key()));
        }
      }
    }
    if (HasAdditionalProperties(s)) {
      if (level == Level::kRoot) {
        errors_.push_back(
            Forbidden(path + ".additionalProperties", "must not be used at the root"));
      }
      if (const json* additional = AdditionalSchema(s)) {
        Invariants(*additional, Level::kField, path + ".additionalProperties");
      }
    }
    bool int_or_string = Flag(s, kIntOrString);
    bool preserve = Flag(s, kPreserveUnknown);
    bool embedded = Flag(s, kEmbedded);
    if (int_or_string && preserve) {
      errors_.push_back(Invalid(path + "." + kPreserveUnknown, "true",
                                "must be false if x-kubernetes-int-or-string is true"));
    }
    if (int_or_string && embedded) {
      errors_.push_back(Invalid(path + "." + kEmbedded, "true",
                                "must be false if x-kubernetes-int-or-string is true"));
    }
    const json* all_of = NonEmptyArray(s, "allOf");
    bool skip_any_of = IsIntOrStringAnyOf(Field(s, "anyOf"));
    bool skip_first_all_of_any_of = all_of != nullptr && (*all_of)[0].is_object() &&
                                    IsIntOrStringAnyOf(Field((*all_of)[0], "anyOf"));
    ValueValidation(s, skip_any_of, skip_first_all_of_any_of, level, path);

    bool check_metadata = level == Level::kRoot || embedded;
    if (embedded && type != "object") {
      if (type.empty()) {
        errors_.push_back(
            Required(path + ".type", "must be object if x-kubernetes-embedded-resource is true"));
      } else {
        errors_.push_back(Invalid(path + ".type", GoQuote(type),
                                  "must be object if x-kubernetes-embedded-resource is true"));
      }
    } else if (type.empty() && !int_or_string && !preserve) {
      static const char* kWhere[] = {"must not be empty at the root",
                                     "must not be empty for specified array items",
                                     "must not be empty for specified object fields"};
      errors_.push_back(Required(path + ".type", kWhere[static_cast<int>(level)]));
    }
    if (embedded && HasAdditionalProperties(s)) {
      errors_.push_back(Forbidden(path + ".additionalProperties",
                                  "must not be used if x-kubernetes-embedded-resource is set"));
    }
    if (level == Level::kRoot && !type.empty() && type != "object") {
      errors_.push_back(Invalid(path + ".type", GoQuote(type), "must be object at the root"));
    }
    if (properties != nullptr && check_metadata) {
      for (const char* key : {"kind", "apiVersion"}) {
        if (const json* property = SubSchema(*properties, key);
            property != nullptr && Text(*property, "type") != "string") {
          errors_.push_back(Invalid(PropertyPath(path, key) + ".type",
                                    GoQuote(Text(*property, "type")), "must be string"));
        }
      }
    }
    if (properties != nullptr) {
      if (const json* metadata = SubSchema(*properties, "metadata")) {
        MetadataInvariants(*metadata, check_metadata, level, PropertyPath(path, "metadata"));
      }
    }
    if (embedded && !preserve && properties == nullptr) {
      errors_.push_back(
          Required(path + ".properties",
                   "must not be empty if x-kubernetes-embedded-resource is true without "
                   "x-kubernetes-preserve-unknown-fields"));
    }
  }

  // At the root, metadata may restrict name and generateName and nothing else (its type and
  // default are judged elsewhere).
  void MetadataInvariants(const json& metadata, bool check_metadata, Level level,
                          const std::string& path) {
    if (check_metadata && Text(metadata, "type") != "object") {
      errors_.push_back(Invalid(path + ".type", GoQuote(Text(metadata, "type")), "must be object"));
    }
    if (level != Level::kRoot) {
      return;
    }
    static const std::set<std::string, std::less<>> kIgnored = {"type", "default", "example",
                                                                "externalDocs"};
    bool restricted = false;
    for (auto it = metadata.begin(); it != metadata.end() && !restricted; ++it) {
      const json& value = *it;
      if (kIgnored.contains(it.key()) || value.is_null()) {
        continue;
      }
      if (it.key() == "properties") {
        if (!value.is_object()) {
          continue;
        }
        bool name = value.contains("name");
        bool generate_name = value.contains("generateName");
        std::size_t allowed = (name ? 1 : 0) + (generate_name ? 1 : 0);
        restricted = value.size() != allowed;
        continue;
      }
      bool zero = (value.is_boolean() && !value.get<bool>()) ||
                  (value.is_string() && value.get_ref<const std::string&>().empty()) ||
                  (value.is_array() && value.empty() &&
                   (it.key() == "enum" || it.key() == "allOf" || it.key() == "anyOf" ||
                    it.key() == "oneOf"));
      restricted = !zero;
    }
    if (restricted) {
      errors_.push_back(
          Forbidden(path,
                    "must not specify anything other than name and generateName, but metadata is "
                    "implicitly specified"));
    }
  }

  void ValueValidation(const json& v, bool skip_any_of, bool skip_first_all_of_any_of, Level level,
                       const std::string& path) {
    if (const json* any_of = NonEmptyArray(v, "anyOf"); any_of != nullptr && !skip_any_of) {
      for (std::size_t i = 0; i < any_of->size(); ++i) {
        Nested((*any_of)[i], false, level, Index(path + ".anyOf", i));
      }
    }
    if (const json* all_of = NonEmptyArray(v, "allOf")) {
      for (std::size_t i = 0; i < all_of->size(); ++i) {
        Nested((*all_of)[i], skip_first_all_of_any_of && i == 0, level, Index(path + ".allOf", i));
      }
    }
    if (const json* one_of = NonEmptyArray(v, "oneOf")) {
      for (std::size_t i = 0; i < one_of->size(); ++i) {
        Nested((*one_of)[i], false, level, Index(path + ".oneOf", i));
      }
    }
    if (const json* negated = SubSchema(v, "not")) {
      Nested(*negated, false, level, path + ".not");
    }
    if (std::string pattern = Text(v, "pattern"); !pattern.empty()) {
      if (GoRegexp compiled = CompileGoRegexp(pattern); compiled.re == nullptr) {
        errors_.push_back(
            Invalid(path + ".pattern", GoQuote(pattern),
                    "must be a valid regular expression, but isn't: " + compiled.error));
      }
    }
  }

  void Nested(const json& v, bool skip_any_of, Level level, const std::string& path) {
    if (!v.is_object()) {
      return;
    }
    ValueValidation(v, skip_any_of, false, level, path);
    if (const json* items = SubSchema(v, "items")) {
      Nested(*items, false, level, path + ".items");
    }
    const json* properties = NonEmptyObject(v, "properties");
    if (properties != nullptr) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        Nested(*it, false, Level::kField, PropertyPath(path, it.key()));
      }
    }
    auto forbid = [&](std::string_view key, std::string_view why) {
      errors_.push_back(Forbidden(path + "." + std::string(key), why));
    };
    if (!Text(v, "type").empty()) {
      forbid("type", "must be empty to be structural");
    }
    if (AdditionalSchema(v) != nullptr) {
      forbid("additionalProperties", "must be undefined to be structural");
    }
    if (Present(v, "default")) {
      forbid("default", "must be undefined to be structural");
    }
    if (!Text(v, "title").empty()) {
      forbid("title", "must be empty to be structural");
    }
    if (!Text(v, "description").empty()) {
      forbid("description", "must be empty to be structural");
    }
    if (Flag(v, "nullable")) {
      forbid("nullable", "must be false to be structural");
    }
    for (const char* key : {kPreserveUnknown, kEmbedded, kIntOrString}) {
      if (Flag(v, key)) {
        forbid(key, "must be false to be structural");
      }
    }
    if (NonEmptyArray(v, kListMapKeys) != nullptr) {
      forbid(kListMapKeys, "must be empty to be structural");
    }
    if (Present(v, kListType)) {
      forbid(kListType, "must be undefined to be structural");
    }
    if (Present(v, kMapType)) {
      forbid(kMapType, "must be undefined to be structural");
    }
    if (NonEmptyArray(v, kValidations) != nullptr) {
      forbid(kValidations, "must be empty to be structural");
    }
    if (properties != nullptr && properties->contains("metadata")) {
      errors_.push_back(
          Forbidden(PropertyPath(path, "metadata"), "must not be specified in a nested context"));
    }
  }

  // Every field or item a junctor at the root names must exist outside it (complete.go; nested
  // nodes' junctors are not checked by the server).
  void Completeness(const json& v, const json* s, const std::string& s_path,
                    const std::string& v_path) {
    if (const json* negated = SubSchema(v, "not")) {
      NestedCompleteness(*negated, s, s_path, v_path + ".not");
    }
    for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
      if (const json* branches = NonEmptyArray(v, junctor)) {
        for (std::size_t i = 0; i < branches->size(); ++i) {
          NestedCompleteness((*branches)[i], s, s_path, Index(v_path + "." + junctor, i));
        }
      }
    }
  }

  void NestedCompleteness(const json& v, const json* s, const std::string& s_path,
                          const std::string& v_path) {
    if (!v.is_object()) {
      return;
    }
    if (s == nullptr) {
      errors_.push_back(Required(s_path, "because it is defined in " + v_path));
      return;
    }
    Completeness(v, s, s_path, v_path);
    if (const json* items = SubSchema(v, "items")) {
      NestedCompleteness(*items, SubSchema(*s, "items"), s_path + ".items", v_path + ".items");
    }
    if (const json* properties = NonEmptyObject(v, "properties")) {
      const json* s_properties = SubSchema(*s, "properties");
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        const json* s_field =
            s_properties != nullptr ? SubSchema(*s_properties, it.key()) : nullptr;
        if (s_field == nullptr) {
          errors_.push_back(Required(PropertyPath(s_path, it.key()),
                                     "because it is defined in " + PropertyPath(v_path, it.key())));
        } else {
          NestedCompleteness(*it, s_field, PropertyPath(s_path, it.key()),
                             PropertyPath(v_path, it.key()));
        }
      }
    }
  }

  std::vector<SchemaError> errors_;
};

// ---- ValidateDefaults (schema/defaulting/validation.go) --------------------------------------

void ValidateDefaults(const json& s, const std::string& path, bool embedded, bool inside_meta,
                      bool require_pruned, std::vector<SchemaError>& errors) {
  if (embedded) {
    inside_meta = false;
  }
  if (const json* default_value = Field(s, "default")) {
    std::string default_path = path + ".default";
    if (inside_meta) {
      // The server checks it inside a surrounding object as metadata; its schema check is this.
      for (SchemaError& error : ValidateDefaultValue(s, *default_value, default_path)) {
        errors.push_back(std::move(error));
      }
    } else {
      if (require_pruned && !DefaultIsPruned(s, *default_value)) {
        errors.push_back(
            Invalid(default_path, GoValue(*default_value), "must not have unknown fields"));
      }
      std::vector<SchemaError> meta_errors =
          ValidateEmbeddedDefault(s, *default_value, default_path);
      if (!meta_errors.empty()) {
        errors.insert(errors.end(), meta_errors.begin(), meta_errors.end());
      } else {
        for (SchemaError& error : ValidateDefaultValue(s, *default_value, default_path)) {
          errors.push_back(std::move(error));
        }
      }
    }
  }
  if (const json* items = SubSchema(s, "items")) {
    ValidateDefaults(*items, path + ".items", Flag(*items, kEmbedded), inside_meta, require_pruned,
                     errors);
  }
  if (const json* properties = NonEmptyObject(s, "properties")) {
    for (auto it = properties->begin(); it != properties->end(); ++it) {
      if (!it->is_object()) {
        continue;
      }
      bool sub_inside_meta =
          inside_meta ||
          (embedded && (it.key() == "metadata" || it.key() == "apiVersion" || it.key() == "kind"));
      ValidateDefaults(*it, PropertyPath(path, it.key()), Flag(*it, kEmbedded), sub_inside_meta,
                       require_pruned, errors);
    }
  }
}

// ---- The per-node walk (ValidateCustomResourceDefinitionOpenAPISchema) ------------------------

// specStandardValidatorV3's state along the walk.
struct NodeRules {
  bool allow_defaults = true;
  std::string disallow_defaults_reason;
  bool inside_resource_meta = false;
  std::string uncorrelatable_path;  // where oldSelf stopped being usable, if anywhere

  NodeRules WithForbiddenDefaults(std::string reason) const {
    NodeRules copy = *this;
    copy.allow_defaults = false;
    copy.disallow_defaults_reason = std::move(reason);
    return copy;
  }
  NodeRules WithUncorrelatable(const std::string& path) const {
    NodeRules copy = *this;
    if (copy.uncorrelatable_path.empty()) {
      copy.uncorrelatable_path = path;
    }
    return copy;
  }
};

struct WalkErrors {
  std::vector<SchemaError> schema;
  std::vector<SchemaError> cel;

  void Append(WalkErrors other) {
    schema.insert(schema.end(), other.schema.begin(), other.schema.end());
    cel.insert(cel.end(), other.cel.begin(), other.cel.end());
  }
};

bool HasNewlines(std::string_view text) {
  return text.find_first_of("\n\r") != std::string_view::npos;
}

const std::set<std::string, std::less<>>& OpenApiTypes() {
  static const std::set<std::string, std::less<>> kTypes = {"array",  "boolean", "integer",
                                                            "number", "object",  "string"};
  return kTypes;
}

std::vector<SchemaError> MapListKeysMapSet(const json& node, const std::string& path) {
  std::vector<SchemaError> errors;
  const json* items = SubSchema(node, "items");
  const json* list_type = Field(node, kListType);
  if (items == nullptr || list_type == nullptr || !list_type->is_string()) {
    return errors;
  }
  std::string type = list_type->get<std::string>();
  if (type != "set" && type != "map") {
    return errors;
  }
  if (Flag(*items, "nullable")) {
    errors.push_back(Forbidden(path + ".items.nullable",
                               "cannot be nullable when x-kubernetes-list-type is " + type));
  }
  if (type == "map") {
    std::vector<std::string> required = Strings(*items, "required");
    const json* properties = SubSchema(*items, "properties");
    for (const std::string& key : Strings(node, kListMapKeys)) {
      const json* property = properties != nullptr ? SubSchema(*properties, key) : nullptr;
      if (property == nullptr) {
        continue;
      }
      std::string property_path = PropertyPath(path + ".items", key);
      if (std::find(required.begin(), required.end(), key) == required.end() &&
          !Present(*property, "default")) {
        errors.push_back(Required(
            property_path + ".default",
            "this property is in x-kubernetes-list-map-keys, so it must have a default or be a "
            "required property"));
      }
      if (Flag(*property, "nullable")) {
        errors.push_back(
            Forbidden(property_path + ".nullable",
                      "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"));
      }
    }
  }
  return errors;
}

class SchemaWalker {
 public:
  SchemaWalker(const json& root, const SchemaCheckOptions& options)
      : root_(root), options_(options) {}

  WalkErrors Walk(const json& schema, const std::string& path, const NodeRules& rules, bool is_root,
                  bool cel_allowed) {
    WalkErrors errors;
    if (!schema.is_object()) {
      return errors;
    }
    std::vector<SchemaError>& out = errors.schema;
    NodeStandardRules(schema, path, rules, out);
    if (Flag(schema, "uniqueItems")) {
      out.push_back(Forbidden(path + ".uniqueItems",
                              "uniqueItems cannot be set to true since the runtime complexity "
                              "becomes quadratic"));
    }
    if (HasAdditionalProperties(schema)) {
      const json* additional = Field(schema, "additionalProperties");
      bool allows = additional->is_object() || additional->get<bool>();
      if (NonEmptyObject(schema, "properties") != nullptr && (!allows || additional->is_object())) {
        out.push_back(Forbidden(path + ".additionalProperties",
                                "additionalProperties and properties are mutual exclusive"));
      }
      NodeRules sub = rules;
      if (rules.inside_resource_meta) {
        sub =
            rules.WithForbiddenDefaults("inside additionalProperties applying to object metadata");
      }
      if (const json* additional_schema = AdditionalSchema(schema)) {
        errors.Append(
            Walk(*additional_schema, path + ".additionalProperties", sub, false, cel_allowed));
      }
    }
    if (const json* properties = NonEmptyObject(schema, "properties")) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        NodeRules sub = rules;
        if (!MapIsCorrelatable(schema)) {
          sub = sub.WithUncorrelatable(path);
        }
        bool meta_field = it.key() == "metadata" || it.key() == "kind" || it.key() == "apiVersion";
        if ((is_root || Flag(schema, kEmbedded)) && meta_field) {
          sub.inside_resource_meta = true;
          if (is_root) {
            sub = sub.WithForbiddenDefaults("in top-level " + it.key());
          }
        }
        errors.Append(Walk(*it, PropertyPath(path, it.key()), sub, false, cel_allowed));
      }
    }
    if (const json* negated = SubSchema(schema, "not")) {
      errors.Append(Walk(*negated, path + ".not", rules, false, false));
    }
    for (const char* junctor : {"allOf", "oneOf", "anyOf"}) {
      if (const json* branches = NonEmptyArray(schema, junctor)) {
        for (std::size_t i = 0; i < branches->size(); ++i) {
          errors.Append(Walk((*branches)[i], Index(path + "." + junctor, i), rules, false, false));
        }
      }
    }
    if (const json* definitions = NonEmptyObject(schema, "definitions")) {
      for (auto it = definitions->begin(); it != definitions->end(); ++it) {
        errors.Append(Walk(*it, path + ".definitions[" + it.key() + "]", rules, false, false));
      }
    }
    if (const json* items = Field(schema, "items")) {
      NodeRules sub = rules;
      if (Text(schema, kListType) != "map") {
        sub = sub.WithUncorrelatable(path);
      }
      if (items->is_object()) {
        errors.Append(Walk(*items, path + ".items", sub, false, cel_allowed));
      } else if (items->is_array()) {
        for (std::size_t i = 0; i < items->size(); ++i) {
          errors.Append(Walk((*items)[i], Index(path + ".items", i), sub, false, cel_allowed));
        }
      }
    }
    if (const json* dependencies = Field(schema, "dependencies");
        dependencies != nullptr && dependencies->is_object()) {
      for (auto it = dependencies->begin(); it != dependencies->end(); ++it) {
        if (it->is_object()) {
          errors.Append(Walk(*it, path + ".dependencies[" + it.key() + "]", rules, false, false));
        }
      }
    }
    ExtensionRules(schema, path, out);
    if (options_.require_map_list_keys_map_set_validation) {
      for (SchemaError& error : MapListKeysMapSet(schema, path)) {
        out.push_back(std::move(error));
      }
    }
    if (const json* validations = NonEmptyArray(schema, kValidations)) {
      ValidationRules(schema, *validations, path + "." + kValidations, out);
      // The CEL seam: the server compiles this node's rules only when the root CEL context
      // exists (`cel_allowed`: structural, ValidateStructural and ValidateDefaults clean; not
      // below a junctor) and neither this node nor anything below it has a schema error
      // (`errors.schema` holds this subtree's). See CelCompileRequest for the full story.
      if (errors.schema.empty() && cel_allowed && options_.compile_cel) {
        CelCompileRequest request{schema, root_, path + "." + kValidations,
                                  rules.uncorrelatable_path};
        request.suppress_per_expression_cost = options_.suppress_per_expression_cost;
        request.preexisting_rules = &options_.preexisting_rules;
        request.preexisting_message_expressions = &options_.preexisting_message_expressions;
        for (SchemaError& error : options_.compile_cel(request)) {
          errors.cel.push_back(std::move(error));
        }
      }
    }
    return errors;
  }

 private:
  // specStandardValidatorV3.validate.
  void NodeStandardRules(const json& schema, const std::string& path, const NodeRules& rules,
                         std::vector<SchemaError>& out) const {
    std::string type = Text(schema, "type");
    if (options_.require_valid_property_type && !type.empty() && !OpenApiTypes().contains(type)) {
      out.push_back(NotSupported(path + ".type", GoQuote(type),
                                 {OpenApiTypes().begin(), OpenApiTypes().end()}));
    }
    if (Present(schema, "default") && !rules.allow_defaults) {
      std::string detail = "must not be set";
      if (!rules.disallow_defaults_reason.empty()) {
        detail += " " + rules.disallow_defaults_reason;
      }
      out.push_back(Forbidden(path + ".default", detail));
    }
    if (!Text(schema, "id").empty()) {
      out.push_back(Forbidden(path + ".id", "id is not supported"));
    }
    if (Present(schema, "additionalItems")) {
      out.push_back(Forbidden(path + ".additionalItems", "additionalItems is not supported"));
    }
    if (NonEmptyObject(schema, "patternProperties") != nullptr) {
      out.push_back(Forbidden(path + ".patternProperties", "patternProperties is not supported"));
    }
    if (NonEmptyObject(schema, "definitions") != nullptr) {
      out.push_back(Forbidden(path + ".definitions", "definitions is not supported"));
    }
    if (Present(schema, "dependencies")) {
      out.push_back(Forbidden(path + ".dependencies", "dependencies is not supported"));
    }
    if (Present(schema, "$ref")) {
      out.push_back(Forbidden(path + ".$ref", "$ref is not supported"));
    }
    if (type == "null") {
      out.push_back(
          Forbidden(path + ".type", "type cannot be set to null, use nullable as an alternative"));
    }
    if (const json* items = Field(schema, "items");
        items != nullptr && items->is_array() && !items->empty()) {
      out.push_back(Forbidden(path + ".items", "items must be a schema object and not an array"));
    }
    if (rules.inside_resource_meta && Flag(schema, kEmbedded)) {
      out.push_back(Forbidden(path + "." + kEmbedded, "must not be used inside of resource meta"));
    }
  }

  void ExtensionRules(const json& schema, const std::string& path,
                      std::vector<SchemaError>& out) const {
    std::string type = Text(schema, "type");
    if (const json* preserve = Field(schema, kPreserveUnknown);
        preserve != nullptr && preserve->is_boolean() && !preserve->get<bool>()) {
      out.push_back(Invalid(path + "." + kPreserveUnknown, "false", "must be true or undefined"));
    }
    const json* map_type = Field(schema, kMapType);
    if (map_type != nullptr && type != "object") {
      if (type.empty()) {
        out.push_back(
            Required(path + ".type", "must be object if x-kubernetes-map-type is specified"));
      } else {
        out.push_back(Invalid(path + ".type", GoQuote(type),
                              "must be object if x-kubernetes-map-type is specified"));
      }
    }
    if (map_type != nullptr) {
      std::string value = map_type->is_string() ? map_type->get<std::string>() : "";
      if (value != "atomic" && value != "granular") {
        out.push_back(NotSupported(path + "." + kMapType, GoQuote(value), {"atomic", "granular"}));
      }
    }
    const json* list_type_json = Field(schema, kListType);
    std::string list_type = list_type_json != nullptr && list_type_json->is_string()
                                ? list_type_json->get<std::string>()
                                : "";
    const json* items = Field(schema, "items");
    if (list_type_json != nullptr && type != "array") {
      if (type.empty()) {
        out.push_back(
            Required(path + ".type", "must be array if x-kubernetes-list-type is specified"));
      } else {
        out.push_back(Invalid(path + ".type", GoQuote(type),
                              "must be array if x-kubernetes-list-type is specified"));
      }
    } else if (options_.require_atomic_set_type && list_type == "set" && items != nullptr &&
               items->is_object()) {
      std::string items_type = Text(*items, "type");
      const json* items_list_type = Field(*items, kListType);
      if (items_type == "array") {
        if (items_list_type != nullptr && Text(*items, kListType) != "atomic") {
          out.push_back(
              Invalid(path + ".items." + kListType, GoQuote(Text(*items, kListType)),
                      "must be atomic as item of a list with x-kubernetes-list-type=set"));
        }
      } else if (items_type == "object") {
        if (Text(*items, kMapType) != "atomic") {
          out.push_back(Invalid(
              path + ".items." + kMapType,
              items_list_type != nullptr ? GoQuote(Text(*items, kListType)) : GoQuote("null"),
              "must be atomic as item of a list with x-kubernetes-list-type=set"));
        }
      }
    }
    if (list_type_json != nullptr && list_type != "atomic" && list_type != "set" &&
        list_type != "map") {
      out.push_back(
          NotSupported(path + "." + kListType, GoQuote(list_type), {"atomic", "set", "map"}));
    }
    std::vector<std::string> map_keys = Strings(schema, kListMapKeys);
    if (!map_keys.empty()) {
      if (list_type_json == nullptr) {
        out.push_back(Required(path + "." + kListType,
                               "must be map if x-kubernetes-list-map-keys is non-empty"));
      } else if (list_type != "map") {
        out.push_back(Invalid(path + "." + kListType, GoQuote(list_type),
                              "must be map if x-kubernetes-list-map-keys is non-empty"));
      }
    }
    if (list_type == "map") {
      if (map_keys.empty()) {
        out.push_back(Required(path + "." + kListMapKeys,
                               "must not be empty if x-kubernetes-list-type is map"));
      }
      if (items == nullptr) {
        out.push_back(
            Required(path + ".items", "must have a schema if x-kubernetes-list-type is map"));
      } else if (items->is_array()) {
        out.push_back(Invalid(path + ".items", "&apiextensions.JSONSchemaPropsOrArray{...}",
                              "must only have a single schema if x-kubernetes-list-type is map"));
      } else if (Text(*items, "type") != "object") {
        out.push_back(Invalid(path + ".items.type", GoQuote(Text(*items, "type")),
                              "must be object if parent array's x-kubernetes-list-type is map"));
      } else {
        const json* properties = SubSchema(*items, "properties");
        std::set<std::string> seen;
        for (const std::string& key : map_keys) {
          if (const json* property =
                  properties != nullptr ? SubSchema(*properties, key) : nullptr) {
            std::string key_type = Text(*property, "type");
            if (key_type == "array" || key_type == "object") {
              out.push_back(
                  Invalid(PropertyPath(path + ".items", key) + ".type", GoQuote("object"),
                          "must be a scalar type if parent array's x-kubernetes-list-type is map"));
            }
          } else {
            out.push_back(Invalid(path + "." + kListMapKeys, GoStringSlice(map_keys),
                                  "entries must all be names of item properties"));
          }
          if (!seen.insert(key).second) {
            out.push_back(Invalid(path + "." + kListMapKeys, GoStringSlice(map_keys),
                                  "must not contain duplicate entries"));
          }
        }
      }
    }
  }

  static void ValidationRules(const json& schema, const json& validations, const std::string& path,
                              std::vector<SchemaError>& out) {
    static const std::vector<std::string> kReasons = {"FieldValueDuplicate", "FieldValueForbidden",
                                                      "FieldValueInvalid", "FieldValueRequired"};
    for (std::size_t i = 0; i < validations.size(); ++i) {
      const json& rule = validations[i];
      std::string at = Index(path, i);
      std::string rule_text = Text(rule, "rule");
      std::string message = Text(rule, "message");
      std::string trimmed_rule = TrimSpace(rule_text);
      std::string trimmed_message = TrimSpace(message);
      if (trimmed_rule.empty()) {
        out.push_back(Required(at + ".rule", "rule is not specified"));
      } else if (!message.empty() && trimmed_message.empty()) {
        out.push_back(
            Invalid(at + ".message", GoQuote(message), "message must be non-empty if specified"));
      } else if (HasNewlines(trimmed_message)) {
        out.push_back(
            Invalid(at + ".message", GoQuote(message), "message must not contain line breaks"));
      } else if (HasNewlines(trimmed_rule) && trimmed_message.empty()) {
        out.push_back(
            Required(at + ".message", "message must be specified if rule contains line breaks"));
      }
      std::string message_expression = Text(rule, "messageExpression");
      if (!message_expression.empty() && TrimSpace(message_expression).empty()) {
        out.push_back(Required(at + ".messageExpression",
                               "messageExpression must be non-empty if specified"));
      }
      if (const json* reason = Field(rule, "reason");
          reason != nullptr && reason->is_string() &&
          std::find(kReasons.begin(), kReasons.end(), reason->get<std::string>()) ==
              kReasons.end()) {
        out.push_back(NotSupported(at + ".reason", GoQuote(reason->get<std::string>()), kReasons));
      }
      std::string field_path = Text(rule, "fieldPath");
      if (!field_path.empty() && TrimSpace(field_path).empty()) {
        out.push_back(Invalid(at + ".fieldPath", GoQuote(field_path),
                              "fieldPath must be non-empty if specified"));
      }
      if (HasNewlines(field_path)) {
        out.push_back(Invalid(at + ".fieldPath", GoQuote(field_path),
                              "fieldPath must not contain line breaks"));
      }
      if (!field_path.empty() && NewStructuralError(schema).empty() &&
          !ValidFieldPath(field_path, schema)) {
        out.push_back(
            Invalid(at + ".fieldPath", GoQuote(field_path), "fieldPath must be a valid path"));
      }
    }
  }

  const json& root_;
  const SchemaCheckOptions& options_;
};

// The JSONSchemaProps fields in Go's declaration order, with whether they may appear at the root
// of a schema whose version has the status subresource.
struct RootField {
  std::string_view key;
  std::string_view go_name;
  bool allowed;
};

const std::vector<RootField>& RootFields() {
  static const std::vector<RootField> kFields = {
      {"id", "ID", false},
      {"$schema", "Schema", false},
      {"$ref", "Ref", false},
      {"description", "Description", true},
      {"type", "Type", true},
      {"nullable", "Nullable", false},
      {"format", "Format", true},
      {"title", "Title", true},
      {"default", "Default", false},
      {"maximum", "Maximum", true},
      {"exclusiveMaximum", "ExclusiveMaximum", true},
      {"minimum", "Minimum", true},
      {"exclusiveMinimum", "ExclusiveMinimum", true},
      {"maxLength", "MaxLength", true},
      {"minLength", "MinLength", true},
      {"pattern", "Pattern", true},
      {"maxItems", "MaxItems", true},
      {"minItems", "MinItems", true},
      {"uniqueItems", "UniqueItems", true},
      {"multipleOf", "MultipleOf", true},
      {"enum", "Enum", false},
      {"maxProperties", "MaxProperties", false},
      {"minProperties", "MinProperties", false},
      {"required", "Required", true},
      {"items", "Items", true},
      {"allOf", "AllOf", false},
      {"oneOf", "OneOf", false},
      {"anyOf", "AnyOf", false},
      {"not", "Not", false},
      {"properties", "Properties", true},
      {"additionalProperties", "AdditionalProperties", false},
      {"patternProperties", "PatternProperties", false},
      {"dependencies", "Dependencies", false},
      {"additionalItems", "AdditionalItems", false},
      {"definitions", "Definitions", false},
      {"externalDocs", "ExternalDocs", true},
      {"example", "Example", true},
      {kPreserveUnknown, "XPreserveUnknownFields", true},
      {kEmbedded, "XEmbeddedResource", false},
      {kIntOrString, "XIntOrString", false},
      {kListMapKeys, "XListMapKeys", false},
      {kListType, "XListType", false},
      {kMapType, "XMapType", false},
      {kValidations, "XValidations", true},
  };
  return kFields;
}

// Whether a decoded field is non-zero (Go's reflect zero check over the internal type).
bool NonZero(const json& value) {
  return !(value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
           (value.is_string() && value.get_ref<const std::string&>().empty()));
}

void StatusRootRules(const json& schema, const std::string& path, std::vector<SchemaError>& out) {
  std::string allowed;
  for (const RootField& field : RootFields()) {
    if (field.allowed) {
      allowed += (allowed.empty() ? "" : " ") + std::string(field.go_name);
    }
  }
  for (const RootField& field : RootFields()) {
    const json* value = Field(schema, field.key);
    if (value == nullptr || !NonZero(*value)) {
      continue;
    }
    if (field.key == "type") {
      if (Text(schema, "type") != "object") {
        out.push_back(Invalid(
            path + ".type", GoQuote(Text(schema, "type")),
            "only \"object\" is allowed as the type at the root of the schema if the status "
            "subresource is enabled"));
        return;
      }
      continue;
    }
    if (!field.allowed) {
      out.push_back(Invalid(path, GoSchemaDump(schema),
                            "only [" + allowed +
                                "] fields are allowed at the root of the schema if the status "
                                "subresource is enabled"));
      return;
    }
  }
}

bool SchemaHas(const json& node, const std::function<bool(const json&)>& predicate) {
  if (!node.is_object()) {
    return false;
  }
  if (predicate(node)) {
    return true;
  }
  auto any_in = [&](const json* container) {
    if (container == nullptr) {
      return false;
    }
    for (const json& child : *container) {
      if (SchemaHas(child, predicate)) {
        return true;
      }
    }
    return false;
  };
  const json* items = Field(node, "items");
  if (items != nullptr &&
      (items->is_object() ? SchemaHas(*items, predicate) : items->is_array() && any_in(items))) {
    return true;
  }
  for (const char* key : {"allOf", "anyOf", "oneOf", "properties", "patternProperties",
                          "definitions", "dependencies"}) {
    const json* container = Field(node, key);
    if (container != nullptr && (container->is_array() || container->is_object()) &&
        any_in(container)) {
      return true;
    }
  }
  for (const char* key : {"not", "additionalProperties", "additionalItems"}) {
    if (const json* child = SubSchema(node, key);
        child != nullptr && SchemaHas(*child, predicate)) {
      return true;
    }
  }
  return false;
}

// Strict decoding's view: which keys JSONSchemaProps (and its nested types) know.
void CollectUnknown(const json& node, const std::string& path, std::vector<std::string>& out) {
  static const std::set<std::string, std::less<>> kKnown = {"id",
                                                            "$schema",
                                                            "$ref",
                                                            "description",
                                                            "type",
                                                            "nullable",
                                                            "format",
                                                            "title",
                                                            "default",
                                                            "maximum",
                                                            "exclusiveMaximum",
                                                            "minimum",
                                                            "exclusiveMinimum",
                                                            "maxLength",
                                                            "minLength",
                                                            "pattern",
                                                            "maxItems",
                                                            "minItems",
                                                            "uniqueItems",
                                                            "multipleOf",
                                                            "enum",
                                                            "maxProperties",
                                                            "minProperties",
                                                            "required",
                                                            "items",
                                                            "allOf",
                                                            "oneOf",
                                                            "anyOf",
                                                            "not",
                                                            "properties",
                                                            "additionalProperties",
                                                            "patternProperties",
                                                            "dependencies",
                                                            "additionalItems",
                                                            "definitions",
                                                            "externalDocs",
                                                            "example",
                                                            kPreserveUnknown,
                                                            kEmbedded,
                                                            kIntOrString,
                                                            kListMapKeys,
                                                            kListType,
                                                            kMapType,
                                                            kValidations};
  static const std::set<std::string, std::less<>> kRuleFields = {
      "rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"};
  if (!node.is_object()) {
    return;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& key = it.key();
    std::string child = path + "." + key;
    if (!kKnown.contains(key)) {
      out.push_back(child);
      continue;
    }
    const json& value = *it;
    if (key == "properties" || key == "patternProperties" || key == "definitions" ||
        key == "dependencies") {
      if (value.is_object()) {
        for (auto entry = value.begin(); entry != value.end(); ++entry) {
          CollectUnknown(*entry, child + "." + entry.key(), out);
        }
      }
    } else if (key == "allOf" || key == "anyOf" || key == "oneOf" ||
               (key == "items" && value.is_array())) {
      if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i) {
          CollectUnknown(value[i], Index(child, i), out);
        }
      }
    } else if (key == "items" || key == "not" || key == "additionalProperties" ||
               key == "additionalItems") {
      CollectUnknown(value, child, out);
    } else if (key == "externalDocs" && value.is_object()) {
      for (auto entry = value.begin(); entry != value.end(); ++entry) {
        if (entry.key() != "description" && entry.key() != "url") {
          out.push_back(child + "." + entry.key());
        }
      }
    } else if (key == kValidations && value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i].is_object()) {
          for (auto entry = value[i].begin(); entry != value[i].end(); ++entry) {
            if (!kRuleFields.contains(entry.key())) {
              out.push_back(Index(child, i) + "." + entry.key());
            }
          }
        }
      }
    }
  }
}

void CollectDescriptionLint(const json& node, const std::string& path, bool needs, bool waived,
                            std::vector<SchemaError>& out) {
  if (!node.is_object()) {
    return;
  }
  // The server refuses a description on the root's metadata (it may only restrict name and
  // generateName), so the lint cannot ask for one there.
  if (path == "openAPIV3Schema.properties[metadata]") {
    needs = false;
  }
  if (needs && !waived) {
    std::string description = Text(node, "description");
    if (description.find_first_not_of(" \t\n") == std::string::npos) {
      out.push_back(Required(path + ".description", "must not be empty"));
    }
  }
  bool waive_below =
      waived || (Flag(node, kPreserveUnknown) && Field(node, "properties") == nullptr);
  if (const json* properties = SubSchema(node, "properties")) {
    for (auto it = properties->begin(); it != properties->end(); ++it) {
      CollectDescriptionLint(*it, PropertyPath(path, it.key()), true, waive_below, out);
    }
  }
  if (const json* additional = AdditionalSchema(node)) {
    CollectDescriptionLint(*additional, path + ".additionalProperties", false, waive_below, out);
  }
  if (const json* items = SubSchema(node, "items")) {
    CollectDescriptionLint(*items, path + ".items", false, waive_below, out);
  }
}

bool IsStructural(const json& schema) {
  return NewStructuralError(schema).empty() && StructuralChecker().Check(schema, "").empty();
}

// defaulting.PruneDefaults would change a default: some default has fields its schema prunes.
bool HasUnprunedDefaults(const json& schema) {
  if (!SchemaHasDefaults(schema) || !IsStructural(schema)) {
    return false;
  }
  bool unpruned = false;
  std::function<void(const json&)> visit = [&](const json& node) {
    if (!node.is_object() || unpruned) {
      return;
    }
    if (const json* default_value = Field(node, "default");
        default_value != nullptr && !DefaultIsPruned(node, *default_value)) {
      unpruned = true;
    }
    if (const json* items = SubSchema(node, "items")) {
      visit(*items);
    }
    if (const json* properties = SubSchema(node, "properties")) {
      for (const json& property : *properties) {
        visit(property);
      }
    }
    if (const json* additional = AdditionalSchema(node)) {
      visit(*additional);
    }
  };
  visit(schema);
  return unpruned;
}

enum class Shape {
  kAny,
  kString,
  kBool,
  kInt,
  kFloat,
  kStrings,
  kSchema,
  kSchemas,
  kSchemaMap,
  kSchemaOrArray,
  kSchemaOrBool,
  kObject,
  kRules
};

const std::map<std::string, std::pair<Shape, std::string_view>, std::less<>>& KeywordShapes() {
  static const std::map<std::string, std::pair<Shape, std::string_view>, std::less<>> kShapes = {
      {"id", {Shape::kString, "string"}},
      {"$schema", {Shape::kString, "v1.JSONSchemaURL"}},
      {"$ref", {Shape::kString, "string"}},
      {"description", {Shape::kString, "string"}},
      {"type", {Shape::kString, "string"}},
      {"format", {Shape::kString, "string"}},
      {"title", {Shape::kString, "string"}},
      {"pattern", {Shape::kString, "string"}},
      {kListType, {Shape::kString, "string"}},
      {kMapType, {Shape::kString, "string"}},
      {"nullable", {Shape::kBool, "bool"}},
      {"uniqueItems", {Shape::kBool, "bool"}},
      {"exclusiveMaximum", {Shape::kBool, "bool"}},
      {"exclusiveMinimum", {Shape::kBool, "bool"}},
      {kPreserveUnknown, {Shape::kBool, "bool"}},
      {kEmbedded, {Shape::kBool, "bool"}},
      {kIntOrString, {Shape::kBool, "bool"}},
      {"maxLength", {Shape::kInt, "int64"}},
      {"minLength", {Shape::kInt, "int64"}},
      {"maxItems", {Shape::kInt, "int64"}},
      {"minItems", {Shape::kInt, "int64"}},
      {"maxProperties", {Shape::kInt, "int64"}},
      {"minProperties", {Shape::kInt, "int64"}},
      {"maximum", {Shape::kFloat, "float64"}},
      {"minimum", {Shape::kFloat, "float64"}},
      {"multipleOf", {Shape::kFloat, "float64"}},
      {"required", {Shape::kStrings, "[]string"}},
      {kListMapKeys, {Shape::kStrings, "[]string"}},
      {"not", {Shape::kSchema, "v1.JSONSchemaProps"}},
      {"allOf", {Shape::kSchemas, "[]v1.JSONSchemaProps"}},
      {"anyOf", {Shape::kSchemas, "[]v1.JSONSchemaProps"}},
      {"oneOf", {Shape::kSchemas, "[]v1.JSONSchemaProps"}},
      {"properties", {Shape::kSchemaMap, "map[string]v1.JSONSchemaProps"}},
      {"patternProperties", {Shape::kSchemaMap, "map[string]v1.JSONSchemaProps"}},
      {"definitions", {Shape::kSchemaMap, "v1.JSONSchemaDefinitions"}},
      {"dependencies", {Shape::kObject, "v1.JSONSchemaDependencies"}},
      {"items", {Shape::kSchemaOrArray, "v1.JSONSchemaPropsOrArray"}},
      {"additionalProperties", {Shape::kSchemaOrBool, "v1.JSONSchemaPropsOrBool"}},
      {"additionalItems", {Shape::kSchemaOrBool, "v1.JSONSchemaPropsOrBool"}},
      {"externalDocs", {Shape::kObject, "v1.ExternalDocumentation"}},
      {kValidations, {Shape::kRules, "v1.ValidationRules"}},
      {"enum", {Shape::kAny, ""}},
      {"default", {Shape::kAny, ""}},
      {"example", {Shape::kAny, ""}},
  };
  return kShapes;
}

std::string DecodeErrorIn(const json& node, const std::string& go_path);

// The first error `error_of` finds among `entries` (a list, or a map's values), or "".
template <typename ErrorOf>
std::string FirstError(const json& entries, const ErrorOf& error_of) {
  for (const json& entry : entries) {
    if (std::string error = error_of(entry); !error.empty()) {
      return error;
    }
  }
  return "";
}

// Why a keyword's non-null `value` of `shape` cannot decode at Go field path `field`, or "".
std::string KeywordDecodeError(Shape shape, std::string_view go_type, const json& value,
                               const std::string& field) {
  std::string struct_field = "struct field JSONSchemaProps." + field + " of type ";
  auto mismatch = [&](bool integer = false) {
    return UnmarshalError(value, struct_field + std::string(go_type), integer);
  };
  auto schemas = [&] {
    return FirstError(value, [&](const json& entry) { return DecodeErrorIn(entry, field); });
  };
  // Entries that must be `entry_type` in Go (null decodes to the zero value).
  auto entries = [&](bool (json::*is_ok)() const noexcept, std::string_view entry_type) {
    return FirstError(value, [&](const json& entry) {
      return (entry.*is_ok)() || entry.is_null()
                 ? ""
                 : UnmarshalError(entry, struct_field + std::string(entry_type));
    });
  };
  switch (shape) {
    case Shape::kAny:
      return "";
    case Shape::kString:
      return value.is_string() ? "" : mismatch();
    case Shape::kBool:
      return value.is_boolean() ? "" : mismatch();
    case Shape::kInt:
      return IsGoInt64(value) ? "" : mismatch(true);
    case Shape::kFloat:
      return value.is_number() ? "" : mismatch();
    case Shape::kStrings:
      return value.is_array() ? entries(&json::is_string, "string") : mismatch();
    case Shape::kRules:
      return value.is_array() ? entries(&json::is_object, "v1.ValidationRule") : mismatch();
    case Shape::kObject:
      return value.is_object() ? "" : mismatch();
    case Shape::kSchema:
      return value.is_object() ? DecodeErrorIn(value, field) : mismatch();
    case Shape::kSchemas:
      return value.is_array() ? schemas() : mismatch();
    case Shape::kSchemaMap:
      return value.is_object() ? schemas() : mismatch();
    // Other JSON types fail as a schema would ("into Go value of type v1.JSONSchemaProps").
    case Shape::kSchemaOrArray:
      return value.is_array() ? schemas() : DecodeErrorIn(value, field);
    case Shape::kSchemaOrBool:
      return value.is_boolean() ? "" : DecodeErrorIn(value, field);
  }
  return "";
}

std::string DecodeErrorIn(const json& node, const std::string& go_path) {
  if (!node.is_object()) {
    return node.is_null() ? "" : UnmarshalError(node, "value of type v1.JSONSchemaProps");
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    auto shape = KeywordShapes().find(it.key());
    if (shape == KeywordShapes().end() || it->is_null()) {
      continue;
    }
    if (std::string error = KeywordDecodeError(shape->second.first, shape->second.second, *it,
                                               go_path + "." + it.key());
        !error.empty()) {
      return error;
    }
  }
  return "";
}

}  // namespace

std::string SchemaDecodeError(const json& schema, const std::string& go_path) {
  return DecodeErrorIn(schema, go_path);
}

std::vector<SchemaError> ValidateSchema(const json& schema, const std::string& path,
                                        const SchemaCheckOptions& options) {
  std::vector<SchemaError> errors;
  if (!schema.is_object()) {
    return errors;
  }
  if (options.status_subresource) {
    StatusRootRules(schema, path, errors);
  }
  if (Flag(schema, "nullable")) {
    errors.push_back(Forbidden(path + ".nullable", "nullable cannot be true at the root"));
  }
  bool cel_allowed = false;
  std::string structural_init_error;
  if (options.require_structural) {
    if (std::string error = NewStructuralError(schema); !error.empty()) {
      structural_init_error = error;
    } else if (std::vector<SchemaError> structural = StructuralChecker().Check(schema, path);
               !structural.empty()) {
      errors.insert(errors.end(), structural.begin(), structural.end());
    } else {
      std::vector<SchemaError> defaults;
      ValidateDefaults(schema, path, true, false, options.require_pruned_defaults, defaults);
      if (!defaults.empty()) {
        errors.insert(errors.end(), defaults.begin(), defaults.end());
      } else {
        cel_allowed = true;
      }
    }
  }
  SchemaWalker walker(schema, options);
  WalkErrors walked = walker.Walk(schema, path, NodeRules{}, true, cel_allowed);
  errors.insert(errors.end(), walked.schema.begin(), walked.schema.end());
  errors.insert(errors.end(), walked.cel.begin(), walked.cel.end());
  if (errors.empty() && !structural_init_error.empty()) {
    errors.push_back(Invalid(path, GoQuote(""), structural_init_error));
  }
  // The per-schema CEL cost total, checked only where the root CEL context existed.
  if (cel_allowed && options.cel_total_cost_errors) {
    for (SchemaError& error : options.cel_total_cost_errors(path)) {
      errors.push_back(std::move(error));
    }
  }
  return errors;
}

SchemaBreaks OldSchemaBreaks(const json& schema) {
  SchemaBreaks breaks;
  breaks.invalid_property_type = SchemaHas(schema, [](const json& node) {
    std::string type = Text(node, "type");
    return !type.empty() && !OpenApiTypes().contains(type);
  });
  breaks.non_structural = !IsStructural(schema);
  breaks.unpruned_defaults = HasUnprunedDefaults(schema);
  breaks.non_atomic_set_items = SchemaHas(schema, [](const json& node) {
    const json* items = SubSchema(node, "items");
    if (Text(node, kListType) != "set" || items == nullptr) {
      return false;
    }
    std::string type = Text(*items, "type");
    if (type == "array") {
      return Present(*items, kListType) && Text(*items, kListType) != "atomic";
    }
    return type == "object" && Text(*items, kMapType) != "atomic";
  });
  breaks.invalid_map_list_keys =
      SchemaHas(schema, [](const json& node) { return !MapListKeysMapSet(node, "").empty(); });
  return breaks;
}

bool SchemaHasDefaults(const json& schema) {
  return SchemaHas(schema, [](const json& node) { return Present(node, "default"); });
}

bool SchemaHasKubernetesExtensions(const json& schema) {
  return SchemaHas(schema, [](const json& node) {
    return Flag(node, kEmbedded) || Present(node, kPreserveUnknown) || Flag(node, kIntOrString) ||
           NonEmptyArray(node, kListMapKeys) != nullptr || Present(node, kListType) ||
           NonEmptyArray(node, kValidations) != nullptr;
  });
}

std::vector<std::string> UnknownSchemaFields(const json& schema, const std::string& path) {
  std::vector<std::string> out;
  CollectUnknown(schema, path, out);
  return out;
}

std::vector<SchemaError> CheckStructural(const json& schema, bool require_descriptions) {
  std::vector<SchemaError> errors;
  if (std::string decode = SchemaDecodeError(schema, "openAPIV3Schema"); !decode.empty()) {
    errors.push_back(SchemaError{"openAPIV3Schema", decode});
  }
  for (SchemaError& error : ValidateSchema(schema, "openAPIV3Schema", SchemaCheckOptions{})) {
    errors.push_back(std::move(error));
  }
  for (const std::string& unknown : UnknownSchemaFields(schema, "openAPIV3Schema")) {
    errors.push_back(SchemaError{unknown, "unknown field " + GoQuote(unknown)});
  }
  if (require_descriptions) {
    for (SchemaError& error : DescriptionLint(schema)) {
      errors.push_back(std::move(error));
    }
  }
  return errors;
}

std::vector<SchemaError> DescriptionLint(const json& schema) {
  std::vector<SchemaError> errors;
  CollectDescriptionLint(schema, "openAPIV3Schema", true, false, errors);
  return errors;
}

}  // namespace ringleader::schema
