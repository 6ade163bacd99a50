// Tests for the CRD schema rules, pruning, defaulting and validation, with small inline schemas
// and the 1.32 API server's paths and wording (each case names the Kubernetes source it follows).
#include "tests/support/structural_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::schema {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json Yaml(const std::string& text) { return yaml::ParseYaml(text); }

std::vector<std::string> Strings(const std::vector<SchemaError>& errors) {
  std::vector<std::string> out;
  for (const SchemaError& error : errors) {
    out.push_back(error.ToString());
  }
  return out;
}

// What the API server says about a CRD whose only version has `schema` (it reports a schema all
// versions share at spec.validation.openAPIV3Schema).
std::vector<std::string> CrdErrors(const std::string& schema_yaml,
                                   SchemaCheckOptions options = {}) {
  return Strings(ValidateSchema(Yaml(schema_yaml), "spec.validation.openAPIV3Schema", options));
}

constexpr char kPath[] = "spec.validation.openAPIV3Schema";

std::string At(const std::string& rest) { return std::string(kPath) + rest; }

// A TrainingJob-like schema most value cases share.
const json& JobSchema() {
  static const json schema = Yaml(R"(
type: object
properties:
  spec:
    type: object
    required: [replicas]
    properties:
      replicas: {type: integer, minimum: 1, maximum: 64, format: int32}
      ratio: {type: number, exclusiveMinimum: true, minimum: 0, exclusiveMaximum: true, maximum: 1}
      step: {type: integer, multipleOf: 8}
      suspend: {type: boolean}
      backend: {type: string, enum: [auto, nccl, gloo]}
      name: {type: string, minLength: 1, maxLength: 5, pattern: '^[a-z]+$'}
      note: {type: string, nullable: true}
      port: {x-kubernetes-int-or-string: true}
      hosts: {type: array, minItems: 1, maxItems: 2, items: {type: string}}
      matrix:
        type: array
        items: {type: array, items: {type: integer}}
      labels:
        type: object
        additionalProperties: {type: string}
      template:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          priority: {type: integer}
      containers:
        type: array
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
)");
  return schema;
}

// ---- Validate: kube-openapi through apiextensions' field errors ---------------------------------

struct ValidateCase {
  std::string name;
  std::string spec_yaml;  // the value of `spec`
  std::vector<std::string> errors;
  std::vector<std::string> unknown_fields = {};
};

void PrintTo(const ValidateCase& c, std::ostream* os) { *os << c.name; }

class SchemaValidateCaseTest : public ::testing::TestWithParam<ValidateCase> {};

TEST_P(SchemaValidateCaseTest, ReportsWhatTheApiServerWould) {
  const ValidateCase& c = GetParam();
  json object = {{"apiVersion", "ringleader.dev/v1alpha1"},
                 {"kind", "TrainingJob"},
                 {"metadata", {{"name", "x"}, {"labels", {{"a", "b"}}}}},
                 {"spec", Yaml(c.spec_yaml)}};
  ValidationResult result = Validate(object, JobSchema());
  EXPECT_EQ(Strings(result.errors), c.errors);
  EXPECT_EQ(result.unknown_fields, c.unknown_fields);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SchemaValidateCaseTest,
    ::testing::Values(
        ValidateCase{"Valid", "{replicas: 2, backend: nccl, name: abc, port: 80, hosts: [a]}", {}},
        ValidateCase{"StringForInteger",
                     "{replicas: '2'}",
                     {"spec.replicas: Invalid value: \"string\": spec.replicas in body must be of "
                      "type integer: \"string\""}},
        // kube-openapi's type validator takes a float with an integral value as an integer.
        ValidateCase{"FloatWithIntegralValueIsAnInteger", "{replicas: 2.0}", {}},
        ValidateCase{"FloatWithFractionIsNotAnInteger",
                     "{replicas: 2.5}",
                     {"spec.replicas: Invalid value: \"number\": spec.replicas in body must be of "
                      "type integer: \"number\""}},
        ValidateCase{"IntegerIsANumber", "{replicas: 1, ratio: 0.5}", {}},
        ValidateCase{"StringForBoolean",
                     "{replicas: 1, suspend: 'true'}",
                     {"spec.suspend: Invalid value: \"string\": spec.suspend in body must be of "
                      "type boolean: \"string\""}},
        // The type error does not stop the enum check (each validator runs).
        ValidateCase{"WrongTypeIsAlsoCheckedAgainstTheEnum",
                     "{replicas: 1, backend: 5}",
                     {"spec.backend: Invalid value: \"integer\": spec.backend in body must be of "
                      "type string: \"integer\"",
                      "spec.backend: Unsupported value: 5: supported values: \"auto\", \"nccl\", "
                      "\"gloo\""}},
        ValidateCase{"MissingRequired", "{backend: auto}", {"spec.replicas: Required value"}},
        ValidateCase{
            "NullRequiredCountsAsMissing", "{replicas: null}", {"spec.replicas: Required value"}},
        ValidateCase{"NullInNonNullableFieldIsPrunedNotAnError", "{replicas: 1, name: null}", {}},
        ValidateCase{"NullInNullableField", "{replicas: 1, note: null}", {}},
        ValidateCase{"NullArrayItemIsATypeError",
                     "{replicas: 1, hosts: [null]}",
                     {"spec.hosts[0]: Invalid value: \"null\": spec.hosts[0] in body must be of "
                      "type string: \"null\""}},
        ValidateCase{"Enum",
                     "{replicas: 1, backend: foo}",
                     {"spec.backend: Unsupported value: \"foo\": supported values: \"auto\", "
                      "\"nccl\", \"gloo\""}},
        ValidateCase{"Minimum",
                     "{replicas: 0}",
                     {"spec.replicas: Invalid value: 0: spec.replicas in body should be greater "
                      "than or equal to 1"}},
        ValidateCase{"Maximum",
                     "{replicas: 65}",
                     {"spec.replicas: Invalid value: 65: spec.replicas in body should be less "
                      "than or equal to 64"}},
        ValidateCase{"ExclusiveBounds",
                     "{replicas: 1, ratio: 0}",
                     {"spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"}},
        ValidateCase{"ExclusiveMaximumWithFloat",
                     "{replicas: 1, ratio: 1.0}",
                     {"spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"}},
        ValidateCase{"MultipleOf",
                     "{replicas: 1, step: 12}",
                     {"spec.step: Invalid value: 12: spec.step in body should be a multiple of 8"}},
        // The server strips formats it does not support (int32 among them): no range check.
        ValidateCase{"Int32FormatIsNotChecked",
                     "{replicas: 4294967296}",
                     {"spec.replicas: Invalid value: 4294967296: spec.replicas in body should be "
                      "less than or equal to 64"}},
        // The string validator stops at its first failure.
        ValidateCase{"MinLengthStopsTheStringChecks",
                     "{replicas: 1, name: ''}",
                     {"spec.name: Invalid value: \"\": spec.name in body should be at least 1 "
                      "chars long"}},
        ValidateCase{"MaxLengthCountsCharactersNotBytes", "{replicas: 1, name: 'abcde'}", {}},
        ValidateCase{"MaxLength",
                     "{replicas: 1, name: abcdef}",
                     {"spec.name: Too long: may not be more than 5 bytes"}},
        ValidateCase{"Pattern",
                     "{replicas: 1, name: aB}",
                     {"spec.name: Invalid value: \"aB\": spec.name in body should match "
                      "'^[a-z]+$'"}},
        ValidateCase{"MinItems",
                     "{replicas: 1, hosts: []}",
                     {"spec.hosts: Invalid value: 0: spec.hosts in body should have at least 1 "
                      "items"}},
        ValidateCase{"MaxItems",
                     "{replicas: 1, hosts: [a, b, c]}",
                     {"spec.hosts: Too many: 3: must have at most 2 items"}},
        ValidateCase{"IntOrStringTakesBoth", "{replicas: 1, port: '50%'}", {}},
        ValidateCase{"IntOrStringRejectsOthers",
                     "{replicas: 1, port: true}",
                     {"spec.port: Invalid value: \"boolean\": spec.port in body must be of type "
                      "integer,string: \"boolean\""}},
        ValidateCase{"IntOrStringRejectsFloat",
                     "{replicas: 1, port: 1.5}",
                     {"spec.port: Invalid value: \"number\": spec.port in body must be of type "
                      "integer,string: \"number\""}},
        ValidateCase{"PreserveUnknownKeepsAnythingButChecksListedProperties",
                     "{replicas: 1, template: {priority: high, spec: {anything: [1, {x: y}]}}}",
                     {"spec.template.priority: Invalid value: \"string\": "
                      "spec.template.priority in body must be of type integer: \"string\""}},
        ValidateCase{"MapValuesAreValidated",
                     "{replicas: 1, labels: {a: b, c: 3}}",
                     {"spec.labels.c: Invalid value: \"integer\": spec.labels.c in body must be "
                      "of type string: \"integer\""}},
        ValidateCase{"NestedArraysNameBothIndexes",
                     "{replicas: 1, matrix: [[1, 2], [3, x]]}",
                     {"spec.matrix[1][1]: Invalid value: \"string\": spec.matrix[1][1] in body "
                      "must be of type integer: \"string\""}},
        ValidateCase{"RequiredInsideArrayItems",
                     "{replicas: 1, containers: [{name: a}, {image: b}]}",
                     {"spec.containers[1].name: Required value"},
                     {"spec.containers[1].image"}},
        ValidateCase{"UnknownFieldsAtEveryDepth",
                     "{replicas: 1, bogus: 1, containers: [{name: a, extra: {deep: 1}}]}",
                     {},
                     {"spec.bogus", "spec.containers[0].extra"}}));

