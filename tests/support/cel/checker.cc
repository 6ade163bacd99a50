// Type checking with type-parameter binding (list(A), map(A, B)), homogeneous aggregate literals,
// comprehension scopes and the refusals of declared-but-unimplemented Kubernetes functions.
#include "tests/support/cel/checker.h"

#include "tests/support/cel/library.h"

namespace ringleader::cel {
namespace {

using Bindings = std::map<std::string, TypePtr>;

bool IsDynLike(const Type& t) { return t.kind == TypeKind::kDyn || t.kind == TypeKind::kError; }

// Whether a value of type `arg` may be passed where `param` is expected, binding type
// parameters of `param` in `b` (cel-go's isAssignable, simplified to one direction).
bool Assign(const TypePtr& param, const TypePtr& arg, Bindings& b) {
  if (param->kind == TypeKind::kTypeParam) {
    auto it = b.find(param->name);
    if (it == b.end()) {
      b[param->name] = arg;
      return true;
    }
    if (IsDynLike(*it->second)) {
      return true;
    }
    if (IsDynLike(*arg)) {
      return true;
    }
    return Assign(it->second, arg, b);
  }
  if (IsDynLike(*param) || IsDynLike(*arg)) {
    return true;
  }
  if (arg->kind == TypeKind::kNull) {
    return param->kind == TypeKind::kNull || param->kind == TypeKind::kObject;
  }
  if (param->kind == TypeKind::kNull) {
    return arg->kind == TypeKind::kObject;
  }
  if (param->kind != arg->kind || param->params.size() != arg->params.size()) {
    return false;
  }
  if ((param->kind == TypeKind::kObject || param->kind == TypeKind::kOpaque) &&
      param->name != arg->name) {
    return false;
  }
  for (size_t i = 0; i < param->params.size(); ++i) {
    if (!Assign(param->params[i], arg->params[i], b)) {
      return false;
    }
  }
  return true;
}

TypePtr Substitute(const TypePtr& t, const Bindings& b) {
  if (t->kind == TypeKind::kTypeParam) {
    auto it = b.find(t->name);
    return it == b.end() ? types::Dyn() : it->second;
  }
  if (t->params.empty()) {
    return t;
  }
  std::vector<TypePtr> params;
  for (const TypePtr& p : t->params) {
    params.push_back(Substitute(p, b));
  }
  switch (t->kind) {
    case TypeKind::kList:
      return types::List(params[0]);
    case TypeKind::kMap:
      return types::Map(params[0], params[1]);
    case TypeKind::kType:
      return types::TypeOf(params[0]);
    case TypeKind::kOptional:
      return types::Optional(params[0]);
    default: {
      auto copy = std::make_shared<Type>(*t);
      copy->params = params;
      return copy;
    }
  }
}

// The more general of two assignable types (dyn wins), for joining literal elements.
TypePtr MostGeneral(const TypePtr& a, const TypePtr& b) {
  if (IsDynLike(*a)) {
    return a;
  }
  if (IsDynLike(*b)) {
    return b;
  }
  return a;
}

// Overloads whose evaluation the interpreter handles itself (they have no library function).
bool HandledByInterpreter(const std::string& id) {
  static const std::set<std::string> kIds = {"logical_and",
                                             "logical_or",
                                             "conditional",
                                             "type",
                                             "index_list",
                                             "index_map",
                                             "optional_list_index_int",
                                             "optional_map_index_value",
                                             "list_optindex_optional_int",
                                             "optional_list_optindex_optional_int",
                                             "map_optindex_optional_value",
                                             "optional_map_optindex_optional_value",
                                             "select_optional_field"};
  return kIds.count(id) != 0;
}

const std::map<std::string, TypePtr>& TypeIdentifiers() {
  static const std::map<std::string, TypePtr> kTypes = {
      {"int", types::TypeOf(types::Int())},
      {"uint", types::TypeOf(types::Uint())},
      {"double", types::TypeOf(types::Double())},
      {"bool", types::TypeOf(types::Bool())},
      {"string", types::TypeOf(types::String())},
      {"bytes", types::TypeOf(types::Bytes())},
      {"null_type", types::TypeOf(types::Null())},
      {"list", types::TypeOf(types::List(types::Dyn()))},
      {"map", types::TypeOf(types::Map(types::Dyn(), types::Dyn()))},
      {"type", types::TypeOf(types::TypeOf(types::Dyn()))},
      {"dyn", types::TypeOf(types::Dyn())},
      {"optional_type", types::TypeOf(types::Optional(types::Dyn()))},
      {"google.protobuf.Timestamp", types::TypeOf(types::Timestamp())},
      {"google.protobuf.Duration", types::TypeOf(types::Duration())},
  };
  return kTypes;
}

class Checker {
 public:
  Checker(CheckedExpr& out, const std::vector<Variable>& variables) : out_(out) {
    for (const Variable& v : variables) {
      variables_[v.name] = v.type;
    }
  }

