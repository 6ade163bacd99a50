// Recursive-descent CEL parser: lexer (all literal forms and escapes), precedence climbing that
// mirrors the ANTLR grammar's shape, cel-go's balanced &&/|| trees and its macro expansions.
#include "tests/support/cel/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <string_view>

namespace ringleader::cel {
namespace {

enum class Tok {
  kEof,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kTrue,
  kFalse,
  kNull,
  kIn,
  kDot,
  kComma,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kColon,
  kQuestion,
  kNot,
  kMinus,
  kPlus,
  kStar,
  kSlash,
  kPercent,
  kLess,
  kLessEq,
  kGreater,
  kGreaterEq,
  kEq,
  kNotEq,
  kAnd,
  kOr,
  kError
};

struct Token {
  Tok kind = Tok::kEof;
  int32_t offset = 0;
  std::u32string raw;  // the text as written, for error messages
  std::string text;    // identifier name or decoded string/bytes value
  uint64_t int_bits = 0;
  bool int_overflow = false;
  double number = 0;
};

// Thrown to abandon the parse at the first syntax error (cel-go reports what ANTLR recovers; one
// error is enough for a refusal and keeps the wording predictable).
struct SyntaxError {
  int32_t offset;
  std::string message;
};

constexpr const char* kExprStart =
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
    "BYTES, IDENTIFIER}";

const std::set<std::string>& ReservedIdentifiers() {
  static const std::set<std::string> kReserved = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
  return kReserved;
}

bool IsDigit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool IsHex(char32_t c) {
  return IsDigit(c) || (c >= U'a' && c <= U'f') || (c >= U'A' && c <= U'F');
}
bool IsIdentStart(char32_t c) {
  return c == U'_' || (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z');
}
int HexValue(char32_t c) {
  if (IsDigit(c)) {
    return static_cast<int>(c - U'0');
  }
  if (c >= U'a' && c <= U'f') {
    return static_cast<int>(c - U'a') + 10;
  }
  return static_cast<int>(c - U'A') + 10;
}

std::string DisplayToken(const std::u32string& raw) {
  std::string out;
  for (char32_t c : raw) {
    if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else {
      AppendUtf8(out, c);
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::u32string& input) : in_(input) {}

  Token Next() {
    SkipSpaceAndComments();
    Token t;
    t.offset = static_cast<int32_t>(pos_);
    if (pos_ >= in_.size()) {
      t.kind = Tok::kEof;
      t.raw = U"<EOF>";
      return t;
    }
    char32_t c = in_[pos_];
    // String and bytes literals, with optional r/b prefixes in either order and case.
    if (StartsString()) {
      return LexString();
    }
    if (IsIdentStart(c)) {
      size_t start = pos_;
      while (pos_ < in_.size() && (IsIdentStart(in_[pos_]) || IsDigit(in_[pos_]))) {
        ++pos_;
      }
      t.raw = in_.substr(start, pos_ - start);
      t.text = EncodeUtf8(t.raw);
      if (t.text == "true") {
        t.kind = Tok::kTrue;
      } else if (t.text == "false") {
        t.kind = Tok::kFalse;
      } else if (t.text == "null") {
        t.kind = Tok::kNull;
      } else if (t.text == "in") {
        t.kind = Tok::kIn;
      } else {
        t.kind = Tok::kIdent;
      }
      return t;
    }
    if (IsDigit(c) || (c == U'.' && pos_ + 1 < in_.size() && IsDigit(in_[pos_ + 1]))) {
      return LexNumber();
    }
    auto two = [&](char32_t second) { return pos_ + 1 < in_.size() && in_[pos_ + 1] == second; };
    auto punct = [&](Tok kind, size_t len) {
      t.kind = kind;
      t.raw = in_.substr(pos_, len);
      pos_ += len;
      return t;
    };
    switch (c) {
      case U'.':
        return punct(Tok::kDot, 1);
      case U',':
        return punct(Tok::kComma, 1);
      case U'(':
        return punct(Tok::kLParen, 1);
      case U')':
        return punct(Tok::kRParen, 1);
      case U'[':
        return punct(Tok::kLBracket, 1);
      case U']':
        return punct(Tok::kRBracket, 1);
      case U'{':
        return punct(Tok::kLBrace, 1);
      case U'}':
        return punct(Tok::kRBrace, 1);
      case U':':
        return punct(Tok::kColon, 1);
      case U'?':
        return punct(Tok::kQuestion, 1);
      case U'+':
        return punct(Tok::kPlus, 1);
      case U'-':
        return punct(Tok::kMinus, 1);
      case U'*':
        return punct(Tok::kStar, 1);
      case U'/':
        return punct(Tok::kSlash, 1);
      case U'%':
        return punct(Tok::kPercent, 1);
      case U'!':
        return two(U'=') ? punct(Tok::kNotEq, 2) : punct(Tok::kNot, 1);
      case U'<':
        return two(U'=') ? punct(Tok::kLessEq, 2) : punct(Tok::kLess, 1);
      case U'>':
        return two(U'=') ? punct(Tok::kGreaterEq, 2) : punct(Tok::kGreater, 1);
      case U'=':
        if (two(U'=')) {
          return punct(Tok::kEq, 2);
        }
        break;
      case U'&':
        if (two(U'&')) {
          return punct(Tok::kAnd, 2);
        }
        break;
      case U'|':
        if (two(U'|')) {
          return punct(Tok::kOr, 2);
        }
        break;
      default:
        break;
    }
    Unrecognized(pos_, pos_ + 1);
  }

 private:
  // ANTLR's error for text no token starts with (`in_` from `start` to `end`).
  [[noreturn]] void Unrecognized(size_t start, size_t end) const {
    throw SyntaxError{static_cast<int32_t>(start),
                      "Syntax error: token recognition error at: '" +
                          DisplayToken(in_.substr(start, end - start)) + "'"};
  }

  void SkipSpaceAndComments() {
    while (pos_ < in_.size()) {
      char32_t c = in_[pos_];
      if (c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || c == U'\f') {
        ++pos_;
      } else if (c == U'/' && pos_ + 1 < in_.size() && in_[pos_ + 1] == U'/') {
        while (pos_ < in_.size() && in_[pos_] != U'\n') {
          ++pos_;
        }
      } else {
        return;
      }
    }
  }

  bool StartsString() const {
    size_t p = pos_;
    for (int prefix = 0; prefix < 2 && p < in_.size(); ++prefix) {
      char32_t c = in_[p];
      if (c == U'r' || c == U'R' || c == U'b' || c == U'B') {
        ++p;
      } else {
        break;
      }
    }
    if (p - pos_ == 2) {
      char32_t a = in_[pos_] | 0x20;
      char32_t b = in_[pos_ + 1] | 0x20;
      if (a == b) {
        return false;
      }
    }
    return p < in_.size() && (in_[p] == U'"' || in_[p] == U'\'');
  }

  Token LexString() {
    Token t;
    t.offset = static_cast<int32_t>(pos_);
    size_t start = pos_;
    bool raw = false;
    bool bytes = false;
    while (in_[pos_] != U'"' && in_[pos_] != U'\'') {
      char32_t c = in_[pos_] | 0x20;
      raw = raw || c == U'r';
      bytes = bytes || c == U'b';
      ++pos_;
    }
    char32_t quote = in_[pos_];
    bool triple = pos_ + 2 < in_.size() && in_[pos_ + 1] == quote && in_[pos_ + 2] == quote;
    pos_ += triple ? 3 : 1;
    std::string value;
    auto fail = [&]() { Unrecognized(start, pos_); };
    while (true) {
      if (pos_ >= in_.size()) {
        fail();
      }
      char32_t c = in_[pos_];
      if (triple) {
        if (c == quote && pos_ + 2 < in_.size() && in_[pos_ + 1] == quote &&
            in_[pos_ + 2] == quote) {
          pos_ += 3;
          break;
        }
      } else {
        if (c == quote) {
          ++pos_;
          break;
        }
        if (c == U'\n' || c == U'\r') {
          fail();
        }
      }
      if (c == U'\\' && !raw) {
        ++pos_;
        if (pos_ >= in_.size()) {
          fail();
        }
        if (!Unescape(value, bytes)) {
          fail();
        }
        continue;
      }
      AppendUtf8(value, c);
      ++pos_;
    }
    t.raw = in_.substr(start, pos_ - start);
    t.kind = bytes ? Tok::kBytes : Tok::kString;
    t.text = std::move(value);
    return t;
  }

  // Decodes the escape after a backslash (pos_ is on the character after it).
  bool Unescape(std::string& out, bool bytes) {
    char32_t c = in_[pos_++];
    static constexpr std::u32string_view kSimple = U"abfnrtv\\?\"'`";
    static constexpr std::string_view kSimpleValues = "\a\b\f\n\r\t\v\\?\"'`";
    if (std::size_t which = kSimple.find(c); which != std::u32string_view::npos) {
      out += kSimpleValues[which];
      return true;
    }
    // \x and octal escapes are one byte in bytes literals, one code point in strings.
    auto append_byte = [&](char32_t v) {
      if (bytes) {
        out.push_back(static_cast<char>(v));
      } else {
        AppendUtf8(out, v);
      }
    };
    switch (c) {
      case U'x':
      case U'X': {
        if (pos_ + 2 > in_.size() || !IsHex(in_[pos_]) || !IsHex(in_[pos_ + 1])) {
          return false;
        }
        append_byte(static_cast<char32_t>(HexValue(in_[pos_]) * 16 + HexValue(in_[pos_ + 1])));
        pos_ += 2;
        return true;
      }
      case U'u':
      case U'U': {
        size_t digits = c == U'u' ? 4 : 8;
        if (pos_ + digits > in_.size()) {
          return false;
        }
        char32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
          if (!IsHex(in_[pos_ + i])) {
            return false;
          }
          v = v * 16 + static_cast<char32_t>(HexValue(in_[pos_ + i]));
        }
        pos_ += digits;
        if (bytes || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) {
          return false;
        }
        AppendUtf8(out, v);
        return true;
      }
      default:
        if (c >= U'0' && c <= U'3') {
          if (pos_ + 2 > in_.size() || in_[pos_] < U'0' || in_[pos_] > U'7' ||
              in_[pos_ + 1] < U'0' || in_[pos_ + 1] > U'7') {
            return false;
          }
          append_byte(static_cast<char32_t>((c - U'0') * 64 + (in_[pos_] - U'0') * 8 +
                                            (in_[pos_ + 1] - U'0')));
          pos_ += 2;
          return true;
        }
        return false;
    }
  }

  Token LexNumber() {
    Token t;
    t.offset = static_cast<int32_t>(pos_);
    size_t start = pos_;
    uint64_t v = 0;
    if (in_[pos_] == U'0' && pos_ + 1 < in_.size() && in_[pos_ + 1] == U'x' &&
        pos_ + 2 < in_.size() && IsHex(in_[pos_ + 2])) {
      pos_ += 2;
      while (pos_ < in_.size() && IsHex(in_[pos_])) {
        if (v > (std::numeric_limits<uint64_t>::max() >> 4)) {
          t.int_overflow = true;
        }
        v = v * 16 + static_cast<uint64_t>(HexValue(in_[pos_]));
        ++pos_;
      }
    } else {
      bool is_double = false;
      while (pos_ < in_.size() && IsDigit(in_[pos_])) {
        ++pos_;
      }
      if (pos_ + 1 < in_.size() && in_[pos_] == U'.' && IsDigit(in_[pos_ + 1])) {
        is_double = true;
        ++pos_;
        while (pos_ < in_.size() && IsDigit(in_[pos_])) {
          ++pos_;
        }
      }
      if (pos_ < in_.size() && (in_[pos_] == U'e' || in_[pos_] == U'E')) {
        size_t p = pos_ + 1;
        if (p < in_.size() && (in_[p] == U'+' || in_[p] == U'-')) {
          ++p;
        }
        if (p < in_.size() && IsDigit(in_[p])) {
          is_double = true;
          pos_ = p;
          while (pos_ < in_.size() && IsDigit(in_[pos_])) {
            ++pos_;
          }
        }
      }
      std::string digits = EncodeUtf8(in_.substr(start, pos_ - start));
      if (is_double) {
        t.kind = Tok::kDouble;
        t.number = std::strtod(digits.c_str(), nullptr);
        t.raw = in_.substr(start, pos_ - start);
        return t;
      }
      for (char d : digits) {
        auto digit = static_cast<uint64_t>(d - '0');
        if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
          t.int_overflow = true;
        }
        v = v * 10 + digit;
      }
    }
    t.int_bits = v;
    t.kind = Tok::kInt;
    if (pos_ < in_.size() && (in_[pos_] == U'u' || in_[pos_] == U'U')) {
      ++pos_;
      t.kind = Tok::kUint;
    }
    t.raw = in_.substr(start, pos_ - start);
    return t;
  }

  const std::u32string& in_;
  size_t pos_ = 0;
};

constexpr int kMaxRecursionDepth = 250;

class Parser {
 public:
  explicit Parser(const Source& source) : lexer_(source.code_points()) {}