TEST(SchemaValidateTest, RootResourceFieldsAndKnownMetadataAreNeverUnknown) {
  json schema = Yaml("{type: object, properties: {spec: {type: object}}}");
  json object = Yaml(R"(
apiVersion: v1
kind: Thing
metadata: {name: x, labels: {a: b}, annotations: {c: d}, bogus: 1}
spec: {}
status: {}
)");
  ValidationResult result = Validate(object, schema);
  EXPECT_THAT(Strings(result.errors), IsEmpty());
  // ObjectMeta has no field "bogus": Strict decoding names it, as it names status.
  EXPECT_THAT(result.unknown_fields, ElementsAre("metadata.bogus", "status"));
}

TEST(SchemaValidateTest, MetadataSchemaRestrictsName) {
  json schema = Yaml(R"(
type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string, maxLength: 3}
)");
  ValidationResult result = Validate(Yaml("{metadata: {name: long-name, namespace: ns}}"), schema);
  EXPECT_THAT(Strings(result.errors),
              ElementsAre("metadata.name: Too long: may not be more than 3 bytes"));
  EXPECT_THAT(result.unknown_fields, IsEmpty());
}

TEST(SchemaValidateTest, EmbeddedResourceKeepsTypeMetaAndChecksItsObjectMeta) {
  json schema = Yaml(R"(
type: object
properties:
  child:
    type: object
    x-kubernetes-embedded-resource: true
    properties:
      spec: {type: object, properties: {size: {type: integer}}}
  plain:
    type: object
    properties:
      spec: {type: object}
)");
  json object = Yaml(R"(
child: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, extra: 1}, spec: {size: 1}, other: 1}
plain: {apiVersion: v1, kind: ConfigMap}
)");
  ValidationResult result = Validate(object, schema);
  EXPECT_THAT(Strings(result.errors), IsEmpty());
  EXPECT_THAT(result.unknown_fields,
              ElementsAre("child.other", "plain.apiVersion", "plain.kind", "child.metadata.extra"));

  // objectmeta/validation.go: apiVersion and kind are required, names are path segments.
  json bad = Yaml("{child: {metadata: {name: a/b, labels: {'-x': y}}}}");
  EXPECT_THAT(Strings(Validate(bad, schema).errors),
              ElementsAre("child.apiVersion: Required value", "child.kind: Required value",
                          "child.metadata.name: Invalid value: \"a/b\": may not contain '/'",
                          "child.metadata.labels: Invalid value: \"-x\": name part must consist of "
                          "alphanumeric characters, '-', '_' or '.', and must start and end with "
                          "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                          "'123-abc', regex used for validation is "
                          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
}

TEST(SchemaValidateTest, RootOfTheWrongTypeIsReportedAtNil) {
  ValidationResult result = Validate(json("text"), Yaml("{type: object}"));
  EXPECT_THAT(Strings(result.errors),
              ElementsAre("<nil>: Invalid value: \"string\":  in body must be of type object: "
                          "\"string\""));
  EXPECT_EQ(result.errors[0].Type(), ErrorType::kTypeInvalid);
}

TEST(SchemaValidateTest, ListTypeSetAndMapRejectDuplicates) {
  json schema = Yaml(R"(
type: object
properties:
  tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
  ports:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      properties: {name: {type: string}, port: {type: integer}}
  grid: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}
)");
  json object = Yaml(
      "{tags: [a, b, a, a], ports: [{name: x, port: 1}, {name: y}, {name: x, port: 2}], grid: "
      "[1]}");
  EXPECT_THAT(
      Strings(Validate(object, schema).errors),
      ElementsAre("grid[0]: Invalid value: \"integer\": grid[0] in body must be of type "
                  "object: \"integer\"",
                  "grid[0]: Invalid value: 1: must be an object for an array of list-type map",
                  "ports[2]: Duplicate value: map[string]interface {}{\"name\":\"x\"}",
                  "tags[2]: Duplicate value: \"a\""));
}

