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
#include "tests/support/cel/go_format.h"
#include "tests/support/cel/interpreter.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;
using schema::SchemaError;

constexpr size_t kMaxEvaluatedMessageExpressionSizeBytes = 5 * 1024;
// A placeholder for the pointer addresses Go's %#v prints; they differ on every real request.
constexpr const char* kGoPointer = "0xc000000000";

const json* Find(const json& node, const char* key) {
  if (!node.is_object()) {
    return nullptr;
  }
  auto it = node.find(key);
  return it == node.end() ? nullptr : &*it;
}

std::string StringAt(const json& node, const char* key) {
  const json* v = Find(node, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

bool Flag(const json& node, const char* key) {
  const json* v = Find(node, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::string TrimSpace(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) {
    return "";
  }
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool HasLineBreak(const std::string& s) { return s.find_first_of("\n\r") != std::string::npos; }

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
  r.rule = StringAt(entry, "rule");
  r.message = StringAt(entry, "message");
  r.message_expression = StringAt(entry, "messageExpression");
  if (const json* reason = Find(entry, "reason"); reason != nullptr && reason->is_string()) {
    r.reason = reason->get<std::string>();
  }
  r.field_path = StringAt(entry, "fieldPath");
  if (const json* o = Find(entry, "optionalOldSelf"); o != nullptr && o->is_boolean()) {
    r.optional_old_self = o->get<bool>();
  }
  return r;
}

std::vector<Rule> RulesOf(const json& node) {
  std::vector<Rule> rules;
  if (const json* list = Find(node, "x-kubernetes-validations");
      list != nullptr && list->is_array()) {
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
         ", Reason:(*apiextensions.FieldValueErrorReason)(" + (r.reason ? kGoPointer : "nil") +
         "), FieldPath:" + GoQuote(r.field_path) + ", OptionalOldSelf:(*bool)(" +
         (r.optional_old_self ? kGoPointer : "nil") + ")}";
}

std::string Child(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}
std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}
std::string Key(const std::string& path, const std::string& key) { return path + "[" + key + "]"; }

// cel.ValidFieldPath: a JSON path of .field and ['key'] steps that the schema defines, and its
// normalised field.Path form.
std::optional<std::string> ValidFieldPath(const std::string& json_path, const json& schema) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < json_path.size()) {
    char c = json_path[i];
    if (c == '.' || c == '[' || c == ']') {
      tokens.emplace_back(1, c);
      ++i;
      continue;
    }
    size_t start = i;
    if (c == '\'') {
      ++i;
      while (i < json_path.size() && !(json_path[i] == '\'' && json_path[i - 1] != '\\')) {
        ++i;
      }
      i = std::min(i + 1, json_path.size());
      tokens.push_back(json_path.substr(start, i - start));
      continue;
    }
    while (i < json_path.size() && json_path[i] != '.' && json_path[i] != '[' &&
           json_path[i] != ']') {
      ++i;
    }
    tokens.push_back(json_path.substr(start, i - start));
  }
  const json* node = &schema;
  std::string path;
  bool started = false;
  auto step = [&](const std::string& name) -> bool {
    const json* props = Find(*node, "properties");
    const json* additional = Find(*node, "additionalProperties");
    if (props != nullptr && props->is_object() && !props->empty()) {
      auto it = props->find(name);
      path = started ? path + "." + name : name;
      started = true;
      if (it == props->end()) {
        return false;
      }
      node = &*it;
      return true;
    }
    if (additional != nullptr) {
      path += "[" + name + "]";
      started = true;
      node = additional;
      return true;
    }
    return false;
  };
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& tok = tokens[t];
    if (tok == "[") {
      if (t + 2 >= tokens.size()) {
        return std::nullopt;
      }
      const std::string& quoted = tokens[t + 1];
      if (quoted.size() < 2 || quoted.front() != '\'' || quoted.back() != '\'') {
        return std::nullopt;
      }
      std::string unescaped;
      for (size_t k = 1; k + 1 < quoted.size(); ++k) {
        if (quoted[k] == '\\' && k + 2 < quoted.size()) {
          char d = quoted[++k];
          const std::string known = "abfnrtv'\\";
          if (known.find(d) == std::string::npos) {
            return std::nullopt;
          }
          static const std::map<char, char> kEscapes = {{'a', '\a'}, {'b', '\b'},  {'f', '\f'},
                                                        {'n', '\n'}, {'r', '\r'},  {'t', '\t'},
                                                        {'v', '\v'}, {'\'', '\''}, {'\\', '\\'}};
          unescaped += kEscapes.at(d);
        } else {
          unescaped += quoted[k];
        }
      }
      if (!step(unescaped) || tokens[t + 2] != "]") {
        return std::nullopt;
      }
      t += 2;
    } else if (tok == ".") {
      if (t + 1 >= tokens.size() || !step(tokens[t + 1])) {
        return std::nullopt;
      }
      ++t;
    } else {
      return std::nullopt;
    }
  }
  return path;
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
         "arrays, maps, "
         "and strings are declared)";
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

// --- CRD-time checks
// ------------------------------------------------------------------------------

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

struct ErrorLists {
  std::vector<SchemaError> schema_errors;
  std::vector<SchemaError> cel_errors;
};

struct NodeContext {
  std::optional<uint64_t> max_cardinality;  // nullopt: unbounded
  std::string uncorrelatable_path;          // non-empty: oldSelf is forbidden below this path
};

// extractMaxElements: how much a schema multiplies the occurrences of its children.
std::optional<uint64_t> MaxElements(const json& node) {
  std::string type = StringAt(node, "type");
  if (type == "object") {
    if (Find(node, "additionalProperties") != nullptr) {
      if (const json* max = Find(node, "maxProperties"); max != nullptr && max->is_number()) {
        return static_cast<uint64_t>(std::max<int64_t>(0, max->get<int64_t>()));
      }
      return std::nullopt;
    }
    return 1;
  }
  if (type == "array") {
    if (const json* max = Find(node, "maxItems"); max != nullptr && max->is_number()) {
      return static_cast<uint64_t>(std::max<int64_t>(0, max->get<int64_t>()));
    }
    return std::nullopt;
  }
  return 1;
}

NodeContext ChildContext(const NodeContext& parent, const json& parent_schema) {
  NodeContext child = parent;
  if (!parent.max_cardinality) {
    return child;
  }
  std::optional<uint64_t> factor = MaxElements(parent_schema);
  child.max_cardinality =
      factor ? std::optional<uint64_t>(MultiplyWithOverflowGuard(*parent.max_cardinality, *factor))
             : std::nullopt;
  if (factor && *parent.max_cardinality != 0 && *factor != 0 &&
      std::numeric_limits<uint64_t>::max() / *parent.max_cardinality < *factor) {
    child.max_cardinality = std::numeric_limits<uint64_t>::max();
  }
  return child;
}

bool MapIsCorrelatable(const json& node) {
  const json* map_type = Find(node, "x-kubernetes-map-type");
  if (map_type == nullptr || !map_type->is_string()) {
    return true;
  }
  std::string t = map_type->get<std::string>();
  return t == "granular" || t == "atomic";
}

void CompileNodeRules(const json& node, const std::string& path, const std::vector<Rule>& rules,
                      const NodeContext& ctx, bool is_root, TotalCost& total,
                      std::vector<SchemaError>& cel_errors) {
  TypePtr decl = SchemaDeclType(node, is_root || Flag(node, "x-kubernetes-embedded-resource"),
                                NextSelfTypeName());
  if (!decl) {
    cel_errors.push_back(
        {Child(path, "x-kubernetes-validations"),
         InternalError("internal error: failed to construct type information for "
                       "x-kubernetes-validations rules: "
                       "unable to convert structural schema to CEL declarations")});
    return;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    CompiledRule cr = CompileRule(rules[i], node, decl);
    std::string base = Index(Child(path, "x-kubernetes-validations"), i);
    std::string rule_path = Child(base, "rule");
    uint64_t cost = MultiplyWithOverflowGuard(
        cr.max_cost, ctx.max_cardinality ? *ctx.max_cardinality : cr.max_cardinality);
    if (cost > kStaticEstimatedCostLimit) {
      cel_errors.push_back({rule_path, Forbidden(CostErrorMessage("estimated rule cost", cost,
                                                                  kStaticEstimatedCostLimit))});
    }
    total.Observe(rule_path, cost);
    if (!cr.error.empty()) {
      cel_errors.push_back({rule_path, InvalidValue(GoSharpV(rules[i]), cr.error)});
    }
    if (!cr.message_expression_error.empty()) {
      cel_errors.push_back({Child(base, "messageExpression"),
                            InvalidValue(GoSharpV(rules[i]), cr.message_expression_error)});
    } else if (cr.message_program) {
      if (cr.message_max_cost > kStaticEstimatedCostLimit) {
        cel_errors.push_back(
            {Child(base, "messageExpression"),
             Forbidden(CostErrorMessage("estimated messageExpression cost", cr.message_max_cost,
                                        kStaticEstimatedCostLimit))});
      }
      total.Observe(Child(base, "messageExpression"), cr.message_max_cost);
    }
    if (cr.uses_old_self) {
      if (!ctx.uncorrelatable_path.empty()) {
        cel_errors.push_back(
            {rule_path,
             InvalidValue(
                 GoQuote(rules[i].rule),
                 "oldSelf cannot be used on the uncorrelatable portion of the schema within " +
                     ctx.uncorrelatable_path)});
      }
    } else if (rules[i].optional_old_self) {
      cel_errors.push_back({Child(base, "optionalOldSelf"),
                            InvalidValue(*rules[i].optional_old_self ? "true" : "false",
                                         "may not be set if oldSelf is not used in rule")});
    }
  }
}

class CrdChecker {
 public:
  explicit CrdChecker(TotalCost& total) : total_(total) {}

  ErrorLists Visit(const json& node, const std::string& path, const NodeContext& ctx,
                   bool is_root) {
    ErrorLists errs;
    if (!node.is_object()) {
      return errs;
    }
    if (const json* additional = Find(node, "additionalProperties");
        additional != nullptr && additional->is_object()) {
      Append(errs, Visit(*additional, Child(path, "additionalProperties"), ChildContext(ctx, node),
                         false));
    }
    if (const json* props = Find(node, "properties"); props != nullptr && props->is_object()) {
      for (const auto& [name, prop] : props->items()) {  // nlohmann keeps keys sorted
        NodeContext child = ChildContext(ctx, node);
        if (!MapIsCorrelatable(node) && child.uncorrelatable_path.empty()) {
          child.uncorrelatable_path = path;
        }
        Append(errs, Visit(prop, Key(Child(path, "properties"), name), child, false));
      }
    }
    if (const json* n = Find(node, "not"); n != nullptr) {
      Append(errs, Visit(*n, Child(path, "not"), NodeContext{std::nullopt, ctx.uncorrelatable_path},
                         false));
    }
    for (const char* junctor : {"allOf", "oneOf", "anyOf"}) {
      if (const json* list = Find(node, junctor); list != nullptr && list->is_array()) {
        for (size_t i = 0; i < list->size(); ++i) {
          Append(errs, Visit((*list)[i], Index(Child(path, junctor), i),
                             NodeContext{std::nullopt, ctx.uncorrelatable_path}, false));
        }
      }
    }
    if (const json* items = Find(node, "items"); items != nullptr && items->is_object()) {
      NodeContext child = ChildContext(ctx, node);
      if (StringAt(node, "x-kubernetes-list-type") != "map" && child.uncorrelatable_path.empty()) {
        child.uncorrelatable_path = path;
      }
      Append(errs, Visit(*items, Child(path, "items"), child, false));
    }
    std::vector<Rule> rules = RulesOf(node);
    if (rules.empty()) {
      return errs;
    }
    CheckRuleFields(node, path, rules, errs);
    // The server compiles a node's rules only if it and everything below it are free of schema
    // errors (invalid schemas may not convert to CEL types).
    if (errs.schema_errors.empty()) {
      CompileNodeRules(node, path, rules, ctx, is_root, total_, errs.cel_errors);
    }
    return errs;
  }

 private:
  static void Append(ErrorLists& to, ErrorLists from) {
    to.schema_errors.insert(to.schema_errors.end(), from.schema_errors.begin(),
                            from.schema_errors.end());
    to.cel_errors.insert(to.cel_errors.end(), from.cel_errors.begin(), from.cel_errors.end());
  }

  static void CheckRuleFields(const json& node, const std::string& path,
                              const std::vector<Rule>& rules, ErrorLists& errs) {
    static const std::vector<std::string> kReasons = {"FieldValueDuplicate", "FieldValueForbidden",
                                                      "FieldValueInvalid", "FieldValueRequired"};
    for (size_t i = 0; i < rules.size(); ++i) {
      const Rule& r = rules[i];
      std::string base = Index(Child(path, "x-kubernetes-validations"), i);
      std::string trimmed_rule = TrimSpace(r.rule);
      std::string trimmed_msg = TrimSpace(r.message);
      auto& out = errs.schema_errors;
      if (trimmed_rule.empty()) {
        out.push_back({Child(base, "rule"), RequiredValue("rule is not specified")});
      } else if (!r.message.empty() && trimmed_msg.empty()) {
        out.push_back({Child(base, "message"),
                       InvalidValue(GoQuote(r.message), "message must be non-empty if specified")});
      } else if (HasLineBreak(trimmed_msg)) {
        out.push_back({Child(base, "message"),
                       InvalidValue(GoQuote(r.message), "message must not contain line breaks")});
      } else if (HasLineBreak(trimmed_rule) && trimmed_msg.empty()) {
        out.push_back({Child(base, "message"),
                       RequiredValue("message must be specified if rule contains line breaks")});
      }
      if (!r.message_expression.empty() && TrimSpace(r.message_expression).empty()) {
        out.push_back({Child(base, "messageExpression"),
                       RequiredValue("messageExpression must be non-empty if specified")});
      }
      if (r.reason && std::find(kReasons.begin(), kReasons.end(), *r.reason) == kReasons.end()) {
        out.push_back({Child(base, "reason"), UnsupportedValue(GoQuote(*r.reason), kReasons)});
      }
      if (!r.field_path.empty() && TrimSpace(r.field_path).empty()) {
        out.push_back(
            {Child(base, "fieldPath"),
             InvalidValue(GoQuote(r.field_path), "fieldPath must be non-empty if specified")});
      }
      if (HasLineBreak(r.field_path)) {
        out.push_back(
            {Child(base, "fieldPath"),
             InvalidValue(GoQuote(r.field_path), "fieldPath must not contain line breaks")});
      }
      if (!r.field_path.empty() && !ValidFieldPath(r.field_path, node)) {
        out.push_back({Child(base, "fieldPath"),
                       InvalidValue(GoQuote(r.field_path), "fieldPath must be a valid path")});
      }
    }
  }

  TotalCost& total_;
};

}  // namespace

