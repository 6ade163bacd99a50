// The evaluator: every operator, standard function, macro and Kubernetes library function, with
// CEL's error semantics (overflow, division by zero, missing keys, errors absorbed by && and ||).
#include <gtest/gtest.h>

#include <cstdio>

#include "operator/yaml/yaml_to_json.h"
#include "tests/support/cel/crd_rules.h"
#include "tests/support/cel/library.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;

// A value as "kind:value" so one table covers all kinds; errors as "error:<message>".
std::string Show(const Value& v) {
  if (v.is_error()) return "error:" + v.error();
  if (v.is<bool>()) return v.as<bool>() ? "true" : "false";
  if (v.is<int64_t>()) return "int:" + std::to_string(v.as<int64_t>());
  if (v.is<uint64_t>()) return "uint:" + std::to_string(v.as<uint64_t>());
  if (v.is<double>()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v.as<double>());
    return std::string("double:") + buf;
  }
  if (v.is<std::string>()) return "string:" + v.as<std::string>();
  if (v.is<Bytes>()) return "bytes:" + v.as<Bytes>().data;
  if (v.is<NullValue>()) return "null";
  if (v.is<TypeValue>()) return "type:" + v.as<TypeValue>().name;
  if (v.is<Duration>()) return "duration:" + FormatDuration(v.as<Duration>().nanos);
  if (v.is<Timestamp>()) return "timestamp:" + FormatTimestamp(v.as<Timestamp>());
  if (v.is<OptionalValue>()) {
    const auto& o = v.as<OptionalValue>();
    return o.value ? "optional(" + Show(*o.value) + ")" : "optional.none";
  }
  if (v.is_list()) {
    std::string out = "[";
    for (size_t i = 0; i < v.list().items.size(); ++i) {
      out += (i > 0 ? ", " : "") + Show(v.list().items[i]);
    }
    return out + "]";
  }
  if (v.is_map()) {
    std::string out = "{";
    for (size_t i = 0; i < v.map().entries.size(); ++i) {
      out += (i > 0 ? ", " : "") + Show(v.map().entries[i].first) + ": " +
             Show(v.map().entries[i].second);
    }
    return out + "}";
  }
  return RuntimeTypeName(v);
}

std::string EvalToString(const std::string& text) {
  ExpressionResult r = EvaluateExpression(text);
  if (!r.compile_error.empty()) {
    return "compile:" + r.compile_error;
  }
  return Show(r.value);
}

struct EvalCase {
  std::string text;
  std::string want;
};

void ExpectEvaluates(const std::vector<EvalCase>& cases) {
  for (const EvalCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(EvalToString(c.text), c.want);
  }
}

TEST(EvalTest, Arithmetic) {
  ExpectEvaluates({{"1 + 2 * 3", "int:7"},
                   {"7 / 2", "int:3"},
                   {"-7 / 2", "int:-3"},
                   {"-7 % 3", "int:-1"},
                   {"7.0 / 2.0", "double:3.5"},
                   {"2u * 3u", "uint:6"},
                   {"1.0 / 0.0", "double:inf"},
                   {"-(5)", "int:-5"},
                   {"-(2.5)", "double:-2.5"},
                   {"9223372036854775807 + 1", "error:integer overflow"},
                   {"-9223372036854775808 - 1", "error:integer overflow"},
                   {"-(-9223372036854775808)", "error:integer overflow"},
                   {"-9223372036854775808 / -1", "error:integer overflow"},
                   {"4611686018427387904 * 2", "error:integer overflow"},
                   {"0u - 1u", "error:unsigned integer overflow"},
                   {"1 / 0", "error:division by zero"},
                   {"1 % 0", "error:modulus by zero"},
                   {"1u / 0u", "error:division by zero"},
                   {"'ab' + 'cd'", "string:abcd"},
                   {"b'ab' + b'cd'", "bytes:abcd"},
                   {"[1] + [2, 3]", "[int:1, int:2, int:3]"}});
}

TEST(EvalTest, Comparison) {
  ExpectEvaluates({{"1 < 2u", "true"},
                   {"2.5 > 2", "true"},
                   {"1u >= 1.0", "true"},
                   {"-1 < 18446744073709551615u", "true"},
                   {"dyn(1) == 1.0", "true"},
                   {"dyn(1) == 1u", "true"},
                   {"dyn(1) == 'a'", "false"},
                   {"dyn(1) != 'a'", "true"},
                   {"'a' < 'b'", "true"},
                   {"b'a' < b'b'", "true"},
                   {"true > false", "true"},
                   {"[1, 2] == [1, 2]", "true"},
                   {"[1, 2] == [2, 1]", "false"},
                   {"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", "true"},
                   {"null == null", "true"},
                   {"dyn(0.0/0.0) == dyn(0.0/0.0)", "false"},
                   {"dyn('a') < 1", "error:no such overload"}});
}