  ParsedExpr Run() {
    ParsedExpr out;
    try {
      Advance();
      ExprPtr root = ParseExpr();
      if (tok_.kind != Tok::kEof) {
        Mismatched("<EOF>");
      }
      if (issues_.empty()) {
        out.root = std::move(root);
      }
    } catch (const SyntaxError& e) {
      issues_.push_back({e.offset, e.message});
    }
    out.issues = std::move(issues_);
    out.positions = std::move(positions_);
    out.next_id = next_id_;
    return out;
  }

 private:
  void Advance() { tok_ = lexer_.Next(); }

  // Consumes the current token if it is `kind`.
  bool Accept(Tok kind) {
    if (tok_.kind != kind) {
      return false;
    }
    Advance();
    return true;
  }

  // ANTLR's error for an unexpected token, naming what the grammar allows there.
  [[noreturn]] void Mismatched(std::string_view expecting) const {
    throw SyntaxError{tok_.offset, "Syntax error: mismatched input '" + DisplayToken(tok_.raw) +
                                       "' expecting " + std::string(expecting)};
  }

  void Expect(Tok kind, std::string_view expecting) {
    if (tok_.kind != kind) {
      Mismatched(expecting);
    }
    Advance();
  }

  ExprPtr NewExpr(ExprKind kind, int32_t offset) {
    auto e = std::make_unique<Expr>();
    e->id = next_id_++;
    e->kind = kind;
    positions_[e->id] = offset;
    return e;
  }

