// Tests for the structural-schema checker, defaulting, pruning and validation, with small
// inline schemas and the API server's error wording.
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
using ::testing::IsEmpty;

json Yaml(const std::string& text) { return yaml::ParseYaml(text); }

std::vector<std::string> Strings(const std::vector<SchemaError>& errors) {
  std::vector<std::string> out;
  for (const SchemaError& error : errors) {
    out.push_back(error.ToString());
  }
  return out;
}

// A TrainingJob-like schema most cases share.
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
        ValidateCase{"FloatWithIntegralValueIsNotAnInteger",
                     "{replicas: 2.0}",
                     {"spec.replicas: Invalid value: \"number\": spec.replicas in body must be of "
                      "type integer: \"number\""}},
        ValidateCase{"IntegerIsANumber", "{replicas: 1, ratio: 0.5}", {}},
        ValidateCase{"StringForBoolean",
                     "{replicas: 1, suspend: 'true'}",
                     {"spec.suspend: Invalid value: \"string\": spec.suspend in body must be of "
                      "type boolean: \"string\""}},
        ValidateCase{"ObjectForString",
                     "{replicas: 1, name: {a: 1}}",
                     {"spec.name: Invalid value: \"object\": spec.name in body must be of type "
                      "string: \"object\""}},
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
        ValidateCase{"Int32FormatRange",
                     "{replicas: 4294967296}",
                     {"spec.replicas: Invalid value: 4294967296: spec.replicas in body must be of "
                      "type int32",
                      "spec.replicas: Invalid value: 4294967296: spec.replicas in body should be "
                      "less than or equal to 64"}},
        ValidateCase{"MinLength",
                     "{replicas: 1, name: ''}",
                     {"spec.name: Invalid value: \"\": spec.name in body should be at least 1 "
                      "chars long",
                      "spec.name: Invalid value: \"\": spec.name in body should match "
                      "'^[a-z]+$'"}},
        ValidateCase{"MaxLengthCountsCharactersNotBytes", "{replicas: 1, name: 'abcde'}", {}},
        ValidateCase{"MaxLength",
                     "{replicas: 1, name: abcdef}",
                     {"spec.name: Too long: may not be longer than 5"}},
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

TEST(SchemaValidateTest, RootResourceFieldsAndMetadataAreNeverUnknown) {
  json schema = Yaml("{type: object, properties: {spec: {type: object}}}");
  json object = Yaml(R"(
apiVersion: v1
kind: Thing
metadata: {name: x, labels: {a: b}, annotations: {c: d}}
spec: {}
status: {}
)");
  ValidationResult result = Validate(object, schema);
  EXPECT_THAT(Strings(result.errors), IsEmpty());
  EXPECT_THAT(result.unknown_fields, ElementsAre("status"));
}

TEST(SchemaValidateTest, MetadataSchemaRestrictsNameOnly) {
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
              ElementsAre("metadata.name: Too long: may not be longer than 3"));
  EXPECT_THAT(result.unknown_fields, IsEmpty());
}

TEST(SchemaValidateTest, EmbeddedResourceAllowsApiVersionKindAndMetadata) {
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
child: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, spec: {size: 1}, other: 1}
plain: {apiVersion: v1, kind: ConfigMap}
)");
  ValidationResult result = Validate(object, schema);
  EXPECT_THAT(Strings(result.errors), IsEmpty());
  EXPECT_THAT(result.unknown_fields, ElementsAre("child.other", "plain.apiVersion", "plain.kind"));
}

TEST(SchemaValidateTest, RootOfTheWrongTypeIsAnError) {
  ValidationResult result = Validate(json("text"), Yaml("{type: object}"));
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].path, "");
  EXPECT_EQ(result.errors[0].message,
            "Invalid value: \"string\": in body must be of type object: \"string\"");
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
)");
  json object =
      Yaml("{tags: [a, b, a], ports: [{name: x, port: 1}, {name: y}, {name: x, port: 2}]}");
  EXPECT_THAT(Strings(Validate(object, schema).errors),
              ElementsAre("ports[2]: Duplicate value: {\"name\":\"x\"}",
                          "tags[2]: Duplicate value: \"a\""));
}

TEST(SchemaValidateTest, JunctorsRestrictValues) {
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
      ElementsAre("a: Invalid value: 5: a in body must validate at least one schema (anyOf)",
                  "b: Invalid value: \"xy\": b in body must validate one and only one "
                  "schema (oneOf)",
                  "c: Invalid value: \"forbidden\": c in body must not validate the schema "
                  "(not)",
                  "d: Invalid value: 4: d in body should be less than or equal to 3"));
}

