// The CRD-facing side of CEL: apiextensions-apiserver's checks of x-kubernetes-validations on CRD
// writes (validation.go, cel_validation.go, schema/cel/compilation.go) and its evaluation of the
// rules on custom-resource writes (schema/cel/validation.go), with their paths and messages.
#include "tests/support/cel/crd_rules.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include "tests/support/cel/checker.h"
#include "tests/support/cel/cost.h"
#include "tests/support/cel/decl_types.h"
#include "tests/support/cel/interpreter.h"
#include "tests/support/schema_internal.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;
using schema::GoQuote;
using schema::SchemaError;
using schema::internal::AdditionalSchema;
using schema::internal::Child;
using schema::internal::Field;
using schema::internal::Flag;
using schema::internal::GoPointer;
using schema::internal::Index;
using schema::internal::kEmbedded;
using schema::internal::Key;
using schema::internal::kListMapKeys;
using schema::internal::kListType;
using schema::internal::kValidations;
using schema::internal::MapIsCorrelatable;
using schema::internal::SubSchema;
using schema::internal::Text;
using schema::internal::TrimSpace;
using schema::internal::ValidFieldPath;

constexpr size_t kMaxEvaluatedMessageExpressionSizeBytes = 5 * 1024;

// One x-kubernetes-validations entry.
struct Rule {
  std::string rule;
  std::string message;
  std::string message_expression;
  std::optional<std::string> reason;
  std::string field_path;
  std::optional<bool> optional_old_self;
};

Rule ParseRule(const json& entry) {
  Rule r;
  r.rule = Text(entry, "rule");
  r.message = Text(entry, "message");
  r.message_expression = Text(entry, "messageExpression");
  if (const json* reason = Field(entry, "reason"); reason != nullptr && reason->is_string()) {
    r.reason = reason->get<std::string>();
  }
  r.field_path = Text(entry, "fieldPath");
  if (const json* o = Field(entry, "optionalOldSelf"); o != nullptr && o->is_boolean()) {
    r.optional_old_self = o->get<bool>();
  }
  return r;
}

std::vector<Rule> RulesOf(const json& node) {
  std::vector<Rule> rules;
  if (const json* list = Field(node, kValidations); list != nullptr && list->is_array()) {
    for (const json& entry : *list) {
      rules.push_back(ParseRule(entry));
    }
  }
  return rules;
}

// fmt.Sprintf("%#v", apiextensions.ValidationRule{...}) as field.Invalid prints it.
std::string GoSharpV(const Rule& r) {
  return "apiextensions.ValidationRule{Rule:" + GoQuote(r.rule) +
         ", Message:" + GoQuote(r.message) +
         ", MessageExpression:" + GoQuote(r.message_expression) +
         ", Reason:" + GoPointer("*apiextensions.FieldValueErrorReason", r.reason.has_value()) +
         ", FieldPath:" + GoQuote(r.field_path) +
         ", OptionalOldSelf:" + GoPointer("*bool", r.optional_old_self.has_value()) + "}";
}

std::string CostErrorMessage(const std::string& cost_name, uint64_t cost, uint64_t limit) {
  double factor = static_cast<double>(cost) / static_cast<double>(limit);
  char buf[64];
  if (factor > 100.0) {
    std::snprintf(buf, sizeof buf, "more than 100x");
  } else if (factor < 1.5) {
    std::snprintf(buf, sizeof buf, "%fx", factor);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fx", factor);
  }
  return cost_name + " exceeds budget by factor of " + buf +
         " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
         "arrays, maps, and strings are declared)";
}

uint64_t MultiplyWithOverflowGuard(uint64_t base, uint64_t cardinality) {
  if (base == 0) {
    return 0;
  }
  if (std::numeric_limits<uint64_t>::max() / base < cardinality) {
    return std::numeric_limits<uint64_t>::max();
  }
  return base * cardinality;
}

// Object type names change with every CRD write on the real server ("selfType" + nanoseconds).
std::string NextSelfTypeName() {
  static std::atomic<uint64_t> counter{0};
  return "selfType" + std::to_string(++counter);
}

// One rule compiled in the CRD environment for a schema node.
struct CompiledRule {
  Rule rule;
  std::string error;  // compilation error detail ("compilation failed: ...")
  std::optional<CheckedExpr> program;
  bool uses_old_self = false;
  uint64_t max_cost = 0;
  uint64_t max_cardinality = 0;
  std::string message_expression_error;
  std::optional<CheckedExpr> message_program;
  uint64_t message_max_cost = 0;
  std::string normalized_field_path;
};

