// Tests for PATCH handling: merge, JSON and strategic merge patches (with the bodies kubectl
// sends), apply as merge, and the errors the real server gives.
#include "tests/devcluster/machinery/patch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Smp(const json& current, const json& patch) {
  return ApplyPatch(current, kStrategicMergePatch, patch, PatchSchema::Builtin(), false);
}

ApiError PatchError(const json& current, std::string_view type, const json& patch,
                    bool custom = false) {
  try {
    ApplyPatch(current, type, patch, PatchSchema::Builtin(), custom);
  } catch (const ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "no error for " << patch.dump();
  return ApiError(0, "", "");
}

const json kService = json::parse(R"({
  "apiVersion": "v1", "kind": "Service",
  "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7",
               "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
  "spec": {"selector": {"app": "web"}, "clusterIP": "10.0.0.5",
           "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                     {"name": "old", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]}
})");

const json kPod = json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "p", "finalizers": ["a.example.com/x"],
               "ownerReferences": [{"uid": "u1", "name": "j", "kind": "TrainingJob"}]},
  "spec": {
    "containers": [
      {"name": "main", "image": "train:1",
       "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
               {"name": "C", "value": "3"}],
       "ports": [{"containerPort": 29500, "name": "rdzv"}],
       "volumeMounts": [{"mountPath": "/data", "name": "data"}]},
      {"name": "sidecar", "image": "side:1"}],
    "volumes": [{"name": "data", "emptyDir": {}}],
    "tolerations": [{"key": "gpu", "operator": "Exists"}]},
  "status": {"phase": "Running",
             "conditions": [{"type": "Ready", "status": "False"},
                            {"type": "Initialized", "status": "True"}]}
})");

TEST(StrategicMergeTest, KubectlApplyOfAServiceWithChangedPorts) {
  // The body kubectl's client-side apply sends after port 8080 became 9090 in the manifest.
  json patch = json::parse(R"({
    "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"v\":2}"}},
    "spec": {"$setElementOrder/ports": [{"port": 80}, {"port": 9090}],
             "ports": [{"name": "metrics", "port": 9090, "targetPort": 9090},
                       {"$patch": "delete", "port": 8080}]}})");
  json result = Smp(kService, patch);
  EXPECT_EQ(result["spec"]["ports"], json::parse(R"([
    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
    {"name": "metrics", "port": 9090, "targetPort": 9090}])"));
  EXPECT_EQ(result["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            "{\"v\":2}");
  EXPECT_EQ(result["spec"]["clusterIP"], "10.0.0.5");
  EXPECT_EQ(result["spec"]["selector"], json({{"app", "web"}}));
}

TEST(StrategicMergeTest, ServicePortsMergeByPortNotByPosition) {
  json result = Smp(kService, json::parse(R"({"spec": {"ports": [{"port": 8080, "targetPort": 9000}]}})"));
  ASSERT_EQ(result["spec"]["ports"].size(), 2u);
  EXPECT_EQ(result["spec"]["ports"][1]["targetPort"], 9000);
  EXPECT_EQ(result["spec"]["ports"][1]["name"], "old");
  EXPECT_EQ(result["spec"]["ports"][0]["targetPort"], 8080);
}

TEST(StrategicMergeTest, NewListElementsAreAppended) {
  json result = Smp(kService, json::parse(R"({"spec": {"ports": [{"port": 443, "name": "https"}]}})"));
  ASSERT_EQ(result["spec"]["ports"].size(), 3u);
  EXPECT_EQ(result["spec"]["ports"][2]["name"], "https");
}

TEST(StrategicMergeTest, KubectlApplyDeletingAContainer) {
  json patch = json::parse(R"({"spec": {"$setElementOrder/containers": [{"name": "main"}],
                                        "containers": [{"$patch": "delete", "name": "sidecar"}]}})");
  json result = Smp(kPod, patch);
  ASSERT_EQ(result["spec"]["containers"].size(), 1u);
  EXPECT_EQ(result["spec"]["containers"][0]["name"], "main");
  EXPECT_EQ(result["spec"]["containers"][0]["env"].size(), 3u);
}

