// The CEL abstract syntax tree the parser builds, the checker annotates and the evaluator walks,
// plus the source text with the line/column bookkeeping cel-go uses in its error messages.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace ringleader::cel {

// A literal as written: null, bool, int, uint, double, string (UTF-8) or bytes.
struct NullValue {
  bool operator==(const NullValue&) const = default;
};
struct Bytes {
  std::string data;
  bool operator==(const Bytes&) const = default;
};
using Literal = std::variant<NullValue, bool, int64_t, uint64_t, double, std::string, Bytes>;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind { kLiteral, kIdent, kSelect, kCall, kList, kMap, kComprehension };

struct MapEntry {
  ExprPtr key;
  ExprPtr value;
  bool optional = false;  // `{?key: value}`
};

struct Expr {
  int64_t id = 0;
  ExprKind kind = ExprKind::kLiteral;
  Literal literal;
  // Ident name, selected field, or function name of a call.
  std::string name;
  // Select: the operand. Call: the receiver of a member call (null for a global call).
  ExprPtr target;
  bool test_only = false;  // a select made by has()
  // Call arguments or list elements.
  std::vector<ExprPtr> args;
  std::vector<size_t> optional_indices;  // list elements written `?x`
  std::vector<MapEntry> entries;
  // Comprehension (the expansion of the all/exists/exists_one/map/filter macros).
  std::string iter_var;
  std::string accu_var;
  ExprPtr iter_range;
  ExprPtr accu_init;
  ExprPtr loop_cond;
  ExprPtr loop_step;
  ExprPtr result;
};

// The expression text and where each expression id sits in it, in code points (as cel-go counts).
class Source {
 public:
  explicit Source(std::string text);

  const std::string& text() const { return text_; }
  // 1-based line and 0-based column of a code-point offset.
  std::pair<int, int> LineColumn(int32_t offset) const;
  // The text of a 1-based line, without its line break.
  std::string Line(int line) const;
  const std::u32string& code_points() const { return code_points_; }

 private:
  std::string text_;
  std::u32string code_points_;
  std::vector<int32_t> line_starts_;  // code-point offsets where each line starts
};

// One issue found while parsing or checking, at a code-point offset (-1 when unknown).
struct Issue {
  int32_t offset = -1;
  std::string message;
};

// Renders issues the way cel-go's Issues.String() does: "ERROR: <input>:L:C: msg\n | line\n | ..^",
// sorted by location, joined by newlines.
std::string FormatIssues(const Source& source, std::vector<Issue> issues);

// UTF-8 helpers shared by the lexer, the string functions and the error renderer.
std::u32string DecodeUtf8(const std::string& text);
std::string EncodeUtf8(const std::u32string& text);
void AppendUtf8(std::string& out, char32_t code_point);
size_t CodePointCount(const std::string& text);

}  // namespace ringleader::cel
