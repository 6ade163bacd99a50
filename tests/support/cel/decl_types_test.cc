// Kubernetes' declared types for structural schemas: which fields CEL sees, under which escaped
// names, as which types, and with which size bounds for the cost estimator.
#include "tests/support/cel/decl_types.h"

#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;

json Yaml(const std::string& text) { return yaml::ParseYaml(text); }

TEST(DeclTypesTest, ObjectPropertiesBecomeFieldsWithTheirTypes) {
  json schema = Yaml(R"yaml(
type: object
required: [a]
properties:
  a: {type: integer}
  b: {type: number}
  c: {type: boolean}
  d: {type: string}
  e: {type: array, items: {type: string}}
  f: {type: object, additionalProperties: {type: integer}}
  g: {x-kubernetes-int-or-string: true}
  h: {type: string, format: date-time}
  i: {type: string, format: duration}
  j: {type: string, format: byte}
  k: {type: string, format: date}
)yaml");
  TypePtr t = SchemaDeclType(schema, false, "selfType7");
  ASSERT_TRUE(t);
  EXPECT_EQ(TypeName(*t), "selfType7");
  std::map<std::string, std::string> fields;
  for (const auto& [name, field] : t->fields) {
    fields[name] = TypeName(*field.type);
  }
  EXPECT_EQ(fields, (std::map<std::string, std::string>{{"a", "int"},
                                                        {"b", "double"},
                                                        {"c", "bool"},
                                                        {"d", "string"},
                                                        {"e", "list(string)"},
                                                        {"f", "map(string, int)"},
                                                        {"g", "dyn"},
                                                        {"h", "google.protobuf.Timestamp"},
                                                        {"i", "google.protobuf.Duration"},
                                                        {"j", "bytes"},
                                                        {"k", "google.protobuf.Timestamp"}}));
  EXPECT_TRUE(t->fields.at("a").required);
  EXPECT_FALSE(t->fields.at("b").required);
}

// Guards the refusal of our CRD's template rule: preserve-unknown-fields keeps the data, but a
// rule only sees declared properties.
TEST(DeclTypesTest, PreserveUnknownFieldsObjectsWithoutPropertiesHaveNoFields) {
  TypePtr t = SchemaDeclType(Yaml("{type: object, x-kubernetes-preserve-unknown-fields: true}"),
                             false, "selfType1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, TypeKind::kObject);
  EXPECT_TRUE(t->fields.empty());
}

TEST(DeclTypesTest, ResourceRootsExposeApiVersionKindAndNameOnly) {
  json schema = Yaml(R"yaml(
type: object
properties:
  metadata: {type: object}
  spec: {type: object, properties: {x: {type: integer}}}
)yaml");
  TypePtr root = SchemaDeclType(schema, true, "selfType2");
  ASSERT_TRUE(root);
  std::vector<std::string> names;
  for (const auto& [name, field] : root->fields) {
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"apiVersion", "kind", "metadata", "spec"}));
  std::vector<std::string> meta;
  for (const auto& [name, field] : root->fields.at("metadata").type->fields) {
    meta.push_back(name);
  }
  EXPECT_EQ(meta, (std::vector<std::string>{"generateName", "name"}));
  // Not a resource root: metadata stays as declared (no fields).
  EXPECT_TRUE(
      SchemaDeclType(schema, false, "selfType3")->fields.at("metadata").type->fields.empty());
}

TEST(DeclTypesTest, EmbeddedResourcesGetTypeAndObjectMetaToo) {
  json schema = Yaml(R"yaml(
type: object
properties:
  obj:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
)yaml");
  TypePtr t = SchemaDeclType(schema, false, "selfType4");
  const Type& obj = *t->fields.at("obj").type;
  EXPECT_EQ(obj.fields.count("kind"), 1u);
  EXPECT_EQ(obj.fields.count("apiVersion"), 1u);
  EXPECT_EQ(obj.fields.count("metadata"), 1u);
}