TEST(SchemaValidateTest, JunctorsReportAtNilAndMergeTheBestBranch) {
  json schema = Yaml(R"(
type: object
properties:
  a:
    type: integer
    anyOf: [{minimum: 10}, {maximum: 0}]
  b:
    type: string
    oneOf: [{pattern: '^x'}, {pattern: 'y$'}]
  c:
    type: string
    not: {enum: [forbidden]}
  d:
    type: integer
    allOf: [{minimum: 1}, {maximum: 3}]
)");
  EXPECT_THAT(Strings(Validate(Yaml("{a: 11, b: xa, c: ok, d: 2}"), schema).errors), IsEmpty());
  EXPECT_THAT(
      Strings(Validate(Yaml("{a: 5, b: xy, c: forbidden, d: 4}"), schema).errors),
      ElementsAre("<nil>: Invalid value: \"\": \"a\" must validate at least one schema (anyOf)",
                  "a: Invalid value: 5: a in body should be greater than or equal to 10",
                  "<nil>: Invalid value: \"\": \"b\" must validate one and only one schema "
                  "(oneOf). Found 2 valid alternatives",
                  "<nil>: Invalid value: \"\": \"c\" must not validate the schema (not)",
                  "d: Invalid value: 4: d in body should be less than or equal to 3",
                  "<nil>: Invalid value: \"\": \"d\" must validate all the schemas (allOf)"));
}

TEST(SchemaValidateTest, AdditionalPropertiesFalseForbidsOtherKeys) {
  json schema = Yaml(R"(
type: object
properties:
  m: {type: object, properties: {a: {type: string}}, additionalProperties: false}
)");
  ValidationResult result = Validate(Yaml("{m: {a: x, b: {c: 1}}}"), schema);
  EXPECT_THAT(Strings(result.errors),
              ElementsAre("m: Invalid value: \"b\": m.b in body is a forbidden property"));
  EXPECT_THAT(result.unknown_fields, ElementsAre("m.b.c"));
}

TEST(SchemaValidateTest, MaxPropertiesStopsTheObjectChecks) {
  json schema = Yaml(R"(
type: object
properties:
  m:
    type: object
    maxProperties: 1
    required: [z]
    properties: {a: {type: string}, b: {type: string}}
)");
  EXPECT_THAT(Strings(Validate(Yaml("{m: {a: 1, b: 2}}"), schema).errors),
              ElementsAre("m: Too many: 2: must have at most 1 item"));
}

TEST(SchemaValidateTest, StringFormatsTheServerKeeps) {
  json schema = Yaml(R"(
type: object
properties:
  at: {type: string, format: date-time}
  day: {type: string, format: date}
  id: {type: string, format: uuid}
  ip: {type: string, format: ipv4}
  net: {type: string, format: cidr}
  blob: {type: string, format: byte}
  odd: {type: string, format: no-such-format}
  mail: {type: string, format: email}
)");
  EXPECT_THAT(Strings(Validate(Yaml(R"(
at: '2024-05-01T12:00:00.5+02:00'
day: '2024-02-29'
id: 0F8FAD5B-D9CB-469F-A165-70867728950E
ip: 10.0.0.1
net: 'fd00::/8'
blob: aGk=
odd: anything
)"),
                               schema)
                          .errors),
              IsEmpty());
  EXPECT_THAT(Strings(Validate(Yaml(R"(
at: '2024-05-01 12:00:00'
day: '2023-02-29'
ip: 010.0.0.1
mail: a@b.c
)"),
                               schema)
                          .errors),
              ElementsAre("at: Invalid value: \"2024-05-01 12:00:00\": at in body must be of type "
                          "date-time: \"2024-05-01 12:00:00\"",
                          "day: Invalid value: \"2023-02-29\": day in body must be of type date: "
                          "\"2023-02-29\"",
                          "ip: Invalid value: \"010.0.0.1\": ip in body must be of type ipv4: "
                          "\"010.0.0.1\"",
                          "mail: Invalid value: \"a@b.c\": devcluster cannot check format "
                          "\"email\" (the API server does); refusing rather than accepting "
                          "unchecked"));
}

TEST(SchemaValidateTest, PatternsAreGoRegularExpressions) {
  // RE2 syntax: \d, \pL, (?i) work; an ECMAScript look-ahead would not compile.
  json schema = Yaml(R"(
type: object
properties:
  a: {type: string, pattern: '^\pL+\d$'}
  b: {type: string, pattern: '(?i)^abc$'}
)");
  EXPECT_THAT(Strings(Validate(Yaml("{a: 'héllo1', b: ABC}"), schema).errors), IsEmpty());
  EXPECT_THAT(Strings(Validate(Yaml("{a: 'x11'}"), schema).errors),
              ElementsAre("a: Invalid value: \"x11\": a in body should match '^\\pL+\\d$'"));
}

