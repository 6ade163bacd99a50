// Static and runtime CEL cost. The estimator follows cel-go v0.22's coster (paths from variables
// through fields, @items, @keys and @values; sizes from Kubernetes' declared types; per-overload
// formulas) and Kubernetes' CostEstimator for its libraries. Where a formula is not known here,
// the estimate errs high (unknown sizes are treated as unbounded).
#include "tests/support/cel/cost.h"

#include <cmath>
#include <limits>
#include <map>

#include "tests/support/cel/parser.h"

namespace ringleader::cel {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr double kStringTraversalCostFactor = 0.1;
constexpr double kRegexStringLengthCostFactor = 0.25;

uint64_t AddSat(uint64_t a, uint64_t b) { return b > 0 && a > kMax - b ? kMax : a + b; }
uint64_t MulSat(uint64_t a, uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; }
uint64_t MulFactor(uint64_t x, double factor) {
  auto xf = static_cast<double>(x);
  if (xf > 0 && factor > 0 && xf > static_cast<double>(kMax) / factor) {
    return kMax;
  }
  double c = std::ceil(xf * factor);
  if (c >= 18446744073709551616.0) {
    return kMax;
  }
  return static_cast<uint64_t>(c);
}

CostRange Add(CostRange a, CostRange b) { return {AddSat(a.min, b.min), AddSat(a.max, b.max)}; }
CostRange Mul(CostRange a, CostRange b) { return {MulSat(a.min, b.min), MulSat(a.max, b.max)}; }
CostRange Factor(CostRange a, double f) { return {MulFactor(a.min, f), MulFactor(a.max, f)}; }
CostRange Union(CostRange a, CostRange b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}
CostRange Fixed(uint64_t v) { return {v, v}; }
const CostRange kUnknown{0, kMax};

bool IsScalar(const Type* t) {
  if (t == nullptr) {
    return false;
  }
  switch (t->kind) {
    case TypeKind::kBool:
    case TypeKind::kDouble:
    case TypeKind::kDuration:
    case TypeKind::kInt:
    case TypeKind::kTimestamp:
    case TypeKind::kUint:
      return true;
    case TypeKind::kOptional:
      return IsScalar(t->params[0].get());
    default:
      return false;
  }
}

// What the estimator knows about one expression node (cel-go's AstNode).
struct Node {
  const Expr* expr = nullptr;
  std::vector<std::string> path;
  const Type* type = nullptr;
  const CostRange* computed = nullptr;  // a size derived from the expression itself
};

class Estimator {
 public:
  Estimator(const CheckedExpr& checked, const Type& root) : checked_(checked), root_(root) {}

  CostRange Cost(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return Fixed(0);
      case ExprKind::kIdent:
        return CostIdent(e);
      case ExprKind::kSelect:
        return CostSelect(e);
      case ExprKind::kCall:
        return CostCall(e);
      case ExprKind::kList: {
        CostRange sum;
        for (const ExprPtr& a : e.args) {
          sum = Add(sum, Cost(*a));
        }
        return Add(sum, Fixed(10));
      }
      case ExprKind::kMap: {
        CostRange sum;
        for (const MapEntry& entry : e.entries) {
          sum = Add(sum, Cost(*entry.key));
          sum = Add(sum, Cost(*entry.value));
        }
        return Add(sum, Fixed(30));
      }
      case ExprKind::kComprehension:
        return CostComprehension(e);
    }
    return {};
  }

 private:
  const Type* TypeOf(const Expr& e) const { return checked_.TypeOf(e.id); }

  CostRange CostIdent(const Expr& e) {
    for (auto it = iter_ranges_.rbegin(); it != iter_ranges_.rend(); ++it) {
      if (it->first == e.name) {
        const Expr* range = it->second;
        const Type* t = TypeOf(*range);
        std::vector<std::string> path = paths_[range->id];
        if (t != nullptr && t->kind == TypeKind::kList) {
          path.emplace_back("@items");
          paths_[e.id] = path;
        } else if (t != nullptr && t->kind == TypeKind::kMap) {
          path.emplace_back("@keys");
          paths_[e.id] = path;
        }
        return Fixed(1);
      }
    }
    paths_[e.id] = {e.name};
    return Fixed(1);
  }