TEST(StrategicMergeTest, ContainerFieldsMergeByTheirKeys) {
  json patch = json::parse(R"({"spec": {"containers": [{"name": "main", "image": "train:2",
      "env": [{"name": "B", "value": "20"}, {"name": "D", "value": "4"}],
      "ports": [{"containerPort": 29500, "protocol": "TCP"}, {"containerPort": 8080}],
      "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]}})");
  json main = Smp(kPod, patch)["spec"]["containers"][0];
  EXPECT_EQ(main["image"], "train:2");
  EXPECT_EQ(main["env"], json::parse(R"([{"name": "A", "value": "1"}, {"name": "B", "value": "20"},
      {"name": "C", "value": "3"}, {"name": "D", "value": "4"}])"));
  EXPECT_EQ(main["ports"], json::parse(R"([{"containerPort": 29500, "name": "rdzv", "protocol": "TCP"},
      {"containerPort": 8080}])"));
  EXPECT_EQ(main["volumeMounts"],
            json::parse(R"([{"mountPath": "/data", "name": "data", "readOnly": true}])"));
}

struct OrderCase {
  std::string label;
  json order;
  json patch_env;  // null: the patch carries no env list
  std::vector<std::string> names;
};

class SetElementOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(SetElementOrderTest, OrdersTheMergedList) {
  const OrderCase& c = GetParam();
  json container = {{"name", "main"}, {"$setElementOrder/env", c.order}};
  if (!c.patch_env.is_null()) {
    container["env"] = c.patch_env;
  }
  json result = Smp(kPod, {{"spec", {{"containers", json::array({container})}}}});
  std::vector<std::string> names;
  for (const json& env : result["spec"]["containers"][0]["env"]) {
    names.push_back(env["name"]);
  }
  EXPECT_EQ(names, c.names);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SetElementOrderTest,
    ::testing::Values(
        OrderCase{"ReordersWithoutChanges",
                  json::parse(R"([{"name":"C"},{"name":"A"},{"name":"B"}])"), nullptr,
                  {"C", "A", "B"}},
        OrderCase{"PlacesANewElementWhereTheOrderSays",
                  json::parse(R"([{"name":"A"},{"name":"N"},{"name":"B"},{"name":"C"}])"),
                  json::parse(R"([{"name":"N","value":"new"}])"), {"A", "N", "B", "C"}},
        OrderCase{"KeepsServerOnlyElementsNearTheirOldNeighbours",
                  json::parse(R"([{"name":"C"},{"name":"A"}])"), nullptr, {"B", "C", "A"}},
        OrderCase{"DropsDeletedElements", json::parse(R"([{"name":"C"},{"name":"A"}])"),
                  json::parse(R"([{"$patch":"delete","name":"B"}])"), {"C", "A"}}),
    [](const ::testing::TestParamInfo<OrderCase>& param) { return param.param.label; });

TEST(StrategicMergeTest, RetainKeysClearsFieldsNotListed) {
  json deployment = json::parse(R"({"kind": "Deployment", "spec": {"replicas": 2,
      "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}})");
  json result = Smp(deployment, json::parse(
      R"({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})"));
  EXPECT_EQ(result["spec"]["strategy"], json({{"type", "Recreate"}}));
  EXPECT_EQ(result["spec"]["replicas"], 2);
}

TEST(StrategicMergeTest, RetainKeysOnVolumesSwitchesTheSource) {
  json patch = json::parse(R"({"spec": {"volumes": [{"name": "data",
      "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/mnt"}}]}})");
  EXPECT_EQ(Smp(kPod, patch)["spec"]["volumes"],
            json::parse(R"([{"name": "data", "hostPath": {"path": "/mnt"}}])"));
}

TEST(StrategicMergeTest, RetainKeysRejectsAPatchFieldItDoesNotRetain) {
  json deployment = json::parse(R"({"kind": "Deployment", "spec": {"strategy": {}}})");
  ApiError error = PatchError(deployment, kStrategicMergePatch, json::parse(
      R"({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}})"));
  EXPECT_EQ(error.code, 400);
}

TEST(StrategicMergeTest, DeploymentTemplateContainersMergeByName) {
  json deployment = json::parse(R"({"kind": "Deployment", "spec": {"template": {"spec": {
      "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}})");
  json result = Smp(deployment, json::parse(
      R"({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}})"));
  EXPECT_EQ(result["spec"]["template"]["spec"]["containers"],
            json::parse(R"([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])"));
}

