// Tree-walking evaluator: identifiers, field selection on objects and maps, indexing, optional
// selection, comprehensions, short-circuit logic, and overload dispatch on runtime kinds.
#include "tests/support/cel/interpreter.h"

#include <cmath>

#include "tests/support/cel/cost.h"
#include "tests/support/cel/library.h"

namespace ringleader::cel {
namespace {

struct CostLimitExceeded {};

bool MatchesRuntime(const Type& param, const Value& v) {
  switch (param.kind) {
    case TypeKind::kDyn:
    case TypeKind::kTypeParam:
    case TypeKind::kError:
      return true;
    case TypeKind::kNull:
      return v.is<NullValue>();
    case TypeKind::kBool:
      return v.is<bool>();
    case TypeKind::kInt:
      return v.is<int64_t>();
    case TypeKind::kUint:
      return v.is<uint64_t>();
    case TypeKind::kDouble:
      return v.is<double>();
    case TypeKind::kString:
      return v.is<std::string>();
    case TypeKind::kBytes:
      return v.is<Bytes>();
    case TypeKind::kList:
      return v.is_list();
    case TypeKind::kMap:
      return v.is_map() && v.map().object_type.empty();
    case TypeKind::kObject:
      return v.is_map() && !v.map().object_type.empty();
    case TypeKind::kType:
      return v.is<TypeValue>();
    case TypeKind::kDuration:
      return v.is<Duration>();
    case TypeKind::kTimestamp:
      return v.is<Timestamp>();
    case TypeKind::kOptional:
      return v.is<OptionalValue>();
    case TypeKind::kOpaque:
      return param.name == "kubernetes.Quantity" && v.is<Quantity>();
  }
  return false;
}

std::string KeyString(const Value& key) {
  if (key.is<std::string>()) {
    return key.as<std::string>();
  }
  return DebugString(key);
}

class Interpreter {
 public:
  Interpreter(const CheckedExpr& expr, const std::map<std::string, Value>& variables,
              uint64_t limit)
      : expr_(expr), variables_(variables), limit_(limit) {}

  Value Run() { return Eval(*expr_.parsed.root); }
  uint64_t cost() const { return cost_; }

 private:
  void Charge(uint64_t amount) {
    cost_ += amount;
    if (cost_ > limit_) {
      throw CostLimitExceeded{};
    }
  }

  const Value* Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (it->first == name) {
        return &it->second;
      }
    }
    auto it = variables_.find(name);
    return it == variables_.end() ? nullptr : &it->second;
  }