  ExprPtr NewCall(const std::string& fn, int32_t offset, std::vector<ExprPtr> args,
                  ExprPtr target = nullptr) {
    ExprPtr e = NewExpr(ExprKind::kCall, offset);
    e->name = fn;
    e->args = std::move(args);
    e->target = std::move(target);
    return e;
  }

  // A global call of `fn` on already built arguments.
  template <typename... Args>
  ExprPtr Call(const std::string& fn, int32_t offset, Args... args) {
    std::vector<ExprPtr> list;
    (list.push_back(std::move(args)), ...);
    return NewCall(fn, offset, std::move(list));
  }

  ExprPtr NewIdent(const std::string& name, int32_t offset) {
    ExprPtr e = NewExpr(ExprKind::kIdent, offset);
    e->name = name;
    return e;
  }

  ExprPtr NewLiteral(Literal value, int32_t offset) {
    ExprPtr e = NewExpr(ExprKind::kLiteral, offset);
    e->literal = std::move(value);
    return e;
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p, int32_t offset) : parser(p) {
      if (++parser.depth_ > kMaxRecursionDepth) {
        throw SyntaxError{
            offset, "expression recursion limit exceeded: " + std::to_string(kMaxRecursionDepth)};
      }
    }
    ~DepthGuard() { --parser.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    Parser& parser;
  };

