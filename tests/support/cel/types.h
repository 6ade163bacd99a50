// CEL types as the checker sees them, including Kubernetes' declared types for schema nodes
// (object fields, size bounds from maxLength/maxItems/maxProperties, the schema node itself).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringleader::cel {

enum class TypeKind {
  kDyn,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kObject,
  kType,
  kDuration,
  kTimestamp,
  kOptional,
  kTypeParam,
  kError,
  kOpaque
};

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct FieldDecl {
  TypePtr type;
  bool required = false;
};

struct Type {
  TypeKind kind = TypeKind::kDyn;
  // Object type name ("selfType1.spec"), opaque type name ("kubernetes.Quantity") or type
  // parameter name ("A").
  std::string name;
  std::vector<TypePtr> params;              // list(elem), map(key, value), type(T), optional(T)
  std::map<std::string, FieldDecl> fields;  // object fields by escaped CEL name
  // Kubernetes' DeclType.MaxElements: the most characters, bytes, items or entries a value of
  // this schema node can have in one request (used by the cost estimator).
  int64_t max_elements = 0;
  int64_t min_serialized_size = 0;
  // The structural-schema node a declared type came from (null for CEL's own types).
  const nlohmann::json* schema = nullptr;
  bool resource_root = false;  // apiVersion/kind/metadata(name, generateName) were added
};

namespace types {
TypePtr Dyn();
TypePtr Null();
TypePtr Bool();
TypePtr Int();
TypePtr Uint();
TypePtr Double();
TypePtr String();
TypePtr Bytes();
TypePtr Duration();
TypePtr Timestamp();
TypePtr Error();
TypePtr List(TypePtr elem);
TypePtr Map(TypePtr key, TypePtr value);
TypePtr TypeOf(TypePtr t);  // type(T)
TypePtr Optional(TypePtr t);
TypePtr Param(const std::string& name);
TypePtr Opaque(const std::string& name);
}  // namespace types

// cel-go's rendering of a type: "int", "list(string)", "map(string, int)", "type(int)",
// "optional_type(int)", "null_type", "google.protobuf.Timestamp", object names.
std::string TypeName(const Type& type);

// Exact structural equality of two types (names for objects and opaques, params recursively).
bool SameType(const Type& a, const Type& b);

// Parses a signature type written as cel-go prints them ("list(A)", "map(K, V)", "int", "A").
TypePtr ParseTypeSignature(const std::string& text);

}  // namespace ringleader::cel