  CostRange CostSelect(const Expr& e) {
    if (e.test_only) {
      // Kubernetes sets PresenceTestHasCost(false): has() costs only its operand.
      return Cost(*e.target);
    }
    CostRange sum = Cost(*e.target);
    const Type* t = TypeOf(*e.target);
    if (t != nullptr && (t->kind == TypeKind::kMap || t->kind == TypeKind::kObject ||
                         t->kind == TypeKind::kTypeParam)) {
      sum = Add(sum, Fixed(1));
    }
    std::vector<std::string> path = paths_[e.target->id];
    path.push_back(e.name);
    paths_[e.id] = path;
    return sum;
  }

  Node MakeNode(const Expr& e) {
    Node n;
    n.expr = &e;
    n.path = paths_[e.id];
    if (!n.path.empty() && n.path[0] == kAccumulatorName) {
      n.path.clear();  // only paths from declared variables have schema sizes
    }
    n.type = TypeOf(e);
    auto it = computed_.find(e.id);
    if (it != computed_.end()) {
      n.computed = &it->second;
    }
    return n;
  }

  // astNode.ComputedSize: literal and aggregate-literal sizes, or a size a call derived.
  std::optional<CostRange> ComputedSize(const Node& n) const {
    if (n.computed != nullptr) {
      return *n.computed;
    }
    const Expr& e = *n.expr;
    if (e.kind == ExprKind::kLiteral) {
      if (std::holds_alternative<std::string>(e.literal)) {
        return Fixed(CodePointCount(std::get<std::string>(e.literal)));
      }
      if (std::holds_alternative<Bytes>(e.literal)) {
        return Fixed(std::get<Bytes>(e.literal).data.size());
      }
      return Fixed(1);
    }
    if (e.kind == ExprKind::kList) {
      return Fixed(e.args.size());
    }
    if (e.kind == ExprKind::kMap) {
      return Fixed(e.entries.size());
    }
    return std::nullopt;
  }

  // Kubernetes' sizeEstimator: walk the declared type from self along the path.
  std::optional<CostRange> SchemaSize(const std::vector<std::string>& path) const {
    if (path.empty()) {
      return std::nullopt;
    }
    const Type* node = &root_;
    for (size_t i = 1; i < path.size(); ++i) {
      const std::string& name = path[i];
      if (name == "@items" || name == "@values") {
        if (node->kind == TypeKind::kList && !node->params.empty()) {
          node = node->params[0].get();
        } else if (node->kind == TypeKind::kMap && node->params.size() > 1) {
          node = node->params[1].get();
        } else {
          return std::nullopt;
        }
      } else if (name == "@keys") {
        if (node->kind != TypeKind::kMap) {
          return std::nullopt;
        }
        node = node->params[0].get();  // the map key type: a plain string, MaxElements 0
      } else {
        auto it = node->fields.find(name);
        if (it == node->fields.end() || !it->second.type) {
          return std::nullopt;
        }
        node = it->second.type.get();
      }
    }
    return CostRange{0, static_cast<uint64_t>(std::max<int64_t>(node->max_elements, 0))};
  }

  CostRange SizeEstimate(const Node& n) const {
    if (auto computed = ComputedSize(n)) {
      return *computed;
    }
    if (auto schema = SchemaSize(n.path)) {
      return *schema;
    }
    if (IsScalar(n.type)) {
      return Fixed(1);
    }
    return kUnknown;
  }

  CostRange CostComprehension(const Expr& e) {
    CostRange sum = Cost(*e.iter_range);
    sum = Add(sum, Cost(*e.accu_init));
    iter_ranges_.emplace_back(e.iter_var, e.iter_range.get());
    CostRange loop = Cost(*e.loop_cond);
    CostRange step = Cost(*e.loop_step);
    iter_ranges_.pop_back();
    sum = Add(sum, Cost(*e.result));
    CostRange range_count = SizeEstimate(MakeNode(*e.iter_range));
    computed_[e.id] = range_count;
    return Add(sum, Mul(range_count, Add(step, loop)));
  }

