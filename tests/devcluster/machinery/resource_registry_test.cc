// Tests for the resource registry: built-ins, CRDs (defaulting, the server's validation with its
// paths and wording, printer-column JSONPath), aggregated discovery, the OpenAPI v3 index and
// documents kubectl needs, and built-in printer columns.
#include "tests/devcluster/machinery/resource_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/machinery/crd_validation.h"
#include "tests/devcluster/machinery/jsonpath.h"
#include "tests/devcluster/machinery/status.h"
#include "tests/devcluster/machinery/table.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Crd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
      "group": "example.com", "scope": "Namespaced",
      "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wg"]},
      "versions": [
        {"name": "v1beta1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
           "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}},
         "additionalPrinterColumns": [
           {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}]},
        {"name": "v0", "served": false, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

ApiError CrdError(const json& crd) {
  try {
    ResourceRegistry::FromCrd(crd);
  } catch (const ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted " << crd.dump();
  return ApiError(0, "", "");
}

TEST(ResourceRegistryTest, BuiltinsAreServed) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  struct Expect {
    std::string group, plural, kind;
    bool namespaced;
    bool has_status;
    std::vector<std::string> short_names;
  };
  for (const Expect& e : std::vector<Expect>{
           {"", "namespaces", "Namespace", false, true, {"ns"}},
           {"", "pods", "Pod", true, true, {"po"}},
           {"", "services", "Service", true, true, {"svc"}},
           {"", "secrets", "Secret", true, false, {}},
           {"", "configmaps", "ConfigMap", true, false, {"cm"}},
           {"", "resourcequotas", "ResourceQuota", true, true, {"quota"}},
           {"", "events", "Event", true, false, {"ev"}},
           {"", "serviceaccounts", "ServiceAccount", true, false, {"sa"}},
           {"", "nodes", "Node", false, true, {"no"}},
           {"apps", "deployments", "Deployment", true, true, {"deploy"}},
           {"coordination.k8s.io", "leases", "Lease", true, false, {}},
           {"rbac.authorization.k8s.io", "roles", "Role", true, false, {}},
           {"rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, false, {}},
           {"rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, false, {}},
           {"rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false,
            false, {}},
           {"apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition",
            false, true, {"crd", "crds"}}}) {
    const ResourceInfo* info = registry.Find(e.group, "v1", e.plural);
    ASSERT_NE(info, nullptr) << e.plural;
    EXPECT_EQ(info->kind, e.kind);
    EXPECT_EQ(info->list_kind, e.kind + "List");
    EXPECT_EQ(info->namespaced, e.namespaced) << e.plural;
    EXPECT_EQ(info->has_status, e.has_status) << e.plural;
    EXPECT_EQ(info->short_names, e.short_names) << e.plural;
    EXPECT_FALSE(info->is_custom);
    EXPECT_EQ(registry.FindKind(e.group, "v1", e.kind), info);
    for (const schema::SchemaError& error : schema::CheckStructural(info->schema, false)) {
      ADD_FAILURE() << e.plural << ": " << error.ToString();
    }
  }
  EXPECT_EQ(registry.All().size(), 16u);
  EXPECT_EQ(registry.Find("", "v1", "widgets"), nullptr);
  EXPECT_EQ(registry.Find("apps", "v2", "deployments"), nullptr);
}

TEST(ResourceInfoTest, NamesItsGroupVersionAndResource) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo* pods = registry.Find("", "v1", "pods");
  const ResourceInfo* deployments = registry.Find("apps", "v1", "deployments");
  EXPECT_EQ(pods->GroupVersion(), "v1");
  EXPECT_EQ(pods->GroupResource(), "pods");
  EXPECT_EQ(pods->QualifiedKind(), "Pod");
  EXPECT_EQ(deployments->GroupVersion(), "apps/v1");
  EXPECT_EQ(deployments->GroupResource(), "deployments.apps");
  EXPECT_EQ(deployments->QualifiedKind(), "Deployment.apps");
}

TEST(ResourceRegistryTest, AddReplacesAndRemoveDropsEveryVersion) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  for (ResourceInfo& info : ResourceRegistry::FromCrd(Crd())) {
    registry.Add(std::move(info));
  }
  EXPECT_NE(registry.Find("example.com", "v1", "widgets"), nullptr);
  EXPECT_NE(registry.Find("example.com", "v1beta1", "widgets"), nullptr);
  size_t count = registry.All().size();
  ResourceInfo replacement = *registry.Find("example.com", "v1", "widgets");
  replacement.short_names = {"w"};
  registry.Add(replacement);
  EXPECT_EQ(registry.All().size(), count);
  EXPECT_THAT(registry.Find("example.com", "v1", "widgets")->short_names, ElementsAre("w"));
  registry.Remove("example.com", "widgets");
  EXPECT_EQ(registry.Find("example.com", "v1", "widgets"), nullptr);
  EXPECT_EQ(registry.Find("example.com", "v1beta1", "widgets"), nullptr);
  EXPECT_EQ(registry.All().size(), count - 2);
}

TEST(FromCrdTest, GivesOneInfoPerServedVersionPreferredFirst) {
  std::vector<ResourceInfo> infos = ResourceRegistry::FromCrd(Crd());
  ASSERT_EQ(infos.size(), 2u);
  const ResourceInfo& v1 = infos[0];
  EXPECT_EQ(v1.version, "v1");
  EXPECT_EQ(infos[1].version, "v1beta1");
  EXPECT_EQ(v1.group, "example.com");
  EXPECT_EQ(v1.kind, "Widget");
  EXPECT_EQ(v1.list_kind, "WidgetList");
  EXPECT_EQ(v1.singular, "widget");
  EXPECT_THAT(v1.short_names, ElementsAre("wg"));
  EXPECT_TRUE(v1.namespaced);
  EXPECT_TRUE(v1.has_status);
  EXPECT_FALSE(infos[1].has_status);
  EXPECT_TRUE(v1.is_custom);
  EXPECT_EQ(v1.schema["properties"]["spec"]["properties"]["size"]["type"], "integer");
  ASSERT_EQ(v1.columns.size(), 1u);
  EXPECT_EQ(v1.columns[0].name, "Size");
  EXPECT_EQ(v1.columns[0].json_path, ".spec.size");
  EXPECT_EQ(v1.columns[0].priority, 1);
  // Without printer columns a CRD version gets Age.
  ASSERT_EQ(infos[1].columns.size(), 1u);
  EXPECT_EQ(infos[1].columns[0].name, "Age");
  EXPECT_EQ(infos[1].columns[0].type, "date");
}

TEST(FromCrdTest, ReadsTheProjectsTrainingJobCrd) {
  std::ifstream file("crds/ringleader.dev_trainingjobs.yaml");
  ASSERT_TRUE(file.good()) << "run from the source root";
  std::stringstream text;
  text << file.rdbuf();
  std::vector<ResourceInfo> infos = ResourceRegistry::FromCrd(yaml::ParseYaml(text.str()));
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].GroupResource(), "trainingjobs.ringleader.dev");
  EXPECT_THAT(infos[0].short_names, ElementsAre("tj"));
  EXPECT_TRUE(infos[0].has_status);
  EXPECT_EQ(infos[0].columns[0].name, "State");
}