TEST(DeclTypesTest, PropertyNamesAreEscapedLikeKubernetes) {
  EXPECT_EQ(EscapePropertyName("plain"), "plain");
  EXPECT_EQ(EscapePropertyName("a.b"), "a__dot__b");
  EXPECT_EQ(EscapePropertyName("a-b"), "a__dash__b");
  EXPECT_EQ(EscapePropertyName("a/b"), "a__slash__b");
  EXPECT_EQ(EscapePropertyName("a__b"), "a__underscores__b");
  EXPECT_EQ(EscapePropertyName("a_b"), "a_b");
  EXPECT_EQ(EscapePropertyName("namespace"), "__namespace__");
  EXPECT_EQ(EscapePropertyName("if"), "__if__");
  EXPECT_EQ(EscapePropertyName("true"), "__true__");
  EXPECT_EQ(EscapePropertyName("1a"), std::nullopt);
  EXPECT_EQ(EscapePropertyName("a b"), std::nullopt);
  EXPECT_EQ(EscapePropertyName(""), std::nullopt);
}

TEST(DeclTypesTest, UnexposedSchemasGiveNoType) {
  EXPECT_FALSE(SchemaDeclType(Yaml("{x-kubernetes-preserve-unknown-fields: true}"), false, "t"));
  EXPECT_FALSE(SchemaDeclType(Yaml("{type: array}"), false, "t"));
  // A property whose schema is not exposed is left out of its object.
  TypePtr t = SchemaDeclType(
      Yaml("{type: object, properties: {x: {x-kubernetes-preserve-unknown-fields: true}}}"), false,
      "t");
  EXPECT_TRUE(t->fields.empty());
}

struct SizeCase {
  std::string schema;
  int64_t max_elements;
};
TEST(DeclTypeSizeTestTable, Sizes) {
  for (const SizeCase& c : std::vector<SizeCase>{
           SizeCase{"{type: string, maxLength: 10}", 40},    // 4 bytes per character
           SizeCase{"{type: string}", 3 * 1024 * 1024 - 2},  // the request size, less ""
           SizeCase{"{type: string, enum: [ab, abcd]}", 4},  // the longest value
           SizeCase{"{type: string, format: date-time}", 32},
           SizeCase{"{type: string, format: duration}", 32},
           SizeCase{"{type: string, format: date}", 12},
           SizeCase{"{type: string, format: byte, maxLength: 8}", 8},
           SizeCase{"{x-kubernetes-int-or-string: true}", 3 * 1024 * 1024 - 2},
           SizeCase{"{x-kubernetes-int-or-string: true, maxLength: 5}", 20},
           SizeCase{"{type: array, maxItems: 7, items: {type: integer}}", 7},
           // (3 MiB - 2) / (min item size 1 + 1 comma)
           SizeCase{"{type: array, items: {type: integer}}", (3 * 1024 * 1024 - 2) / 2},
           // (3 MiB - 2) / (min value "" 2 + key, quotes, colon, comma 6)
           SizeCase{"{type: object, additionalProperties: {type: string}}",
                    (3 * 1024 * 1024 - 2) / 8},
           SizeCase{"{type: object, maxProperties: 3, additionalProperties: {type: string}}", 3}}) {
    SCOPED_TRACE(c.schema);
    TypePtr t = SchemaDeclType(Yaml(c.schema), false, "t");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->max_elements, c.max_elements);
  }
}

TEST(DeclTypesTest, MinimumSerializedSizeCountsRequiredFieldsWithoutDefaults) {
  json schema = Yaml(R"yaml(
type: object
required: [name, count, flag]
properties:
  name: {type: string}
  count: {type: integer, default: 1}
  flag: {type: boolean}
)yaml");
  // {} plus "name":"" (4 + 2 + 4) plus "flag":true (4 + 4 + 4); count has a default.
  EXPECT_EQ(SchemaDeclType(schema, false, "t")->min_serialized_size, 2 + (4 + 2 + 4) + (4 + 4 + 4));
}

}  // namespace
}  // namespace ringleader::cel