TEST(SchemaValidateTest, FloatBoundsAndValuesPrintLikeGo) {
  json schema = Yaml("{type: object, properties: {x: {type: number, maximum: 1000000.5}}}");
  EXPECT_THAT(Strings(Validate(Yaml("{x: 2500000.0}"), schema).errors),
              ElementsAre("x: Invalid value: 2.5e+06: x in body should be less than or equal to "
                          "1.0000005e+06"));
}

TEST(SchemaValidateTest, IntegerDataTruncatesAFractionalBound) {
  // MaximumNativeType compares an int64 with int64(max).
  json schema = Yaml("{type: object, properties: {x: {type: integer, maximum: 1.5}}}");
  EXPECT_THAT(Strings(Validate(Yaml("{x: 2}"), schema).errors),
              ElementsAre("x: Invalid value: 2: x in body should be less than or equal to 1"));
}

TEST(SchemaValidateTest, BlockingErrorsAreThoseThatStopCelRules) {
  json schema = Yaml(R"(
type: object
properties:
  a: {type: integer, minimum: 5}
  b: {type: integer}
)");
  ValidationResult minimum_only = Validate(Yaml("{a: 1}"), schema);
  ASSERT_EQ(minimum_only.errors.size(), 1u);
  EXPECT_FALSE(minimum_only.BlocksCel());
  ValidationResult wrong_type = Validate(Yaml("{b: x}"), schema);
  EXPECT_TRUE(wrong_type.BlocksCel());
  EXPECT_EQ(wrong_type.errors[0].CauseType(), "FieldValueTypeInvalid");
  EXPECT_EQ(CelRulesSkipped().ToString(),
            "<nil>: Invalid value: \"null\": some validation rules were not checked because the "
            "object was invalid; correct the existing errors to complete validation");
}

// ---- Pruning and defaulting -------------------------------------------------------------------

// What broke: `spec: [{replicas: 3}]` against an object schema. The server prunes everything in
// the list's items (they have no schema) and Strict field validation names spec[0].replicas.
TEST(SchemaPruneTest, AListWhereTheSchemaSaysObjectPrunesItsItems) {
  json schema = Yaml(R"(
type: object
properties:
  spec: {type: object, properties: {replicas: {type: integer}}}
)");
  json value = Yaml("{apiVersion: v1, kind: K, metadata: {name: n}, spec: [{replicas: 3}, 7]}");
  EXPECT_THAT(Prune(value, schema), ElementsAre("spec[0].replicas"));
  EXPECT_EQ(value["spec"], Yaml("[{}, 7]"));
  EXPECT_THAT(Strings(Validate(Yaml("{spec: [{replicas: 3}]}"), schema).errors),
              ElementsAre("spec: Invalid value: \"array\": spec in body must be of type object: "
                          "\"array\""));
}

TEST(SchemaPruneTest, RemovesUnknownFieldsNullsAndUnknownMetadata) {
  json schema = Yaml(R"(
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: integer}
      b: {type: integer, nullable: true}
      list: {type: array, items: {type: object, properties: {k: {type: string}}}}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
      open: {type: object, additionalProperties: true}
)");
  json value = Yaml(R"(
apiVersion: v1
kind: K
metadata: {name: n, anything: 1}
status: {x: 1}
spec: {a: null, b: null, c: 1, list: [{k: v, z: 1}], free: {any: {thing: null}}, open: {s: 1, o: {p: 1}}}
)");
  EXPECT_THAT(Prune(value, schema), ElementsAre("metadata.anything", "spec.c", "spec.list[0].z",
                                                "spec.open.o.p", "status"));
  EXPECT_EQ(value, Yaml(R"(
apiVersion: v1
kind: K
metadata: {name: n}
spec: {b: null, list: [{k: v}], free: {any: {thing: null}}, open: {s: 1, o: {}}}
)"));
  EXPECT_THAT(Validate(value, schema).unknown_fields, IsEmpty());
}

TEST(SchemaApplyDefaultsTest, FillsAbsentPropertiesAndKeepsPresentOnes) {
  json schema = Yaml(R"(
type: object
properties:
  a: {type: integer, default: 1}
  b: {type: string, default: x}
  c: {type: object, properties: {d: {type: integer, default: 2}}}
)");
  json value = Yaml("{b: given}");
  ApplyDefaults(value, schema);
  // c has no default itself, so it stays absent and d is not applied.
  EXPECT_EQ(value, Yaml("{a: 1, b: given}"));
}

TEST(SchemaApplyDefaultsTest, DefaultedObjectIsItselfDefaulted) {
  json schema = Yaml(R"(
type: object
properties:
  policy:
    type: object
    default: {}
    properties:
      limit: {type: integer, default: 3}
      nested:
        type: object
        default: {enabled: false}
        properties:
          enabled: {type: boolean, default: true}
          interval: {type: integer, default: 60}
)");
  json value = json::object();
  ApplyDefaults(value, schema);
  EXPECT_EQ(value, Yaml("{policy: {limit: 3, nested: {enabled: false, interval: 60}}}"));
}

TEST(SchemaApplyDefaultsTest, DefaultsArrayItemsAndMapValues) {
  json schema = Yaml(R"(
type: object
properties:
  list:
    type: array
    items:
      type: object
      properties: {port: {type: integer, default: 80}, name: {type: string}}
  map:
    type: object
    additionalProperties:
      type: object
      properties: {weight: {type: integer, default: 1}}
)");
  json value = Yaml("{list: [{name: a}, {name: b, port: 81}], map: {x: {}, y: {weight: 5}}}");
  ApplyDefaults(value, schema);
  EXPECT_EQ(value, Yaml("{list: [{name: a, port: 80}, {name: b, port: 81}], "
                        "map: {x: {weight: 1}, y: {weight: 5}}}"));
}

TEST(SchemaApplyDefaultsTest, NullInNonNullableFieldGetsTheDefault) {
  json schema = Yaml(R"(
type: object
properties:
  a: {type: integer, default: 1}
  b: {type: integer, default: 2, nullable: true}
  items: {type: array, items: {type: string, default: z}}
)");
  json value = Yaml("{a: null, b: null, items: [null, y]}");
  ApplyDefaults(value, schema);
  EXPECT_EQ(value, Yaml("{a: 1, b: null, items: [z, y]}"));
}

