// x-kubernetes-validations for devcluster: the compilation apiextensions-apiserver makes when a
// CRD is created or updated (every rule and messageExpression, oldSelf and optionalOldSelf, the
// estimated cost per expression and per schema), and the evaluation of every rule when a custom
// resource is written, with the API server's paths and wording.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/cel/value.h"
#include "tests/support/structural_schema.h"

namespace ringleader::cel {

// Kubernetes' limits (apiextensions validation.go, apiserver/pkg/apis/cel/config.go).
inline constexpr uint64_t kStaticEstimatedCostLimit = 10000000;
inline constexpr uint64_t kStaticEstimatedCrdCostLimit = 100000000;
inline constexpr int64_t kRuntimeCelCostBudget = 10000000;

// Every error the API server reports for a CRD version's openAPIV3Schema on CRD create, its rules
// included: schema::ValidateSchema with the compiler devcluster uses (CrdCelCompilers). `path` is
// where the server reports the schema, e.g. "spec.versions[0].schema.openAPIV3Schema". Schema
// errors come first, then CEL errors, then the per-schema cost total, in the server's order
// (properties in name order where Go's map order is random). Empty means the server accepts it.
std::vector<schema::SchemaError> CheckSchemaRules(const nlohmann::json& schema,
                                                  const std::string& path);

// The CEL checks, one schema node at a time, for schema::ValidateSchema's compile_cel hook
// (ValidateSchema makes the rule-entry checks itself and calls the hook where the server
// compiles). The schema's cost total accumulates across calls; TotalCostErrors reports it after
// the walk. The hook ignores CelCompileRequest's suppress_per_expression_cost and preexisting
// rules: devcluster has one CEL environment and one cost estimate, so a stored schema compiles
// and costs the same on update.
class CrdRuleCompiler {
 public:
  CrdRuleCompiler();
  // For SchemaCheckOptions::compile_cel; shares this compiler's cost total.
  schema::CelCompiler Hook() const;
  // The per-CRD cost refusals (empty when within budget), for the schema at `path`.
  std::vector<schema::SchemaError> TotalCostErrors(const std::string& path) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// The seam devcluster's CRD validation takes (ValidateCrd, ResourceRegistry::FromCrd): a fresh
// CrdRuleCompiler for each openAPIV3Schema, its hook and its cost total.
schema::CelCompilerFactory CrdCelCompilers();

// The compiled rules of one schema: build once per CRD version, evaluate on every write. Safe to
// share between threads (evaluation does not mutate it).
class CompiledSchemaRules;

// Compiles every rule of `schema` (copied). Rules that fail to compile are kept as errors that
// each evaluation reports ("rule compile error: ..."), as the API server does.
std::shared_ptr<const CompiledSchemaRules> CompileSchemaRules(const nlohmann::json& schema);

// Whether `rules` has any rule at all (a CRD without rules can skip evaluation).
bool HasRules(const CompiledSchemaRules& rules);

struct RuleEvaluation {
  // Field errors as the API server returns them, e.g. {"spec", "Invalid value: \"object\":
  // replicas ... cannot change ..."}; a rule on the root reports path "<nil>".
  std::vector<schema::SchemaError> errors;
  // Failures ratcheted to warnings (CRDValidationRatcheting, on by default in 1.32): a rule
  // without oldSelf that fails on a value unchanged since the old object.
  std::vector<std::string> warnings;
  bool ok() const { return errors.empty(); }
};

// Evaluates every rule on a custom resource (already defaulted and pruned). `old_object` is
// null on create; on update, transition rules (those using oldSelf) run where the old value
// can be correlated, and optionalOldSelf rules also run where it cannot.
RuleEvaluation ValidateRules(const CompiledSchemaRules& rules, const nlohmann::json& object,
                             const nlohmann::json& old_object = nullptr);

// A standalone expression result, for tests: either compile issues (cel-go's text), or a value
// (possibly an error value) with its runtime cost.
struct ExpressionResult {
  std::string compile_error;  // non-empty: did not compile ("ERROR: <input>:1:1: ...")
  std::string output_type;    // the checked type, e.g. "bool"
  Value value;
  uint64_t cost = 0;
  uint64_t estimated_max_cost = 0;
  bool ok() const { return compile_error.empty() && !value.is_error(); }
};

// Compiles and evaluates `expression` in Kubernetes' CRD environment with `self` bound to
// `self_value` under `self_schema` (a structural schema node; null means `self` is dyn) and,
// when `old_self` is not null, `oldSelf` bound to it.
ExpressionResult EvaluateExpression(std::string_view expression,
                                    const nlohmann::json& self_value = nullptr,
                                    const nlohmann::json& self_schema = nullptr,
                                    const nlohmann::json& old_self = nullptr);

}  // namespace ringleader::cel