  CostRange CostCall(const Expr& e) {
    if (e.name == "dyn" && e.args.size() == 1 && !e.target) {
      CostRange arg = Cost(*e.args[0]);
      if (auto it = computed_.find(e.args[0]->id); it != computed_.end()) {
        computed_[e.id] = it->second;
      }
      paths_[e.id] = paths_[e.args[0]->id];
      return Add(Fixed(1), arg);
    }
    std::vector<CostRange> arg_costs;
    std::vector<Node> args;
    for (const ExprPtr& a : e.args) {
      arg_costs.push_back(Cost(*a));
    }
    for (const ExprPtr& a : e.args) {
      args.push_back(MakeNode(*a));
    }
    auto overloads = checked_.overloads.find(e.id);
    if (overloads == checked_.overloads.end() || overloads->second.empty()) {
      return {};
    }
    CostRange sum;
    std::optional<Node> target;
    if (e.target) {
      sum = Add(sum, Cost(*e.target));
      target = MakeNode(*e.target);
    }
    CostRange fn{kMax, 0};
    std::optional<CostRange> result_size;
    for (const std::string& id : overloads->second) {
      auto [cost, size] = FunctionCost(e.name, id, target ? &*target : nullptr, args, arg_costs);
      fn = Union(fn, cost);
      if (size) {
        result_size = result_size ? Union(*result_size, *size) : *size;
      }
      if ((id == "index_list" || id == "index_map") && !e.args.empty()) {
        std::vector<std::string> path = paths_[e.args[0]->id];
        path.emplace_back(id == "index_list" ? "@items" : "@values");
        paths_[e.id] = path;
      }
    }
    if (result_size) {
      computed_[e.id] = *result_size;
    }
    return Add(sum, fn);
  }

  std::pair<CostRange, std::optional<CostRange>> FunctionCost(
      const std::string& fn, const std::string& id, const Node* target,
      const std::vector<Node>& args, const std::vector<CostRange>& arg_costs) {
    CostRange args_sum;
    for (const CostRange& c : arg_costs) {
      args_sum = Add(args_sum, c);
    }
    if (auto k8s = KubernetesCallCost(fn, id, target, args)) {
      return {Add(k8s->first, args_sum), k8s->second};
    }
    if ((id == "starts_with_string" || id == "ends_with_string") && args.size() == 1) {
      return {Add(Factor(SizeEstimate(args[0]), kStringTraversalCostFactor), args_sum),
              std::nullopt};
    }
    if (id == "in_list" && args.size() == 2) {
      return {Add(SizeEstimate(args[1]), args_sum), std::nullopt};
    }
    if (id == "matches_string" && target != nullptr && args.size() == 1) {
      CostRange str = Factor(Add(SizeEstimate(*target), Fixed(1)), kStringTraversalCostFactor);
      CostRange regex = Factor(SizeEstimate(args[0]), kRegexStringLengthCostFactor);
      return {Add(Mul(str, regex), args_sum), std::nullopt};
    }
    if (id == "contains_string" && target != nullptr && args.size() == 1) {
      CostRange str = Factor(SizeEstimate(*target), kStringTraversalCostFactor);
      CostRange sub = Factor(SizeEstimate(args[0]), kStringTraversalCostFactor);
      return {Add(Mul(str, sub), args_sum), std::nullopt};
    }
    if (id == "logical_or" || id == "logical_and") {
      return {CostRange{arg_costs[0].min, Add(arg_costs[0], arg_costs[1]).max}, std::nullopt};
    }
    if (id == "conditional") {
      CostRange size = Union(SizeEstimate(args[1]), SizeEstimate(args[2]));
      return {Add(arg_costs[0], Union(arg_costs[1], arg_costs[2])), size};
    }
    if ((id == "add_string" || id == "add_bytes" || id == "add_list") && args.size() == 2) {
      CostRange l = SizeEstimate(args[0]);
      CostRange r = SizeEstimate(args[1]);
      CostRange size = Add(l, r);
      if (id == "add_list") {
        return {Add(Fixed(1), args_sum), size};
      }
      return {Add(Factor(size, kStringTraversalCostFactor), args_sum), size};
    }
    static const std::set<std::string> kMinSizeCompare = {
        "less_string", "greater_string", "less_equals_string", "greater_equals_string",
        "less_bytes",  "greater_bytes",  "less_equals_bytes",  "greater_equals_bytes",
        "equals",      "not_equals"};
    if (kMinSizeCompare.count(id) != 0 && args.size() == 2) {
      CostRange l = SizeEstimate(args[0]);
      CostRange r = SizeEstimate(args[1]);
      uint64_t smallest_max = std::min(l.max, r.max);
      CostRange c{smallest_max > 0 ? 1u : 0u, smallest_max};
      return {Add(Factor(c, kStringTraversalCostFactor), args_sum), std::nullopt};
    }
    if (id == "list_sets_contains_list" || id == "list_sets_equivalent_list" ||
        id == "list_sets_intersects_list") {
      // ext/sets.go estimateSetsCost: size(a) * size(b) * factor + 1, equivalence counting twice.
      double factor = id == "list_sets_equivalent_list" ? 2 : 1;
      CostRange product = Factor(Mul(NodeSize(args[0]), NodeSize(args[1])), factor);
      return {Add(Add(product, Fixed(1)), args_sum), std::nullopt};
    }
    return {Add(Fixed(1), args_sum), std::nullopt};
  }