TEST(SchemaValidateTest, FloatBoundsAndValuesPrintLikeGo) {
  json schema = Yaml("{type: object, properties: {x: {type: number, maximum: 1000000.5}}}");
  EXPECT_THAT(Strings(Validate(Yaml("{x: 2500000.0}"), schema).errors),
              ElementsAre("x: Invalid value: 2.5e+06: x in body should be less than or equal to "
                          "1.0000005e+06"));
}

TEST(SchemaValidateTest, InvalidPatternInTheSchemaIsReportedNotThrown) {
  json schema = Yaml("{type: object, properties: {x: {type: string, pattern: '(['}}}");
  ValidationResult result = Validate(Yaml("{x: a}"), schema);
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].path, "x");
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

TEST(SchemaPruneTest, RemovesUnknownFieldsAndNonNullableNulls) {
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
)");
  json value = Yaml(R"(
apiVersion: v1
kind: K
metadata: {name: n, anything: 1}
status: {x: 1}
spec: {a: null, b: null, c: 1, list: [{k: v, z: 1}], free: {any: {thing: null}}}
)");
  Prune(value, schema);
  EXPECT_EQ(value, Yaml(R"(
apiVersion: v1
kind: K
metadata: {name: n, anything: 1}
spec: {b: null, list: [{k: v}], free: {any: {thing: null}}}
)"));
  EXPECT_THAT(Validate(value, schema).unknown_fields, IsEmpty());
}

// --- CheckStructural ----------------------------------------------------------------------------

TEST(SchemaCheckStructuralTest, AcceptsAStructuralSchema) {
  EXPECT_THAT(Strings(CheckStructural(JobSchema(), false)), IsEmpty());
}

TEST(SchemaCheckStructuralTest, MissingTypeIsReportedWithItsSchemaPath) {
  json schema = Yaml(R"(
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {minimum: 1}
      list: {type: array, items: {properties: {}}}
)");
  EXPECT_THAT(
      Strings(CheckStructural(schema, false)),
      ElementsAre("openAPIV3Schema.properties[spec].properties[list].items.type: Required value: "
                  "must not be empty for specified array items",
                  "openAPIV3Schema.properties[spec].properties[replicas].type: Required value: "
                  "must not be empty for specified object fields"));
}

TEST(SchemaCheckStructuralTest, RootNeedsTypeObject) {
  EXPECT_THAT(Strings(CheckStructural(Yaml("{properties: {}}"), false)),
              ElementsAre("openAPIV3Schema.type: Required value: must not be empty at the root"));
  EXPECT_THAT(Strings(CheckStructural(Yaml("{type: string}"), false)),
              ElementsAre("openAPIV3Schema.type: Invalid value: \"string\": must be object at "
                          "the root"));
}

TEST(SchemaCheckStructuralTest, IntOrStringAndPreserveUnknownStandInForType) {
  json schema = Yaml(R"(
type: object
properties:
  port: {x-kubernetes-int-or-string: true}
  port2:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer}, {type: string}]
  free: {x-kubernetes-preserve-unknown-fields: true}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)), IsEmpty());
}

TEST(SchemaCheckStructuralTest, TypeUnderIntOrStringIsAnError) {
  json schema =
      Yaml("{type: object, properties: {p: {type: string, x-kubernetes-int-or-string: true}}}");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.properties[p].type: Forbidden: must be empty when "
                          "x-kubernetes-int-or-string is true"));
}

TEST(SchemaCheckStructuralTest, PropertiesAndAdditionalPropertiesAreExclusive) {
  json schema = Yaml(R"(
type: object
properties:
  m:
    type: object
    properties: {a: {type: string}}
    additionalProperties: {type: string}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.properties[m].additionalProperties: Forbidden: "
                          "additionalProperties and properties are mutual exclusive"));
}

TEST(SchemaCheckStructuralTest, ArrayNeedsItems) {
  EXPECT_THAT(
      Strings(CheckStructural(Yaml("{type: object, properties: {l: {type: array}}}"), false)),
      ElementsAre("openAPIV3Schema.properties[l].items: Required value: must be specified"));
}

TEST(SchemaCheckStructuralTest, MissingDescriptionsOnlyWhenRequired) {
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
}

