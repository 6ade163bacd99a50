// The type checker: result types, Kubernetes' declared types for self, and cel-go's exact error
// messages (undefined field, no matching overload, undeclared reference, ...).
#include "tests/support/cel/checker.h"

#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"
#include "tests/support/cel/decl_types.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;

const json& SelfSchema() {
  static const json kSchema = yaml::ParseYaml(R"yaml(
type: object
properties:
  name: {type: string, maxLength: 10}
  count: {type: integer}
  ratio: {type: number}
  tags: {type: array, items: {type: string}}
  labels: {type: object, additionalProperties: {type: string}}
  when: {type: string, format: date-time}
  timeout: {type: string, format: duration}
  port: {x-kubernetes-int-or-string: true}
  nested: {type: object, properties: {flag: {type: boolean}}}
  free: {type: object, x-kubernetes-preserve-unknown-fields: true}
  my-field: {type: string}
  namespace: {type: string}
)yaml");
  return kSchema;
}

// The checked type of `text`, or its issues as cel-go prints them.
std::string CheckToString(const std::string& text) {
  static const TypePtr self = SchemaDeclType(SelfSchema(), false, "selfType0");
  Source source(text);
  CheckedExpr checked = Compile(source, {{"self", self}, {"oldSelf", self}});
  if (!checked.issues.empty()) {
    return FormatIssues(source, checked.issues);
  }
  return TypeName(*checked.output);
}

struct CheckCase {
  std::string text;
  std::string want;
};

void ExpectChecks(const std::vector<CheckCase>& cases) {
  for (const CheckCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CheckToString(c.text), c.want);
  }
}

TEST(CheckerTest, InfersResultTypes) {
  ExpectChecks(
      {{"1 + 2", "int"},
       {"1u * 2u", "uint"},
       {"1.5 / 2.0", "double"},
       {"'a' + 'b'", "string"},
       {"b'a' + b'b'", "bytes"},
       {"[1, 2] + [3]", "list(int)"},
       {"{'a': 1}", "map(string, int)"},
       {"[]", "list(dyn)"},
       {"{}", "map(dyn, dyn)"},
       {"type(1)", "type(int)"},
       {"int", "type(int)"},
       {"dyn(1)", "dyn"},
       {"1 < 2.0", "bool"},
       {"1u <= 2", "bool"},
       {"optional.of(1)", "optional_type(int)"},
       {"sets.contains([1], [1])", "bool"},
       {"'a,b'.split(',')", "list(string)"},
       {"[1, 2].sum()", "int"},
       {"'abc'.find('b')", "string"},
       {"quantity('1Gi').isGreaterThan(quantity('1G'))", "bool"},
       {"timestamp('2024-01-01T00:00:00Z') - duration('1h')", "google.protobuf.Timestamp"}});
}

TEST(CheckerTest, TypesSelfFromItsSchema) {
  ExpectChecks({{"self.name", "string"},
                {"self.count", "int"},
                {"self.ratio", "double"},
                {"self.tags", "list(string)"},
                {"self.labels", "map(string, string)"},
                {"self.labels.anything", "string"},
                {"self.when", "google.protobuf.Timestamp"},
                {"self.timeout", "google.protobuf.Duration"},
                {"self.port", "dyn"},
                {"self.nested", "selfType0.nested"},
                {"self.nested.flag", "bool"},
                {"self.my__dash__field", "string"},
                {"self.__namespace__", "string"},
                {"self.tags.map(t, size(t))", "list(int)"},
                {"self.tags.filter(t, t != '')", "list(string)"},
                {"self.tags.all(t, t != '')", "bool"},
                {"self.labels.exists(k, k == 'a')", "bool"},
                {"self.?name", "optional_type(string)"},
                {"self.?name.orValue('x')", "string"},
                {"self.tags[?0]", "optional_type(string)"},
                {"self == oldSelf", "bool"},
                {"has(self.name)", "bool"},
                {"self.port == 1 || self.port == 'a'", "bool"},
                {"self.tags.isSorted()", "bool"}});
}