  ExprPtr ParseExpr() {
    DepthGuard guard(*this, tok_.offset);
    ExprPtr cond = ParseOr();
    if (tok_.kind != Tok::kQuestion) {
      return cond;
    }
    int32_t offset = tok_.offset;
    Advance();
    ExprPtr if_true = ParseOr();
    Expect(Tok::kColon, "':'");
    ExprPtr if_false = ParseExpr();
    return Call("_?_:_", offset, std::move(cond), std::move(if_true), std::move(if_false));
  }

  // cel-go balances chains of && and || into a tree; evaluation is the same either way.
  ExprPtr Balance(const std::string& fn, std::vector<ExprPtr>& terms,
                  const std::vector<int32_t>& ops, size_t lo, size_t hi) {
    size_t mid = (lo + hi + 1) / 2;
    ExprPtr left = mid == lo ? std::move(terms[mid]) : Balance(fn, terms, ops, lo, mid - 1);
    ExprPtr right = mid == hi ? std::move(terms[mid + 1]) : Balance(fn, terms, ops, mid + 1, hi);
    return Call(fn, ops[mid], std::move(left), std::move(right));
  }

  // A chain of `op` (&& or ||) between `next` operands, balanced.
  ExprPtr ParseLogical(Tok op, const char* fn, ExprPtr (Parser::*next)()) {
    std::vector<ExprPtr> terms;
    std::vector<int32_t> ops;
    terms.push_back((this->*next)());
    while (tok_.kind == op) {
      ops.push_back(tok_.offset);
      Advance();
      terms.push_back((this->*next)());
    }
    if (ops.empty()) {
      return std::move(terms[0]);
    }
    return Balance(fn, terms, ops, 0, ops.size() - 1);
  }

