// The static cost estimate (cel-go's coster with Kubernetes' schema sizes) on expressions whose
// cost can be worked out by hand from cel-go's formulas.
#include "tests/support/cel/cost.h"

#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"
#include "tests/support/cel/decl_types.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;

const json& Schema() {
  static const json kSchema = yaml::ParseYaml(R"yaml(
type: object
properties:
  n: {type: integer}
  s: {type: string, maxLength: 10}
  big: {type: string}
  ints: {type: array, maxItems: 5, items: {type: integer}}
  names: {type: array, maxItems: 4, items: {type: string, maxLength: 8}}
  labels: {type: object, maxProperties: 3, additionalProperties: {type: string, maxLength: 5}}
)yaml");
  return kSchema;
}

CostRange Estimate(const std::string& text) {
  static const TypePtr self = SchemaDeclType(Schema(), false, "selfType0");
  Source source(text);
  CheckedExpr checked = Compile(source, {{"self", self}, {"oldSelf", self}});
  EXPECT_TRUE(checked.issues.empty()) << FormatIssues(source, checked.issues);
  return EstimateCost(checked, *self);
}

struct CostCase {
  std::string text;
  uint64_t min;
  uint64_t max;
};
TEST(CostTestTable, HandWorked) {
  for (const CostCase& c : std::vector<CostCase>{
           // self 1 + .n 1 + _>_ 1
           CostCase{"self.n > 0", 3, 3},
           // literals cost nothing; the call 1
           CostCase{"1 + 2", 1, 1},
           // has() costs only its operand (PresenceTestHasCost(false))
           CostCase{"has(self.n)", 1, 1},
           // target 2; contains: ceil(0.1 * [0, 40]) * ceil(0.1 * 3) = [0, 4] (schema sizes start
           // at 0)
           CostCase{"self.s.contains('abc')", 2, 6},
           // target 2; startsWith: ceil(0.1 * 3) = 1
           CostCase{"self.s.startsWith('abc')", 3, 3},
           // target 2; matches: ceil(0.1 * ([0, 40] + 1)) * ceil(0.25 * 4) = [1, 5]
           CostCase{"self.s.matches('^a+$')", 3, 7},
           // equality of strings: min(40, 3) * 0.1 -> [1, 1]; plus target 2
           CostCase{"self.s == 'abc'", 3, 3},
           // && : min is the left side's, max the sum
           CostCase{"self.n > 0 && self.n < 10", 3, 6},
           // all() over [0, 5] ints: range 2, result 1, [0, 5] * (cond [2, 2] + step [1, 3])
           CostCase{"self.ints.all(x, x > 0)", 3, 2 + 1 + 5 * 5},
           // in_list: list size [0, 5], plus both sides (literal 0, list 2)
           CostCase{"1 in self.ints", 2, 7},
           // exists over [0, 3] keys: cond @not_strictly_false(!accu) 3, step accu || (k == 'a')
           // [1, 2];
           // a map's keys have no declared length, so the comparison costs [0, 0] plus the ident
           CostCase{"self.labels.exists(k, k == 'a')", 3, 2 + 1 + 3 * 5},
           // size() is O(1)
           CostCase{"size(self.names) < 3", 4, 4},
           // an unbounded string compared with a literal stays cheap (min of both sizes)
           CostCase{"self.big == 'x'", 3, 3},
           // concatenating a string without maxLength costs up to the request size: add_string
           // 0.1 * ([0, 3145726] + 1) + 2, then == on the min of the sizes 1
           CostCase{"self.big + 'x' == 'y'", 4, 314576},
           // sets: [0, 5] * 2 items * factor 2 + 1, plus the list literal 10 and target 2
           CostCase{"sets.equivalent(self.ints, [1, 2])", 13, 33},
           // string(int) has no size bound in cel-go, so concatenating it costs 0.1 * 2^64 (in
           // float arithmetic, as cel-go computes it) plus the arguments: far past any budget
           CostCase{"'n: ' + string(self.n) == ''", 4, 1844674407370955267u}}) {
    SCOPED_TRACE(c.text);
    CostRange cost = Estimate(c.text);
    EXPECT_EQ(cost.min, c.min);
    EXPECT_EQ(cost.max, c.max);
  }
}

}  // namespace
}  // namespace ringleader::cel