  std::optional<Node> ListElement(const Node& list) const {
    if (list.type == nullptr || list.type->kind != TypeKind::kList) {
      return std::nullopt;
    }
    Node n;
    n.type = list.type->params[0].get();
    if (!list.path.empty()) {
      n.path = list.path;
      n.path.emplace_back("@items");
    }
    static const Expr kNoExpr;
    n.expr = &kNoExpr;
    return n;
  }

  CostRange NodeSize(const Node& n) const {
    if (n.expr == nullptr || n.expr->id == 0) {
      if (auto schema = SchemaSize(n.path)) {
        return *schema;
      }
      return kUnknown;
    }
    if (auto computed = ComputedSize(n)) {
      return *computed;
    }
    if (auto schema = SchemaSize(n.path)) {
      return *schema;
    }
    return kUnknown;
  }

  // Kubernetes' library.CostEstimator.EstimateCallCost (cost of the call itself, without args).
  std::optional<std::pair<CostRange, std::optional<CostRange>>> KubernetesCallCost(
      const std::string& fn, const std::string& id, const Node* target,
      const std::vector<Node>& args) {
    using Result = std::pair<CostRange, std::optional<CostRange>>;
    if (fn == "isSorted" || fn == "sum" || fn == "max" || fn == "min" || fn == "indexOf" ||
        fn == "lastIndexOf") {
      if (target == nullptr) {
        return std::nullopt;
      }
      if (auto elem = ListElement(*target)) {
        CostRange element_cost = Fixed(1);
        if (elem->type->kind == TypeKind::kString || elem->type->kind == TypeKind::kBytes) {
          element_cost = Add(element_cost, Factor(NodeSize(*elem), kStringTraversalCostFactor));
        }
        return Result{Mul(NodeSize(*target), element_cost), std::nullopt};
      }
      return Result{Factor(NodeSize(*target), kStringTraversalCostFactor), std::nullopt};
    }
    if (fn == "url" && args.size() == 1) {
      return Result{Factor(NodeSize(args[0]), kStringTraversalCostFactor), std::nullopt};
    }
    if (fn == "lowerAscii" || fn == "upperAscii" || fn == "substring" || fn == "trim") {
      if (target == nullptr) {
        return std::nullopt;
      }
      CostRange size = NodeSize(*target);
      return Result{Factor(size, kStringTraversalCostFactor), size};
    }
    if (fn == "replace" && target != nullptr && args.size() >= 2) {
      // Result size per Kubernetes' formula is not needed for the bound; cost is 2 traversals.
      CostRange size = NodeSize(*target);
      CostRange result = kUnknown;
      CostRange from = NodeSize(args[0]);
      CostRange to = NodeSize(args[1]);
      if (from.min > 0 && to.max <= from.min) {
        result = {0, size.max};
      }
      return Result{Factor(size, 2 * kStringTraversalCostFactor), result};
    }
    if (fn == "split" && target != nullptr) {
      CostRange size = NodeSize(*target);
      uint64_t max = size.max;
      if (args.size() > 1 && args[1].expr->kind == ExprKind::kLiteral &&
          std::holds_alternative<int64_t>(args[1].expr->literal)) {
        max = static_cast<uint64_t>(std::get<int64_t>(args[1].expr->literal));
      }
      return Result{Factor(size, 2 * kStringTraversalCostFactor), CostRange{0, max}};
    }
    if (fn == "join" && target != nullptr) {
      CostRange size;
      CostRange list_size = NodeSize(*target);
      if (auto elem = ListElement(*target)) {
        size = Mul(list_size, NodeSize(*elem));
      }
      if (!args.empty()) {
        CostRange sep = NodeSize(args[0]);
        CostRange separators{list_size.min > 0 ? list_size.min - 1 : 0,
                             list_size.max > 0 ? list_size.max - 1 : 0};
        size = Add(size, Mul(sep, separators));
      }
      return Result{Factor(size, kStringTraversalCostFactor), size};
    }
    if ((fn == "find" || fn == "findAll") && target != nullptr && !args.empty()) {
      CostRange size = NodeSize(*target);
      CostRange str = Factor(Add(size, Fixed(1)), kStringTraversalCostFactor);
      CostRange regex = Factor(NodeSize(args[0]), kRegexStringLengthCostFactor);
      return Result{Mul(str, regex), CostRange{0, size.max}};
    }
    // "quantity" and "isQuantity" are global functions, but Kubernetes estimates them only when
    // called with a target, so they take cel-go's default of 1 (their runtime cost does count).
    if (fn == "sign" || fn == "asInteger" || fn == "isInteger" || fn == "asApproximateFloat" ||
        fn == "isGreaterThan" || fn == "isLessThan" || fn == "compareTo" || fn == "add" ||
        fn == "sub") {
      return Result{Fixed(1), std::nullopt};
    }
    (void)id;
    return std::nullopt;
  }