  ExprPtr ParseOr() { return ParseLogical(Tok::kOr, "_||_", &Parser::ParseAnd); }
  ExprPtr ParseAnd() { return ParseLogical(Tok::kAnd, "_&&_", &Parser::ParseRelation); }

  // A left-associative chain of the binary operators `function` names (null for other tokens)
  // between `next` operands.
  ExprPtr ParseBinary(const char* (*function)(Tok), ExprPtr (Parser::*next)()) {
    ExprPtr left = (this->*next)();
    while (const char* fn = function(tok_.kind)) {
      int32_t offset = tok_.offset;
      Advance();
      ExprPtr right = (this->*next)();
      left = Call(fn, offset, std::move(left), std::move(right));
    }
    return left;
  }

  static const char* RelationFunction(Tok kind) {
    switch (kind) {
      case Tok::kLess:
        return "_<_";
      case Tok::kLessEq:
        return "_<=_";
      case Tok::kGreater:
        return "_>_";
      case Tok::kGreaterEq:
        return "_>=_";
      case Tok::kEq:
        return "_==_";
      case Tok::kNotEq:
        return "_!=_";
      case Tok::kIn:
        return "@in";
      default:
        return nullptr;
    }
  }

  static const char* AdditiveFunction(Tok kind) {
    return kind == Tok::kPlus ? "_+_" : kind == Tok::kMinus ? "_-_" : nullptr;
  }

  static const char* MultiplicativeFunction(Tok kind) {
    return kind == Tok::kStar      ? "_*_"
           : kind == Tok::kSlash   ? "_/_"
           : kind == Tok::kPercent ? "_%_"
                                   : nullptr;
  }

  ExprPtr ParseRelation() { return ParseBinary(RelationFunction, &Parser::ParseAdditive); }
  ExprPtr ParseAdditive() { return ParseBinary(AdditiveFunction, &Parser::ParseMultiplicative); }
  ExprPtr ParseMultiplicative() { return ParseBinary(MultiplicativeFunction, &Parser::ParseUnary); }

  ExprPtr ParseUnary() {
    DepthGuard guard(*this, tok_.offset);
    if (tok_.kind != Tok::kNot && tok_.kind != Tok::kMinus) {
      return ParseMember();
    }
    Tok op = tok_.kind;
    int32_t offset = tok_.offset;
    Advance();
    // `-` directly before a number is part of the literal (the grammar's `sign=MINUS? NUM_INT`).
    if (op == Tok::kMinus && (tok_.kind == Tok::kInt || tok_.kind == Tok::kDouble)) {
      return ParseMemberSuffixes(ParseNumber(true, offset));
    }
    int count = 1;
    while (tok_.kind == op) {
      ++count;
      Advance();
    }
    ExprPtr operand = ParseMember();
    if (count % 2 == 0) {
      return operand;  // `!!x` and `--x` are x, as in cel-go
    }
    return Call(op == Tok::kNot ? "!_" : "-_", offset, std::move(operand));
  }

