// x-kubernetes-validations as the API server handles them: CRD-time refusals worded like
// kube-apiserver 1.32, and rule evaluation on custom-resource create and update, including the
// rules of our own TrainingJob CRD.
#include "tests/support/cel/crd_rules.h"

#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;
using schema::SchemaError;

json Yaml(const std::string& text) { return yaml::ParseYaml(text); }

std::vector<std::string> Strings(const std::vector<SchemaError>& errors) {
  std::vector<std::string> out;
  for (const SchemaError& e : errors) {
    out.push_back(e.ToString());
  }
  return out;
}

const char* kPrefix = "spec.validation.openAPIV3Schema";

// Guards the refusal a real API server gave our CRD: a rule on a preserve-unknown-fields object
// without properties cannot see any field.
TEST(CrdRulesTest, RefusesTheTemplateRuleOnAnObjectWithoutPropertiesLikeTheRealServer) {
  json schema = Yaml(R"yaml(
type: object
properties:
  spec:
    type: object
    properties:
      template:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-validations:
          - rule: "has(self.spec) && has(self.spec.containers) && size(self.spec.containers) > 0"
            message: "template.spec.containers must name at least one trainer container"
)yaml");
  std::vector<SchemaError> errors = CheckSchemaRules(schema, kPrefix);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path,
            "spec.validation.openAPIV3Schema.properties[spec].properties[template].x-kubernetes-"
            "validations[0].rule");
  const std::string line =
      "has(self.spec) && has(self.spec.containers) && size(self.spec.containers) > 0";
  EXPECT_EQ(
      errors[0].message,
      "Invalid value: apiextensions.ValidationRule{Rule:\"" + line +
          "\", Message:\"template.spec.containers must name at least one trainer container\", "
          "MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), "
          "FieldPath:\"\", "
          "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:4: undefined field "
          "'spec'\n"
          " | " +
          line +
          "\n | ...^\n"
          "ERROR: <input>:1:27: undefined field 'spec'\n | " +
          line +
          "\n | ..........................^\n"
          "ERROR: <input>:1:57: undefined field 'spec'\n | " +
          line + "\n | ........................................................^");
}

TEST(CrdRulesTest, AcceptsTheTemplateRuleOnceSpecAndContainersAreDeclared) {
  json schema = Yaml(R"yaml(
type: object
properties:
  template:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    x-kubernetes-validations:
      - rule: "has(self.spec) && has(self.spec.containers) && size(self.spec.containers) > 0"
    properties:
      spec:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          containers:
            type: array
            items: {type: object, x-kubernetes-preserve-unknown-fields: true}
)yaml");
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)), std::vector<std::string>{});
}

json TrainingJobSchema() {
  json crd = yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml");
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// Every rule compiles and the estimated costs stay within the server's budgets.
TEST(CrdRulesTest, EveryRuleOfTheTrainingJobCrdCompilesWithinBudget) {
  EXPECT_EQ(Strings(CheckSchemaRules(TrainingJobSchema(), "spec.versions[0].schema.openAPIV3Schema")),
            std::vector<std::string>{});
}

// The refusal kubernetes/kubernetes#124234 reports from a real server: string(int) has no size
// bound, so concatenating it in a messageExpression is estimated as unbounded.
TEST(CrdRulesTest, RefusesMessageExpressionsConcatenatingStringOfAnIntLikeTheRealServer) {
  json schema = Yaml(R"yaml(
type: object
properties:
  config:
    type: object
    x-kubernetes-validations:
      - messageExpression: "'invalid attempts: ' + string(self.attempts)"
        rule: self.attempts >= 0
    properties:
      attempts: {type: integer, maximum: 2147483647, minimum: -2147483648}
)yaml");
  const std::string rule =
      "spec.validation.openAPIV3Schema.properties[config].x-kubernetes-validations[0]";
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)),
            (std::vector<std::string>{
                rule + ".messageExpression: Forbidden: estimated messageExpression cost exceeds "
                       "budget by factor of "
                       "more than 100x (try simplifying the rule, or adding maxItems, "
                       "maxProperties, and maxLength "
                       "where arrays, maps, and strings are declared)",
                rule + ".messageExpression: Forbidden: contributed to estimated rule cost total "
                       "exceeding cost limit "
                       "for entire OpenAPIv3 schema",
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated "
                "rule cost total for "
                "entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try "
                "simplifying the rule, or "
                "adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are "
                "declared)",
            }));
}