TEST(StrategicMergeTest, ListsWithoutAStrategyAreReplaced) {
  json result = Smp(kPod, json::parse(R"({"spec": {"tolerations": [{"key": "tpu"}]}})"));
  EXPECT_EQ(result["spec"]["tolerations"], json::parse(R"([{"key": "tpu"}])"));
  json role = json::parse(R"({"kind": "Role", "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]})");
  EXPECT_EQ(Smp(role, json::parse(R"({"rules": [{"verbs": ["watch"]}]})"))["rules"],
            json::parse(R"([{"verbs": ["watch"]}])"));
  json binding = json::parse(R"({"kind": "RoleBinding", "subjects": [{"name": "a"}, {"name": "b"}]})");
  EXPECT_EQ(Smp(binding, json::parse(R"({"subjects": [{"name": "c"}]})"))["subjects"],
            json::parse(R"([{"name": "c"}])"));
}

TEST(StrategicMergeTest, FinalizersMergeAsASet) {
  json result = Smp(kPod, json::parse(
      R"({"metadata": {"finalizers": ["a.example.com/x", "b.example.com/y"]}})"));
  EXPECT_EQ(result["metadata"]["finalizers"],
            json::parse(R"(["a.example.com/x", "b.example.com/y"])"));
}

TEST(StrategicMergeTest, DeleteFromPrimitiveListRemovesValues) {
  json result = Smp(kPod, json::parse(
      R"({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]}})"));
  EXPECT_EQ(result["metadata"]["finalizers"], json::array());
}

TEST(StrategicMergeTest, OwnerReferencesMergeByUid) {
  json result = Smp(kPod, json::parse(
      R"({"metadata": {"ownerReferences": [{"uid": "u1", "controller": true}, {"uid": "u2"}]}})"));
  EXPECT_EQ(result["metadata"]["ownerReferences"],
            json::parse(R"([{"uid": "u1", "name": "j", "kind": "TrainingJob", "controller": true},
                           {"uid": "u2"}])"));
}

TEST(StrategicMergeTest, ConditionsMergeByType) {
  json result = Smp(kPod, json::parse(
      R"({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})"));
  EXPECT_EQ(result["status"]["conditions"],
            json::parse(R"([{"type": "Ready", "status": "True"},
                           {"type": "Initialized", "status": "True"}])"));
}

TEST(StrategicMergeTest, NullDeletesAKeyAndPatchDeleteRemovesAMap) {
  json result = Smp(kService, json::parse(
      R"({"spec": {"clusterIP": null, "selector": {"$patch": "delete"}}})"));
  EXPECT_FALSE(result["spec"].contains("clusterIP"));
  EXPECT_FALSE(result["spec"].contains("selector"));
}

TEST(StrategicMergeTest, PatchReplaceOnAMapReplacesIt) {
  json result = Smp(kService, json::parse(
      R"({"spec": {"selector": {"$patch": "replace", "role": "api"}}})"));
  EXPECT_EQ(result["spec"]["selector"], json({{"role", "api"}}));
}

TEST(StrategicMergeTest, PatchReplaceInAListReplacesTheList) {
  json result = Smp(kService, json::parse(
      R"({"spec": {"ports": [{"$patch": "replace"}, {"port": 1, "name": "only"}]}})"));
  EXPECT_EQ(result["spec"]["ports"], json::parse(R"([{"port": 1, "name": "only"}])"));
}

TEST(StrategicMergeTest, PatchMergeIsTheDefault) {
  json result = Smp(kService, json::parse(
      R"({"spec": {"selector": {"$patch": "merge", "role": "api"}}})"));
  EXPECT_EQ(result["spec"]["selector"], json({{"app", "web"}, {"role", "api"}}));
}

TEST(StrategicMergeTest, ConfigMapDataMergesKeyByKey) {
  json config_map = json::parse(R"({"kind": "ConfigMap", "data": {"a": "1", "b": "2"}})");
  EXPECT_EQ(Smp(config_map, json::parse(R"({"data": {"b": null, "c": "3"}})"))["data"],
            json({{"a", "1"}, {"c", "3"}}));
}

TEST(StrategicMergeTest, NewNestedObjectsLoseTheirDirectives) {
  json result = Smp(json::parse(R"({"kind": "Pod"})"), json::parse(
      R"({"spec": {"$setElementOrder/containers": [{"name": "a"}],
                   "containers": [{"name": "a", "env": [{"name": "X", "value": null}]}]}})"));
  EXPECT_EQ(result["spec"], json::parse(R"({"containers": [{"name": "a", "env": [{"name": "X"}]}]})"));
}

