// Schema -> declared type conversion with Kubernetes' size estimates (limits.go constants,
// estimateMax* helpers of schemas.go) and its property-name escaping (escaping.go).
#include "tests/support/cel/decl_types.h"

#include <set>

#include "tests/support/schema_internal.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;
using schema::internal::Field;
using schema::internal::Flag;
using schema::internal::kEmbedded;
using schema::internal::kIntOrString;
using schema::internal::SubSchema;
using schema::internal::Text;

// apiserver/pkg/cel/limits.go
constexpr int64_t kMaxDurationSizeJson = 32;
constexpr int64_t kMaxDatetimeSizeJson = 32;
constexpr int64_t kMinDurationSizeJson = 3;
constexpr int64_t kJsonDateSize = 12;
constexpr int64_t kMinDatetimeSizeJson = 21;
constexpr int64_t kMinStringSize = 2;
constexpr int64_t kMinBoolSize = 4;
constexpr int64_t kMinNumberSize = 1;

std::optional<int64_t> IntAt(const json& schema, const char* key) {
  const json* v = Field(schema, key);
  if (v == nullptr || !v->is_number()) {
    return std::nullopt;
  }
  return v->get<int64_t>();
}

int64_t ZeroIfNegative(int64_t v) { return v < 0 ? 0 : v; }

std::shared_ptr<Type> NewType(TypeKind kind, const json& schema, int64_t min_size) {
  auto t = std::make_shared<Type>();
  t->kind = kind;
  t->schema = &schema;
  t->min_serialized_size = min_size;
  return t;
}

// A list or map of `schema` (serialized at least as "[]" or "{}"). Its size bound is `max_key`
// (maxItems, maxProperties) or else how many of its smallest elements, each with
// `element_overhead` bytes of punctuation, fit in a request.
TypePtr NewCollection(TypeKind kind, const json& schema, std::vector<TypePtr> params,
                      const char* max_key, int64_t element_overhead) {
  auto t = NewType(kind, schema, 2);
  t->params = std::move(params);
  std::optional<int64_t> max = IntAt(schema, max_key);
  t->max_elements =
      max ? ZeroIfNegative(*max)
          : (kMaxRequestSizeBytes - 2) / (t->params.back()->min_serialized_size + element_overhead);
  return t;
}

// estimateMaxStringLengthPerRequest
int64_t MaxStringLengthPerRequest(const json& schema) {
  if (Flag(schema, kIntOrString)) {
    return kMaxRequestSizeBytes - 2;
  }
  std::string format = Text(schema, "format");
  if (format == "duration") {
    return kMaxDurationSizeJson;
  }
  if (format == "date") {
    return kJsonDateSize;
  }
  if (format == "date-time") {
    return kMaxDatetimeSizeJson;
  }
  return kMaxRequestSizeBytes - 2;
}

const json& PlainStringSchema() {
  static const json kSchema = {{"type", "string"}};
  return kSchema;
}

const json& ObjectMetaSchema() {
  static const json kSchema = {
      {"type", "object"},
      {"properties", {{"name", {{"type", "string"}}}, {"generateName", {{"type", "string"}}}}}};
  return kSchema;
}

bool HasStringProperty(const json& schema, const char* name) {
  const json* props = SubSchema(schema, "properties");
  const json* prop = props != nullptr ? SubSchema(*props, name) : nullptr;
  return prop != nullptr && Text(*prop, "type") == "string";
}

// WithTypeAndObjectMeta: keeps the schema's own definitions only when they already declare
// kind, apiVersion and metadata.name/generateName as strings; otherwise replaces all three.
bool HasTypeAndObjectMeta(const json& schema) {
  const json* props = SubSchema(schema, "properties");
  const json* meta = props != nullptr ? SubSchema(*props, "metadata") : nullptr;
  return meta != nullptr && HasStringProperty(schema, "kind") &&
         HasStringProperty(schema, "apiVersion") && Text(*meta, "type") == "object" &&
         HasStringProperty(*meta, "name") && HasStringProperty(*meta, "generateName");
}

TypePtr Convert(const json& schema, bool resource_root, const std::string& name);