json ValidJob() {
  return Yaml(R"yaml(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: demo, namespace: default}
spec:
  replicas: 2
  gpusPerReplica: 1
  template:
    spec:
      containers: [{name: trainer, image: trainer:1}]
  networking: {}
  communication:
    backend: nccl
    preflight:
      enabled: true
      minBytes: 1Mi
      maxBytes: 64Mi
      stepFactor: 2
      minBusBandwidth: "0"
      timeoutSeconds: 300
    monitor: {enabled: true, intervalSeconds: 60, messageBytes: 16Mi}
  runPolicy: {backoffLimit: 3, suspend: false}
)yaml");
}

TEST(CrdRulesTest, TrainingJobRulesPassOnAValidJob) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  RuleEvaluation result = ValidateRules(*rules, ValidJob());
  EXPECT_EQ(Strings(result.errors), std::vector<std::string>{});
}

TEST(CrdRulesTest, TrainingJobNcclWithoutGpusFailsAtTheBackendField) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  json job = ValidJob();
  job["spec"]["gpusPerReplica"] = 0;
  EXPECT_EQ(Strings(ValidateRules(*rules, job).errors),
            std::vector<std::string>{
                "spec.communication.backend: Invalid value: \"object\": communication.backend nccl "
                "needs gpusPerReplica of at least 1"});
}

TEST(CrdRulesTest, TrainingJobWithoutContainersFailsTheTemplateRule) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  json job = ValidJob();
  job["spec"]["template"] = json::object({{"spec", json::object({{"containers", json::array()}})}});
  EXPECT_EQ(Strings(ValidateRules(*rules, job).errors),
            std::vector<std::string>{
                "spec.template: Invalid value: \"object\": template.spec.containers must name at "
                "least one trainer container"});
}

TEST(CrdRulesTest, TrainingJobNegativeQuantityFailsOnTheIntOrStringField) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  json job = ValidJob();
  job["spec"]["communication"]["preflight"]["minBytes"] = -5;
  EXPECT_EQ(
      Strings(ValidateRules(*rules, job).errors),
      std::vector<std::string>{
          "spec.communication.preflight.minBytes: Invalid value: \"\": must not be negative"});
}

TEST(CrdRulesTest, TrainingJobReplicasCannotChangeUnlessSuspended) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  json old_job = ValidJob();
  json job = ValidJob();
  job["spec"]["replicas"] = 4;
  EXPECT_EQ(Strings(ValidateRules(*rules, job, old_job).errors),
            std::vector<std::string>{
                "spec: Invalid value: \"object\": replicas, gpusPerReplica and networking cannot "
                "change while the job is not suspended"});
  job["spec"]["runPolicy"]["suspend"] = true;
  EXPECT_TRUE(ValidateRules(*rules, job, old_job).ok());
  // On create there is no old object, so the transition rule does not run.
  job["spec"]["runPolicy"]["suspend"] = false;
  EXPECT_TRUE(ValidateRules(*rules, job).ok());
}