CompiledRule CompileRule(const Rule& rule, const json& node_schema, const TypePtr& decl) {
  CompiledRule out;
  out.rule = rule;
  if (TrimSpace(rule.rule).empty()) {
    return out;
  }
  TypePtr old_self = rule.optional_old_self.value_or(false) ? types::Optional(decl) : decl;
  std::vector<Variable> vars = {{"self", decl}, {"oldSelf", old_self}};
  Source source(rule.rule);
  CheckedExpr checked = Compile(source, vars);
  if (!checked.issues.empty()) {
    out.error = "compilation failed: " + FormatIssues(source, checked.issues);
    return out;
  }
  if (checked.output->kind != TypeKind::kBool) {
    out.error = "cel expression must evaluate to a bool";
    return out;
  }
  out.uses_old_self = checked.referenced_variables.count("oldSelf") != 0;
  out.max_cost = EstimateCost(checked, *decl).max;
  out.max_cardinality =
      static_cast<uint64_t>(kMaxRequestSizeBytes / (decl->min_serialized_size + 1));
  out.program = std::move(checked);
  if (!rule.message_expression.empty()) {
    Source msg_source(rule.message_expression);
    CheckedExpr msg = Compile(msg_source, vars);
    if (!msg.issues.empty()) {
      out.message_expression_error =
          "messageExpression compilation failed: " + FormatIssues(msg_source, msg.issues);
      return out;
    }
    if (msg.output->kind != TypeKind::kString) {
      out.message_expression_error = "messageExpression must evaluate to a string";
      return out;
    }
    out.message_max_cost = EstimateCost(msg, *decl).max;
    out.message_program = std::move(msg);
  }
  if (!rule.field_path.empty()) {
    if (auto normalized = ValidFieldPath(rule.field_path, node_schema)) {
      out.normalized_field_path = *normalized;
    }
  }
  return out;
}

// --- CRD-time checks (the compile_cel hook) ------------------------------------------------------

// The per-schema estimated cost total and the four most expensive expressions behind it.
struct TotalCost {
  uint64_t total = 0;
  std::vector<std::pair<std::string, uint64_t>> most_expensive;

