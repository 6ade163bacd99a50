// The CEL parser: operator precedence and associativity, every literal form and escape, macro
// expansion, optional syntax, and cel-go's wording for syntax errors.
#include "tests/support/cel/parser.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace ringleader::cel {
namespace {

// A compact S-expression of an AST, enough to see its shape.
std::string Render(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral: {
      const Literal& l = e.literal;
      if (std::holds_alternative<NullValue>(l)) return "null";
      if (std::holds_alternative<bool>(l)) return std::get<bool>(l) ? "true" : "false";
      if (std::holds_alternative<int64_t>(l)) return std::to_string(std::get<int64_t>(l));
      if (std::holds_alternative<uint64_t>(l)) return std::to_string(std::get<uint64_t>(l)) + "u";
      if (std::holds_alternative<double>(l)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", std::get<double>(l));
        return std::string(buf) + "d";
      }
      if (std::holds_alternative<std::string>(l)) return "\"" + std::get<std::string>(l) + "\"";
      std::string out = "b\"";
      for (char c : std::get<Bytes>(l).data) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
        out += buf;
      }
      return out + "\"";
    }
    case ExprKind::kIdent:
      return e.name;
    case ExprKind::kSelect:
      return (e.test_only ? "has(" : "") + Render(*e.target) + "." + e.name +
             (e.test_only ? ")" : "");
    case ExprKind::kCall: {
      std::string out = e.target ? Render(*e.target) + "." + e.name + "(" : e.name + "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        out += (i > 0 ? ", " : "") + Render(*e.args[i]);
      }
      return out + ")";
    }
    case ExprKind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < e.args.size(); ++i) {
        bool optional = std::find(e.optional_indices.begin(), e.optional_indices.end(), i) !=
                        e.optional_indices.end();
        out += (i > 0 ? ", " : "") + std::string(optional ? "?" : "") + Render(*e.args[i]);
      }
      return out + "]";
    }
    case ExprKind::kMap: {
      std::string out = "{";
      for (size_t i = 0; i < e.entries.size(); ++i) {
        out += (i > 0 ? ", " : "") + std::string(e.entries[i].optional ? "?" : "") +
               Render(*e.entries[i].key) + ": " + Render(*e.entries[i].value);
      }
      return out + "}";
    }
    case ExprKind::kComprehension:
      return "comprehension(" + e.iter_var + " in " + Render(*e.iter_range) + ", " + e.accu_var +
             " = " + Render(*e.accu_init) + ", while " + Render(*e.loop_cond) + ", step " +
             Render(*e.loop_step) + ", result " + Render(*e.result) + ")";
  }
  return "?";
}

std::string ParseToString(const std::string& text) {
  Source source(text);
  ParsedExpr parsed = Parse(source);
  if (!parsed.issues.empty()) {
    return FormatIssues(source, parsed.issues);
  }
  return Render(*parsed.root);
}

struct ParseCase {
  std::string text;
  std::string want;
};

void ExpectParses(const std::vector<ParseCase>& cases) {
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseToString(c.text), c.want);
  }
}

TEST(ParserTest, FollowsPrecedenceAndAssociativity) {
  ExpectParses({{"a || b && c", "_||_(a, _&&_(b, c))"},
                {"a && b || c", "_||_(_&&_(a, b), c)"},
                {"a && b && c && d", "_&&_(_&&_(a, b), _&&_(c, d))"},
                {"a + b * c - d", "_-_(_+_(a, _*_(b, c)), d)"},
                {"a / b % c", "_%_(_/_(a, b), c)"},
                {"a < b == c", "_==_(_<_(a, b), c)"},
                {"a + 1 in b", "@in(_+_(a, 1), b)"},
                {"!a == b", "_==_(!_(a), b)"},
                {"!!a", "a"},
                {"!!!a", "!_(a)"},
                {"-x.y", "-_(x.y)"},
                {"--x", "x"},
                {"a ? b : c ? d : e", "_?_:_(a, b, _?_:_(c, d, e))"},
                {"a || b ? c : d", "_?_:_(_||_(a, b), c, d)"},
                {"(a + b) * c", "_*_(_+_(a, b), c)"},
                {"a.b.c(d)[e]", "_[_](a.b.c(d), e)"},
                {"f(a, b).g()", "f(a, b).g()"},
                {".a.b", ".a.b"},
                {"a >= b != c <= d", "_<=_(_!=_(_>=_(a, b), c), d)"},
                {"a - -1", "_-_(a, -1)"},
                {"1 - 1", "_-_(1, 1)"}});
}

TEST(ParserTest, ReadsEveryLiteralForm) {
  ExpectParses({{"0", "0"},
                {"123", "123"},
                {"-123", "-123"},
                {"0x1F", "31"},
                {"-0x10", "-16"},
                {"9223372036854775807", "9223372036854775807"},
                {"-9223372036854775808", "-9223372036854775808"},
                {"1u", "1u"},
                {"0x1FU", "31u"},
                {"18446744073709551615u", "18446744073709551615u"},
                {"1.5", "1.5d"},
                {"1e3", "1000d"},
                {".5", "0.5d"},
                {"1.5e-3", "0.0015d"},
                {"-2.5E+2", "-250d"},
                {"true", "true"},
                {"false", "false"},
                {"null", "null"},
                {"'single'", "\"single\""},
                {"\"double\"", "\"double\""},
                {"'''tri\nple'''", "\"tri\nple\""},
                {"\"\"\"tri'ple\"\"\"", "\"tri'ple\""},
                {"r'raw\\n'", "\"raw\\n\""},
                {"R\"raw\\d\"", "\"raw\\d\""},
                {"'\\a\\b\\f\\n\\r\\t\\v'", "\"\a\b\f\n\r\t\v\""},
                {"'\\\\ \\' \\\" \\` \\?'", "\"\\ ' \" ` ?\""},
                {"'\\x41\\101\\u00e9\\U0001F600'", "\"AA\u00e9\U0001F600\""},
                {"b'ab'", "b\"\\x61\\x62\""},
                {"B\"\\xff\\377\"", "b\"\\xff\\xff\""},
                {"rb'\\x'", "b\"\\x5c\\x78\""},
                {"br'a'", "b\"\\x61\""},
                {"b'\u00e9'", "b\"\\xc3\\xa9\""},
                {"[]", "[]"},
                {"[1, 2,]", "[1, 2]"},
                {"{}", "{}"},
                {"{'a': 1, 'b': 2,}", "{\"a\": 1, \"b\": 2}"},
                {"a // comment\n + b", "_+_(a, b)"}});
}