TEST(EvalTest, LogicAbsorbsErrorsWhenTheOtherSideDecides) {
  ExpectEvaluates({{"true && false", "false"},
                   {"!true", "false"},
                   {"true || 1 / 0 == 1", "true"},
                   {"1 / 0 == 1 || true", "true"},
                   {"1 / 0 == 1 && false", "false"},
                   {"false && 1 / 0 == 1", "false"},
                   {"1 / 0 == 1 && true", "error:division by zero"},
                   {"1 / 0 == 1 || false", "error:division by zero"},
                   {"true ? 1 : 1 / 0", "int:1"},
                   {"false ? 1 / 0 : 2", "int:2"},
                   {"1 / 0 == 1 ? 1 : 2", "error:division by zero"}});
}

TEST(EvalTest, StringsAndConversions) {
  ExpectEvaluates({{"size('h\u00e9llo')", "int:5"},
                   {"'h\u00e9llo'.size()", "int:5"},
                   {"size(b'\\xff\\x00')", "int:2"},
                   {"'abc'.contains('bc')", "true"},
                   {"'abc'.startsWith('ab')", "true"},
                   {"'abc'.endsWith('bc')", "true"},
                   {"'abc'.matches('^a.c$')", "true"},
                   {"matches('abc', 'z')", "false"},
                   {"'aaa'.matches(dyn('('))", "error:error parsing regexp: missing ): ("},
                   {"int('42')", "int:42"},
                   {"int('x')", "error:strconv.ParseInt: parsing \"x\": invalid syntax"},
                   {"int('99999999999999999999')",
                    "error:strconv.ParseInt: parsing \"99999999999999999999\": value out of range"},
                   {"int(2.9)", "int:2"},
                   {"int(1e19)", "error:integer overflow"},
                   {"int(18446744073709551615u)", "error:integer overflow"},
                   {"uint(-1)", "error:unsigned integer overflow"},
                   {"uint('7')", "uint:7"},
                   {"double('1.5')", "double:1.5"},
                   {"double(3)", "double:3"},
                   {"string(1.5)", "string:1.5"},
                   {"string(-3)", "string:-3"},
                   {"string(7u)", "string:7"},
                   {"string(true)", "string:true"},
                   {"string(b'abc')", "string:abc"},
                   {"bytes('a')", "bytes:a"},
                   {"bool('true')", "true"},
                   {"bool('F')", "false"},
                   {"bool('yes')", "error:strconv.ParseBool: parsing \"yes\": invalid syntax"},
                   {"type(1) == int", "true"},
                   {"type('a') == string", "true"},
                   {"type([]) == list", "true"},
                   {"type({}) == map", "true"},
                   {"type(type(1))", "type:type"},
                   {"type(null)", "type:null_type"},
                   {"dyn('a') + 1", "error:no such overload"}});
}

TEST(EvalTest, ListsAndMaps) {
  ExpectEvaluates({{"[1, 2, 3][1]", "int:2"},
                   {"[1][5]", "error:index out of bounds: 5"},
                   {"[1][-1]", "error:index out of bounds: -1"},
                   {"2 in [1, 2]", "true"},
                   {"size([1, 2])", "int:2"},
                   {"{'a': 1}['a']", "int:1"},
                   {"{'a': 1}['b']", "error:no such key: b"},
                   {"'a' in {'a': 1}", "true"},
                   {"{'a': 1}.a", "int:1"},
                   {"has({'a': 1}.a)", "true"},
                   {"has({'a': 1}.b)", "false"},
                   {"dyn({1: 'x'})[1u]", "string:x"},
                   {"{'a': 1, 'a': 2}", "error:Failed with repeated key"}});
}