struct CrdErrorCase {
  std::string label;
  std::string pointer;
  json value;  // null removes the field
  std::string message;
};

class FromCrdErrorTest : public ::testing::TestWithParam<CrdErrorCase> {};

TEST_P(FromCrdErrorTest, IsInvalidInTheServersWords) {
  json crd = Crd();
  json::json_pointer pointer(GetParam().pointer);
  if (GetParam().value.is_null()) {
    crd[pointer.parent_pointer()].erase(pointer.back());
  } else {
    crd[pointer] = GetParam().value;
  }
  ApiError error = CrdError(crd);
  EXPECT_EQ(error.code, 422);
  EXPECT_THAT(error.message,
              ::testing::StartsWith("CustomResourceDefinition.apiextensions.k8s.io \""));
  EXPECT_THAT(error.message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FromCrdErrorTest,
    ::testing::Values(
        CrdErrorCase{"NameMismatch", "/metadata/name", "widget.example.com",
                     "metadata.name: Invalid value: \"widget.example.com\": must be "
                     "spec.names.plural+\".\"+spec.group"},
        CrdErrorCase{"GroupWithoutDot", "/spec/group", "example",
                     "spec.group: Invalid value: \"example\": should be a domain with at least "
                     "one dot"},
        CrdErrorCase{"NoKind", "/spec/names/kind", nullptr, "spec.names.kind: Required value"},
        CrdErrorCase{"BadScope", "/spec/scope", "Global",
                     "spec.scope: Unsupported value: \"Global\": supported values: "
                     "\"Cluster\", \"Namespaced\""},
        CrdErrorCase{"TwoStorageVersions", "/spec/versions/0/storage", true,
                     "must have exactly one version marked as storage version"},
        CrdErrorCase{"NoSchema", "/spec/versions/1/schema", nullptr,
                     "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are "
                     "required"},
        CrdErrorCase{"NotStructural",
                     "/spec/versions/1/schema/openAPIV3Schema/properties/spec/properties/size",
                     json::object(),
                     "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[size]."
                     "type: Required value"},
        CrdErrorCase{"BadColumnType", "/spec/versions/1/additionalPrinterColumns/0/type", "float",
                     "spec.versions[1].additionalPrinterColumns[0].type: Invalid value: "
                     "\"float\": must be one of boolean,date,integer,number,string"},
        // The internal type's field name, which is what the server reports.
        CrdErrorCase{"ColumnWithoutPath", "/spec/versions/1/additionalPrinterColumns/0/jsonPath",
                     nullptr,
                     "spec.versions[1].additionalPrinterColumns[0].JSONPath: Required value"},
        CrdErrorCase{"ColumnPathNotStartingWithADot",
                     "/spec/versions/1/additionalPrinterColumns/0/jsonPath", "spec.size",
                     "spec.versions[1].additionalPrinterColumns[0].JSONPath: Invalid value: "
                     "\"spec.size\": must be a simple json path starting with ."},
        CrdErrorCase{"ColumnFormat", "/spec/versions/1/additionalPrinterColumns/0/format", "hex",
                     "spec.versions[1].additionalPrinterColumns[0].format: Invalid value: \"hex\": "
                     "must be one of byte,date,date-time,double,float,int32,int64,password"},
        CrdErrorCase{"PluralNotADns1035Label", "/spec/names/plural", "Widgets",
                     "spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label must consist "
                     "of lower case alphanumeric characters or '-', start with an alphabetic "
                     "character, and end with an alphanumeric character (e.g. 'my-name',  or "
                     "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"},
        CrdErrorCase{"KindIsListKind", "/spec/names/listKind", "Widget",
                     "spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be "
                     "the same"},
        CrdErrorCase{"ShortNameNotALabel", "/spec/names/shortNames/0", "w_g",
                     "spec.names.shortNames[0]: Invalid value: \"w_g\": a DNS-1035 label"},
        CrdErrorCase{"VersionNameNotALabel", "/spec/versions/0/name", "V1beta1",
                     "spec.versions[0].name: Invalid value: \"V1beta1\": a DNS-1035 label"},
        CrdErrorCase{"FirstVersionIsAlsoSpecVersion", "/spec/versions/0/name", "1beta",
                     "spec.version: Invalid value: \"1beta\": a DNS-1035 label"},
        CrdErrorCase{"DuplicateVersions", "/spec/versions/0/name", "v1",
                     "spec.versions: Invalid value: "
                     "[]apiextensions.CustomResourceDefinitionVersion{apiextensions."
                     "CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:false, "
                     "Deprecated:false, DeprecationWarning:(*string)(nil), "
                     "Schema:(*apiextensions.CustomResourceValidation)(0xc000000000)"},
        CrdErrorCase{"ScaleReplicasPathNotUnderSpec", "/spec/versions/1/subresources/scale",
                     json{{"specReplicasPath", ".status.size"}, {"statusReplicasPath", "status"}},
                     "[spec.versions[1].subresources.scale.specReplicasPath: Invalid value: "
                     "\".status.size\": should be a json path under .spec, "
                     "spec.versions[1].subresources.scale.statusReplicasPath: Invalid value: "
                     "\"status\": must be a simple json path starting with .]"},
        CrdErrorCase{
            "WebhookConversionNeedsAClientConfig", "/spec/conversion",
            json{{"strategy", "Webhook"}, {"webhook", {{"conversionReviewVersions", {"v2"}}}}},
            "spec.conversion.webhookClientConfig: Required value: required when strategy "
            "is set to Webhook, spec.conversion.conversionReviewVersions: Invalid value: "
            "[]string{\"v2\"}: must include at least one of v1, v1beta1"},
        CrdErrorCase{
            "NoneConversionWithAWebhook", "/spec/conversion",
            json{{"strategy", "None"}, {"webhook", {{"clientConfig", {{"url", "https://x"}}}}}},
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when "
            "strategy is not set to Webhook"},
        CrdErrorCase{"PreserveUnknownFields", "/spec/preserveUnknownFields", true,
                     "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
                     "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema "
                     "instead"},
        CrdErrorCase{"NoStorageVersionNoStoredVersion", "/spec/versions/1/storage", false,
                     "status.storedVersions: Invalid value: []string(nil): must have at least one "
                     "stored version"},
        CrdErrorCase{"ProtectedGroup", "/spec/group", "widgets.k8s.io",
                     "metadata.annotations[api-approved.kubernetes.io]: Required value: protected "
                     "groups must have approval annotation \"api-approved.kubernetes.io\""}),
    [](const ::testing::TestParamInfo<CrdErrorCase>& param) { return param.param.label; });

TEST(FromCrdErrorTest, MissingSpecIsInvalid) {
  EXPECT_EQ(CrdError(json{{"metadata", {{"name", "x"}}}}).code, 422);
}

json SingleVersionCrd(const std::string& schema_yaml) {
  json crd = Crd();
  crd["spec"]["versions"] =
      json::array({{{"name", "v1"},
                    {"served", true},
                    {"storage", true},
                    {"subresources", {{"status", json::object()}}},
                    {"schema", {{"openAPIV3Schema", yaml::ParseYaml(schema_yaml)}}}}});
  return crd;
}

// What broke: kube-apiserver refused our CRD (a description on the root's metadata) and devcluster
// had accepted it. One version means the schema is reported at the top level, where the v1 ->
// internal conversion moves it.
TEST(FromCrdErrorTest, RootMetadataDescriptionIsRefusedAtTheTopLevelPath) {
  ApiError error = CrdError(SingleVersionCrd(R"(
type: object
properties:
  metadata: {type: object, description: Standard object metadata.}
  spec: {type: object}
)"));
  EXPECT_EQ(error.code, 422);
  EXPECT_EQ(error.message,
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: "
            "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify "
            "anything other than name and generateName, but metadata is implicitly specified");
  EXPECT_EQ(error.details["causes"][0]["field"],
            "spec.validation.openAPIV3Schema.properties[metadata]");
}

TEST(FromCrdErrorTest, EveryErrorComesInOne422) {
  json crd = SingleVersionCrd("{type: object, properties: {a: {}}}");
  crd["spec"]["scope"] = "Everywhere";
  crd["spec"]["versions"][0]["additionalPrinterColumns"] =
      json::array({{{"name", "A"}, {"type", "float"}}});
  ApiError error = CrdError(crd);
  EXPECT_EQ(error.details["causes"].size(), 4u) << error.message;
  EXPECT_THAT(error.message, HasSubstr("spec.scope: Unsupported value: \"Everywhere\""));
  EXPECT_THAT(error.message,
              HasSubstr("spec.validation.openAPIV3Schema.properties[a].type: Required value"));
  EXPECT_THAT(error.message, HasSubstr("spec.additionalPrinterColumns[0].type: Invalid value"));
  EXPECT_THAT(error.message,
              HasSubstr("spec.additionalPrinterColumns[0].JSONPath: Required value"));
}

TEST(FromCrdErrorTest, StatusSubresourceLimitsTheRoot) {
  ApiError error =
      CrdError(SingleVersionCrd("{type: object, x-kubernetes-int-or-string: false, enum: [{}]}"));
  EXPECT_THAT(error.message, HasSubstr("spec.validation.openAPIV3Schema: Invalid value: "
                                       "apiextensions.JSONSchemaProps{"));
  EXPECT_THAT(error.message, HasSubstr("fields are allowed at the root of the schema if the status "
                                       "subresource is enabled"));
}

TEST(FromCrdErrorTest, AFieldOfTheWrongTypeIsABadRequest) {
  ApiError error =
      CrdError(SingleVersionCrd("{type: object, properties: {a: {type: integer, maximum: high}}}"));
  EXPECT_EQ(error.code, 400);
  EXPECT_EQ(
      error.message,
      "CustomResourceDefinition in version \"v1\" cannot be handled as a "
      "CustomResourceDefinition: json: cannot unmarshal string into Go struct field "
      "JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.maximum of type float64");
}

TEST(FromCrdTest, DefaultsNamesAndKeepsColumnsUpToTheFirstUnparsablePath) {
  json crd = Crd();
  crd["spec"]["versions"][1]["additionalPrinterColumns"] = json::parse(R"([
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    {"name": "Broken", "type": "string", "jsonPath": ".spec.items[?(@.x"},
    {"name": "After", "type": "string", "jsonPath": ".spec.after"}])");
  std::vector<ResourceInfo> infos = ResourceRegistry::FromCrd(crd);
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].singular, "widget");
  EXPECT_EQ(infos[0].list_kind, "WidgetList");
  ASSERT_EQ(infos[0].columns.size(), 1u);
  EXPECT_EQ(infos[0].columns[0].description,
            "Custom resource definition column (in JSONPath format): .spec.size");
}