TEST(StrategicMergeTest, MissingMergeKeyIsABadRequest) {
  ApiError error = PatchError(kService, kStrategicMergePatch,
                              json::parse(R"({"spec": {"ports": [{"name": "x"}]}})"));
  EXPECT_EQ(error.code, 400);
  EXPECT_THAT(error.message, ::testing::HasSubstr("does not contain declared merge key: port"));
}

TEST(StrategicMergeTest, UnknownPatchDirectiveIsABadRequest) {
  EXPECT_EQ(PatchError(kService, kStrategicMergePatch,
                       json::parse(R"({"spec": {"selector": {"$patch": "explode"}}})"))
                .code,
            400);
}

TEST(StrategicMergeTest, CustomResourceGets415ListingTheAcceptedTypes) {
  json job = json::parse(R"({"kind": "TrainingJob", "spec": {"replicas": 1}})");
  ApiError error = PatchError(job, kStrategicMergePatch, json::parse(R"({"spec": {"replicas": 2}})"),
                              true);
  EXPECT_EQ(error.code, 415);
  EXPECT_EQ(error.reason, "UnsupportedMediaType");
  EXPECT_EQ(error.message,
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml");
}

TEST(PatchTest, UnknownContentTypeOnABuiltinListsStrategicMerge) {
  ApiError error = PatchError(kService, "application/xml", json::object());
  EXPECT_EQ(error.code, 415);
  EXPECT_THAT(error.message, ::testing::HasSubstr("application/strategic-merge-patch+json"));
}

TEST(PatchTest, ContentTypeParametersAreIgnored) {
  json result = ApplyPatch(kService, "application/merge-patch+json; charset=utf-8",
                           json::parse(R"({"spec": {"type": "NodePort"}})"),
                           PatchSchema::Builtin(), false);
  EXPECT_EQ(result["spec"]["type"], "NodePort");
}

struct MergeCase {
  std::string label;
  json current;
  json patch;
  json expected;
};

class MergePatchTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergePatchTest, FollowsRfc7386) {
  const MergeCase& c = GetParam();
  EXPECT_EQ(ApplyPatch(c.current, kMergePatch, c.patch, PatchSchema::Builtin(), true), c.expected);
  // Server-side apply is approximated by a merge patch.
  EXPECT_EQ(ApplyPatch(c.current, kApplyPatch, c.patch, PatchSchema::Builtin(), true), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MergePatchTest,
    ::testing::Values(
        MergeCase{"SetsAField", json::parse(R"({"spec":{"replicas":1}})"),
                  json::parse(R"({"spec":{"replicas":2}})"), json::parse(R"({"spec":{"replicas":2}})")},
        MergeCase{"NullDeletes", json::parse(R"({"spec":{"a":1,"b":2}})"),
                  json::parse(R"({"spec":{"a":null}})"), json::parse(R"({"spec":{"b":2}})")},
        MergeCase{"ListsAreReplaced", json::parse(R"({"spec":{"l":[1,2,3]}})"),
                  json::parse(R"({"spec":{"l":[4]}})"), json::parse(R"({"spec":{"l":[4]}})")},
        MergeCase{"NestedObjectsAreCreated", json::object(),
                  json::parse(R"({"status":{"conditions":[{"type":"Ready"}]}})"),
                  json::parse(R"({"status":{"conditions":[{"type":"Ready"}]}})")},
        MergeCase{"CreatesFromNothing", nullptr, json::parse(R"({"kind":"TrainingJob"})"),
                  json::parse(R"({"kind":"TrainingJob"})")}),
    [](const ::testing::TestParamInfo<MergeCase>& param) { return param.param.label; });

TEST(MergePatchTest, NonObjectPatchIsABadRequest) {
  EXPECT_EQ(PatchError(kService, kMergePatch, json::array()).code, 400);
}

TEST(JsonPatchTest, AppliesOperationsInOrder) {
  json patch = json::parse(R"([
    {"op": "replace", "path": "/spec/ports/0/port", "value": 81},
    {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
    {"op": "remove", "path": "/spec/clusterIP"},
    {"op": "test", "path": "/spec/ports/0/port", "value": 81}])");
  json result = ApplyPatch(kService, kJsonPatch, patch, PatchSchema::Builtin(), true);
  EXPECT_EQ(result["spec"]["ports"][0]["port"], 81);
  EXPECT_EQ(result["metadata"]["labels"]["a"], "b");
  EXPECT_FALSE(result["spec"].contains("clusterIP"));
}

struct JsonPatchErrorCase {
  std::string label;
  json patch;
  int code;
};

class JsonPatchErrorTest : public ::testing::TestWithParam<JsonPatchErrorCase> {};

TEST_P(JsonPatchErrorTest, FailsAsTheServerDoes) {
  ApiError error = PatchError(kService, kJsonPatch, GetParam().patch);
  EXPECT_EQ(error.code, GetParam().code) << error.message;
  if (error.code == 422) {
    EXPECT_EQ(error.reason, "Invalid");
    EXPECT_EQ(error.message, "the server rejected our request due to an error in our request");
    EXPECT_FALSE(error.details["causes"][0]["message"].get<std::string>().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JsonPatchErrorTest,
    ::testing::Values(
        JsonPatchErrorCase{"MissingPath",
                           json::parse(R"([{"op":"replace","path":"/spec/nope","value":1}])"), 422},
        JsonPatchErrorCase{"RemoveMissing", json::parse(R"([{"op":"remove","path":"/x"}])"), 422},
        JsonPatchErrorCase{"FailedTest",
                           json::parse(R"([{"op":"test","path":"/kind","value":"Pod"}])"), 422},
        JsonPatchErrorCase{"IndexOutOfRange",
                           json::parse(R"([{"op":"replace","path":"/spec/ports/9","value":1}])"),
                           422},
        JsonPatchErrorCase{"UnknownOp", json::parse(R"([{"op":"frob","path":"/kind"}])"), 400},
        JsonPatchErrorCase{"MissingValue", json::parse(R"([{"op":"add","path":"/x"}])"), 400},
        JsonPatchErrorCase{"NotAnArray", json::parse(R"({"op":"add"})"), 400}),
    [](const ::testing::TestParamInfo<JsonPatchErrorCase>& param) { return param.param.label; });

TEST(PatchSchemaTest, BuiltinKnowsTheRealMergeKeys) {
  const PatchSchema& schema = PatchSchema::Builtin();
  struct Expect {
    const char* kind;
    const char* path;
    const char* key;
  };
  for (const Expect& e : {Expect{"Service", "spec.ports", "port"},
                          Expect{"Pod", "spec.containers", "name"},
                          Expect{"Pod", "spec.containers.ports", "containerPort"},
                          Expect{"Pod", "spec.initContainers.env", "name"},
                          Expect{"Pod", "spec.containers.volumeMounts", "mountPath"},
                          Expect{"Pod", "spec.volumes", "name"},
                          Expect{"Pod", "spec.imagePullSecrets", "name"},
                          Expect{"Deployment", "spec.template.spec.containers", "name"},
                          Expect{"Deployment", "status.conditions", "type"},
                          Expect{"ConfigMap", "metadata.ownerReferences", "uid"}}) {
    const FieldPatchRule* rule = schema.Find(e.kind, e.path);
    ASSERT_NE(rule, nullptr) << e.kind << " " << e.path;
    EXPECT_TRUE(rule->merge) << e.path;
    EXPECT_EQ(rule->merge_key, e.key) << e.path;
  }
  EXPECT_FALSE(schema.Find("Pod", "spec.tolerations")->merge);
  EXPECT_FALSE(schema.Find("ClusterRole", "rules")->merge);
  EXPECT_TRUE(schema.Find("Secret", "metadata.finalizers")->merge);
  EXPECT_EQ(schema.Find("Pod", "spec.nothing"), nullptr);
}

TEST(PatchSchemaTest, AddedRulesApplyToTheirKind) {
  PatchSchema schema;
  schema.Add("Widget", "spec.parts", FieldPatchRule{true, "id", false});
  json widget = json::parse(R"({"kind": "Widget", "spec": {"parts": [{"id": 1, "a": 1}]}})");
  json result = StrategicMerge(widget, json::parse(R"({"spec": {"parts": [{"id": 1, "b": 2}]}})"),
                               schema, "Widget");
  EXPECT_EQ(result["spec"]["parts"], json::parse(R"([{"id": 1, "a": 1, "b": 2}])"));
}

}  // namespace
}  // namespace ringleader::devcluster