TEST(EvalTest, Macros) {
  ExpectEvaluates({{"[1, 2, 3].all(x, x > 0)", "true"},
                   {"[1, -2].all(x, x > 0)", "false"},
                   {"[1, 2].exists(x, x == 2)", "true"},
                   {"[1, 2, 2].exists_one(x, x == 2)", "false"},
                   {"[1, 2].exists_one(x, x == 2)", "true"},
                   {"[1, 2].map(x, x * 10)", "[int:10, int:20]"},
                   {"[1, 2, 3].map(x, x > 1, x * 10)", "[int:20, int:30]"},
                   {"[1, 2, 3].filter(x, x != 2)", "[int:1, int:3]"},
                   {"{'a': 1, 'b': 2}.all(k, k != 'c')", "true"},
                   {"{'a': 1, 'b': 2}.map(k, k)", "[string:a, string:b]"},
                   {"[1, 0].all(x, 1 / x > 0)", "error:division by zero"},
                   {"[0, -1].all(x, 1 / x > 0)", "false"},
                   {"[0, 1].exists(x, 1 / x > 0)", "true"},
                   {"[0].exists(x, 1 / x > 0)", "error:division by zero"}});
}

TEST(EvalTest, TimestampsAndDurations) {
  ExpectEvaluates(
      {{"timestamp('2024-03-02T03:04:05Z').getFullYear()", "int:2024"},
       {"timestamp('2024-03-02T03:04:05Z').getMonth()", "int:2"},
       {"timestamp('2024-03-02T03:04:05Z').getDate()", "int:2"},
       {"timestamp('2024-03-02T03:04:05Z').getDayOfMonth()", "int:1"},
       {"timestamp('2024-03-02T03:04:05Z').getDayOfYear()", "int:61"},
       {"timestamp('2024-03-02T03:04:05Z').getDayOfWeek()", "int:6"},
       {"timestamp('2024-03-02T03:04:05Z').getHours('+02:00')", "int:5"},
       {"timestamp('2024-03-02T03:04:05.250Z').getMilliseconds()", "int:250"},
       {"duration('1h30m').getMinutes()", "int:90"},
       {"string(duration('1.5s'))", "string:1.5s"},
       {"timestamp('2024-01-01T00:00:00Z') + duration('24h')", "timestamp:2024-01-02T00:00:00Z"},
       {"timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z')", "duration:86400s"},
       {"timestamp('2024-01-01T00:00:00+01:00') < timestamp('2024-01-01T00:00:00Z')", "true"},
       {"int(timestamp('1970-01-01T00:01:00Z'))", "int:60"},
       {"timestamp(dyn('nope'))",
        "error:parsing time \"nope\" as \"2006-01-02T15:04:05Z07:00\": cannot parse"},
       {"duration(dyn('x'))", "error:time: invalid duration \"x\""}});
}

TEST(EvalTest, Optionals) {
  ExpectEvaluates({{"optional.of(1).value()", "int:1"},
                   {"optional.none().orValue(5)", "int:5"},
                   {"optional.none().value()", "error:optional.none() dereference"},
                   {"optional.ofNonZeroValue(0).hasValue()", "false"},
                   {"{'a': 1}.?b.orValue(0)", "int:0"},
                   {"{'a': 1}.?a", "optional(int:1)"},
                   {"[1, 2][?5].hasValue()", "false"},
                   {"[1, 2][?1]", "optional(int:2)"},
                   {"optional.of(2).optMap(x, x * 2)", "optional(int:4)"},
                   {"optional.none().or(optional.of(3))", "optional(int:3)"},
                   {"[?optional.none(), ?optional.of(1)]", "[int:1]"},
                   {"{?'a': optional.none(), 'b': 2}", "{string:b: int:2}"}});
}

TEST(EvalTest, StringsExtension) {
  ExpectEvaluates({{"'abc'.charAt(1)", "string:b"},
                   {"'abc'.charAt(3)", "string:"},
                   {"'abc'.charAt(4)", "error:index out of range: 4"},
                   {"'h\u00e9llo'.indexOf('l')", "int:2"},
                   {"'abcabc'.lastIndexOf('b')", "int:4"},
                   {"'abc'.indexOf('c', 1)", "int:2"},
                   {"'AbC'.lowerAscii()", "string:abc"},
                   {"'aBc'.upperAscii()", "string:ABC"},
                   {"'aaa'.replace('a', 'b', 2)", "string:bba"},
                   {"'a,b,,c'.split(',')", "[string:a, string:b, string:, string:c]"},
                   {"'a,b,c'.split(',', 2)", "[string:a, string:b,c]"},
                   {"'hello'.substring(1, 3)", "string:el"},
                   {"'hello'.substring(3, 1)", "error:invalid substring range. start: 3, end: 1"},
                   {"'  x \\t'.trim()", "string:x"},
                   {"['a', 'b'].join('-')", "string:a-b"}});
}