  ExprPtr ParseNumber(bool negative, int32_t offset) {
    Token t = tok_;
    Advance();
    if (t.kind == Tok::kDouble) {
      return NewLiteral(negative ? -t.number : t.number, offset);
    }
    if (t.kind == Tok::kUint) {
      if (t.int_overflow) {
        throw SyntaxError{offset, "invalid uint literal"};
      }
      return NewLiteral(t.int_bits, offset);
    }
    constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (t.int_overflow || t.int_bits > kMaxPositive + (negative ? 1 : 0)) {
      throw SyntaxError{offset, "invalid int literal"};
    }
    int64_t value =
        negative ? static_cast<int64_t>(0 - t.int_bits) : static_cast<int64_t>(t.int_bits);
    return NewLiteral(value, offset);
  }

  ExprPtr ParseMember() { return ParseMemberSuffixes(ParsePrimary()); }

  ExprPtr ParseMemberSuffixes(ExprPtr operand) {
    while (true) {
      if (tok_.kind == Tok::kDot) {
        int32_t dot = tok_.offset;
        Advance();
        bool optional = Accept(Tok::kQuestion);
        if (tok_.kind != Tok::kIdent) {
          Mismatched("IDENTIFIER");
        }
        std::string field = tok_.text;
        int32_t field_offset = tok_.offset;
        Advance();
        if (optional) {
          ExprPtr name = NewLiteral(field, field_offset);
          operand = Call("_?._", dot, std::move(operand), std::move(name));
          continue;
        }
        if (tok_.kind == Tok::kLParen) {
          int32_t open = tok_.offset;
          Advance();
          std::vector<ExprPtr> args = ParseArgs();
          operand = MemberCallOrMacro(field, open, std::move(operand), std::move(args));
          continue;
        }
        ExprPtr sel = NewExpr(ExprKind::kSelect, dot);
        sel->name = field;
        sel->target = std::move(operand);
        operand = std::move(sel);
        continue;
      }
      if (tok_.kind == Tok::kLBracket) {
        int32_t open = tok_.offset;
        Advance();
        bool optional = Accept(Tok::kQuestion);
        ExprPtr index = ParseExpr();
        Expect(Tok::kRBracket, "']'");
        operand = Call(optional ? "_[?_]" : "_[_]", open, std::move(operand), std::move(index));
        continue;
      }
      return operand;
    }
  }

  std::vector<ExprPtr> ParseArgs() {
    std::vector<ExprPtr> args;
    if (Accept(Tok::kRParen)) {
      return args;
    }
    args.push_back(ParseExpr());
    while (Accept(Tok::kComma)) {
      args.push_back(ParseExpr());
    }
    Expect(Tok::kRParen, "{')', ','}");
    return args;
  }

  ExprPtr ParsePrimary() {
    DepthGuard guard(*this, tok_.offset);
    Token t = tok_;
    switch (t.kind) {
      case Tok::kInt:
      case Tok::kUint:
      case Tok::kDouble:
        return ParseNumber(false, t.offset);
      case Tok::kString:
        Advance();
        return NewLiteral(t.text, t.offset);
      case Tok::kBytes:
        Advance();
        return NewLiteral(Bytes{t.text}, t.offset);
      case Tok::kTrue:
      case Tok::kFalse:
        Advance();
        return NewLiteral(t.kind == Tok::kTrue, t.offset);
      case Tok::kNull:
        Advance();
        return NewLiteral(NullValue{}, t.offset);
      case Tok::kLParen: {
        Advance();
        ExprPtr inner = ParseExpr();
        Expect(Tok::kRParen, "')'");
        return inner;
      }
      case Tok::kLBracket:
        return ParseList();
      case Tok::kLBrace:
        return ParseMap();
      case Tok::kDot:
      case Tok::kIdent: {
        std::string name;
        int32_t offset = t.offset;
        if (t.kind == Tok::kDot) {
          name = ".";
          Advance();
          if (tok_.kind != Tok::kIdent) {
            Mismatched("IDENTIFIER");
          }
          offset = tok_.offset;
        }
        name += tok_.text;
        Advance();
        if (ReservedIdentifiers().count(name) != 0) {
          throw SyntaxError{offset, "reserved identifier: " + name};
        }
        if (tok_.kind == Tok::kLParen) {
          int32_t open = tok_.offset;
          Advance();
          std::vector<ExprPtr> args = ParseArgs();
          return GlobalCallOrMacro(name, open, std::move(args));
        }
        return NewIdent(name, offset);
      }
      default:
        Mismatched(kExprStart);
    }
  }