  TypePtr Run(Expr& root) { return Visit(root); }

 private:
  void Report(int64_t id, std::string message) {
    if (quiet_ > 0) {
      return;
    }
    auto pos = out_.parsed.positions.find(id);
    out_.issues.push_back(
        {pos == out_.parsed.positions.end() ? -1 : pos->second, std::move(message)});
  }

  TypePtr Set(const Expr& e, TypePtr t) {
    if (quiet_ == 0) {
      out_.types[e.id] = t;
    }
    return t;
  }

  const TypePtr* Local(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) {
        return &found->second;
      }
    }
    return nullptr;
  }

  TypePtr Visit(Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return Set(e, LiteralType(e.literal));
      case ExprKind::kIdent:
        return VisitIdent(e);
      case ExprKind::kSelect:
        return VisitSelect(e);
      case ExprKind::kCall:
        return VisitCall(e);
      case ExprKind::kList:
        return VisitList(e);
      case ExprKind::kMap:
        return VisitMap(e);
      case ExprKind::kComprehension:
        return VisitComprehension(e);
    }
    return Set(e, types::Error());
  }

  static TypePtr LiteralType(const Literal& lit) {
    switch (lit.index()) {
      case 0:
        return types::Null();
      case 1:
        return types::Bool();
      case 2:
        return types::Int();
      case 3:
        return types::Uint();
      case 4:
        return types::Double();
      case 5:
        return types::String();
      default:
        return types::Bytes();
    }
  }

  TypePtr VisitIdent(Expr& e) {
    std::string name = e.name;
    if (!name.empty() && name[0] == '.') {
      name = name.substr(1);
      e.name = name;
    }
    if (const TypePtr* local = Local(name)) {
      return Set(e, *local);
    }
    if (auto it = variables_.find(name); it != variables_.end()) {
      if (quiet_ == 0) {
        out_.referenced_variables.insert(name);
      }
      return Set(e, it->second);
    }
    if (auto it = TypeIdentifiers().find(name); it != TypeIdentifiers().end()) {
      return Set(e, it->second);
    }
    Report(e.id, "undeclared reference to '" + name + "' (in container '')");
    return Set(e, types::Error());
  }

  // The type of field `field` of a value of type `operand`, reporting cel-go's errors.
  TypePtr FieldType(const Expr& e, const TypePtr& operand, const std::string& field) {
    switch (operand->kind) {
      case TypeKind::kObject: {
        auto it = operand->fields.find(field);
        if (it == operand->fields.end()) {
          Report(e.id, "undefined field '" + field + "'");
          return types::Error();
        }
        return it->second.type;
      }
      case TypeKind::kMap:
        return operand->params[1];
      case TypeKind::kDyn:
      case TypeKind::kTypeParam:
        return types::Dyn();
      case TypeKind::kError:
        return types::Error();
      default:
        Report(e.id, "type '" + TypeName(*operand) + "' does not support field selection");
        return types::Error();
    }
  }

  // A select chain of plain identifiers ("optional", "sets", "format", "ip") as a dotted name,
  // when its root is not a variable in scope.
  std::optional<std::string> QualifiedName(const Expr& e) const {
    if (e.kind == ExprKind::kIdent) {
      if (Local(e.name) != nullptr || variables_.count(e.name) != 0) {
        return std::nullopt;
      }
      return e.name;
    }
    if (e.kind == ExprKind::kSelect && !e.test_only && e.target) {
      auto prefix = QualifiedName(*e.target);
      if (prefix) {
        return *prefix + "." + e.name;
      }
    }
    return std::nullopt;
  }

  TypePtr VisitSelect(Expr& e) {
    if (!e.test_only) {
      if (auto name = QualifiedName(e); name && TypeIdentifiers().count(*name) != 0) {
        // A qualified type name such as google.protobuf.Timestamp.
        e.kind = ExprKind::kIdent;
        e.name = *name;
        e.target.reset();
        return VisitIdent(e);
      }
    }
    TypePtr operand = Visit(*e.target);
    TypePtr field = FieldType(e, operand, e.name);
    return Set(e, e.test_only ? types::Bool() : field);
  }

  TypePtr VisitList(Expr& e) {
    TypePtr elem;
    for (size_t i = 0; i < e.args.size(); ++i) {
      TypePtr t = Visit(*e.args[i]);
      bool optional = std::find(e.optional_indices.begin(), e.optional_indices.end(), i) !=
                      e.optional_indices.end();
      if (optional) {
        if (t->kind == TypeKind::kOptional) {
          t = t->params[0];
        } else if (!IsDynLike(*t)) {
          Report(e.args[i]->id, "expected type 'optional_type(" + TypeName(*t) + ")' but found '" +
                                    TypeName(*t) + "'");
          t = types::Error();
        }
      }
      elem = Join(*e.args[i], elem, t);
    }
    return Set(e, types::List(elem ? elem : types::Dyn()));
  }

  // Kubernetes enables cel.HomogeneousAggregateLiterals: literal elements share one type.
  TypePtr Join(const Expr& at, const TypePtr& previous, const TypePtr& current) {
    if (!previous) {
      return current;
    }
    Bindings b;
    if (Assign(previous, current, b) && Assign(current, previous, b)) {
      return MostGeneral(previous, current);
    }
    Report(at.id,
           "expected type '" + TypeName(*previous) + "' but found '" + TypeName(*current) + "'");
    return types::Error();
  }

  TypePtr VisitMap(Expr& e) {
    TypePtr key;
    TypePtr value;
    for (MapEntry& entry : e.entries) {
      TypePtr k = Visit(*entry.key);
      TypePtr v = Visit(*entry.value);
      if (entry.optional) {
        if (v->kind == TypeKind::kOptional) {
          v = v->params[0];
        } else if (!IsDynLike(*v)) {
          Report(entry.value->id, "expected type 'optional_type(" + TypeName(*v) +
                                      ")' but found '" + TypeName(*v) + "'");
          v = types::Error();
        }
      }
      key = Join(*entry.key, key, k);
      value = Join(*entry.value, value, v);
    }
    return Set(e, types::Map(key ? key : types::Dyn(), value ? value : types::Dyn()));
  }

  // For map() and filter(), the element type the step appends, so the result is list(T).
  const Expr* AppendedElement(const Expr& step) const {
    const Expr* add = &step;
    if (add->kind == ExprKind::kCall && add->name == "_?_:_" && add->args.size() == 3) {
      add = add->args[1].get();
    }
    if (add->kind == ExprKind::kCall && add->name == "_+_" && add->args.size() == 2 &&
        add->args[1]->kind == ExprKind::kList && add->args[1]->args.size() == 1) {
      return add->args[1]->args[0].get();
    }
    return nullptr;
  }

  TypePtr VisitComprehension(Expr& e) {
    TypePtr range = Visit(*e.iter_range);
    TypePtr iter;
    switch (range->kind) {
      case TypeKind::kList:
        iter = range->params[0];
        break;
      case TypeKind::kMap:
        iter = range->params[0];
        break;
      case TypeKind::kDyn:
      case TypeKind::kError:
        iter = types::Dyn();
        break;
      default:
        Report(e.iter_range->id,
               "expression of type '" + TypeName(*range) +
                   "' cannot be range of a comprehension (must be list, map, or dynamic)");
        iter = types::Dyn();
    }
    TypePtr accu = Visit(*e.accu_init);
    scopes_.push_back({{e.accu_var, accu}});
    scopes_.push_back({{e.iter_var, iter}});
    if (e.accu_init->kind == ExprKind::kList && e.accu_init->args.empty()) {
      if (const Expr* element = AppendedElement(*e.loop_step)) {
        ++quiet_;
        TypePtr elem = Visit(const_cast<Expr&>(*element));
        --quiet_;
        accu = types::List(elem);
        scopes_[scopes_.size() - 2][e.accu_var] = accu;
      }
    }
    Visit(*e.loop_cond);
    Visit(*e.loop_step);
    scopes_.pop_back();
    TypePtr result = Visit(*e.result);
    scopes_.pop_back();
    return Set(e, result);
  }

  static std::string Signature(const std::vector<TypePtr>& args, bool member) {
    std::string out;
    size_t start = 0;
    if (member) {
      out += TypeName(*args[0]) + ".";
      start = 1;
    }
    out += "(";
    for (size_t i = start; i < args.size(); ++i) {
      out += (i > start ? ", " : "") + TypeName(*args[i]);
    }
    return out + ")";
  }

  TypePtr VisitCall(Expr& e) {
    // optional.of(x), sets.contains(a, b), ...: a member call on a qualified name is a global
    // call of the dotted name when such a function exists.
    if (e.target) {
      if (auto qualifier = QualifiedName(*e.target)) {
        std::string full = *qualifier + "." + e.name;
        if (FindFunction(full) != nullptr) {
          e.name = full;
          e.target.reset();
        }
      }
    }
    if (e.name == "_?._") {
      return VisitOptionalSelect(e);
    }
    const FunctionDecl* fn = FindFunction(e.name);
    if (fn == nullptr) {
      Report(e.id, "undeclared reference to '" + e.name + "' (in container '')");
      if (e.target) {
        Visit(*e.target);
      }
      for (ExprPtr& a : e.args) {
        Visit(*a);
      }
      return Set(e, types::Error());
    }
    std::vector<TypePtr> arg_types;
    bool member = e.target != nullptr;
    if (member) {
      arg_types.push_back(Visit(*e.target));
    }
    for (ExprPtr& a : e.args) {
      arg_types.push_back(Visit(*a));
    }
    TypePtr result;
    std::vector<std::string> matched;
    const OverloadDecl* unimplemented = nullptr;
    for (const OverloadDecl& o : fn->overloads) {
      if (o.member != member || o.params.size() != arg_types.size()) {
        continue;
      }
      Bindings b;
      bool ok = true;
      for (size_t i = 0; i < arg_types.size() && ok; ++i) {
        ok = Assign(o.params[i], arg_types[i], b);
      }
      if (!ok) {
        continue;
      }
      matched.push_back(o.id);
      if (o.impl == nullptr && !HandledByInterpreter(o.id)) {
        unimplemented = &o;
      }
      TypePtr r = Substitute(o.result, b);
      if (!result) {
        result = r;
      } else if (!IsDynLike(*result) && !SameType(*result, *r)) {
        result = types::Dyn();
      }
    }
    if (matched.empty()) {
      bool any_error = std::any_of(arg_types.begin(), arg_types.end(),
                                   [](const TypePtr& t) { return t->kind == TypeKind::kError; });
      if (!any_error) {
        Report(e.id, "found no matching overload for '" + e.name + "' applied to '" +
                         Signature(arg_types, member) + "'");
      }
      return Set(e, types::Error());
    }
    if (unimplemented != nullptr) {
      Report(e.id, "devcluster does not implement '" + e.name + "' (" +
                       (fn->library.empty() ? std::string("Kubernetes CEL library") : fn->library) +
                       "), which Kubernetes 1.32 offers to CRD validation rules");
    }
    if (quiet_ == 0) {
      out_.overloads[e.id] = matched;
    }
    ValidateLiteralArguments(e);
    return Set(e, result);
  }

  // cel.ValidateRegexLiterals / ValidateDurationLiterals / ValidateTimestampLiterals (1.29+).
  void ValidateLiteralArguments(const Expr& e) {
    if (e.args.empty() || e.args[0]->kind != ExprKind::kLiteral) {
      return;
    }
    const Expr& arg = *e.args[0];
    if (!std::holds_alternative<std::string>(arg.literal)) {
      return;
    }
    const std::string& text = std::get<std::string>(arg.literal);
    bool valid = true;
    if (e.name == "matches" && e.target) {
      std::vector<Value> probe = {Value(std::string()), Value(text)};
      valid = !FindImplementation("matches_string")(probe).is_error();
    } else if (e.name == "duration" && !e.target) {
      valid = ParseGoDuration(text).has_value();
    } else if (e.name == "timestamp" && !e.target) {
      valid = !FindImplementation("string_to_timestamp")({Value(text)}).is_error();
    } else {
      return;
    }
    if (!valid) {
      Report(arg.id, "invalid " + e.name + " argument");
    }
  }

  TypePtr VisitOptionalSelect(Expr& e) {
    TypePtr operand = Visit(*e.args[0]);
    Visit(*e.args[1]);
    const std::string& field = std::get<std::string>(e.args[1]->literal);
    TypePtr base = operand->kind == TypeKind::kOptional ? operand->params[0] : operand;
    TypePtr t = FieldType(e, base, field);
    if (quiet_ == 0) {
      out_.overloads[e.id] = {"select_optional_field"};
    }
    return Set(e, t->kind == TypeKind::kError ? t : types::Optional(t));
  }

  CheckedExpr& out_;
  std::map<std::string, TypePtr> variables_;
  std::vector<std::map<std::string, TypePtr>> scopes_;
  int quiet_ = 0;
};

}  // namespace

CheckedExpr Check(ParsedExpr parsed, const std::vector<Variable>& variables) {
  CheckedExpr out;
  out.parsed = std::move(parsed);
  if (!out.parsed.root) {
    out.issues = out.parsed.issues;
    return out;
  }
  Checker checker(out, variables);
  out.output = checker.Run(*out.parsed.root);
  return out;
}

CheckedExpr Compile(const Source& source, const std::vector<Variable>& variables) {
  ParsedExpr parsed = Parse(source);
  if (!parsed.issues.empty()) {
    CheckedExpr out;
    out.issues = parsed.issues;
    out.parsed = std::move(parsed);
    return out;
  }
  return Check(std::move(parsed), variables);
}

}  // namespace ringleader::cel