TEST(FromCrdTest, UpdatesKeepTheImmutableFieldsAndTheStoredVersions) {
  json old_crd = Crd();
  DefaultCrd(old_crd, nullptr);
  old_crd["status"]["conditions"] = json::array({{{"type", "Established"}, {"status", "True"}}});
  old_crd["status"]["storedVersions"] = json::array({"v0", "v1"});
  json next = Crd();
  next["spec"]["scope"] = "Cluster";
  next["spec"]["names"]["plural"] = "gadgets";
  next["metadata"]["name"] = "gadgets.example.com";
  try {
    ResourceRegistry::FromCrd(next, &old_crd);
    FAIL() << "accepted";
  } catch (const ApiError& error) {
    // scope and kind are immutable once established; group and plural always. The (required)
    // name change is the generic ObjectMeta update check's, not this one's.
    EXPECT_THAT(error.message,
                HasSubstr("spec.scope: Invalid value: \"Cluster\": field is immutable"));
    EXPECT_THAT(error.message,
                HasSubstr("spec.names.plural: Invalid value: \"gadgets\": field is immutable"));
    EXPECT_THAT(error.message, ::testing::Not(HasSubstr("storedVersions")));
  }
  json dropped = Crd();
  dropped["spec"]["versions"].erase(2);  // v0 is gone while still stored
  try {
    ResourceRegistry::FromCrd(dropped, &old_crd);
    FAIL() << "accepted";
  } catch (const ApiError& error) {
    EXPECT_THAT(
        error.message,
        HasSubstr("status.storedVersions[0]: Invalid value: \"v0\": missing from spec.versions; "
                  "v0 was previously a storage version, and must remain in spec.versions until a "
                  "storage migration ensures no data remains persisted in v0 and removes v0 from "
                  "status.storedVersions"));
  }
}