TEST(CrdRulesTest, TrainingJobNameRulesCheckTheDnsLabelAndRoomForRanks) {
  auto rules = CompileSchemaRules(TrainingJobSchema());
  json job = ValidJob();
  job["metadata"]["name"] = "Demo_1";
  EXPECT_EQ(
      Strings(ValidateRules(*rules, job).errors),
      std::vector<std::string>{
          "metadata.name: Invalid value: \"object\": must be a DNS-1035 label: lowercase "
          "letters, digits and '-', starting with a letter and ending with a letter or digit"});
  job["metadata"]["name"] = std::string(62, 'a');
  job["spec"]["replicas"] = 100;
  EXPECT_EQ(Strings(ValidateRules(*rules, job).errors),
            std::vector<std::string>{
                "metadata.name: Invalid value: \"object\": must be at most 60 characters, so that "
                "every Pod name <name>-<rank> fits in a 63-character DNS label"});
  // At each number of rank digits, the longest name that leaves room and one past it.
  for (const auto& [replicas, longest] : std::vector<std::pair<int, std::size_t>>{
           {1, 61}, {10, 61}, {11, 60}, {100, 60}, {101, 59}, {1001, 58}, {10001, 57}, {16384, 57}}) {
    job["spec"]["replicas"] = replicas;
    job["metadata"]["name"] = std::string(longest, 'a');
    EXPECT_TRUE(ValidateRules(*rules, job).ok()) << replicas;
    job["metadata"]["name"] = std::string(longest + 1, 'a');
    EXPECT_FALSE(ValidateRules(*rules, job).ok()) << replicas;
  }
}

// --- CRD-time checks of the rule entries ---------------------------------------------------------

TEST(CrdRulesTest, ChecksRuleEntryFieldsWithTheServersMessages) {
  json schema = Yaml(R"yaml(
type: object
properties:
  a:
    type: object
    properties:
      b: {type: string}
    x-kubernetes-validations:
      - rule: "  "
      - rule: "true"
        message: "  "
      - rule: "true"
        message: "two\nlines"
      - rule: "true\n|| false"
      - rule: "true"
        messageExpression: " "
        reason: FieldValueBad
        fieldPath: .c
)yaml");
  const std::string base = "spec.validation.openAPIV3Schema.properties[a].x-kubernetes-validations";
  EXPECT_EQ(
      Strings(CheckSchemaRules(schema, kPrefix)),
      (std::vector<std::string>{
          base + "[0].rule: Required value: rule is not specified",
          base + "[1].message: Invalid value: \"  \": message must be non-empty if specified",
          base +
              "[2].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
          base +
              "[3].message: Required value: message must be specified if rule contains line breaks",
          base + "[4].messageExpression: Required value: messageExpression must be non-empty if "
                 "specified",
          base + "[4].reason: Unsupported value: \"FieldValueBad\": supported values: "
                 "\"FieldValueDuplicate\", "
                 "\"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
          base + "[4].fieldPath: Invalid value: \".c\": fieldPath must be a valid path",
      }));
}

TEST(CrdRulesTest, RefusesNonBoolRulesAndNonStringMessageExpressions) {
  json schema = Yaml(R"yaml(
type: object
properties:
  n:
    type: integer
    x-kubernetes-validations:
      - rule: "self + 1"
      - rule: "self > 0"
        messageExpression: "self"
)yaml");
  const std::string base = "spec.validation.openAPIV3Schema.properties[n].x-kubernetes-validations";
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)),
            (std::vector<std::string>{
                base + "[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self + 1\", "
                       "Message:\"\", "
                       "MessageExpression:\"\", "
                       "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", "
                       "OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool",
                base + "[1].messageExpression: Invalid value: "
                       "apiextensions.ValidationRule{Rule:\"self > 0\", "
                       "Message:\"\", MessageExpression:\"self\", "
                       "Reason:(*apiextensions.FieldValueErrorReason)(nil), "
                       "FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: messageExpression must "
                       "evaluate to a string",
            }));
}

