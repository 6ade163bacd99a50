// Schema -> declared type conversion with Kubernetes' size estimates (limits.go constants,
// estimateMax* helpers of schemas.go) and its property-name escaping (escaping.go).
#include "tests/support/cel/decl_types.h"

#include <set>

namespace ringleader::cel {
namespace {

using nlohmann::json;

// apiserver/pkg/cel/limits.go
constexpr int64_t kMaxDurationSizeJson = 32;
constexpr int64_t kMaxDatetimeSizeJson = 32;
constexpr int64_t kMinDurationSizeJson = 3;
constexpr int64_t kJsonDateSize = 12;
constexpr int64_t kMinDatetimeSizeJson = 21;
constexpr int64_t kMinStringSize = 2;
constexpr int64_t kMinBoolSize = 4;
constexpr int64_t kMinNumberSize = 1;

const json* Find(const json& schema, const char* key) {
  if (!schema.is_object()) {
    return nullptr;
  }
  auto it = schema.find(key);
  return it == schema.end() ? nullptr : &*it;
}

bool Flag(const json& schema, const char* key) {
  const json* v = Find(schema, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::string StringAt(const json& schema, const char* key) {
  const json* v = Find(schema, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

std::optional<int64_t> IntAt(const json& schema, const char* key) {
  const json* v = Find(schema, key);
  if (v == nullptr || !v->is_number()) {
    return std::nullopt;
  }
  return v->get<int64_t>();
}

int64_t ZeroIfNegative(int64_t v) { return v < 0 ? 0 : v; }

std::shared_ptr<Type> Scalar(TypeKind kind, const json& schema, int64_t min_size) {
  auto t = std::make_shared<Type>();
  t->kind = kind;
  t->schema = &schema;
  t->min_serialized_size = min_size;
  return t;
}

// estimateMaxStringLengthPerRequest
int64_t MaxStringLengthPerRequest(const json& schema) {
  if (Flag(schema, "x-kubernetes-int-or-string")) {
    return kMaxRequestSizeBytes - 2;
  }
  std::string format = StringAt(schema, "format");
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
  const json* props = Find(schema, "properties");
  if (props == nullptr || !props->is_object() || !props->contains(name)) {
    return false;
  }
  return StringAt((*props)[name], "type") == "string";
}

// WithTypeAndObjectMeta: keeps the schema's own definitions only when they already declare
// kind, apiVersion and metadata.name/generateName as strings; otherwise replaces all three.
bool HasTypeAndObjectMeta(const json& schema) {
  const json* props = Find(schema, "properties");
  if (props == nullptr || !props->is_object() || !HasStringProperty(schema, "kind") ||
      !HasStringProperty(schema, "apiVersion") || !props->contains("metadata")) {
    return false;
  }
  const json& meta = (*props)["metadata"];
  return StringAt(meta, "type") == "object" && HasStringProperty(meta, "name") &&
         HasStringProperty(meta, "generateName");
}

TypePtr Convert(const json& schema, bool resource_root, const std::string& name);

TypePtr ConvertObject(const json& schema, bool resource_root, const std::string& name) {
  const json* additional = Find(schema, "additionalProperties");
  if (additional != nullptr && additional->is_object()) {
    TypePtr values =
        Convert(*additional, Flag(*additional, "x-kubernetes-embedded-resource"), name + ".@elem");
    if (values == nullptr) {
      return nullptr;
    }
    auto t = std::make_shared<Type>();
    t->kind = TypeKind::kMap;
    t->params = {types::String(), values};
    t->schema = &schema;
    t->min_serialized_size = 2;
    std::optional<int64_t> max = IntAt(schema, "maxProperties");
    t->max_elements =
        max ? ZeroIfNegative(*max) : (kMaxRequestSizeBytes - 2) / (values->min_serialized_size + 6);
    return t;
  }
  auto t = std::make_shared<Type>();
  t->kind = TypeKind::kObject;
  t->name = name;
  t->schema = &schema;
  t->resource_root = resource_root;
  std::set<std::string> required;
  if (const json* req = Find(schema, "required"); req != nullptr && req->is_array()) {
    for (const json& r : *req) {
      if (r.is_string()) {
        required.insert(r.get<std::string>());
      }
    }
  }
  bool replace_meta = resource_root && !HasTypeAndObjectMeta(schema);
  int64_t min_size = 2;  // "{}"
  auto add_property = [&](const std::string& prop, const json& prop_schema) {
    TypePtr field_type = Convert(prop_schema, Flag(prop_schema, "x-kubernetes-embedded-resource"),
                                 name + "." + prop);
    if (field_type == nullptr) {
      return;
    }
    std::optional<std::string> escaped = EscapePropertyName(prop);
    if (escaped) {
      t->fields[*escaped] = FieldDecl{field_type, required.count(prop) != 0};
    }
    if (required.count(prop) != 0 && Find(prop_schema, "default") == nullptr) {
      min_size += static_cast<int64_t>(prop.size()) + field_type->min_serialized_size + 4;
    }
  };
  if (const json* props = Find(schema, "properties"); props != nullptr && props->is_object()) {
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
  t->min_serialized_size = min_size;
  return t;
}

TypePtr Convert(const json& schema, bool resource_root, const std::string& name) {
  if (!schema.is_object()) {
    return nullptr;
  }
  if (Flag(schema, "x-kubernetes-int-or-string")) {
    // A dyn value (int or string), at least one byte when serialized ("0").
    auto t = Scalar(TypeKind::kDyn, schema, 1);
    std::optional<int64_t> max = IntAt(schema, "maxLength");
    t->max_elements = max ? ZeroIfNegative(*max) * 4 : MaxStringLengthPerRequest(schema);
    return t;
  }
  std::string type = StringAt(schema, "type");
  if (type == "object") {
    return ConvertObject(schema, resource_root, name);
  }
  if (type == "array") {
    const json* items = Find(schema, "items");
    if (items == nullptr || !items->is_object()) {
      return nullptr;
    }
    TypePtr elem = Convert(*items, Flag(*items, "x-kubernetes-embedded-resource"), name + ".@idx");
    if (elem == nullptr) {
      return nullptr;
    }
    auto t = std::make_shared<Type>();
    t->kind = TypeKind::kList;
    t->params = {elem};
    t->schema = &schema;
    t->min_serialized_size = 2;
    std::optional<int64_t> max = IntAt(schema, "maxItems");
    t->max_elements =
        max ? ZeroIfNegative(*max) : (kMaxRequestSizeBytes - 2) / (elem->min_serialized_size + 1);
    return t;
  }
  if (type == "string") {
    std::string format = StringAt(schema, "format");
    std::optional<int64_t> max = IntAt(schema, "maxLength");
    if (format == "byte") {
      auto t = Scalar(TypeKind::kBytes, schema, kMinStringSize);
      t->max_elements = max ? ZeroIfNegative(*max) : MaxStringLengthPerRequest(schema);
      return t;
    }
    if (format == "duration") {
      auto t = Scalar(TypeKind::kDuration, schema, kMinDurationSizeJson);
      t->max_elements = MaxStringLengthPerRequest(schema);
      return t;
    }
    if (format == "date" || format == "date-time") {
      auto t = Scalar(TypeKind::kTimestamp, schema,
                      format == "date" ? kJsonDateSize : kMinDatetimeSizeJson);
      t->max_elements = MaxStringLengthPerRequest(schema);
      return t;
    }
    auto t = Scalar(TypeKind::kString, schema, kMinStringSize);
    if (max) {
      t->max_elements = ZeroIfNegative(*max) * 4;
    } else if (const json* values = Find(schema, "enum");
               values != nullptr && values->is_array() && !values->empty()) {
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
    return Scalar(TypeKind::kBool, schema, kMinBoolSize);
  }
  if (type == "number") {
    return Scalar(TypeKind::kDouble, schema, kMinNumberSize);
  }
  if (type == "integer") {
    return Scalar(TypeKind::kInt, schema, kMinNumberSize);
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
