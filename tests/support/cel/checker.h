// CEL type checker for Kubernetes' CRD environment: resolves identifiers, fields and function
// overloads against declared variables (self, oldSelf) and the function table, with cel-go's
// error messages ("undefined field 'x'", "found no matching overload for ...", "undeclared
// reference to ..."), and refuses Kubernetes functions devcluster does not implement.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cel/parser.h"
#include "tests/support/cel/types.h"

namespace ringleader::cel {

struct Variable {
  std::string name;
  TypePtr type;
};

struct CheckedExpr {
  ParsedExpr parsed;
  std::map<int64_t, TypePtr> types;                       // every expression's type
  std::map<int64_t, std::vector<std::string>> overloads;  // calls: the overloads that may apply
  std::set<std::string> referenced_variables;             // declared variables the expression reads
  TypePtr output;
  std::vector<Issue> issues;

  bool ok() const { return issues.empty() && parsed.root != nullptr; }
  const Type* TypeOf(int64_t id) const {
    auto it = types.find(id);
    return it == types.end() ? nullptr : it->second.get();
  }
};

// Type-checks a parsed expression (which must have no parse issues) against `variables`.
// Member calls on a qualified name (optional.of(x), sets.contains(a, b)) are rewritten in place
// into global calls of that name.
CheckedExpr Check(ParsedExpr parsed, const std::vector<Variable>& variables);

// Parses and checks in one step; parse issues stop before checking, as cel-go's Compile does.
CheckedExpr Compile(const Source& source, const std::vector<Variable>& variables);

}  // namespace ringleader::cel