TEST(SchemaApplyDefaultsTest, LeavesPreservedUnknownFieldsAlone) {
  json schema = Yaml(R"(
type: object
x-kubernetes-preserve-unknown-fields: true
properties:
  known: {type: integer, default: 7}
)");
  json value = Yaml("{other: {known: null}}");
  ApplyDefaults(value, schema);
  EXPECT_EQ(value, Yaml("{known: 7, other: {known: null}}"));
}

// ---- The CRD side: ValidateSchema ---------------------------------------------------------------

TEST(SchemaCheckStructuralTest, AcceptsAStructuralSchema) {
  EXPECT_THAT(Strings(CheckStructural(JobSchema(), false)), IsEmpty());
}

// What broke: a real API server refused our CRD, devcluster had accepted it. Anything on the
// root's metadata but name/generateName restrictions is refused, a description included
// (schema/validation.go validateStructuralMetadataInvariants).
TEST(SchemaCheckStructuralTest, RootMetadataWithADescriptionIsRefused) {
  EXPECT_THAT(CrdErrors(R"(
type: object
properties:
  metadata:
    type: object
    description: Standard object metadata.
)"),
              ElementsAre(At(".properties[metadata]: Forbidden: must not specify anything other "
                             "than name and generateName, but metadata is implicitly specified")));
}

TEST(SchemaCheckStructuralTest, RootMetadataRules) {
  // name and generateName may be restricted; their own schemas are checked as any field.
  EXPECT_THAT(CrdErrors(R"(
type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string, maxLength: 20, description: ok}
      generateName: {type: string}
)"),
              IsEmpty());
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  metadata:
    minimum: 42.0
    properties:
      labels: {type: object}
)"),
      // ValidateStructural sorts its errors by their text, so ".type" comes before ":".
      ElementsAre(At(".properties[metadata].type: Invalid value: \"\": must be object"),
                  At(".properties[metadata].type: Required value: must not be empty for specified "
                     "object fields"),
                  At(".properties[metadata]: Forbidden: must not specify anything other than name "
                     "and generateName, but metadata is implicitly specified")));
  // A default on metadata is not a structural problem but is not allowed at the top level.
  EXPECT_THAT(CrdErrors("{type: object, properties: {metadata: {type: object, default: {}}}}"),
              ElementsAre(At(".properties[metadata].default: Forbidden: must not be set in "
                             "top-level metadata")));
}

TEST(SchemaCheckStructuralTest, MissingTypeIsReportedPerLevel) {
  EXPECT_THAT(
      Strings(CheckStructural(Yaml(R"(
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {minimum: 1}
      list: {type: array, items: {properties: {}}}
)"),
                              false)),
      ElementsAre("openAPIV3Schema.properties[spec].properties[list].items.type: Required value: "
                  "must not be empty for specified array items",
                  "openAPIV3Schema.properties[spec].properties[replicas].type: Required value: "
                  "must not be empty for specified object fields"));
  EXPECT_THAT(CrdErrors("{properties: {}}"),
              ElementsAre(At(".type: Required value: must not be empty at the root")));
  EXPECT_THAT(CrdErrors("{type: string}"),
              ElementsAre(At(".type: Invalid value: \"string\": must be object at the root")));
}

TEST(SchemaCheckStructuralTest, IntOrStringAndPreserveUnknownStandInForType) {
  EXPECT_THAT(CrdErrors(R"(
type: object
properties:
  port: {x-kubernetes-int-or-string: true}
  port2:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer}, {type: string}]
  port3:
    x-kubernetes-int-or-string: true
    allOf: [{anyOf: [{type: integer}, {type: string}]}, {maxLength: 3}]
  typed: {type: string, x-kubernetes-int-or-string: true}
  free: {x-kubernetes-preserve-unknown-fields: true}
)"),
              IsEmpty());
}

TEST(SchemaCheckStructuralTest, ExtensionAndEmbeddedResourceRules) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  a: {x-kubernetes-int-or-string: true, x-kubernetes-preserve-unknown-fields: true}
  e: {x-kubernetes-embedded-resource: true}
  m: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, additionalProperties: {type: string}}
)"),
      ElementsAre(At(".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: "
                     "must be false if x-kubernetes-int-or-string is true"),
                  At(".properties[e].properties: Required value: must not be empty if "
                     "x-kubernetes-embedded-resource is true without "
                     "x-kubernetes-preserve-unknown-fields"),
                  At(".properties[e].type: Required value: must be object if "
                     "x-kubernetes-embedded-resource is true"),
                  At(".properties[m].additionalProperties: Forbidden: must not be used if "
                     "x-kubernetes-embedded-resource is set")));
  // false cannot even be converted to a structural schema: only the per-node rule reports.
  EXPECT_THAT(CrdErrors(R"(
type: object
properties:
  e: {x-kubernetes-embedded-resource: true}
  f: {type: object, x-kubernetes-preserve-unknown-fields: false}
)"),
              ElementsAre(At(".properties[f].x-kubernetes-preserve-unknown-fields: Invalid value: "
                             "false: must be true or undefined")));
}

TEST(SchemaCheckStructuralTest, AdditionalPropertiesRules) {
  EXPECT_THAT(CrdErrors("{type: object, additionalProperties: false}"),
              ElementsAre(At(".additionalProperties: Forbidden: must not be used at the root")));
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  m:
    type: object
    properties: {a: {type: string}}
    additionalProperties: {type: string}
  open: {type: object, additionalProperties: true, properties: {a: {type: string}}}
  closed: {type: object, additionalProperties: false}
)"),
      ElementsAre(At(".properties[m].additionalProperties: Forbidden: additionalProperties and "
                     "properties are mutual exclusive")));
}

TEST(SchemaCheckStructuralTest, JunctorsOnlyRestrict) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  a: {type: string}
  n:
    type: object
    anyOf: [{properties: {undeclared: {}}}]
anyOf:
  - required: [a]
  - description: d
    default: {}
    nullable: true
    x-kubernetes-list-type: atomic
    properties:
      b: {minLength: 1}
      metadata: {}