TypePtr ConvertObject(const json& schema, bool resource_root, const std::string& name) {
  if (const json* additional = schema::internal::AdditionalSchema(schema)) {
    TypePtr values = Convert(*additional, Flag(*additional, kEmbedded), name + ".@elem");
    if (values == nullptr) {
      return nullptr;
    }
    return NewCollection(TypeKind::kMap, schema, {types::String(), values}, "maxProperties", 6);
  }
  auto t = NewType(TypeKind::kObject, schema, 2);  // "{}", plus the required fields below
  t->name = name;
  t->resource_root = resource_root;
  std::vector<std::string> required_names = schema::internal::Strings(schema, "required");
  std::set<std::string> required(required_names.begin(), required_names.end());
  bool replace_meta = resource_root && !HasTypeAndObjectMeta(schema);
  auto add_property = [&](const std::string& prop, const json& prop_schema) {
    TypePtr field_type = Convert(prop_schema, Flag(prop_schema, kEmbedded), name + "." + prop);
    if (field_type == nullptr) {
      return;
    }
    std::optional<std::string> escaped = EscapePropertyName(prop);
    if (escaped) {
      t->fields[*escaped] = FieldDecl{field_type, required.count(prop) != 0};
    }
    if (required.count(prop) != 0 && Field(prop_schema, "default") == nullptr) {
      t->min_serialized_size +=
          static_cast<int64_t>(prop.size()) + field_type->min_serialized_size + 4;
    }
  };
  if (const json* props = SubSchema(schema, "properties")) {
    for (const auto& [prop, prop_schema] : props->items()) {
      if (replace_meta && (prop == "kind" || prop == "apiVersion" || prop == "metadata")) {
        continue;
      }
      add_property(prop, prop_schema);
    }
  }
  if (replace_meta) {
    add_property("kind", PlainStringSchema());
    add_property("apiVersion", PlainStringSchema());
    add_property("metadata", ObjectMetaSchema());
  }
  return t;
}

TypePtr Convert(const json& schema, bool resource_root, const std::string& name) {
  if (!schema.is_object()) {
    return nullptr;
  }
  if (Flag(schema, kIntOrString)) {
    // A dyn value (int or string), at least one byte when serialized ("0").
    auto t = NewType(TypeKind::kDyn, schema, 1);
    std::optional<int64_t> max = IntAt(schema, "maxLength");
    t->max_elements = max ? ZeroIfNegative(*max) * 4 : MaxStringLengthPerRequest(schema);
    return t;
  }
  std::string type = Text(schema, "type");
  if (type == "object") {
    return ConvertObject(schema, resource_root, name);
  }
  if (type == "array") {
    const json* items = SubSchema(schema, "items");
    if (items == nullptr) {
      return nullptr;
    }
    TypePtr elem = Convert(*items, Flag(*items, kEmbedded), name + ".@idx");
    if (elem == nullptr) {
      return nullptr;
    }
    return NewCollection(TypeKind::kList, schema, {elem}, "maxItems", 1);
  }
  if (type == "string") {
    std::string format = Text(schema, "format");
    std::optional<int64_t> max = IntAt(schema, "maxLength");
    if (format == "byte") {
      auto t = NewType(TypeKind::kBytes, schema, kMinStringSize);
      t->max_elements = max ? ZeroIfNegative(*max) : MaxStringLengthPerRequest(schema);
      return t;
    }
    if (format == "duration") {
      auto t = NewType(TypeKind::kDuration, schema, kMinDurationSizeJson);
      t->max_elements = MaxStringLengthPerRequest(schema);
      return t;
    }
    if (format == "date" || format == "date-time") {
      auto t = NewType(TypeKind::kTimestamp, schema,
                       format == "date" ? kJsonDateSize : kMinDatetimeSizeJson);
      t->max_elements = MaxStringLengthPerRequest(schema);
      return t;
    }
    auto t = NewType(TypeKind::kString, schema, kMinStringSize);
    if (max) {
      t->max_elements = ZeroIfNegative(*max) * 4;
    } else if (const json* values = schema::internal::NonEmptyArray(schema, "enum")) {
      int64_t longest = 0;
      for (const json& v : *values) {
        if (v.is_string()) {
          longest = std::max(longest, static_cast<int64_t>(v.get<std::string>().size()));
        }
      }
      t->max_elements = longest;
    } else {
      t->max_elements = MaxStringLengthPerRequest(schema);
    }
    return t;
  }
  if (type == "boolean") {
    return NewType(TypeKind::kBool, schema, kMinBoolSize);
  }
  if (type == "number") {
    return NewType(TypeKind::kDouble, schema, kMinNumberSize);
  }
  if (type == "integer") {
    return NewType(TypeKind::kInt, schema, kMinNumberSize);
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> EscapePropertyName(const std::string& name) {
  static const std::set<std::string> kReserved = {
      "true",     "false",   "null",      "in",       "as",  "break",  "const",
      "continue", "else",    "for",       "function", "if",  "import", "let",
      "loop",     "package", "namespace", "return",   "var", "void",   "while"};
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return std::nullopt;
  }
  if (kReserved.count(name) != 0) {
    return "__" + name + "__";
  }
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      out += c;
    } else if (c == '_') {
      if (i + 1 < name.size() && name[i + 1] == '_') {
        out += "__underscores__";
        ++i;
      } else {
        out += '_';
      }
    } else if (c == '.') {
      out += "__dot__";
    } else if (c == '-') {
      out += "__dash__";
    } else if (c == '/') {
      out += "__slash__";
    } else {
      return std::nullopt;
    }
  }
  return out;
}

TypePtr SchemaDeclType(const json& schema, bool resource_root, const std::string& type_name) {
  return Convert(schema, resource_root, type_name);
}

}  // namespace ringleader::cel