namespace {

// The cardinality context of `target` inside `node`, following the checker's traversal.
bool FindContext(const json& node, const json& target, const NodeContext& ctx, NodeContext& found) {
  if (&node == &target) {
    found = ctx;
    return true;
  }
  if (!node.is_object()) {
    return false;
  }
  if (const json* additional = Find(node, "additionalProperties");
      additional != nullptr && additional->is_object()) {
    if (FindContext(*additional, target, ChildContext(ctx, node), found)) {
      return true;
    }
  }
  if (const json* props = Find(node, "properties"); props != nullptr && props->is_object()) {
    for (const auto& [name, prop] : props->items()) {
      if (FindContext(prop, target, ChildContext(ctx, node), found)) {
        return true;
      }
    }
  }
  if (const json* items = Find(node, "items"); items != nullptr && items->is_object()) {
    if (FindContext(*items, target, ChildContext(ctx, node), found)) {
      return true;
    }
  }
  return false;
}

}  // namespace

struct CrdRuleCompiler::State {
  TotalCost total;
};

CrdRuleCompiler::CrdRuleCompiler() : state_(std::make_shared<State>()) {}

schema::CelCompiler CrdRuleCompiler::Hook() const {
  std::shared_ptr<State> state = state_;
  return [state](const schema::CelCompileRequest& request) {
    // Unknown position (a copied node): unbounded, as the server treats nodes below unbounded
    // lists.
    NodeContext ctx{std::nullopt, request.uncorrelatable_parent};
    NodeContext found;
    if (FindContext(request.root, request.node, NodeContext{1, ""}, found)) {
      ctx.max_cardinality = found.max_cardinality;
    }
    std::string node_path = request.rules_path;
    const std::string suffix = ".x-kubernetes-validations";
    if (node_path.size() >= suffix.size() &&
        node_path.compare(node_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      node_path.resize(node_path.size() - suffix.size());
    }
    std::vector<SchemaError> errors;
    CompileNodeRules(request.node, node_path, RulesOf(request.node), ctx,
                     &request.node == &request.root, state->total, errors);
    return errors;
  };
}

std::vector<SchemaError> CrdRuleCompiler::TotalCostErrors(const std::string& path) const {
  std::vector<SchemaError> errors;
  const TotalCost& total = state_->total;
  if (total.total > kStaticEstimatedCrdCostLimit) {
    for (const auto& [expensive_path, cost] : total.most_expensive) {
      errors.push_back(
          {expensive_path,
           Forbidden("contributed to estimated rule cost total exceeding cost limit for "
                     "entire OpenAPIv3 schema")});
    }
    errors.push_back({path, Forbidden(CostErrorMessage(
                                "x-kubernetes-validations estimated rule cost total for entire "
                                "OpenAPIv3 schema",
                                total.total, kStaticEstimatedCrdCostLimit))});
  }
  return errors;
}

schema::CelCompilerFactory CrdCelCompilers() {
  return [] {
    CrdRuleCompiler compiler;
    return schema::CelSchemaCompiler{
        compiler.Hook(), [compiler](const std::string& path) { return compiler.TotalCostErrors(path); }};
  };
}

std::vector<SchemaError> CheckSchemaRules(const json& schema, const std::string& path) {
  TotalCost total;
  CrdChecker checker(total);
  ErrorLists lists = checker.Visit(schema, path, NodeContext{1, ""}, true);
  std::vector<SchemaError> errors = std::move(lists.schema_errors);
  errors.insert(errors.end(), lists.cel_errors.begin(), lists.cel_errors.end());
  if (total.total > kStaticEstimatedCrdCostLimit) {
    for (const auto& [expensive_path, cost] : total.most_expensive) {
      errors.push_back(
          {expensive_path,
           Forbidden("contributed to estimated rule cost total exceeding cost limit for "
                     "entire OpenAPIv3 schema")});
    }
    errors.push_back({path, Forbidden(CostErrorMessage(
                                "x-kubernetes-validations estimated rule cost total for entire "
                                "OpenAPIv3 schema",
                                total.total, kStaticEstimatedCrdCostLimit))});
  }
  return errors;
}

// --- Evaluation on custom-resource writes
// ---------------------------------------------------------

struct ValidatorNode {
  const json* schema = nullptr;
  TypePtr decl;
  std::vector<CompiledRule> rules;
  std::map<std::string, ValidatorNode> properties;
  std::unique_ptr<ValidatorNode> items;
  std::unique_ptr<ValidatorNode> additional_properties;
  bool empty() const {
    return rules.empty() && properties.empty() && !items && !additional_properties;
  }
};

class CompiledSchemaRules {
 public:
  explicit CompiledSchemaRules(json schema) : schema_(std::move(schema)) {
    root_ = Build(schema_, true);
  }
  const ValidatorNode* root() const { return root_ ? &*root_ : nullptr; }

 private:
  static std::optional<ValidatorNode> Build(const json& node, bool resource_root) {
    if (!node.is_object()) {
      return std::nullopt;
    }
    ValidatorNode v;
    v.schema = &node;
    std::vector<Rule> rules = RulesOf(node);
    if (!rules.empty()) {
      v.decl = SchemaDeclType(node, resource_root, NextSelfTypeName());
      for (const Rule& r : rules) {
        if (v.decl) {
          v.rules.push_back(CompileRule(r, node, v.decl));
        } else {
          CompiledRule failed;
          failed.rule = r;
          failed.error = "unable to convert structural schema to CEL declarations";
          v.rules.push_back(std::move(failed));
        }
      }
    }
    if (const json* props = Find(node, "properties"); props != nullptr && props->is_object()) {
      for (const auto& [name, prop] : props->items()) {
        if (auto child = Build(prop, Flag(prop, "x-kubernetes-embedded-resource"))) {
          v.properties.emplace(name, std::move(*child));
        }
      }
    }
    if (const json* items = Find(node, "items"); items != nullptr) {
      if (auto child = Build(*items, Flag(*items, "x-kubernetes-embedded-resource"))) {
        v.items = std::make_unique<ValidatorNode>(std::move(*child));
      }
    }
    if (const json* additional = Find(node, "additionalProperties");
        additional != nullptr && additional->is_object()) {
      if (auto child = Build(*additional, Flag(*additional, "x-kubernetes-embedded-resource"))) {
        v.additional_properties = std::make_unique<ValidatorNode>(std::move(*child));
      }
    }
    if (v.empty()) {
      return std::nullopt;
    }
    return v;
  }

  json schema_;
  std::optional<ValidatorNode> root_;
};

namespace {

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
  bool Validate(const ValidatorNode& v, const std::string& path, const json& obj, const json* old,
                Correlation corr) {
    if (obj.is_null()) {
      return true;
    }
    if (!ValidateExpressions(v, path, obj, old, corr)) {
      return false;
    }
    bool unchanged =
        corr.correlated ? (corr.old != nullptr && *corr.old == obj) : corr.parent_unchanged;
    if (obj.is_array() && v.items) {
      const json& schema = *v.schema;
      bool map_list = StringAt(schema, "x-kubernetes-list-type") == "map";
      for (size_t i = 0; i < obj.size(); ++i) {
        const json* old_item =
            map_list && old != nullptr ? FindMapListItem(schema, *old, obj[i]) : nullptr;
        Correlation child{old_item, map_list && corr.correlated && old_item != nullptr, unchanged};
        if (!Validate(*v.items, Index(path, i), obj[i], old_item, child)) {
          return false;
        }
      }
    } else if (obj.is_object()) {
      bool correlatable = MapIsCorrelatable(*v.schema);
      for (const auto& [k, value] : obj.items()) {
        const ValidatorNode* sub = nullptr;
        std::string child_path;
        if (v.additional_properties) {
          sub = &*v.additional_properties;
          child_path = Key(path, k);
        } else if (auto it = v.properties.find(k); it != v.properties.end()) {
          sub = &it->second;
          child_path = path == "<nil>" ? k : Child(path, k);
        }
        if (sub == nullptr) {
          continue;
        }
        const json* old_value = nullptr;
        if (correlatable && old != nullptr && old->is_object()) {
          auto it = old->find(k);
          old_value = it == old->end() ? nullptr : &*it;
        }
        bool root_type_meta = path == "<nil>" && (k == "apiVersion" || k == "kind");
        Correlation child{old_value, corr.correlated && old_value != nullptr && !root_type_meta,
                          root_type_meta ? false : unchanged};
        if (!Validate(*sub, child_path, value, old_value, child)) {
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
    const json* keys = Find(schema, "x-kubernetes-list-map-keys");
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

  bool ValidateExpressions(const ValidatorNode& v, const std::string& path, const json& obj,
                           const json* old, const Correlation& corr) {
    if (v.rules.empty()) {
      return true;
    }
    std::string sts_type = GoQuote(StringAt(*v.schema, "type"));
    if (budget_ <= 0) {
      out_.errors.push_back(
          {path, InvalidValue(sts_type,
                              "validation failed due to running out of cost budget, no "
                              "further validation rules will be run")});
      return false;
    }
    bool ratchet =
        corr.correlated ? (corr.old != nullptr && *corr.old == obj) : corr.parent_unchanged;
    std::map<std::string, Value> vars;
    vars["self"] = FromJson(obj, v.decl.get());
    std::optional<Value> old_value;
    if (old != nullptr && !old->is_null()) {
      old_value = FromJson(*old, v.decl.get());
    }
    for (const CompiledRule& cr : v.rules) {
      if (!cr.error.empty()) {
        out_.errors.push_back({path, InvalidValue(sts_type, "rule compile error: " + cr.error)});
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
        out_.errors.push_back(
            {path, InvalidValue(sts_type,
                                "validation failed due to running out of cost budget, no "
                                "further validation rules will be run")});
        budget_ = -1;
        return false;
      }
      budget_ -= static_cast<int64_t>(result.cost);
      if (result.value.is_error()) {
        const std::string& err = result.value.error();
        if (err.rfind("no such overload", 0) == 0) {
          out_.errors.push_back(
              {path, InvalidValue(sts_type, "'" + err +
                                                "': call arguments did not match a supported "
                                                "operator, function or macro signature for rule: " +
                                                RuleErrorString(cr.rule))});
        } else if (result.cost_limit_exceeded) {
          out_.errors.push_back(
              {path, InvalidValue(sts_type, "'" + err +
                                                "': no further validation rules will be run "
                                                "due to call cost exceeds limit for rule: " +
                                                RuleErrorString(cr.rule))});
          budget_ = -1;
          return false;
        } else {
          out_.errors.push_back({path, InvalidValue(sts_type, err + " evaluating rule: " +
                                                                  RuleErrorString(cr.rule))});
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
          AddError(
              cr, ratchet,
              {current, InvalidValue(sts_type,
                                     "messageExpression evaluation failed due to running out "
                                     "of cost budget, no further validation rules will be run")});
          budget_ = -1;
          return false;
        }
        if (msg.cost_limit_exceeded) {
          AddError(
              cr, ratchet,
              {current, InvalidValue(sts_type,
                                     "no further validation rules will be run due to call cost "
                                     "exceeds limit for messageExpression: " +
                                         GoQuote(cr.rule.message_expression))});
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
      SchemaError error{current, ""};
      if (!cr.rule.reason || *cr.rule.reason == "FieldValueInvalid") {
        error.message = InvalidValue(sts_type, detail);
      } else if (*cr.rule.reason == "FieldValueForbidden") {
        error.message = Forbidden(detail);
      } else if (*cr.rule.reason == "FieldValueRequired") {
        error.message = RequiredValue(detail);
      } else if (*cr.rule.reason == "FieldValueDuplicate") {
        error.message = DuplicateValue(sts_type);
      } else {
        error.message = InvalidValue(sts_type, detail);
      }
      AddError(cr, ratchet, std::move(error));
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
  RuleValidator validator(out);
  const json* old = old_object.is_null() ? nullptr : &old_object;
  Correlation corr{old, old != nullptr, false};
  validator.Validate(*root, "<nil>", object, old, corr);
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