not:
  properties:
    a: {type: string}
)"),
      // Completeness is only checked for the root's junctors (complete.go).
      ElementsAre(At(".anyOf[1].default: Forbidden: must be undefined to be structural"),
                  At(".anyOf[1].description: Forbidden: must be empty to be structural"),
                  At(".anyOf[1].nullable: Forbidden: must be false to be structural"),
                  At(".anyOf[1].properties[metadata]: Forbidden: must not be specified in a "
                     "nested context"),
                  At(".anyOf[1].x-kubernetes-list-type: Forbidden: must be undefined to be "
                     "structural"),
                  At(".not.properties[a].type: Forbidden: must be empty to be structural"),
                  At(".properties[b]: Required value: because it is defined in "
                     "spec.validation.openAPIV3Schema.anyOf[1].properties[b]"),
                  At(".properties[metadata]: Required value: because it is defined in "
                     "spec.validation.openAPIV3Schema.anyOf[1].properties[metadata]"),
                  // The per-node rules follow the (sorted) structural ones.
                  At(".anyOf[1].type: Required value: must be array if x-kubernetes-list-type is "
                     "specified")));
}

TEST(SchemaCheckStructuralTest, PatternMustCompileAsGo) {
  EXPECT_THAT(CrdErrors("{type: object, properties: {a: {type: string, pattern: '[a'}}}"),
              ElementsAre(At(".properties[a].pattern: Invalid value: \"[a\": must be a valid "
                             "regular expression, but isn't: error parsing regexp: missing "
                             "closing ]: `[a`")));
  // ECMAScript look-ahead is not Go syntax.
  EXPECT_THAT(CrdErrors("{type: object, properties: {a: {type: string, pattern: '(?=x)'}}}"),
              ElementsAre(HasSubstr("invalid or unsupported Perl syntax")));
}

TEST(SchemaCheckStructuralTest, DefaultsAreValidatedAsWrittenAndMustBePruned) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, minimum: 1, default: 0}
      backend: {type: string, enum: [a, b], default: c}
      policy:
        type: object
        default: {limit: x, extra: 1}
        properties:
          limit: {type: integer}
      required:
        type: object
        required: [limit]
        default: {}
        properties:
          limit: {type: integer, default: 3}
)"),
      ElementsAre(
          At(".properties[spec].properties[backend].default: Unsupported value: \"c\": "
             "supported values: \"a\", \"b\""),
          At(".properties[spec].properties[policy].default: Invalid value: "
             "map[string]interface {}{\"extra\":1, \"limit\":\"x\"}: must not have unknown "
             "fields"),
          At(".properties[spec].properties[policy].default.limit: Invalid value: \"string\": "
             "limit in body must be of type integer: \"string\""),
          At(".properties[spec].properties[replicas].default: Invalid value: 0:  in body should "
             "be greater than or equal to 1"),
          // The server does not default a default before validating it.
          At(".properties[spec].properties[required].default.limit: Required value")));
}

TEST(SchemaCheckStructuralTest, DefaultsAreNotCheckedWhileTheSchemaIsNotStructural) {
  EXPECT_THAT(
      CrdErrors("{type: object, properties: {a: {default: x}, b: {type: integer, default: y}}}"),
      ElementsAre(At(".properties[a].type: Required value: must not be empty for "
                     "specified object fields")));
}

TEST(SchemaCheckStructuralTest, DefaultsForbiddenUnderMetadataAdditionalProperties) {
  EXPECT_THAT(CrdErrors(R"(
type: object
properties:
  child:
    type: object
    x-kubernetes-embedded-resource: true
    properties:
      metadata:
        type: object
        properties:
          labels: {type: object, additionalProperties: {type: string, default: x}}
)"),
              ElementsAre(At(".properties[child].properties[metadata].properties[labels]."
                             "additionalProperties.default: Forbidden: must not be set inside "
                             "additionalProperties applying to object metadata")));
}

TEST(SchemaCheckStructuralTest, ListAndMapTypeRules) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  notArray: {type: object, x-kubernetes-list-type: set}
  badType: {type: array, x-kubernetes-list-type: bag, items: {type: string}}
  keysOnly: {type: array, x-kubernetes-list-map-keys: [a], items: {type: object, properties: {a: {type: string}}}}
  noKeys: {type: array, x-kubernetes-list-type: map, items: {type: object}}
  keys:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [a, b, missing]
    items:
      type: object
      required: [a]
      properties:
        a: {type: object}
        b: {type: string, nullable: true}
  setOfObjects: {type: array, x-kubernetes-list-type: set, items: {type: object}}
  mapType: {type: array, x-kubernetes-map-type: other, items: {type: string}}
)"),
      ElementsAre(
          At(".properties[badType].x-kubernetes-list-type: Unsupported value: \"bag\": supported "
             "values: \"atomic\", \"set\", \"map\""),
          At(".properties[keys].items.properties[a].type: Invalid value: \"object\": must be a "
             "scalar type if parent array's x-kubernetes-list-type is map"),
          At(".properties[keys].x-kubernetes-list-map-keys: Invalid value: []string{\"a\", "
             "\"b\", \"missing\"}: entries must all be names of item properties"),
          At(".properties[keys].items.properties[b].default: Required value: this property is "
             "in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
          At(".properties[keys].items.properties[b].nullable: Forbidden: this property is in "
             "x-kubernetes-list-map-keys, so it cannot be nullable"),
          At(".properties[keysOnly].x-kubernetes-list-type: Required value: must be map if "
             "x-kubernetes-list-map-keys is non-empty"),
          At(".properties[mapType].type: Invalid value: \"array\": must be object if "
             "x-kubernetes-map-type is specified"),
          At(".properties[mapType].x-kubernetes-map-type: Unsupported value: \"other\": "
             "supported values: \"atomic\", \"granular\""),
          At(".properties[noKeys].x-kubernetes-list-map-keys: Required value: must not be empty "
             "if x-kubernetes-list-type is map"),
          At(".properties[notArray].type: Invalid value: \"object\": must be array if "
             "x-kubernetes-list-type is specified"),
          At(".properties[setOfObjects].items.x-kubernetes-map-type: Invalid value: \"null\": "
             "must be atomic as item of a list with x-kubernetes-list-type=set")));
}