TEST(CrdRulesTest, RefusesOldSelfBelowAnAtomicListAndAnUnusedOptionalOldSelf) {
  json schema = Yaml(R"yaml(
type: object
properties:
  items:
    type: array
    maxItems: 10
    items:
      type: string
      maxLength: 10
      x-kubernetes-validations:
        - rule: "self == oldSelf"
  plain:
    type: string
    x-kubernetes-validations:
      - rule: "self != ''"
        optionalOldSelf: true
)yaml");
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)),
            (std::vector<std::string>{
                "spec.validation.openAPIV3Schema.properties[items].items.x-kubernetes-validations["
                "0].rule: Invalid "
                "value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion "
                "of the schema within "
                "spec.validation.openAPIV3Schema.properties[items]",
                "spec.validation.openAPIV3Schema.properties[plain].x-kubernetes-validations[0]."
                "optionalOldSelf: "
                "Invalid value: true: may not be set if oldSelf is not used in rule",
            }));
}

TEST(CrdRulesTest, RefusesRulesOverUnboundedListsForCost) {
  json schema = Yaml(R"yaml(
type: object
properties:
  spec:
    type: object
    properties:
      names:
        type: array
        items: {type: string}
    x-kubernetes-validations:
      - rule: "self.names.all(x, self.names.exists(y, x == y))"
)yaml");
  std::vector<std::string> errors = Strings(CheckSchemaRules(schema, kPrefix));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0],
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
            "Forbidden: estimated "
            "rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or "
            "adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)");
  EXPECT_EQ(
      errors[1],
      "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
      "Forbidden: "
      "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema");
  EXPECT_EQ(errors[2],
            "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule "
            "cost total for entire "
            "OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the "
            "rule, or adding "
            "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)");
}

TEST(CrdRulesTest, AcceptsTheSameRuleWhenTheListAndStringsAreBounded) {
  json schema = Yaml(R"yaml(
type: object
properties:
  spec:
    type: object
    properties:
      names:
        type: array
        maxItems: 20
        items: {type: string, maxLength: 64}
    x-kubernetes-validations:
      - rule: "self.names.all(x, self.names.exists(y, x == y))"
)yaml");
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)), std::vector<std::string>{});
}

TEST(CrdRulesTest, NamesUnimplementedKubernetesFunctionsAtCompileTime) {
  json schema = Yaml(R"yaml(
type: object
properties:
  addr:
    type: string
    maxLength: 64
    x-kubernetes-validations:
      - rule: "isIP(self)"
)yaml");
  std::vector<std::string> errors = Strings(CheckSchemaRules(schema, kPrefix));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(
      errors[0].find("compilation failed: ERROR: <input>:1:5: devcluster does not implement 'isIP' "
                     "(Kubernetes IP address library)"),
      std::string::npos)
      << errors[0];
}

TEST(CrdRulesTest, CompilesThroughTheSchemaCheckersHookWithTheSameResult) {
  json schema = Yaml(R"yaml(
type: object
properties:
  spec:
    type: object
    properties:
      names:
        type: array
        items: {type: string}
      template:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-validations:
          - rule: "has(self.spec)"
    x-kubernetes-validations:
      - rule: "self.names.all(x, self.names.exists(y, x == y))"
)yaml");
  CrdRuleCompiler compiler;
  schema::SchemaCheckOptions options;
  options.compile_cel = compiler.Hook();
  std::vector<SchemaError> errors = schema::ValidateSchema(schema, kPrefix, options);
  std::vector<SchemaError> totals = compiler.TotalCostErrors(kPrefix);
  errors.insert(errors.end(), totals.begin(), totals.end());
  EXPECT_EQ(Strings(errors), Strings(CheckSchemaRules(schema, kPrefix)));
  EXPECT_EQ(errors.size(), 4u);
}

// --- Evaluation ---------------------------------------------------------------------------------

