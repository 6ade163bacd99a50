// The functions a Kubernetes 1.32 CRD rule can call: CEL's standard library, optional types,
// the strings (v2) and sets extensions, and Kubernetes' lists, regex and quantity libraries,
// each with its overloads' signatures and implementation. Functions Kubernetes offers that
// devcluster does not implement (urls, ip/cidr, format, authz, string.format, strings.quote)
// are declared without an implementation so the checker can refuse them by name.
#pragma once

#include <string>
#include <vector>

#include "tests/support/cel/types.h"
#include "tests/support/cel/value.h"

namespace ringleader::cel {

using FunctionImpl = Value (*)(const std::vector<Value>& args);

struct OverloadDecl {
  std::string id;
  bool member = false;
  std::vector<TypePtr> params;  // the receiver first for member overloads
  TypePtr result;
  FunctionImpl impl = nullptr;  // null: Kubernetes declares it, devcluster does not implement it
};

struct FunctionDecl {
  std::string name;
  std::string library;  // the Kubernetes or cel-go library it comes from, for refusals
  std::vector<OverloadDecl> overloads;
};

// The declaration of `name` ("size", "_+_", "optional.of", ...), or null if Kubernetes'
// CRD environment has no such function.
const FunctionDecl* FindFunction(const std::string& name);

// The implementation of an overload id, or null.
FunctionImpl FindImplementation(const std::string& overload_id);

// Kubernetes' quantity parsing (resource.ParseQuantity), shared with the tests.
std::optional<Quantity> ParseQuantity(const std::string& text);

}  // namespace ringleader::cel