  ExprPtr ParseList() {
    ExprPtr list = NewExpr(ExprKind::kList, tok_.offset);
    Advance();
    while (tok_.kind != Tok::kRBracket) {
      if (Accept(Tok::kQuestion)) {
        list->optional_indices.push_back(list->args.size());
      }
      list->args.push_back(ParseExpr());
      if (Accept(Tok::kComma)) {
        continue;
      }
      if (tok_.kind != Tok::kRBracket) {
        Mismatched("{']', ','}");
      }
    }
    Advance();
    return list;
  }

  ExprPtr ParseMap() {
    ExprPtr map = NewExpr(ExprKind::kMap, tok_.offset);
    Advance();
    while (tok_.kind != Tok::kRBrace) {
      MapEntry entry;
      entry.optional = Accept(Tok::kQuestion);
      entry.key = ParseExpr();
      Expect(Tok::kColon, "':'");
      entry.value = ParseExpr();
      map->entries.push_back(std::move(entry));
      if (Accept(Tok::kComma)) {
        continue;
      }
      if (tok_.kind != Tok::kRBrace) {
        Mismatched("{'}', ','}");
      }
    }
    Advance();
    return map;
  }

  // --- Macros (cel-go's standard macros and the optional-types ones) ---------------------------

  ExprPtr GlobalCallOrMacro(const std::string& name, int32_t offset, std::vector<ExprPtr> args) {
    if (name == "has" && args.size() == 1) {
      if (args[0]->kind != ExprKind::kSelect || args[0]->test_only) {
        throw SyntaxError{positions_[args[0]->id], "invalid argument to has() macro"};
      }
      ExprPtr sel = std::move(args[0]);
      sel->test_only = true;
      positions_[sel->id] = offset;
      return sel;
    }
    return NewCall(name, offset, std::move(args));
  }

  std::string IterVarName(const ExprPtr& arg) {
    if (arg->kind != ExprKind::kIdent) {
      throw SyntaxError{positions_[arg->id], "argument must be a simple name"};
    }
    return arg->name;
  }

  ExprPtr Comprehension(int32_t offset, std::string iter_var, ExprPtr range, ExprPtr init,
                        ExprPtr cond, ExprPtr step, ExprPtr result) {
    ExprPtr c = NewExpr(ExprKind::kComprehension, offset);
    c->iter_var = std::move(iter_var);
    c->accu_var = kAccumulatorName;
    c->iter_range = std::move(range);
    c->accu_init = std::move(init);
    c->loop_cond = std::move(cond);
    c->loop_step = std::move(step);
    c->result = std::move(result);
    return c;
  }

  ExprPtr Accu(int32_t offset) { return NewIdent(kAccumulatorName, offset); }