TEST(CrdRulesTest, ReasonsPickTheFieldErrorType) {
  json schema = Yaml(R"yaml(
type: object
properties:
  s:
    type: object
    properties:
      v: {type: integer}
    x-kubernetes-validations:
      - {rule: "self.v > 0", reason: FieldValueForbidden, message: "must be positive"}
      - {rule: "self.v > 1", reason: FieldValueRequired, message: "needs more"}
      - {rule: "self.v > 2", reason: FieldValueDuplicate}
      - {rule: "self.v > 3", reason: FieldValueInvalid}
      - {rule: "self.v > 4"}
)yaml");
  auto rules = CompileSchemaRules(schema);
  EXPECT_EQ(
      Strings(ValidateRules(*rules, json{{"s", {{"v", 0}}}}).errors),
      (std::vector<std::string>{"s: Forbidden: must be positive", "s: Required value: needs more",
                                "s: Duplicate value: \"object\"",
                                "s: Invalid value: \"object\": failed rule: self.v > 3",
                                "s: Invalid value: \"object\": failed rule: self.v > 4"}));
}

TEST(CrdRulesTest, MessageExpressionsReplaceTheMessageAndFallBackWhenTheyFail) {
  json schema = Yaml(R"yaml(
type: object
properties:
  n:
    type: integer
    x-kubernetes-validations:
      - rule: "self < 10"
        messageExpression: "'n is ' + string(self) + ', above 9'"
      - rule: "self < 10"
        message: "static message"
        messageExpression: "string(self / 0)"
      - rule: "self < 10"
        messageExpression: "''"
)yaml");
  auto rules = CompileSchemaRules(schema);
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"n", 12}}).errors),
            (std::vector<std::string>{"n: Invalid value: \"integer\": n is 12, above 9",
                                      "n: Invalid value: \"integer\": static message",
                                      "n: Invalid value: \"integer\": failed rule: self < 10"}));
}

TEST(CrdRulesTest, RuntimeErrorsAreReportedWithTheRule) {
  json schema = Yaml(R"yaml(
type: object
properties:
  o:
    type: object
    properties:
      a: {type: integer}
      m:
        type: object
        additionalProperties: {type: string}
    x-kubernetes-validations:
      - rule: "self.a > 0"
      - rule: "self.m['x'] == 'y'"
        message: "x must be y"
)yaml");
  auto rules = CompileSchemaRules(schema);
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"o", {{"m", json::object()}}}}).errors),
            (std::vector<std::string>{
                "o: Invalid value: \"object\": no such key: a evaluating rule: self.a > 0",
                "o: Invalid value: \"object\": no such key: x evaluating rule: x must be y"}));
}

TEST(CrdRulesTest, RootRulesReportTheNilPathAndFieldPathsUnderIt) {
  json schema = Yaml(R"yaml(
type: object
properties:
  spec:
    type: object
    properties:
      x: {type: integer}
x-kubernetes-validations:
  - rule: "self.spec.x > 0"
  - rule: "self.spec.x > 1"
    fieldPath: ".spec.x"
)yaml");
  auto rules = CompileSchemaRules(schema);
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"spec", {{"x", 0}}}}).errors),
            (std::vector<std::string>{
                "<nil>: Invalid value: \"object\": failed rule: self.spec.x > 0",
                "spec.x: Invalid value: \"object\": failed rule: self.spec.x > 1"}));
}

TEST(CrdRulesTest, OptionalOldSelfRulesRunOnCreateWithoutAnOldValue) {
  json schema = Yaml(R"yaml(
type: object
properties:
  v:
    type: string
    x-kubernetes-validations:
      - rule: "oldSelf.hasValue() || self == 'initial'"
        optionalOldSelf: true
        message: "must start as initial"
      - rule: "self == oldSelf"
        message: "is immutable"
)yaml");
  EXPECT_EQ(Strings(CheckSchemaRules(schema, kPrefix)), std::vector<std::string>{});
  auto rules = CompileSchemaRules(schema);
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"v", "other"}}).errors),
            std::vector<std::string>{"v: Invalid value: \"string\": must start as initial"});
  EXPECT_TRUE(ValidateRules(*rules, json{{"v", "initial"}}).ok());
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"v", "changed"}}, json{{"v", "initial"}}).errors),
            std::vector<std::string>{"v: Invalid value: \"string\": is immutable"});
}