// The CEL seam: one compiler per schema, called where the server compiles; on update an
// unchanged version's rules skip per-expression cost limits and old rules count as preexisting.
TEST(FromCrdTest, CompilesCelPerSchemaThroughTheSeam) {
  struct Call {
    std::string path;
    bool suppress;
    bool preexisting;
  };
  std::vector<Call> calls;
  std::vector<std::string> totals;
  schema::CelCompilerFactory factory = [&] {
    return schema::CelSchemaCompiler{
        [&](const schema::CelCompileRequest& request) {
          calls.push_back({request.rules_path, request.suppress_per_expression_cost,
                           request.preexisting_rules->contains("self.size > 0")});
          return std::vector<schema::SchemaError>{};
        },
        [&](const std::string& schema_path) {
          totals.push_back(schema_path);
          return std::vector<schema::SchemaError>{};
        }};
  };
  json crd = Crd();
  crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]
     ["x-kubernetes-validations"] = json::array({{{"rule", "self.size > 0"}}});
  ResourceRegistry::FromCrd(crd, nullptr, factory);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].path,
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations");
  EXPECT_FALSE(calls[0].suppress);
  EXPECT_FALSE(calls[0].preexisting);
  // Three schemas, each checked with a fresh compiler and its own cost total.
  EXPECT_THAT(totals, ElementsAre("spec.versions[0].schema.openAPIV3Schema",
                                  "spec.versions[1].schema.openAPIV3Schema",
                                  "spec.versions[2].schema.openAPIV3Schema"));

  json old_crd = crd;
  DefaultCrd(old_crd, nullptr);
  json next = crd;
  next["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
      json::array({{{"rule", "true"}}});
  calls.clear();
  ResourceRegistry::FromCrd(next, &old_crd, factory);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].path, "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations");
  EXPECT_FALSE(calls[0].suppress);  // v1beta1's schema changed
  EXPECT_TRUE(calls[1].suppress);   // v1's did not
  EXPECT_TRUE(calls[1].preexisting);
}

