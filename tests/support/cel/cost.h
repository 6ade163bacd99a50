// CEL cost: cel-go's static estimator (checker/cost.go, v0.22 shape) with Kubernetes' size
// estimates for schema-declared values and its library call costs (apiserver/pkg/cel/library/
// cost.go), and the runtime call costs the interpreter charges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/cel/checker.h"
#include "tests/support/cel/value.h"

namespace ringleader::cel {

struct CostRange {
  uint64_t min = 0;
  uint64_t max = 0;
};

// The estimated cost range of `expr`. `root` is the declared type of `self` (and `oldSelf`):
// paths from those variables get their sizes from the schema's maxLength / maxItems /
// maxProperties (or Kubernetes' request-size-derived bounds).
CostRange EstimateCost(const CheckedExpr& expr, const Type& root);

// The runtime cost of one call (cel-go's CostTracker.costCall plus Kubernetes' CallCost).
uint64_t RuntimeCallCost(const std::string& function, const std::string& overload_id,
                         const std::vector<Value>& args, const Value& result);

}  // namespace ringleader::cel
