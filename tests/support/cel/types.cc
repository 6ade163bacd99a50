// Type singletons, cel-go's type names, and the tiny signature parser the function table uses.
#include "tests/support/cel/types.h"

#include <stdexcept>

namespace ringleader::cel {
namespace types {
namespace {

TypePtr Make(TypeKind kind, std::string name = "", std::vector<TypePtr> params = {}) {
  auto t = std::make_shared<Type>();
  t->kind = kind;
  t->name = std::move(name);
  t->params = std::move(params);
  return t;
}

}  // namespace

TypePtr Dyn() {
  static const TypePtr t = Make(TypeKind::kDyn);
  return t;
}
TypePtr Null() {
  static const TypePtr t = Make(TypeKind::kNull);
  return t;
}
TypePtr Bool() {
  static const TypePtr t = Make(TypeKind::kBool);
  return t;
}
TypePtr Int() {
  static const TypePtr t = Make(TypeKind::kInt);
  return t;
}
TypePtr Uint() {
  static const TypePtr t = Make(TypeKind::kUint);
  return t;
}
TypePtr Double() {
  static const TypePtr t = Make(TypeKind::kDouble);
  return t;
}
TypePtr String() {
  static const TypePtr t = Make(TypeKind::kString);
  return t;
}
TypePtr Bytes() {
  static const TypePtr t = Make(TypeKind::kBytes);
  return t;
}
TypePtr Duration() {
  static const TypePtr t = Make(TypeKind::kDuration);
  return t;
}
TypePtr Timestamp() {
  static const TypePtr t = Make(TypeKind::kTimestamp);
  return t;
}
TypePtr Error() {
  static const TypePtr t = Make(TypeKind::kError);
  return t;
}
TypePtr List(TypePtr elem) { return Make(TypeKind::kList, "", {std::move(elem)}); }
TypePtr Map(TypePtr key, TypePtr value) {
  return Make(TypeKind::kMap, "", {std::move(key), std::move(value)});
}
TypePtr TypeOf(TypePtr t) { return Make(TypeKind::kType, "", {std::move(t)}); }
TypePtr Optional(TypePtr t) { return Make(TypeKind::kOptional, "", {std::move(t)}); }
TypePtr Param(const std::string& name) { return Make(TypeKind::kTypeParam, name); }
TypePtr Opaque(const std::string& name) { return Make(TypeKind::kOpaque, name); }

}  // namespace types

std::string TypeName(const Type& type) {
  std::string base;
  switch (type.kind) {
    case TypeKind::kDyn:
      return "dyn";
    case TypeKind::kNull:
      return "null_type";
    case TypeKind::kBool:
      return "bool";
    case TypeKind::kInt:
      return "int";
    case TypeKind::kUint:
      return "uint";
    case TypeKind::kDouble:
      return "double";
    case TypeKind::kString:
      return "string";
    case TypeKind::kBytes:
      return "bytes";
    case TypeKind::kDuration:
      return "google.protobuf.Duration";
    case TypeKind::kTimestamp:
      return "google.protobuf.Timestamp";
    case TypeKind::kError:
      return "*error*";
    case TypeKind::kObject:
    case TypeKind::kTypeParam:
    case TypeKind::kOpaque:
      base = type.name;
      break;
    case TypeKind::kList:
      base = "list";
      break;
    case TypeKind::kMap:
      base = "map";
      break;
    case TypeKind::kType:
      base = "type";
      break;
    case TypeKind::kOptional:
      base = "optional_type";
      break;
  }
  if (type.params.empty()) {
    return base;
  }
  std::string out = base + "(";
  for (size_t i = 0; i < type.params.size(); ++i) {
    out += (i > 0 ? ", " : "") + TypeName(*type.params[i]);
  }
  return out + ")";
}

bool SameType(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.params.size() != b.params.size()) {
    return false;
  }
  if ((a.kind == TypeKind::kObject || a.kind == TypeKind::kOpaque ||
       a.kind == TypeKind::kTypeParam) &&
      a.name != b.name) {
    return false;
  }
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (!SameType(*a.params[i], *b.params[i])) {
      return false;
    }
  }
  return true;
}

namespace {

TypePtr ParseSignatureAt(const std::string& text, size_t& pos) {
  while (pos < text.size() && text[pos] == ' ') {
    ++pos;
  }
  size_t start = pos;
  while (pos < text.size() && text[pos] != '(' && text[pos] != ')' && text[pos] != ',') {
    ++pos;
  }
  std::string name = text.substr(start, pos - start);
  std::vector<TypePtr> params;
  if (pos < text.size() && text[pos] == '(') {
    ++pos;
    while (true) {
      params.push_back(ParseSignatureAt(text, pos));
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      ++pos;  // ')'
      break;
    }
  }
  if (name == "dyn") return types::Dyn();
  if (name == "null_type") return types::Null();
  if (name == "bool") return types::Bool();
  if (name == "int") return types::Int();
  if (name == "uint") return types::Uint();
  if (name == "double") return types::Double();
  if (name == "string") return types::String();
  if (name == "bytes") return types::Bytes();
  if (name == "duration") return types::Duration();
  if (name == "timestamp") return types::Timestamp();
  if (name == "list") return types::List(params.at(0));
  if (name == "map") return types::Map(params.at(0), params.at(1));
  if (name == "type")
    return params.empty() ? types::TypeOf(types::Dyn()) : types::TypeOf(params[0]);
  if (name == "optional") return types::Optional(params.at(0));
  if (name.size() == 1 && name[0] >= 'A' && name[0] <= 'Z') return types::Param(name);
  return types::Opaque(name);
}

}  // namespace

TypePtr ParseTypeSignature(const std::string& text) {
  size_t pos = 0;
  return ParseSignatureAt(text, pos);
}

}  // namespace ringleader::cel