struct JsonPathCase {
  std::string text;
  std::string error;
};

TEST(JsonPathTest, ParsesAsClientGoDoes) {
  for (const JsonPathCase& c :
       std::vector<JsonPathCase>{{"{.status.phase}", ""},
                                 {"{.status.conditions[?(@.type==\"Ready\")].status}", ""},
                                 {"{.a[*].b}", ""},
                                 {"{.a[-1:]}", ""},
                                 {"{.a['key.with.dots']}", ""},
                                 {"{..name}", ""},
                                 {"{.a[0,1]}", ""},
                                 {"x {.a} y", ""},
                                 {"{.a", "unclosed action"},
                                 {"{.a[}", "unterminated array"},
                                 {"{.a[x]}", "invalid array index x"},
                                 {"{.a[?(@.x}", "unterminated filter"},
                                 {"{!}", "unrecognized character in action: U+0021 '!'"},
                                 {"{....a}", "invalid multiple recursive descent"},
                                 {"{.a[?(@.x==\"y)]}", "unterminated filter"}}) {
    EXPECT_EQ(JsonPathParseError(c.text), c.error) << c.text;
  }
}

TEST(DiscoveryTest, CoreGroupListsItsResources) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  json discovery = registry.AggregatedDiscovery(true);
  EXPECT_EQ(discovery["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(discovery["apiVersion"], "apidiscovery.k8s.io/v2");
  ASSERT_EQ(discovery["items"].size(), 1u);
  const json& core = discovery["items"][0];
  EXPECT_EQ(core["metadata"]["name"], "");
  ASSERT_EQ(core["versions"].size(), 1u);
  EXPECT_EQ(core["versions"][0]["version"], "v1");
  EXPECT_EQ(core["versions"][0]["freshness"], "Current");
  json pods;
  json nodes;
  for (const json& resource : core["versions"][0]["resources"]) {
    if (resource["resource"] == "pods") {
      pods = resource;
    }
    if (resource["resource"] == "nodes") {
      nodes = resource;
    }
  }
  EXPECT_EQ(pods["responseKind"], json({{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}));
  EXPECT_EQ(pods["scope"], "Namespaced");
  EXPECT_EQ(pods["singularResource"], "pod");
  EXPECT_EQ(pods["shortNames"], json::array({"po"}));
  EXPECT_THAT(pods["verbs"].get<std::vector<std::string>>(),
              ElementsAre("create", "delete", "deletecollection", "get", "list", "patch",
                          "update", "watch"));
  // As kube-apiserver lists them: by name, a kind of the resource's own group without group and
  // version, the Eviction with policy/v1.
  EXPECT_EQ(pods["subresources"], json::parse(R"([
    {"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
     "verbs": ["create"]},
    {"subresource": "log", "responseKind": {"group": "", "version": "", "kind": "Pod"}, "verbs": ["get"]},
    {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Pod"},
     "verbs": ["get", "patch", "update"]}])"));
  EXPECT_EQ(nodes["scope"], "Cluster");
}

TEST(DiscoveryTest, ApisListsOtherGroupsAndNewCrdsWithPreferredVersionFirst) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  for (ResourceInfo& info : ResourceRegistry::FromCrd(Crd())) {
    registry.Add(std::move(info));
  }
  json discovery = registry.AggregatedDiscovery(false);
  std::vector<std::string> groups;
  for (const json& item : discovery["items"]) {
    groups.push_back(item["metadata"]["name"]);
  }
  EXPECT_THAT(groups, ElementsAre("apps", "coordination.k8s.io", "rbac.authorization.k8s.io",
                                  "apiextensions.k8s.io", "example.com"));
  const json& widgets = discovery["items"][4];
  ASSERT_EQ(widgets["versions"].size(), 2u);
  EXPECT_EQ(widgets["versions"][0]["version"], "v1");
  EXPECT_EQ(widgets["versions"][1]["version"], "v1beta1");
  const json& resource = widgets["versions"][0]["resources"][0];
  EXPECT_EQ(resource["resource"], "widgets");
  EXPECT_EQ(resource["responseKind"]["group"], "example.com");
  EXPECT_EQ(resource["shortNames"], json::array({"wg"}));
  EXPECT_FALSE(widgets["versions"][1]["resources"][0].contains("subresources"));
  // A CRD's status names its kind in full, as apiextensions' discovery does.
  EXPECT_EQ(resource["subresources"][0]["responseKind"],
            json({{"group", "example.com"}, {"version", "v1"}, {"kind", "Widget"}}));
}

TEST(OpenApiTest, IndexListsEveryGroupVersionWithAContentHash) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  json index = registry.OpenApiIndex();
  std::vector<std::string> keys;
  for (const auto& [key, value] : index["paths"].items()) {
    keys.push_back(key);
    EXPECT_THAT(value["serverRelativeURL"].get<std::string>(),
                ::testing::MatchesRegex("/openapi/v3/" + key + "\\?hash=[0-9A-F]{64}"));
  }
  EXPECT_THAT(keys, ElementsAre("api/v1", "apis/apiextensions.k8s.io/v1", "apis/apps/v1",
                                "apis/coordination.k8s.io/v1",
                                "apis/rbac.authorization.k8s.io/v1"));
  std::string apps = index["paths"]["apis/apps/v1"]["serverRelativeURL"];
  EXPECT_EQ(registry.OpenApiIndex()["paths"]["apis/apps/v1"]["serverRelativeURL"], apps);

  for (ResourceInfo& info : ResourceRegistry::FromCrd(Crd())) {
    registry.Add(std::move(info));
  }
  json after = registry.OpenApiIndex();
  EXPECT_TRUE(after["paths"].contains("apis/example.com/v1"));
  EXPECT_TRUE(after["paths"].contains("apis/example.com/v1beta1"));
  EXPECT_EQ(after["paths"]["apis/apps/v1"]["serverRelativeURL"], apps);
}