TEST(EvalTest, KubernetesLibraries) {
  ExpectEvaluates({{"[1, 2, 3].isSorted()", "true"},
                   {"['b', 'a'].isSorted()", "false"},
                   {"[3, 1].sum()", "int:4"},
                   {"[1.5, 1.0].sum()", "double:2.5"},
                   {"[3, 1].min()", "int:1"},
                   {"[3, 1].max()", "int:3"},
                   {"dyn([]).min()", "error:min called on empty list"},
                   {"[1, 2, 1].indexOf(1)", "int:0"},
                   {"[1, 2, 1].lastIndexOf(1)", "int:2"},
                   {"'abc123def45'.find('[0-9]+')", "string:123"},
                   {"'abc123def45'.findAll('[0-9]+')", "[string:123, string:45]"},
                   {"'a1b2c3'.findAll('[0-9]', 2)", "[string:1, string:2]"},
                   {"quantity('1Gi').isGreaterThan(quantity('1G'))", "true"},
                   {"quantity('1.5').isInteger()", "false"},
                   {"quantity('2k').asInteger()", "int:2000"},
                   {"quantity('500m').asApproximateFloat()", "double:0.5"},
                   {"quantity('1Mi').compareTo(quantity('1024Ki'))", "int:0"},
                   {"quantity('1Mi') == quantity('1048576')", "true"},
                   {"quantity('1').add(quantity('500m')).isLessThan(quantity('2'))", "true"},
                   {"quantity('-5').sign()", "int:-1"},
                   {"isQuantity('1e3')", "true"},
                   {"isQuantity('abc')", "false"},
                   {"quantity(dyn('abc'))",
                    "error:quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
                   {"sets.contains([1, 2, 3], [1, 2])", "true"},
                   {"sets.equivalent([1, 2], [2, 1, 1])", "true"},
                   {"sets.intersects([1], [2])", "false"}});
}

TEST(EvalTest, SelfFromJsonHasKubernetesTypes) {
  json schema = yaml::ParseYaml(R"yaml(
type: object
properties:
  when: {type: string, format: date-time}
  data: {type: string, format: byte}
  port: {x-kubernetes-int-or-string: true}
  items:
    type: array
    x-kubernetes-list-type: set
    items: {type: string}
)yaml");
  json self = {
      {"when", "2024-05-06T07:08:09Z"}, {"data", "aGk="}, {"port", "http"}, {"items", {"b", "a"}}};
  json old = {
      {"when", "2024-05-06T07:08:09Z"}, {"data", "aGk="}, {"port", "http"}, {"items", {"a", "b"}}};
  EXPECT_EQ(Show(EvaluateExpression("self.when.getMonth()", self, schema).value), "int:4");
  EXPECT_EQ(Show(EvaluateExpression("string(self.data)", self, schema).value), "string:hi");
  EXPECT_EQ(Show(EvaluateExpression("type(self.port) == string", self, schema).value), "true");
  // Sets compare without regard to order, as Kubernetes' list-type=set values do.
  EXPECT_EQ(Show(EvaluateExpression("self.items == oldSelf.items", self, schema, old).value),
            "true");
  EXPECT_EQ(Show(EvaluateExpression("self.missing", json{{"a", 1}}).value),
            "error:no such key: missing");
}

TEST(EvalTest, ParsesKubernetesQuantities) {
  auto q = ParseQuantity("1.5Gi");
  ASSERT_TRUE(q);
  EXPECT_FALSE(ParseQuantity("1.2.3"));
  EXPECT_FALSE(ParseQuantity("5Xi"));
  EXPECT_FALSE(ParseQuantity(""));
  EXPECT_TRUE(ParseQuantity("+.5"));
  EXPECT_TRUE(ParseQuantity("12e-3"));
}

TEST(EvalTest, ChargesRuntimeCostAsCelGoDoes) {
  // 'abc' literal 0; size() 1; comparison 1.
  EXPECT_EQ(EvaluateExpression("size('abc') > 1").cost, 2u);
  // [1,2,3]: list creation 10; all(): per element cond (@not_strictly_false 1 + accu 1) and step
  // (accu 1 + x 1 + _>_ 1), and the result ident 1.
  EXPECT_EQ(EvaluateExpression("[1, 2, 3].all(x, x > 0)").cost, 10u + 3 * (2 + 3) + 1);
}

}  // namespace
}  // namespace ringleader::cel