  Value Eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return LiteralValue(e.literal);
      case ExprKind::kIdent: {
        Charge(1);
        if (const Value* v = Lookup(e.name)) {
          return *v;
        }
        if (e.name == "list" || e.name == "map" || e.name == "int" || e.name == "uint" ||
            e.name == "double" || e.name == "bool" || e.name == "string" || e.name == "bytes" ||
            e.name == "null_type" || e.name == "type" || e.name == "dyn" ||
            e.name == "optional_type" || e.name == "google.protobuf.Timestamp" ||
            e.name == "google.protobuf.Duration") {
          return TypeValue{e.name};
        }
        return Value::Error("no such attribute: " + e.name);
      }
      case ExprKind::kSelect:
        return EvalSelect(e);
      case ExprKind::kCall:
        return EvalCall(e);
      case ExprKind::kList:
        return EvalList(e);
      case ExprKind::kMap:
        return EvalMap(e);
      case ExprKind::kComprehension:
        return EvalComprehension(e);
    }
    return Value::Error("unknown expression");
  }

  static Value LiteralValue(const Literal& lit) {
    return std::visit([](const auto& v) -> Value { return Value(v); }, lit);
  }

  Value EvalSelect(const Expr& e) {
    Value operand = Eval(*e.target);
    if (!e.test_only) {
      Charge(1);
    }
    if (operand.is_error()) {
      return operand;
    }
    if (!operand.is_map()) {
      return Value::Error("no such overload");
    }
    const Value* v = MapFind(operand.map(), Value(e.name));
    if (e.test_only) {
      return v != nullptr;
    }
    if (v == nullptr) {
      return Value::Error("no such key: " + e.name);
    }
    return *v;
  }

  Value Index(const Value& container, const Value& index, bool optional_result) {
    if (container.is_list()) {
      const auto& items = container.list().items;
      int64_t i = 0;
      if (index.is<int64_t>()) {
        i = index.as<int64_t>();
      } else if (index.is<uint64_t>()) {
        i = static_cast<int64_t>(index.as<uint64_t>());
      } else if (index.is<double>() && std::trunc(index.as<double>()) == index.as<double>()) {
        i = static_cast<int64_t>(index.as<double>());
      } else {
        return Value::Error("unsupported index type '" + RuntimeTypeName(index) + "' in list");
      }
      if (i < 0 || i >= static_cast<int64_t>(items.size())) {
        if (optional_result) {
          return Value::None();
        }
        return Value::Error("index out of bounds: " + std::to_string(i));
      }
      return optional_result ? Value::Some(items[static_cast<size_t>(i)])
                             : items[static_cast<size_t>(i)];
    }
    if (container.is_map()) {
      const Value* v = MapFind(container.map(), index);
      if (v == nullptr) {
        if (optional_result) {
          return Value::None();
        }
        return Value::Error("no such key: " + KeyString(index));
      }
      return optional_result ? Value::Some(*v) : *v;
    }
    return Value::Error("no such overload");
  }

  Value EvalCall(const Expr& e) {
    const std::string& fn = e.name;
    if (fn == "_&&_" || fn == "_||_") {
      bool is_and = fn == "_&&_";
      Value left = Eval(*e.args[0]);
      if (left.is<bool>() && left.as<bool>() != is_and) {
        return left;  // false && x, true || x
      }
      Value right = Eval(*e.args[1]);
      if (right.is<bool>() && right.as<bool>() != is_and) {
        return right;
      }
      if (left.is<bool>() && right.is<bool>()) {
        return right;
      }
      if (left.is_error()) {
        return left;
      }
      if (right.is_error()) {
        return right;
      }
      return Value::Error("no such overload");
    }
    if (fn == "_?_:_") {
      Value cond = Eval(*e.args[0]);
      if (cond.is_error()) {
        return cond;
      }
      if (!cond.is<bool>()) {
        return Value::Error("no such overload");
      }
      return Eval(*e.args[cond.as<bool>() ? 1 : 2]);
    }
    if (fn == "_?._") {
      Value operand = Eval(*e.args[0]);
      Charge(1);
      if (operand.is_error()) {
        return operand;
      }
      if (operand.is<OptionalValue>()) {
        if (!operand.as<OptionalValue>().value) {
          return operand;
        }
        operand = *operand.as<OptionalValue>().value;
      }
      if (!operand.is_map()) {
        return Value::Error("no such overload");
      }
      const Value* v = MapFind(operand.map(), e.args[1]->literal.index() == 5
                                                  ? Value(std::get<std::string>(e.args[1]->literal))
                                                  : Value());
      return v == nullptr ? Value::None() : Value::Some(*v);
    }
    if (fn == "_[_]" || fn == "_[?_]") {
      Value container = Eval(*e.args[0]);
      Value index = Eval(*e.args[1]);
      Charge(1);
      if (container.is_error()) {
        return container;
      }
      if (index.is_error()) {
        return index;
      }
      bool optional = fn == "_[?_]";
      if (container.is<OptionalValue>()) {
        const auto& o = container.as<OptionalValue>();
        if (!o.value) {
          return container;
        }
        Value inner = Index(*o.value, index, true);
        return inner;
      }
      return Index(container, index, optional);
    }
    std::vector<Value> args;
    if (e.target) {
      args.push_back(Eval(*e.target));
    }
    for (const ExprPtr& a : e.args) {
      args.push_back(Eval(*a));
    }
    if (fn == "type") {
      Charge(1);
      if (args[0].is_error()) {
        return args[0];
      }
      return TypeValue{RuntimeTypeName(args[0])};
    }
    // Strict functions return the first error argument; @not_strictly_false absorbs errors.
    if (fn != "@not_strictly_false") {
      for (const Value& a : args) {
        if (a.is_error()) {
          return a;
        }
      }
    } else if (args[0].is_error()) {
      Charge(1);
      return true;
    }
    auto candidates = expr_.overloads.find(e.id);
    const FunctionDecl* decl = FindFunction(fn);
    if (candidates == expr_.overloads.end() || decl == nullptr) {
      return Value::Error("no such overload");
    }
    for (const std::string& id : candidates->second) {
      const OverloadDecl* overload = nullptr;
      for (const OverloadDecl& o : decl->overloads) {
        if (o.id == id) {
          overload = &o;
          break;
        }
      }
      if (overload == nullptr || overload->impl == nullptr ||
          overload->params.size() != args.size()) {
        continue;
      }
      bool match = true;
      for (size_t i = 0; i < args.size() && match; ++i) {
        match = MatchesRuntime(*overload->params[i], args[i]);
      }
      if (!match) {
        continue;
      }
      Value result = overload->impl(args);
      Charge(RuntimeCallCost(fn, id, args, result));
      return result;
    }
    Charge(1);
    return Value::Error("no such overload");
  }

  Value EvalList(const Expr& e) {
    std::vector<Value> items;
    Value error;
    bool failed = false;
    for (size_t i = 0; i < e.args.size(); ++i) {
      Value v = Eval(*e.args[i]);
      if (v.is_error() && !failed) {
        error = v;
        failed = true;
      }
      bool optional = std::find(e.optional_indices.begin(), e.optional_indices.end(), i) !=
                      e.optional_indices.end();
      if (optional && v.is<OptionalValue>()) {
        if (v.as<OptionalValue>().value) {
          items.push_back(*v.as<OptionalValue>().value);
        }
        continue;
      }
      items.push_back(std::move(v));
    }
    Charge(10);
    if (failed) {
      return error;
    }
    return Value::List(std::move(items));
  }

  Value EvalMap(const Expr& e) {
    auto map = std::make_shared<MapValue>();
    for (const MapEntry& entry : e.entries) {
      Value k = Eval(*entry.key);
      Value v = Eval(*entry.value);
      if (k.is_error()) {
        return k;
      }
      if (v.is_error()) {
        return v;
      }
      if (entry.optional && v.is<OptionalValue>()) {
        if (!v.as<OptionalValue>().value) {
          continue;
        }
        v = *v.as<OptionalValue>().value;
      }
      if (MapFind(*map, k) != nullptr) {
        return Value::Error("Failed with repeated key");
      }
      map->entries.emplace_back(std::move(k), std::move(v));
    }
    Charge(30);
    return Value(std::shared_ptr<const MapValue>(std::move(map)));
  }

  Value EvalComprehension(const Expr& e) {
    Value range = Eval(*e.iter_range);
    if (range.is_error()) {
      return range;
    }
    std::vector<Value> elements;
    if (range.is_list()) {
      elements = range.list().items;
    } else if (range.is_map()) {
      for (const auto& [k, v] : range.map().entries) {
        elements.push_back(k);
      }
    } else {
      return Value::Error("no such overload");
    }
    Value accu = Eval(*e.accu_init);
    scopes_.emplace_back(e.accu_var, accu);
    size_t accu_index = scopes_.size() - 1;
    for (const Value& element : elements) {
      scopes_.emplace_back(e.iter_var, element);
      Value cond = Eval(*e.loop_cond);
      if (cond.is<bool>() && !cond.as<bool>()) {
        scopes_.pop_back();
        break;
      }
      Value step = Eval(*e.loop_step);
      scopes_.pop_back();
      scopes_[accu_index].second = std::move(step);
    }
    Value result = Eval(*e.result);
    scopes_.pop_back();
    return result;
  }

  const CheckedExpr& expr_;
  const std::map<std::string, Value>& variables_;
  std::vector<std::pair<std::string, Value>> scopes_;
  uint64_t limit_;
  uint64_t cost_ = 0;
};

}  // namespace

EvalResult Evaluate(const CheckedExpr& expr, const std::map<std::string, Value>& variables,
                    uint64_t cost_limit) {
  EvalResult result;
  if (!expr.parsed.root) {
    result.value = Value::Error("expression did not compile");
    return result;
  }
  Interpreter interpreter(expr, variables, cost_limit);
  try {
    result.value = interpreter.Run();
  } catch (const CostLimitExceeded&) {
    result.value = Value::Error("operation cancelled: actual cost limit exceeded");
    result.cost_limit_exceeded = true;
  }
  result.cost = interpreter.cost();
  return result;
}

}  // namespace ringleader::cel