  void Observe(const std::string& path, uint64_t cost) {
    total = total > std::numeric_limits<uint64_t>::max() - cost
                ? std::numeric_limits<uint64_t>::max()
                : total + cost;
    if (cost < kStaticEstimatedCrdCostLimit / 100) {
      return;
    }
    most_expensive.emplace_back(path, cost);
    std::stable_sort(most_expensive.begin(), most_expensive.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (most_expensive.size() > 4) {
      most_expensive.resize(4);
    }
  }
};

// extractMaxElements: how much a schema multiplies the occurrences of its children (nullopt:
// unbounded).
std::optional<uint64_t> MaxElements(const json& node) {
  std::string type = Text(node, "type");
  if (type == "object") {
    if (Field(node, "additionalProperties") != nullptr) {
      if (const json* max = Field(node, "maxProperties"); max != nullptr && max->is_number()) {
        return static_cast<uint64_t>(std::max<int64_t>(0, max->get<int64_t>()));
      }
      return std::nullopt;
    }
    return 1;
  }
  if (type == "array") {
    if (const json* max = Field(node, "maxItems"); max != nullptr && max->is_number()) {
      return static_cast<uint64_t>(std::max<int64_t>(0, max->get<int64_t>()));
    }
    return std::nullopt;
  }
  return 1;
}

// How often `target` can occur in an object when `node`, which holds it somewhere below its
// properties, additionalProperties and items, occurs at most `cardinality` times (nullopt:
// unbounded). Returns false when `target` is not below `node`.
bool FindCardinality(const json& node, const json& target, std::optional<uint64_t> cardinality,
                     std::optional<uint64_t>& found) {
  if (&node == &target) {
    found = cardinality;
    return true;
  }
  std::optional<uint64_t> factor = MaxElements(node);
  std::optional<uint64_t> below;
  if (cardinality && factor) {
    below = MultiplyWithOverflowGuard(*cardinality, *factor);
  }
  auto search = [&](const json* child) {
    return child != nullptr && FindCardinality(*child, target, below, found);
  };
  if (search(AdditionalSchema(node))) {
    return true;
  }
  if (const json* properties = SubSchema(node, "properties")) {
    for (const json& property : *properties) {
      if (search(&property)) {
        return true;
      }
    }
  }
  return search(SubSchema(node, "items"));
}

// The API server's compilation of one node's rules (at `rules_path`,
// "...x-kubernetes-validations") on a CRD write: compile errors, per-expression cost limits and
// oldSelf misuse. Adds every expression's cost to `total`.
std::vector<SchemaError> CompileNodeRules(const json& node, const std::string& rules_path,
                                          bool is_root, std::optional<uint64_t> max_cardinality,
                                          const std::string& uncorrelatable_path,
                                          TotalCost& total) {
  std::vector<SchemaError> errors;
  TypePtr decl = SchemaDeclType(node, is_root || Flag(node, kEmbedded), NextSelfTypeName());
  if (!decl) {
    errors.push_back(schema::InternalError(
        rules_path,
        "internal error: failed to construct type information for x-kubernetes-validations "
        "rules: unable to convert structural schema to CEL declarations"));
    return errors;
  }
  std::vector<Rule> rules = RulesOf(node);
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    CompiledRule cr = CompileRule(rule, node, decl);
    std::string base = Index(rules_path, i);
    std::string rule_path = base + ".rule";
    std::string message_expression_path = base + ".messageExpression";
    uint64_t cost =
        MultiplyWithOverflowGuard(cr.max_cost, max_cardinality.value_or(cr.max_cardinality));
    if (cost > kStaticEstimatedCostLimit) {
      errors.push_back(schema::Forbidden(
          rule_path, CostErrorMessage("estimated rule cost", cost, kStaticEstimatedCostLimit)));
    }
    total.Observe(rule_path, cost);
    if (!cr.error.empty()) {
      errors.push_back(schema::Invalid(rule_path, GoSharpV(rule), cr.error));
    }
    if (!cr.message_expression_error.empty()) {
      errors.push_back(
          schema::Invalid(message_expression_path, GoSharpV(rule), cr.message_expression_error));
    } else if (cr.message_program) {
      if (cr.message_max_cost > kStaticEstimatedCostLimit) {
        errors.push_back(
            schema::Forbidden(message_expression_path,
                              CostErrorMessage("estimated messageExpression cost",
                                               cr.message_max_cost, kStaticEstimatedCostLimit)));
      }
      total.Observe(message_expression_path, cr.message_max_cost);
    }
    if (cr.uses_old_self) {
      if (!uncorrelatable_path.empty()) {
        errors.push_back(schema::Invalid(
            rule_path, GoQuote(rule.rule),
            "oldSelf cannot be used on the uncorrelatable portion of the schema within " +
                uncorrelatable_path));
      }
    } else if (rule.optional_old_self) {
      errors.push_back(schema::Invalid(base + ".optionalOldSelf",
                                       *rule.optional_old_self ? "true" : "false",
                                       "may not be set if oldSelf is not used in rule"));
    }
  }
  return errors;
}

}  // namespace

struct CrdRuleCompiler::State {
  TotalCost total;
};

CrdRuleCompiler::CrdRuleCompiler() : state_(std::make_shared<State>()) {}

schema::CelCompiler CrdRuleCompiler::Hook() const {
  return [state = state_](const schema::CelCompileRequest& request) {
    // A node not found below the root (a copy) counts as unbounded, like one below an unbounded
    // list.
    std::optional<uint64_t> max_cardinality;
    FindCardinality(request.root, request.node, 1, max_cardinality);
    return CompileNodeRules(request.node, request.rules_path, &request.node == &request.root,
                            max_cardinality, request.uncorrelatable_parent, state->total);
  };
}

