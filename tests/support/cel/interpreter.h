// Evaluates a checked CEL expression against variable bindings, with CEL's error semantics
// (errors are values; && and || absorb an error when the other side decides) and cel-go's
// runtime cost tracking under a per-call limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tests/support/cel/checker.h"
#include "tests/support/cel/value.h"

namespace ringleader::cel {

// Kubernetes' per-expression runtime limit (celconfig.PerCallLimit).
inline constexpr uint64_t kPerCallCostLimit = 1000000;

struct EvalResult {
  Value value;
  uint64_t cost = 0;
  // The per-call limit was exceeded; value then holds cel-go's
  // "operation cancelled: actual cost limit exceeded".
  bool cost_limit_exceeded = false;
};

EvalResult Evaluate(const CheckedExpr& expr, const std::map<std::string, Value>& variables,
                    uint64_t cost_limit = kPerCallCostLimit);

}  // namespace ringleader::cel