TEST(SchemaCheckStructuralTest, RootNeedsADescriptionWhenRequired) {
  EXPECT_THAT(Strings(CheckStructural(Yaml("{type: object}"), true)),
              ElementsAre("openAPIV3Schema.description: Required value: must not be empty"));
}

TEST(SchemaCheckStructuralTest, PreserveUnknownWithoutPropertiesWaivesDescriptionsBelow) {
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
  EXPECT_THAT(Strings(CheckStructural(schema, true)),
              ElementsAre("openAPIV3Schema.properties[partly].properties[typed].description: "
                          "Required value: must not be empty"));
}

TEST(SchemaCheckStructuralTest, DefaultMustValidateAgainstItsSchema) {
  json schema = Yaml(R"(
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
)");
  EXPECT_THAT(
      Strings(CheckStructural(schema, false)),
      ElementsAre(
          "openAPIV3Schema.properties[spec].properties[backend].default: Unsupported value: "
          "\"c\": supported values: \"a\", \"b\"",
          "openAPIV3Schema.properties[spec].properties[policy].default.limit: Invalid value: "
          "\"string\": spec.policy.limit in body must be of type integer: \"string\"",
          "openAPIV3Schema.properties[spec].properties[policy].default.extra: Forbidden: must "
          "not have unknown fields (they would be pruned)",
          "openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 0: "
          "spec.replicas in body should be greater than or equal to 1"));
}

TEST(SchemaCheckStructuralTest, DefaultIsDefaultedBeforeItIsValidated) {
  json schema = Yaml(R"(
type: object
properties:
  policy:
    type: object
    required: [limit]
    default: {}
    properties:
      limit: {type: integer, default: 3}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)), IsEmpty());
}

TEST(SchemaCheckStructuralTest, UnknownAndUnsupportedKeywordsAreErrors) {
  json schema = Yaml(R"(
type: object
requried: [a]
properties:
  a: {type: string, $ref: '#/x', minimum: low}
)");
  EXPECT_THAT(
      Strings(CheckStructural(schema, false)),
      ElementsAre("openAPIV3Schema.requried: unknown field \"requried\"",
                  "openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported",
                  "openAPIV3Schema.properties[a].minimum: Invalid value: \"low\": must be a "
                  "number"));
}

TEST(SchemaCheckStructuralTest, RequiredNameOutsideThePropertiesIsAnError) {
  json schema = Yaml("{type: object, required: [a, kind], properties: {b: {type: string}}}");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.required[0]: Invalid value: \"a\": is not in "
                          "properties, so it would always be pruned"));
}

TEST(SchemaCheckStructuralTest, JunctorsOnlyRestrictFieldsSpecifiedOutside) {
  json schema = Yaml(R"(
type: object
properties:
  a: {type: string}
anyOf:
  - required: [a]
  - type: object
    properties:
      b: {minLength: 1}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.anyOf[1].type: Forbidden: must not be set inside "
                          "allOf, anyOf, oneOf or not",
                          "openAPIV3Schema.anyOf[1].properties[b]: Required value: must be "
                          "specified outside of allOf, anyOf, oneOf and not too"));
}

TEST(SchemaCheckStructuralTest, MetadataMayOnlyRestrictNameAndGenerateName) {
  json schema = Yaml(R"(
type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string, maxLength: 20}
      labels: {type: object}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.properties[metadata].properties[labels]: Forbidden: "
                          "must not be specified, metadata only allows restrictions on name and "
                          "generateName"));
}

TEST(SchemaCheckStructuralTest, FalseAdditionalPropertiesAndTrueUniqueItemsAreForbidden) {
  json schema = Yaml(R"(
type: object
properties:
  m: {type: object, additionalProperties: false}
  l: {type: array, uniqueItems: true, items: {type: string}}
)");
  EXPECT_THAT(Strings(CheckStructural(schema, false)),
              ElementsAre("openAPIV3Schema.properties[l].uniqueItems: Forbidden: uniqueItems "
                          "cannot be set to true since the runtime complexity becomes quadratic",
                          "openAPIV3Schema.properties[m].additionalProperties: Forbidden: "
                          "additionalProperties cannot be set to false"));
}

TEST(SchemaErrorTest, ToStringJoinsPathAndMessage) {
  EXPECT_EQ((SchemaError{"spec.replicas", "Required value"}).ToString(),
            "spec.replicas: Required value");
}

}  // namespace
}  // namespace ringleader::schema