  const CheckedExpr& checked_;
  const Type& root_;
  std::map<int64_t, std::vector<std::string>> paths_;
  std::map<int64_t, CostRange> computed_;
  std::vector<std::pair<std::string, const Expr*>> iter_ranges_;
};

uint64_t ActualSize(const Value& v) {
  if (v.is<std::string>()) {
    return CodePointCount(v.as<std::string>());
  }
  if (v.is<Bytes>()) {
    return v.as<Bytes>().data.size();
  }
  if (v.is_list()) {
    return v.list().items.size();
  }
  if (v.is_map()) {
    return v.map().entries.size();
  }
  return 1;
}

uint64_t CeilFactor(uint64_t size, double factor) {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(size) * factor));
}

// library.traversalCost: strings and bytes at 0.1 per byte (truncated), containers summed.
uint64_t TraversalCost(const Value& v) {
  if (v.is<std::string>()) {
    return static_cast<uint64_t>(static_cast<double>(v.as<std::string>().size()) *
                                 kStringTraversalCostFactor);
  }
  if (v.is<Bytes>()) {
    return static_cast<uint64_t>(static_cast<double>(v.as<Bytes>().data.size()) *
                                 kStringTraversalCostFactor);
  }
  if (v.is_list()) {
    uint64_t sum = 0;
    for (const Value& item : v.list().items) {
      sum += TraversalCost(item);
    }
    return sum;
  }
  if (v.is_map()) {
    uint64_t sum = 0;
    for (const auto& [k, val] : v.map().entries) {
      sum += TraversalCost(k) + TraversalCost(val);
    }
    return sum;
  }
  return 1;
}

}  // namespace