TEST(OpenApiTest, DocumentHasWhatKubectlApplyAndExplainNeed) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  for (ResourceInfo& info : ResourceRegistry::FromCrd(Crd())) {
    registry.Add(std::move(info));
  }
  json document = registry.OpenApiDocument("example.com/v1");
  json gvk = {{"group", "example.com"}, {"version", "v1"}, {"kind", "Widget"}};
  const json& schema = document["components"]["schemas"]["com.example.v1.Widget"];
  EXPECT_EQ(schema["x-kubernetes-group-version-kind"], json::array({gvk}));
  EXPECT_EQ(schema["properties"]["spec"]["properties"]["size"]["type"], "integer");
  // ObjectMeta by reference, as apiextensions' builder publishes it: kubectl apply computes its
  // patch from it (without, it warns `unable to find api field "annotations"`).
  EXPECT_EQ(schema["properties"]["metadata"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_EQ(schema["properties"]["apiVersion"]["type"], "string");
  const json& components = document["components"]["schemas"];
  const json& object_meta = components["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
  EXPECT_EQ(object_meta["properties"]["annotations"]["additionalProperties"]["type"], "string");
  EXPECT_EQ(object_meta["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"], "uid");
  for (const char* name :
       {"ManagedFieldsEntry", "OwnerReference", "Time", "FieldsV1", "ListMeta"}) {
    EXPECT_TRUE(components.contains(std::string("io.k8s.apimachinery.pkg.apis.meta.v1.") + name))
        << name;
  }
  EXPECT_EQ(components["com.example.v1.WidgetList"]["properties"]["metadata"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta");

  const json& paths = document["paths"];
  ASSERT_TRUE(paths.contains("/apis/example.com/v1/namespaces/{namespace}/widgets"));
  ASSERT_TRUE(paths.contains("/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"));
  ASSERT_TRUE(paths.contains("/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"));
  const json& patch = paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"], gvk);
  EXPECT_EQ(patch["x-kubernetes-action"], "patch");
  std::vector<std::string> parameters;
  for (const json& parameter : patch["parameters"]) {
    parameters.push_back(parameter["name"]);
  }
  EXPECT_THAT(parameters, ::testing::Contains("fieldValidation"));
  EXPECT_TRUE(patch["requestBody"]["content"].contains("application/merge-patch+json"));
  EXPECT_FALSE(patch["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  for (const char* verb : {"get", "put", "delete"}) {
    EXPECT_EQ(paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"][verb]
                   ["x-kubernetes-group-version-kind"],
              gvk)
        << verb;
  }
  EXPECT_EQ(paths["/apis/example.com/v1/namespaces/{namespace}/widgets"]["get"]
                 ["x-kubernetes-group-version-kind"],
            gvk);
}

TEST(OpenApiTest, CoreDocumentUsesApiPathsAndClusterScopeHasNoNamespace) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  json document = registry.OpenApiDocument("v1");
  const json& paths = document["paths"];
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{namespace}/pods/{name}"));
  EXPECT_TRUE(paths.contains("/api/v1/pods"));
  EXPECT_TRUE(paths.contains("/api/v1/nodes/{name}"));
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{name}/status"));
  EXPECT_FALSE(paths.contains("/api/v1/namespaces/{namespace}/nodes"));
  EXPECT_TRUE(paths["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]["requestBody"]
                   ["content"]
                       .contains("application/strategic-merge-patch+json"));
  EXPECT_TRUE(document["components"]["schemas"].contains("io.k8s.api.core.v1.Pod"));
  EXPECT_TRUE(registry.OpenApiDocument("apiextensions.k8s.io/v1")["components"]["schemas"]
                  .contains("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
                            "CustomResourceDefinition"));
}

TEST(OpenApiTest, UnknownGroupVersionIsNotFound) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  try {
    registry.OpenApiDocument("example.com/v1");
    FAIL();
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 404);
    EXPECT_EQ(error.reason, "NotFound");
  }
}

std::vector<std::string> ColumnNames(const ResourceInfo& info) {
  std::vector<std::string> names = {"Name"};
  for (const PrinterColumn& column : info.columns) {
    if (column.priority == 0) {
      names.push_back(column.name);
    }
  }
  return names;
}

TEST(BuiltinColumnsTest, PodsPrintLikeKubectl) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& pods = *registry.Find("", "v1", "pods");
  EXPECT_THAT(ColumnNames(pods), ElementsAre("Name", "Ready", "Status", "Restarts", "Age"));
  json pod = json::parse(R"({
    "metadata": {"name": "w-0", "creationTimestamp": "2024-05-01T12:00:00Z"},
    "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
    "status": {"phase": "Running", "podIP": "10.1.0.4", "containerStatuses": [
      {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
       "lastState": {"terminated": {"finishedAt": "2024-05-01T12:04:00Z"}}},
      {"name": "b", "ready": false, "restartCount": 0,
       "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})");
  json table = BuildTable(pods, {pod}, *ParseTime("2024-05-01T12:05:00Z"), "1", true);
  EXPECT_EQ(table["rows"][0]["cells"],
            json::parse(R"j(["w-0", "1/2", "CrashLoopBackOff", "2 (60s ago)", "5m",
                           "10.1.0.4", "n1"])j"));
}

// A native sidecar (restartPolicy: Always) counts towards READY and, once started, no longer
// holds the Pod in Init:0/1 (what the operator's Pods looked like before).
TEST(BuiltinColumnsTest, PodsWithANativeSidecarPrintLikeKubectl) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& pods = *registry.Find("", "v1", "pods");
  json pod = json::parse(R"({
    "metadata": {"name": "w-0"},
    "spec": {"initContainers": [{"name": "sidecar", "restartPolicy": "Always"}],
             "containers": [{"name": "trainer"}]},
    "status": {"phase": "Running",
      "initContainerStatuses": [{"name": "sidecar", "ready": true, "started": true, "state": {"running": {}}}],
      "containerStatuses": [{"name": "trainer", "ready": true, "state": {"running": {}}}]}})");
  json table = BuildTable(pods, {pod}, Time(), "1", false);
  EXPECT_EQ(table["rows"][0]["cells"][1], "2/2");
  EXPECT_EQ(table["rows"][0]["cells"][2], "Running");
  pod["status"]["initContainerStatuses"][0]["started"] = false;
  pod["status"]["initContainerStatuses"][0]["ready"] = false;
  table = BuildTable(pods, {pod}, Time(), "1", false);
  EXPECT_EQ(table["rows"][0]["cells"][1], "1/2");
  EXPECT_EQ(table["rows"][0]["cells"][2], "Init:0/1");
}

TEST(BuiltinColumnsTest, PodStatusCases) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& pods = *registry.Find("", "v1", "pods");
  struct Case {
    const char* pod;
    const char* status;
  };
  for (const Case& c : {
           Case{R"({"status": {"phase": "Pending"}})", "Pending"},
           Case{R"({"status": {"phase": "Succeeded", "containerStatuses": [
                  {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}})",
                "Completed"},
           Case{R"({"status": {"phase": "Failed", "containerStatuses": [
                  {"state": {"terminated": {"exitCode": 3}}}]}})",
                "ExitCode:3"},
           Case{R"({"spec": {"initContainers": [{"name": "i"}]}, "status": {"phase": "Pending",
                  "initContainerStatuses": [{"state": {"running": {}}}]}})",
                "Init:0/1"},
           Case{R"({"metadata": {"deletionTimestamp": "2024-05-01T12:00:00Z"},
                  "status": {"phase": "Running"}})",
                "Terminating"},
           // kubectl's printer: PodScheduled with reason SchedulingGated names the status.
           Case{R"({"spec": {"schedulingGates": [{"name": "example.com/quota"}]}, "status": {"phase": "Pending",
                  "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}})",
                "SchedulingGated"},
           Case{R"({"status": {"phase": "Pending",
                  "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})",
                "Pending"}}) {
    json table = BuildTable(pods, {json::parse(c.pod)}, Time(), "1", false);
    EXPECT_EQ(table["rows"][0]["cells"][2], c.status) << c.pod;
  }
}

