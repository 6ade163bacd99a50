// CEL parser (cel-spec langdef.md grammar, cel-go's macros and optional syntax) producing the AST
// in ast.h, with cel-go's error wording where this parser can know it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/support/cel/ast.h"

namespace ringleader::cel {

// The accumulator variable of expanded macros; cel-go v0.22 calls it "__result__".
inline constexpr const char* kAccumulatorName = "__result__";

struct ParsedExpr {
  ExprPtr root;                          // null when there were errors
  std::map<int64_t, int32_t> positions;  // expression id -> code-point offset
  int64_t next_id = 1;                   // ids at and above are free
  std::vector<Issue> issues;
};

// Parses `text`. Syntax errors follow ANTLR's phrasing as cel-go reports it ("Syntax error:
// mismatched input 'x' expecting <EOF>"); only the first syntax error is reported.
ParsedExpr Parse(const Source& source);

// A deep copy of `expr` whose nodes get fresh ids from `next_id` (positions copied).
ExprPtr CloneExpr(const Expr& expr, int64_t& next_id, std::map<int64_t, int32_t>& positions);

}  // namespace ringleader::cel