std::vector<SchemaError> CrdRuleCompiler::TotalCostErrors(const std::string& path) const {
  std::vector<SchemaError> errors;
  const TotalCost& total = state_->total;
  if (total.total > kStaticEstimatedCrdCostLimit) {
    for (const auto& [expensive_path, cost] : total.most_expensive) {
      errors.push_back(
          schema::Forbidden(expensive_path,
                            "contributed to estimated rule cost total exceeding cost limit for "
                            "entire OpenAPIv3 schema"));
    }
    errors.push_back(schema::Forbidden(
        path, CostErrorMessage(
                  "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                  total.total, kStaticEstimatedCrdCostLimit)));
  }
  return errors;
}

schema::CelCompilerFactory CrdCelCompilers() {
  return [] {
    CrdRuleCompiler compiler;
    auto total_cost_errors = [compiler](const std::string& path) {
      return compiler.TotalCostErrors(path);
    };
    return schema::CelSchemaCompiler{compiler.Hook(), total_cost_errors};
  };
}

std::vector<SchemaError> CheckSchemaRules(const json& schema, const std::string& path) {
  schema::CelSchemaCompiler compiler = CrdCelCompilers()();
  schema::SchemaCheckOptions options;
  options.compile_cel = std::move(compiler.compile);
  options.cel_total_cost_errors = std::move(compiler.total_cost_errors);
  return schema::ValidateSchema(schema, path, options);
}

// --- Evaluation on custom-resource writes -------------------------------------------------------

struct ValidatorNode {
  const json* schema = nullptr;
  TypePtr decl;
  std::vector<CompiledRule> rules;
  std::map<std::string, std::unique_ptr<ValidatorNode>> properties;
  std::unique_ptr<ValidatorNode> items;
  std::unique_ptr<ValidatorNode> additional_properties;
};

class CompiledSchemaRules {
 public:
  explicit CompiledSchemaRules(json schema)
      : schema_(std::move(schema)), root_(Build(schema_, true)) {}
  const ValidatorNode* root() const { return root_.get(); }

 private:
  // The validator for `node`, or null when neither it nor anything below it has rules.
  static std::unique_ptr<ValidatorNode> Build(const json& node, bool resource_root) {
    if (!node.is_object()) {
      return nullptr;
    }
    auto v = std::make_unique<ValidatorNode>();
    v->schema = &node;
    std::vector<Rule> rules = RulesOf(node);
    if (!rules.empty()) {
      v->decl = SchemaDeclType(node, resource_root, NextSelfTypeName());
      for (const Rule& r : rules) {
        if (v->decl) {
          v->rules.push_back(CompileRule(r, node, v->decl));
        } else {
          CompiledRule failed;
          failed.rule = r;
          failed.error = "unable to convert structural schema to CEL declarations";
          v->rules.push_back(std::move(failed));
        }
      }
    }
    auto build_child = [](const json* child) {
      return child != nullptr ? Build(*child, Flag(*child, kEmbedded)) : nullptr;
    };
    if (const json* properties = SubSchema(node, "properties")) {
      for (const auto& [name, property] : properties->items()) {
        if (auto child = build_child(&property)) {
          v->properties.emplace(name, std::move(child));
        }
      }
    }
    v->items = build_child(SubSchema(node, "items"));
    v->additional_properties = build_child(AdditionalSchema(node));
    if (v->rules.empty() && v->properties.empty() && !v->items && !v->additional_properties) {
      return nullptr;
    }
    return v;
  }

  json schema_;
  std::unique_ptr<const ValidatorNode> root_;
};

namespace {

constexpr const char* kOutOfBudget =
    "validation failed due to running out of cost budget, no further validation rules will be run";

std::string RuleErrorString(const Rule& r) {
  return r.message.empty() ? TrimSpace(r.rule) : TrimSpace(r.message);
}

std::string RuleMessageOrDefault(const Rule& r) {
  return r.message.empty() ? "failed rule: " + RuleErrorString(r) : TrimSpace(r.message);
}

// Ratcheting state: the old value correlated with the current node, if any, and whether the
// nearest correlated ancestor is unchanged.
struct Correlation {
  const json* old = nullptr;
  bool correlated = false;
  bool parent_unchanged = false;
};

class RuleValidator {
 public:
  explicit RuleValidator(RuleEvaluation& out) : out_(out) {}

  // Returns false once the cost budget ran out (no further rules run).
  bool Validate(const ValidatorNode& v, const std::string& path, const json& obj,
                const Correlation& corr) {
    if (obj.is_null()) {
      return true;
    }
    bool unchanged =
        corr.correlated ? (corr.old != nullptr && *corr.old == obj) : corr.parent_unchanged;
    if (!ValidateExpressions(v, path, obj, corr.old, unchanged)) {
      return false;
    }
    if (obj.is_array() && v.items) {
      const json& schema = *v.schema;
      bool map_list = Text(schema, kListType) == "map";
      for (size_t i = 0; i < obj.size(); ++i) {
        const json* old_item =
            map_list && corr.old != nullptr ? FindMapListItem(schema, *corr.old, obj[i]) : nullptr;
        Correlation child{old_item, map_list && corr.correlated && old_item != nullptr, unchanged};
        if (!Validate(*v.items, Index(path, i), obj[i], child)) {
          return false;
        }
      }
    } else if (obj.is_object()) {
      bool correlatable = MapIsCorrelatable(*v.schema);
      for (const auto& [k, value] : obj.items()) {
        const ValidatorNode* sub = nullptr;
        std::string child_path;
        if (v.additional_properties) {
          sub = v.additional_properties.get();
          child_path = Key(path, k);
        } else if (auto it = v.properties.find(k); it != v.properties.end()) {
          sub = it->second.get();
          child_path = path == "<nil>" ? k : Child(path, k);
        }
        if (sub == nullptr) {
          continue;
        }
        const json* old_value = nullptr;
        if (correlatable && corr.old != nullptr && corr.old->is_object()) {
          auto it = corr.old->find(k);
          old_value = it == corr.old->end() ? nullptr : &*it;
        }
        bool root_type_meta = path == "<nil>" && (k == "apiVersion" || k == "kind");
        Correlation child{old_value, corr.correlated && old_value != nullptr && !root_type_meta,
                          !root_type_meta && unchanged};
        if (!Validate(*sub, child_path, value, child)) {
          return false;
        }
      }
    }
    return true;
  }

 private:
  static const json* FindMapListItem(const json& schema, const json& old_list, const json& item) {
    if (!old_list.is_array() || !item.is_object()) {
      return nullptr;
    }
    const json* keys = Field(schema, kListMapKeys);
    if (keys == nullptr || !keys->is_array()) {
      return nullptr;
    }
    for (const json& candidate : old_list) {
      if (!candidate.is_object()) {
        continue;
      }
      bool same = true;
      for (const json& key : *keys) {
        std::string k = key.get<std::string>();
        auto a = item.find(k);
        auto b = candidate.find(k);
        bool a_has = a != item.end();
        bool b_has = b != candidate.end();
        if (a_has != b_has || (a_has && *a != *b)) {
          same = false;
          break;
        }
      }
      if (same) {
        return &candidate;
      }
    }
    return nullptr;
  }

  void AddError(const CompiledRule& cr, bool ratchet, SchemaError error) {
    if (!cr.uses_old_self && ratchet) {
      out_.warnings.push_back(error.ToString());
    } else {
      out_.errors.push_back(std::move(error));
    }
  }

  // Runs the rules of `v` on `obj` (`old`: its correlated old value); failures of rules without
  // oldSelf are only warnings when the value is `unchanged` (ratcheting).
  bool ValidateExpressions(const ValidatorNode& v, const std::string& path, const json& obj,
                           const json* old, bool unchanged) {
    if (v.rules.empty()) {
      return true;
    }
    std::string sts_type = GoQuote(Text(*v.schema, "type"));
    auto invalid = [&](const std::string& at, const std::string& detail) {
      return schema::Invalid(at, sts_type, detail);
    };
    if (budget_ <= 0) {
      out_.errors.push_back(invalid(path, kOutOfBudget));
      return false;
    }
    std::map<std::string, Value> vars;
    vars["self"] = FromJson(obj, v.decl.get());
    std::optional<Value> old_value;
    if (old != nullptr && !old->is_null()) {
      old_value = FromJson(*old, v.decl.get());
    }
    for (const CompiledRule& cr : v.rules) {
      if (!cr.error.empty()) {
        out_.errors.push_back(invalid(path, "rule compile error: " + cr.error));
        continue;
      }
      if (!cr.program) {
        continue;  // an empty rule
      }
      bool optional_old_self = cr.rule.optional_old_self.value_or(false);
      if (cr.uses_old_self && !old_value && !optional_old_self) {
        continue;  // transition rules need a correlated old value
      }
      std::map<std::string, Value> rule_vars = vars;
      if (optional_old_self) {
        rule_vars["oldSelf"] = old_value ? Value::Some(*old_value) : Value::None();
      } else if (old_value) {
        rule_vars["oldSelf"] = *old_value;
      }
      EvalResult result = Evaluate(*cr.program, rule_vars);
      if (static_cast<int64_t>(result.cost) > budget_) {
        out_.errors.push_back(invalid(path, kOutOfBudget));
        budget_ = -1;
        return false;
      }
      budget_ -= static_cast<int64_t>(result.cost);
      if (result.value.is_error()) {
        const std::string& err = result.value.error();
        if (err.rfind("no such overload", 0) == 0) {
          out_.errors.push_back(invalid(path, "'" + err +
                                                  "': call arguments did not match a supported "
                                                  "operator, function or macro signature for "
                                                  "rule: " +
                                                  RuleErrorString(cr.rule)));
        } else if (result.cost_limit_exceeded) {
          out_.errors.push_back(invalid(path, "'" + err +
                                                  "': no further validation rules will be run due "
                                                  "to call cost exceeds limit for rule: " +
                                                  RuleErrorString(cr.rule)));
          budget_ = -1;
          return false;
        } else {
          out_.errors.push_back(
              invalid(path, err + " evaluating rule: " + RuleErrorString(cr.rule)));
        }
        continue;
      }
      if (result.value.is<bool>() && result.value.as<bool>()) {
        continue;
      }
      std::string current = path;
      if (!cr.normalized_field_path.empty()) {
        current =
            path == "<nil>" ? cr.normalized_field_path : path + "." + cr.normalized_field_path;
      }
      std::string detail = RuleMessageOrDefault(cr.rule);
      if (cr.message_program) {
        EvalResult msg = Evaluate(*cr.message_program, vars);
        if (static_cast<int64_t>(msg.cost) > budget_) {
          AddError(cr, unchanged,
                   invalid(current,
                           "messageExpression evaluation failed due to running out of cost "
                           "budget, no further validation rules will be run"));
          budget_ = -1;
          return false;
        }
        if (msg.cost_limit_exceeded) {
          AddError(cr, unchanged,
                   invalid(current,
                           "no further validation rules will be run due to call cost exceeds "
                           "limit for messageExpression: " +
                               GoQuote(cr.rule.message_expression)));
          budget_ = -1;
          return false;
        }
        budget_ -= static_cast<int64_t>(msg.cost);
        if (!msg.value.is_error() && msg.value.is<std::string>()) {
          std::string text = TrimSpace(msg.value.as<std::string>());
          if (!text.empty() && text.size() <= kMaxEvaluatedMessageExpressionSizeBytes &&
              text.find('\n') == std::string::npos) {
            detail = text;
          }
        }
      }
      if (cr.rule.reason == "FieldValueForbidden") {
        AddError(cr, unchanged, schema::Forbidden(current, detail));
      } else if (cr.rule.reason == "FieldValueRequired") {
        AddError(cr, unchanged, schema::Required(current, detail));
      } else if (cr.rule.reason == "FieldValueDuplicate") {
        AddError(cr, unchanged, schema::Duplicate(current, sts_type));
      } else {
        AddError(cr, unchanged, invalid(current, detail));
      }
    }
    return true;
  }

  RuleEvaluation& out_;
  int64_t budget_ = kRuntimeCelCostBudget;
};

}  // namespace

std::shared_ptr<const CompiledSchemaRules> CompileSchemaRules(const json& schema) {
  return std::make_shared<const CompiledSchemaRules>(schema);
}

bool HasRules(const CompiledSchemaRules& rules) { return rules.root() != nullptr; }

RuleEvaluation ValidateRules(const CompiledSchemaRules& rules, const json& object,
                             const json& old_object) {
  RuleEvaluation out;
  const ValidatorNode* root = rules.root();
  if (root == nullptr) {
    return out;
  }
  const json* old = old_object.is_null() ? nullptr : &old_object;
  RuleValidator(out).Validate(*root, "<nil>", object, Correlation{old, old != nullptr, false});
  return out;
}

ExpressionResult EvaluateExpression(std::string_view expression, const json& self_value,
                                    const json& self_schema, const json& old_self) {
  ExpressionResult out;
  TypePtr decl =
      self_schema.is_null() ? types::Dyn() : SchemaDeclType(self_schema, false, "selfType0");
  if (!decl) {
    decl = types::Dyn();
  }
  std::vector<Variable> vars = {{"self", decl}};
  if (!old_self.is_null()) {
    vars.push_back({"oldSelf", decl});
  }
  Source source{std::string(expression)};
  CheckedExpr checked = Compile(source, vars);
  if (!checked.issues.empty()) {
    out.compile_error = FormatIssues(source, checked.issues);
    return out;
  }
  out.output_type = TypeName(*checked.output);
  out.estimated_max_cost = EstimateCost(checked, *decl).max;
  std::map<std::string, Value> bindings;
  bindings["self"] = FromJson(self_value, self_schema.is_null() ? nullptr : decl.get());
  if (!old_self.is_null()) {
    bindings["oldSelf"] = FromJson(old_self, self_schema.is_null() ? nullptr : decl.get());
  }
  EvalResult result = Evaluate(checked, bindings);
  out.value = result.value;
  out.cost = result.cost;
  return out;
}

}  // namespace ringleader::cel