TEST(BuiltinColumnsTest, ServicesPrintLikeKubectl) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& services = *registry.Find("", "v1", "services");
  EXPECT_THAT(ColumnNames(services),
              ElementsAre("Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"));
  json cluster_ip = json::parse(R"({"metadata": {"name": "web"},
    "spec": {"clusterIP": "10.0.0.5", "selector": {"app": "web"},
             "ports": [{"port": 80}, {"port": 9090, "protocol": "UDP"}]}})");
  json node_port = json::parse(R"({"metadata": {"name": "np"},
    "spec": {"type": "NodePort", "clusterIP": "10.0.0.6",
             "ports": [{"port": 80, "nodePort": 30080}]}})");
  json balancer = json::parse(R"({"metadata": {"name": "lb"},
    "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.7", "ports": []}})");
  json table = BuildTable(services, {cluster_ip, node_port, balancer}, Time(), "1", false);
  EXPECT_EQ(table["rows"][0]["cells"],
            json::parse(R"(["web", "ClusterIP", "10.0.0.5", "<none>", "80/TCP,9090/UDP", null,
                           "app=web"])"));
  EXPECT_EQ(table["rows"][1]["cells"][4], "80:30080/TCP");
  EXPECT_EQ(table["rows"][2]["cells"][3], "<pending>");
  EXPECT_EQ(table["rows"][2]["cells"][4], "<none>");
}

TEST(BuiltinColumnsTest, OtherKindsPrintNameAndAge) {
  ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  EXPECT_THAT(ColumnNames(*registry.Find("", "v1", "serviceaccounts")), ElementsAre("Name", "Age"));
  EXPECT_THAT(ColumnNames(*registry.Find("rbac.authorization.k8s.io", "v1", "roles")),
              ElementsAre("Name", "Age"));
  json deployment = json::parse(R"({"metadata": {"name": "d"}, "spec": {"replicas": 3},
    "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}})");
  json table = BuildTable(*registry.Find("apps", "v1", "deployments"), {deployment}, Time(), "1",
                          false);
  EXPECT_EQ(table["rows"][0]["cells"], json::parse(R"(["d", "2/3", 3, 2, null])"));
}

}  // namespace
}  // namespace ringleader::devcluster