  ExprPtr MemberCallOrMacro(const std::string& name, int32_t offset, ExprPtr target,
                            std::vector<ExprPtr> args) {
    const size_t n = args.size();
    if ((name == "all" || name == "exists") && n == 2) {
      std::string var = IterVarName(args[0]);
      bool all = name == "all";
      ExprPtr init = NewLiteral(all, offset);
      ExprPtr cond_arg = all ? Accu(offset) : Call("!_", offset, Accu(offset));
      ExprPtr cond = Call("@not_strictly_false", offset, std::move(cond_arg));
      ExprPtr step = Call(all ? "_&&_" : "_||_", offset, Accu(offset), std::move(args[1]));
      return Comprehension(offset, var, std::move(target), std::move(init), std::move(cond),
                           std::move(step), Accu(offset));
    }
    if (name == "exists_one" && n == 2) {
      std::string var = IterVarName(args[0]);
      ExprPtr step =
          Call("_?_:_", offset, std::move(args[1]),
               Call("_+_", offset, Accu(offset), NewLiteral(int64_t{1}, offset)), Accu(offset));
      ExprPtr result = Call("_==_", offset, Accu(offset), NewLiteral(int64_t{1}, offset));
      return Comprehension(offset, var, std::move(target), NewLiteral(int64_t{0}, offset),
                           NewLiteral(true, offset), std::move(step), std::move(result));
    }
    if ((name == "map" && (n == 2 || n == 3)) || (name == "filter" && n == 2)) {
      std::string var = IterVarName(args[0]);
      ExprPtr element;
      ExprPtr filter;
      if (name == "filter") {
        element = NewIdent(var, positions_[args[0]->id]);
        filter = std::move(args[1]);
      } else if (n == 3) {
        filter = std::move(args[1]);
        element = std::move(args[2]);
      } else {
        element = std::move(args[1]);
      }
      ExprPtr single = NewExpr(ExprKind::kList, offset);
      single->args.push_back(std::move(element));
      ExprPtr step = Call("_+_", offset, Accu(offset), std::move(single));
      if (filter) {
        step = Call("_?_:_", offset, std::move(filter), std::move(step), Accu(offset));
      }
      return Comprehension(offset, var, std::move(target), NewExpr(ExprKind::kList, offset),
                           NewLiteral(true, offset), std::move(step), Accu(offset));
    }
    if ((name == "optMap" || name == "optFlatMap") && n == 2) {
      std::string var = IterVarName(args[0]);
      ExprPtr target_copy = CloneExpr(*target, next_id_, positions_);
      ExprPtr has_value = NewCall("hasValue", offset, {}, std::move(target));
      ExprPtr value = NewCall("value", offset, {}, std::move(target_copy));
      // cel.bind(var, target.value(), expr): a comprehension over an empty list.
      ExprPtr bind = NewExpr(ExprKind::kComprehension, offset);
      bind->iter_var = "#unused";
      bind->accu_var = var;
      bind->iter_range = NewExpr(ExprKind::kList, offset);
      bind->accu_init = std::move(value);
      bind->loop_cond = NewLiteral(false, offset);
      bind->loop_step = NewIdent(var, offset);
      bind->result = std::move(args[1]);
      ExprPtr some =
          name == "optMap" ? Call("optional.of", offset, std::move(bind)) : std::move(bind);
      ExprPtr none = NewCall("optional.none", offset, {});
      return Call("_?_:_", offset, std::move(has_value), std::move(some), std::move(none));
    }
    return NewCall(name, offset, std::move(args), std::move(target));
  }

  Lexer lexer_;
  Token tok_;
  int64_t next_id_ = 1;
  int depth_ = 0;
  std::map<int64_t, int32_t> positions_;
  std::vector<Issue> issues_;
};

}  // namespace

ExprPtr CloneExpr(const Expr& expr, int64_t& next_id, std::map<int64_t, int32_t>& positions) {
  auto copy = std::make_unique<Expr>();
  copy->id = next_id++;
  auto pos = positions.find(expr.id);
  positions[copy->id] = pos == positions.end() ? -1 : pos->second;
  copy->kind = expr.kind;
  copy->literal = expr.literal;
  copy->name = expr.name;
  copy->test_only = expr.test_only;
  copy->optional_indices = expr.optional_indices;
  copy->iter_var = expr.iter_var;
  copy->accu_var = expr.accu_var;
  auto clone = [&](const ExprPtr& e) { return e ? CloneExpr(*e, next_id, positions) : nullptr; };
  copy->target = clone(expr.target);
  for (const ExprPtr& a : expr.args) {
    copy->args.push_back(clone(a));
  }
  for (const MapEntry& entry : expr.entries) {
    copy->entries.push_back({clone(entry.key), clone(entry.value), entry.optional});
  }
  copy->iter_range = clone(expr.iter_range);
  copy->accu_init = clone(expr.accu_init);
  copy->loop_cond = clone(expr.loop_cond);
  copy->loop_step = clone(expr.loop_step);
  copy->result = clone(expr.result);
  return copy;
}

ParsedExpr Parse(const Source& source) { return Parser(source).Run(); }

}  // namespace ringleader::cel