TEST(CrdRulesTest, TransitionRulesCorrelateMapListItemsByKey) {
  json schema = Yaml(R"yaml(
type: object
properties:
  items:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string}
        size: {type: integer}
      x-kubernetes-validations:
        - rule: "self.size >= oldSelf.size"
          message: "size cannot shrink"
)yaml");
  auto rules = CompileSchemaRules(schema);
  json old_obj = Yaml("items: [{name: a, size: 5}, {name: b, size: 5}]");
  json obj = Yaml("items: [{name: b, size: 4}, {name: a, size: 6}, {name: c, size: 1}]");
  EXPECT_EQ(Strings(ValidateRules(*rules, obj, old_obj).errors),
            std::vector<std::string>{"items[0]: Invalid value: \"object\": size cannot shrink"});
}

TEST(CrdRulesTest, UnchangedValuesRatchetFailuresToWarnings) {
  json schema = Yaml(R"yaml(
type: object
properties:
  a:
    type: string
    x-kubernetes-validations: [{rule: "self.startsWith('ok')", message: "must start with ok"}]
  b:
    type: string
    x-kubernetes-validations: [{rule: "self.startsWith('ok')", message: "must start with ok"}]
)yaml");
  auto rules = CompileSchemaRules(schema);
  RuleEvaluation result =
      ValidateRules(*rules, json{{"a", "bad"}, {"b", "worse"}}, json{{"a", "bad"}, {"b", "ok"}});
  EXPECT_EQ(Strings(result.errors),
            std::vector<std::string>{"b: Invalid value: \"string\": must start with ok"});
  EXPECT_EQ(result.warnings,
            std::vector<std::string>{"a: Invalid value: \"string\": must start with ok"});
}

TEST(CrdRulesTest, ARuleOverTheCallLimitStopsFurtherRules) {
  json schema = Yaml(R"yaml(
type: object
properties:
  s:
    type: string
    x-kubernetes-validations:
      - rule: "self.contains(self)"
      - rule: "false"
)yaml");
  auto rules = CompileSchemaRules(schema);
  // contains costs ceil(0.1 * 20000) squared = 4,000,000, past the 1,000,000 per-call limit.
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"s", std::string(20000, 'a')}}).errors),
            std::vector<std::string>{
                "s: Invalid value: \"string\": 'operation cancelled: actual cost limit exceeded': "
                "no further validation rules will be run due to call cost exceeds limit for rule: "
                "self.contains(self)"});
}

TEST(CrdRulesTest, IntOrStringRulesSeeIntsAndStrings) {
  json schema = Yaml(R"yaml(
type: object
properties:
  q:
    x-kubernetes-int-or-string: true
    x-kubernetes-validations:
      - rule: "type(self) == string ? self.endsWith('%') : self < 100"
        message: "a percentage or below 100"
)yaml");
  auto rules = CompileSchemaRules(schema);
  EXPECT_TRUE(ValidateRules(*rules, json{{"q", "50%"}}).ok());
  EXPECT_TRUE(ValidateRules(*rules, json{{"q", 5}}).ok());
  EXPECT_EQ(Strings(ValidateRules(*rules, json{{"q", 500}}).errors),
            std::vector<std::string>{"q: Invalid value: \"\": a percentage or below 100"});
}

TEST(CrdRulesTest, StandaloneExpressionsEvaluateAgainstJson) {
  ExpressionResult r = EvaluateExpression("self.a + size(self.b)", json{{"a", 2}, {"b", "xyz"}});
  ASSERT_TRUE(r.ok()) << r.compile_error;
  EXPECT_EQ(r.value.as<int64_t>(), 5);
  EXPECT_EQ(r.output_type, "int");
}

}  // namespace
}  // namespace ringleader::cel