TEST(SchemaCheckStructuralTest, KeywordsTheServerDoesNotSupport) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  a: {type: string, $ref: '#/x'}
  b: {type: string, id: b, definitions: {x: {type: string}}, patternProperties: {x: {type: string}}}
  c: {type: array, uniqueItems: true, items: [{type: string}]}
  d: {type: 'null'}
  e: {type: float}
)"),
      ElementsAre(At(".properties[a].$ref: Forbidden: $ref is not supported"),
                  At(".properties[b].id: Forbidden: id is not supported"),
                  At(".properties[b].patternProperties: Forbidden: patternProperties is not "
                     "supported"),
                  At(".properties[b].definitions: Forbidden: definitions is not supported"),
                  At(".properties[c].items: Forbidden: items must be a schema object and not an "
                     "array"),
                  At(".properties[c].uniqueItems: Forbidden: uniqueItems cannot be set to true "
                     "since the runtime complexity becomes quadratic"),
                  At(".properties[d].type: Unsupported value: \"null\": supported values: "
                     "\"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
                  At(".properties[d].type: Forbidden: type cannot be set to null, use nullable as "
                     "an alternative"),
                  At(".properties[e].type: Unsupported value: \"float\": supported values: "
                     "\"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"")));
  // A $schema has no rule of its own: NewStructural's refusal shows when nothing else does.
  EXPECT_THAT(CrdErrors("{type: object, $schema: 'http://json-schema.org/schema#'}"),
              ElementsAre(At(": Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported")));
}

TEST(SchemaCheckStructuralTest, RootRulesWithTheStatusSubresource) {
  SchemaCheckOptions status;
  status.status_subresource = true;
  EXPECT_THAT(
      CrdErrors(
          "{type: object, description: d, required: [spec], properties: {spec: {type: object}}}",
          status),
      IsEmpty());
  EXPECT_THAT(CrdErrors("{type: object, nullable: true}", status),
              ElementsAre(HasSubstr(std::string(kPath) + ": Invalid value: "
                                                         "apiextensions.JSONSchemaProps{ID:\"\", "),
                          At(".nullable: Forbidden: nullable cannot be true at the root")));
  EXPECT_THAT(CrdErrors("{type: object, nullable: true}", status)[0],
              HasSubstr("}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum "
                        "ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems "
                        "UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
                        "XPreserveUnknownFields XValidations] fields are allowed at the root of "
                        "the schema if the status subresource is enabled"));
}

TEST(SchemaCheckStructuralTest, ValidationRuleFields) {
  EXPECT_THAT(
      CrdErrors(R"(
type: object
properties:
  spec:
    type: object
    properties: {a: {type: string}}
    x-kubernetes-validations:
      - rule: ' '
      - {rule: "self.a == 'x'", message: ' '}
      - {rule: "self.a == 'x'", reason: FieldValueTooLong, fieldPath: .b}
      - {rule: "self.a == 'x'", fieldPath: ".a"}
      - rule: "self.a ==\n'x'"
)"),
      ElementsAre(At(".properties[spec].x-kubernetes-validations[0].rule: Required value: rule is "
                     "not specified"),
                  At(".properties[spec].x-kubernetes-validations[1].message: Invalid value: \" "
                     "\": message must be non-empty if specified"),
                  At(".properties[spec].x-kubernetes-validations[2].reason: Unsupported value: "
                     "\"FieldValueTooLong\": supported values: \"FieldValueDuplicate\", "
                     "\"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
                  At(".properties[spec].x-kubernetes-validations[2].fieldPath: Invalid value: "
                     "\".b\": fieldPath must be a valid path"),
                  At(".properties[spec].x-kubernetes-validations[4].message: Required value: "
                     "message must be specified if rule contains line breaks")));
}

// The seam: rules compile only in a structural schema with valid defaults, and only where the
// node and everything below it are free of schema errors; CEL errors come last.
TEST(SchemaCheckStructuralTest, CelRulesCompileOnlyWhereTheServerCompilesThem) {
  std::vector<std::string> compiled;
  SchemaCheckOptions options;
  options.compile_cel = [&](const CelCompileRequest& request) {
    compiled.push_back(request.rules_path +
                       (request.uncorrelatable_parent.empty()
                            ? ""
                            : " oldSelf-forbidden-by " + request.uncorrelatable_parent));
    return std::vector<SchemaError>{Invalid(request.rules_path + "[0].rule", "x", "compile error")};
  };
  std::string schema = R"(
type: object
properties:
  good:
    type: object
    x-kubernetes-validations: [{rule: 'true'}]
    properties: {}
  listed:
    type: array
    items: {type: object, x-kubernetes-validations: [{rule: 'true'}]}
  bad:
    type: object
    x-kubernetes-validations: [{rule: 'true'}]
    properties:
      u: {type: array, uniqueItems: true, items: {type: string}}
)";
  EXPECT_THAT(
      CrdErrors(schema, options),
      ElementsAre(At(".properties[bad].properties[u].uniqueItems: Forbidden: uniqueItems "
                     "cannot be set to true since the runtime complexity becomes "
                     "quadratic"),
                  At(".properties[good].x-kubernetes-validations[0].rule: Invalid value: x: "
                     "compile error"),
                  At(".properties[listed].items.x-kubernetes-validations[0].rule: Invalid "
                     "value: x: compile error")));
  EXPECT_THAT(compiled, ElementsAre(At(".properties[good].x-kubernetes-validations"),
                                    At(".properties[listed].items.x-kubernetes-validations "
                                       "oldSelf-forbidden-by spec.validation.openAPIV3Schema."
                                       "properties[listed]")));
  // Not structural: nothing compiles, and there is no cost total to check.
  compiled.clear();
  int totals = 0;
  options.cel_total_cost_errors = [&](const std::string& schema_path) {
    ++totals;
    return std::vector<SchemaError>{Forbidden(schema_path, "total")};
  };
  CrdErrors("{type: object, properties: {a: {x-kubernetes-validations: [{rule: 'true'}]}}}",
            options);
  EXPECT_THAT(compiled, IsEmpty());
  EXPECT_EQ(totals, 0);
  // A default that does not validate also means no CEL context (ValidateDefaults comes first).
  CrdErrors(
      "{type: object, x-kubernetes-validations: [{rule: 'true'}], properties: {a: {type: "
      "integer, default: x}}}",
      options);
  EXPECT_THAT(compiled, IsEmpty());
  EXPECT_EQ(totals, 0);
  // Structural: the total comes after every other error, at the schema's path.
  options.suppress_per_expression_cost = true;
  options.preexisting_rules = {"true"};
  bool passed_on = false;
  options.compile_cel = [&](const CelCompileRequest& request) {
    passed_on = request.suppress_per_expression_cost && request.preexisting_rules != nullptr &&
                request.preexisting_rules->contains("true");
    return std::vector<SchemaError>{};
  };
  EXPECT_THAT(CrdErrors("{type: object, x-kubernetes-validations: [{rule: 'true'}]}", options),
              ElementsAre(At(": Forbidden: total")));
  EXPECT_EQ(totals, 1);
  EXPECT_TRUE(passed_on);
}

TEST(SchemaCheckStructuralTest, DecodingAndStrictUnknownFields) {
  json schema =
      Yaml("{type: object, requried: [a], properties: {a: {type: string, minimum: low}}}");
  EXPECT_EQ(SchemaDecodeError(schema, "spec.versions.schema.openAPIV3Schema"),
            "json: cannot unmarshal string into Go struct field "
            "JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.minimum of type "
            "float64");
  EXPECT_THAT(UnknownSchemaFields(schema, "spec.versions[0].schema.openAPIV3Schema"),
              ElementsAre("spec.versions[0].schema.openAPIV3Schema.requried"));
}

TEST(SchemaCheckStructuralTest, OldSchemaBreaksRelaxRulesOnUpdate) {
  SchemaBreaks breaks = OldSchemaBreaks(
      Yaml("{type: object, properties: {a: {type: float}, s: {type: array, x-kubernetes-list-type: "
           "set, items: {type: object}}}}"));
  EXPECT_TRUE(breaks.invalid_property_type);
  EXPECT_TRUE(breaks.non_atomic_set_items);
  EXPECT_FALSE(breaks.non_structural);
  EXPECT_TRUE(OldSchemaBreaks(Yaml("{type: object, properties: {a: {}}}")).non_structural);
}

// ---- The project lint (not a server rule) -----------------------------------------------------

TEST(SchemaDescriptionLintTest, MissingDescriptionsOnlyWhenRequired) {
  json schema = Yaml(R"(
description: A thing.
type: object
properties:
  spec:
    description: The spec.
    type: object
    properties:
      replicas: {type: integer}
      blank: {type: string, description: '  '}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)), IsEmpty());
  EXPECT_THAT(Strings(CheckStructural(schema, true)),
              ElementsAre("openAPIV3Schema.properties[spec].properties[blank].description: "
                          "Required value: must not be empty",
                          "openAPIV3Schema.properties[spec].properties[replicas].description: "
                          "Required value: must not be empty"));
  EXPECT_THAT(Strings(DescriptionLint(Yaml("{type: object}"))),
              ElementsAre("openAPIV3Schema.description: Required value: must not be empty"));
  // The root's metadata may not have one (the server refuses it); its name still needs one.
  EXPECT_THAT(Strings(DescriptionLint(Yaml(R"(
description: Root.
type: object
properties:
  metadata: {type: object, properties: {name: {type: string}}}
)"))),
              ElementsAre("openAPIV3Schema.properties[metadata].properties[name].description: "
                          "Required value: must not be empty"));
}

TEST(SchemaDescriptionLintTest, PreserveUnknownWithoutPropertiesWaivesDescriptionsBelow) {
  json schema = Yaml(R"(
description: Root.
type: object
properties:
  template:
    description: A pod template, kept as given.
    type: object
    x-kubernetes-preserve-unknown-fields: true
    additionalProperties:
      type: object
      properties:
        x: {type: string}
  partly:
    description: Kept, but one field is typed.
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      typed: {type: integer}
)");
  EXPECT_THAT(Strings(DescriptionLint(schema)),
              ElementsAre("openAPIV3Schema.properties[partly].properties[typed].description: "
                          "Required value: must not be empty"));
}

// ---- Field errors and Go formatting ----------------------------------------------------------

TEST(SchemaErrorTest, ToStringTypeAndCause) {
  SchemaError required{"spec.replicas", "Required value"};
  EXPECT_EQ(required.ToString(), "spec.replicas: Required value");
  EXPECT_EQ(required.Type(), ErrorType::kRequired);
  EXPECT_TRUE(required.BlocksCel());
  EXPECT_EQ(required, Required("spec.replicas", ""));
  EXPECT_EQ(TooLong("a", 1).message, "Too long: may not be more than 1 byte");
  EXPECT_EQ(TooMany("a", -1, 3).message, "Too many: must have at most 3 items");
  EXPECT_EQ(NotSupported("a", "\"x\"", {"y"}).CauseType(), "FieldValueNotSupported");
  EXPECT_FALSE((SchemaError{"a", "Invalid value: 1: bad"}).BlocksCel());
  EXPECT_NE(TypeInvalid("a", "1", "bad"), Invalid("a", "1", "bad"));
}

TEST(GoFormatTest, ValuesPrintAsFieldErrorsPrintThem) {
  EXPECT_EQ(GoQuote("a\"b\\c\n\x01\u00a0é"), "\"a\\\"b\\\\c\\n\\x01\\u00a0é\"");
  EXPECT_EQ(GoValue(json::parse(R"({"b":[1,"x",null,1.5],"a":{}})")),
            "map[string]interface {}{\"a\":map[string]interface {}{}, \"b\":[]interface "
            "{}{1, \"x\", interface {}(nil), 1.5}}");
  EXPECT_EQ(GoValue(json()), "\"null\"");
  EXPECT_EQ(GoFloat(1e-5), "1e-05");
  EXPECT_EQ(GoFloat(123456.0), "123456");
  EXPECT_EQ(GoJson(json::parse(R"({"a":1e21,"b":"<"})")), "{\"a\":1e+21,\"b\":\"\\u003c\"}");
  EXPECT_EQ(GoStringSlice(std::nullopt), "[]string(nil)");
}

}  // namespace
}  // namespace ringleader::schema