TEST(ParserTest, ExpandsMacrosAsCelGoDoes) {
  ExpectParses({
      {"has(a.b)", "has(a.b)"},
      {"l.all(x, x > 0)",
       "comprehension(x in l, __result__ = true, while @not_strictly_false(__result__), step "
       "_&&_(__result__, _>_(x, 0)), result __result__)"},
      {"l.exists(x, p)",
       "comprehension(x in l, __result__ = false, while @not_strictly_false(!_(__result__)), step "
       "_||_(__result__, p), result __result__)"},
      {"l.exists_one(x, p)",
       "comprehension(x in l, __result__ = 0, while true, step _?_:_(p, _+_(__result__, 1), "
       "__result__), "
       "result _==_(__result__, 1))"},
      {"l.map(x, x * 2)",
       "comprehension(x in l, __result__ = [], while true, step _+_(__result__, [_*_(x, 2)]), "
       "result __result__)"},
      {"l.map(x, x > 0, x)",
       "comprehension(x in l, __result__ = [], while true, step _?_:_(_>_(x, 0), _+_(__result__, "
       "[x]), "
       "__result__), result __result__)"},
      {"l.filter(x, x > 0)",
       "comprehension(x in l, __result__ = [], while true, step _?_:_(_>_(x, 0), _+_(__result__, "
       "[x]), "
       "__result__), result __result__)"},
      {"l.all(x, y, z)", "l.all(x, y, z)"},
      {"a.?b", "_?._(a, \"b\")"},
      {"a[?0]", "_[?_](a, 0)"},
      {"[?a, b]", "[?a, b]"},
      {"{?'k': v}", "{?\"k\": v}"},
      {"o.optMap(x, x + 1)",
       "_?_:_(o.hasValue(), optional.of(comprehension(#unused in [], x = o.value(), while false, "
       "step x, "
       "result _+_(x, 1))), optional.none())"},
  });
}

TEST(ParserTest, ReportsSyntaxErrorsInCelGosWords) {
  ExpectParses({
      {"a b",
       "ERROR: <input>:1:3: Syntax error: mismatched input 'b' expecting <EOF>\n | a b\n | ..^"},
      {"1 +",
       "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', "
       "'-', '!', "
       "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 "
       "+\n | ...^"},
      {"9223372036854775808",
       "ERROR: <input>:1:1: invalid int literal\n | 9223372036854775808\n | ^"},
      {"18446744073709551616u",
       "ERROR: <input>:1:1: invalid uint literal\n | 18446744073709551616u\n | ^"},
      {"has(a)", "ERROR: <input>:1:5: invalid argument to has() macro\n | has(a)\n | ....^"},
      {"l.all(1, true)",
       "ERROR: <input>:1:7: argument must be a simple name\n | l.all(1, true)\n | ......^"},
      {"'abc",
       "ERROR: <input>:1:1: Syntax error: token recognition error at: ''abc'\n | 'abc\n | ^"},
      {"a = b",
       "ERROR: <input>:1:3: Syntax error: token recognition error at: '='\n | a = b\n | ..^"},
      {"if", "ERROR: <input>:1:1: reserved identifier: if\n | if\n | ^"},
      {"'\\q'",
       "ERROR: <input>:1:1: Syntax error: token recognition error at: ''\\q'\n | '\\q'\n | ^"},
      {"'\u00e9' +",
       "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', "
       "'-', '!', "
       "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | "
       "'\u00e9' +\n"
       " | .\uff0e...^"},
  });
}

TEST(ParserTest, RecordsOperatorPositionsAsCelGoDoes) {
  Source source("self.a == 1");
  ParsedExpr parsed = Parse(source);
  ASSERT_TRUE(parsed.root);
  EXPECT_EQ(parsed.positions[parsed.root->id], 7);           // the '=='
  EXPECT_EQ(parsed.positions[parsed.root->args[0]->id], 4);  // the '.'
  EXPECT_EQ(parsed.positions[parsed.root->args[0]->target->id], 0);
}

TEST(ParserTest, RefusesRunawayNestingInsteadOfOverflowingTheStack) {
  std::string deep(300, '(');
  deep += "1" + std::string(300, ')');
  Source source(deep);
  ParsedExpr parsed = Parse(source);
  ASSERT_EQ(parsed.issues.size(), 1u);
  EXPECT_EQ(parsed.issues[0].message, "expression recursion limit exceeded: 250");
}

TEST(ParserTest, FormatsSeveralIssuesSortedByLocation) {
  Source source("ab\ncd");
  EXPECT_EQ(FormatIssues(source, {{4, "second"}, {1, "first"}}),
            "ERROR: <input>:1:2: first\n | ab\n | .^\nERROR: <input>:2:2: second\n | cd\n | .^");
}

}  // namespace
}  // namespace ringleader::cel