CostRange EstimateCost(const CheckedExpr& expr, const Type& root) {
  if (!expr.parsed.root) {
    return {};
  }
  Estimator estimator(expr, root);
  return estimator.Cost(*expr.parsed.root);
}

uint64_t RuntimeCallCost(const std::string& fn, const std::string& id,
                         const std::vector<Value>& args, const Value& result) {
  // Kubernetes' library.CostEstimator.CallCost first.
  if (fn == "isSorted" || fn == "sum" || fn == "max" || fn == "min" || fn == "indexOf" ||
      fn == "lastIndexOf") {
    return args.empty() ? 0 : TraversalCost(args[0]);
  }
  if (fn == "url" || fn == "lowerAscii" || fn == "upperAscii" || fn == "substring" ||
      fn == "trim") {
    return args.empty() ? 0 : CeilFactor(ActualSize(args[0]), kStringTraversalCostFactor);
  }
  if (fn == "replace" || fn == "split") {
    return args.empty() ? 0 : CeilFactor(ActualSize(args[0]), 2 * kStringTraversalCostFactor);
  }
  if (fn == "join") {
    return CeilFactor(ActualSize(result), 2 * kStringTraversalCostFactor);
  }
  if ((fn == "find" || fn == "findAll") && args.size() >= 2) {
    uint64_t str = static_cast<uint64_t>(
        std::ceil((1.0 + static_cast<double>(ActualSize(args[0]))) * kStringTraversalCostFactor));
    return str * CeilFactor(ActualSize(args[1]), kRegexStringLengthCostFactor);
  }
  if (fn == "quantity" || fn == "isQuantity") {
    return args.empty() ? 0 : CeilFactor(ActualSize(args[0]), kStringTraversalCostFactor);
  }
  if (fn == "sign" || fn == "asInteger" || fn == "isInteger" || fn == "asApproximateFloat" ||
      fn == "isGreaterThan" || fn == "isLessThan" || fn == "compareTo" || fn == "add" ||
      fn == "sub") {
    return 1;
  }
  // cel-go's CostTracker.costCall.
  if (id == "starts_with_string" || id == "ends_with_string" || id == "string_to_bytes" ||
      id == "bytes_to_string") {
    return CeilFactor(ActualSize(args[0]), kStringTraversalCostFactor);
  }
  if (id == "in_list") {
    return ActualSize(args[1]);
  }
  static const std::set<std::string> kMinSizeCompare = {
      "less_string", "greater_string", "less_equals_string", "greater_equals_string",
      "less_bytes",  "greater_bytes",  "less_equals_bytes",  "greater_equals_bytes",
      "equals",      "not_equals"};
  if (kMinSizeCompare.count(id) != 0) {
    return CeilFactor(std::min(ActualSize(args[0]), ActualSize(args[1])),
                      kStringTraversalCostFactor);
  }
  if (id == "add_string" || id == "add_bytes") {
    return CeilFactor(ActualSize(args[0]) + ActualSize(args[1]), kStringTraversalCostFactor);
  }
  if (id == "matches_string") {
    uint64_t str = static_cast<uint64_t>(
        std::ceil((1.0 + static_cast<double>(ActualSize(args[0]))) * kStringTraversalCostFactor));
    return str * CeilFactor(ActualSize(args[1]), kRegexStringLengthCostFactor);
  }
  if (id == "contains_string") {
    return CeilFactor(ActualSize(args[0]), kStringTraversalCostFactor) *
           CeilFactor(ActualSize(args[1]), kStringTraversalCostFactor);
  }
  if (id == "list_sets_contains_list" || id == "list_sets_equivalent_list" ||
      id == "list_sets_intersects_list") {
    double factor = id == "list_sets_equivalent_list" ? 2 : 1;
    return 1 + static_cast<uint64_t>(
                   static_cast<double>(ActualSize(args[0]) * ActualSize(args[1])) * factor);
  }
  return 1;
}

}  // namespace ringleader::cel