TEST(CheckerTest, ReportsCelGosErrors) {
  ExpectChecks({
      {"self.missing", "ERROR: <input>:1:5: undefined field 'missing'\n | self.missing\n | ....^"},
      {"self.free.spec",
       "ERROR: <input>:1:10: undefined field 'spec'\n | self.free.spec\n | .........^"},
      {"self.my-field",
       "ERROR: <input>:1:5: undefined field 'my'\n | self.my-field\n | ....^\n"
       "ERROR: <input>:1:9: undeclared reference to 'field' (in container '')\n"
       " | self.my-field\n | ........^"},
      {"1 + 'a'",
       "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n"
       " | 1 + 'a'\n | ..^"},
      {"self.count == true",
       "ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(int, bool)'\n"
       " | self.count == true\n | ...........^"},
      {"1 == 1.0",
       "ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, double)'\n"
       " | 1 == 1.0\n | ..^"},
      {"self.name.startsWith(1)",
       "ERROR: <input>:1:21: found no matching overload for 'startsWith' applied to "
       "'string.(int)'\n"
       " | self.name.startsWith(1)\n | ....................^"},
      {"foo", "ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo\n | ^"},
      {"foo(1)",
       "ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')\n | foo(1)\n | ...^"},
      {"[1, 'a']",
       "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a']\n | ....^"},
      {"self.count.all(x, x)",
       "ERROR: <input>:1:5: expression of type 'int' cannot be range of a comprehension (must be "
       "list, map, or "
       "dynamic)\n | self.count.all(x, x)\n | ....^"},
      {"1.a", "ERROR: <input>:1:2: type 'int' does not support field selection\n | 1.a\n | .^"},
      {"'a'.matches('(')",
       "ERROR: <input>:1:13: invalid matches argument\n | 'a'.matches('(')\n | ............^"},
      {"duration('1x')",
       "ERROR: <input>:1:10: invalid duration argument\n | duration('1x')\n | .........^"},
  });
}

// Two-variable comprehensions arrive with compatibility version 1.32; new CRD rules on a 1.32
// server still compile against 1.31, so `all` with three arguments is not declared.
TEST(CheckerTest, RefusesTwoVariableComprehensionsLikeA132Server) {
  ExpectChecks({{"self.labels.all(k, v, v != '')",
                 "ERROR: <input>:1:16: undeclared reference to 'all' (in container '')\n"
                 " | self.labels.all(k, v, v != '')\n | ...............^\n"
                 "ERROR: <input>:1:17: undeclared reference to 'k' (in container '')\n"
                 " | self.labels.all(k, v, v != '')\n | ................^\n"
                 "ERROR: <input>:1:20: undeclared reference to 'v' (in container '')\n"
                 " | self.labels.all(k, v, v != '')\n | ...................^\n"
                 "ERROR: <input>:1:23: undeclared reference to 'v' (in container '')\n"
                 " | self.labels.all(k, v, v != '')\n | ......................^"}});
}

TEST(CheckerTest, NamesKubernetesFunctionsDevclusterDoesNotImplement) {
  ExpectChecks(
      {{"url('https://x').getHost() == 'x'",
        "ERROR: <input>:1:4: devcluster does not implement 'url' (Kubernetes URL library), which "
        "Kubernetes "
        "1.32 offers to CRD validation rules\n | url('https://x').getHost() == 'x'\n | ...^\n"
        "ERROR: <input>:1:25: devcluster does not implement 'getHost' (Kubernetes URL library), "
        "which "
        "Kubernetes 1.32 offers to CRD validation rules\n | url('https://x').getHost() == 'x'\n"
        " | ........................^"}});
}

TEST(CheckerTest, RecordsWhetherOldSelfIsUsed) {
  Source source("self.count > 0 || oldSelf.count > 0");
  TypePtr self = SchemaDeclType(SelfSchema(), false, "selfType0");
  CheckedExpr checked = Compile(source, {{"self", self}, {"oldSelf", self}});
  EXPECT_EQ(checked.referenced_variables, (std::set<std::string>{"oldSelf", "self"}));
}

}  // namespace
}  // namespace ringleader::cel
