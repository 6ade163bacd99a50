// Unit tests of the protobuf body decoder: hand-built wire bytes for each decoded kind, bodies the
// real kubectl 1.32 sent (checked against its own --dry-run=client -o json), malformed bodies and
// kinds devcluster does not decode.
#include "tests/devcluster/machinery/protobuf_body.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// ---- A tiny protobuf writer for hand-built bodies.
std::string Varint(std::uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
  return out;
}
std::string VarintField(int number, std::uint64_t value) {
  return Varint(static_cast<std::uint64_t>(number) << 3) + Varint(value);
}
std::string Field(int number, std::string_view bytes) {
  return Varint((static_cast<std::uint64_t>(number) << 3) | 2) + Varint(bytes.size()) + std::string(bytes);
}
std::string MapEntry(int number, std::string_view key, std::string_view value) {
  return Field(number, Field(1, key) + Field(2, value));
}
std::string Envelope(std::string_view api_version, std::string_view kind, std::string_view raw) {
  return std::string("k8s\0", 4) + Field(1, Field(1, api_version) + Field(2, kind)) + Field(2, raw);
}
// ObjectMeta as gogo-protobuf writes it: every non-pointer field, zero or not.
std::string Meta(std::string_view name, std::string_view extra = "") {
  return Field(1, Field(1, name) + Field(2, "") + Field(3, "") + Field(4, "") + Field(5, "") + Field(6, "") +
                      VarintField(7, 0) + Field(8, "") + std::string(extra));
}
std::string Unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::optional<ApiError> ErrorOf(std::string_view body, std::string_view api_version, std::string_view kind) {
  try {
    DecodeProtobufObject(body, api_version, kind);
  } catch (const ApiError& error) {
    return error;
  }
  return std::nullopt;
}

// ---- Bodies the real kubectl v1.32.4 sent (its -v=9 request dump), each against the JSON its
// --dry-run=client -o json prints for the same command.
struct KubectlCase {
  const char* command;
  const char* api_version;
  const char* kind;
  const char* body_hex;
  const char* json;
};
// ctest and gtest name each case by its kind, not by its bytes.
void PrintTo(const KubectlCase& c, std::ostream* out) { *out << c.kind; }
std::string KindName(const ::testing::TestParamInfo<KubectlCase>& info) { return info.param.kind; }

class KubectlBodyTest : public ::testing::TestWithParam<KubectlCase> {};

TEST_P(KubectlBodyTest, DecodesToTheJsonKubectlWouldHaveSent) {
  const KubectlCase& c = GetParam();
  EXPECT_EQ(DecodeProtobufObject(Unhex(c.body_hex), c.api_version, c.kind), json::parse(c.json)) << c.command;
}

INSTANTIATE_TEST_SUITE_P(
    Kubectl132, KubectlBodyTest,
    ::testing::Values(
        KubectlCase{"create namespace ml", "v1", "Namespace",
                    "6b3873000a0f0a02763112094e616d657370616365121a0a120a026d6c12001a0022002a00320038004200120"
                    "01a020a001a002200",
                    R"({"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":null,"name":"ml"},)"
                    R"("spec":{},"status":{}})"},
        KubectlCase{"create secret generic s --from-literal=k=v", "v1", "Secret",
                    "6b3873000a0c0a0276311206536563726574121d0a110a017312001a0022002a0032003800420012060a016b12"
                    "01761a001a002200",
                    R"({"apiVersion":"v1","data":{"k":"dg=="},"kind":"Secret",)"
                    R"("metadata":{"creationTimestamp":null,"name":"s"}})"},
        KubectlCase{"create configmap c --from-literal=a=b", "v1", "ConfigMap",
                    "6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a016312001a0022002a0032003800420012060a"
                    "01611201621a002200",
                    R"({"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap",)"
                    R"("metadata":{"creationTimestamp":null,"name":"c"}})"},
        KubectlCase{"create serviceaccount sa", "v1", "ServiceAccount",
                    "6b3873000a140a027631120e536572766963654163636f756e7412140a120a02736112001a0022002a00320038"
                    "0042001a002200",
                    R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"creationTimestamp":null,"name":"sa"}})"},
        KubectlCase{"create token sa --duration 10m", "authentication.k8s.io/v1", "TokenRequest",
                    "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e5265717565"
                    "7374121d0a100a0012001a0022002a00320038004200120320d8041a040a0012001a002200",
                    R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                    R"("metadata":{"creationTimestamp":null},)"
                    R"("spec":{"audiences":null,"boundObjectRef":null,"expirationSeconds":600},)"
                    R"("status":{"expirationTimestamp":null,"token":""}})"},
        KubectlCase{"create role r --verb=get,list --resource=pods,configmaps --resource-name=x",
                    "rbac.authorization.k8s.io/v1", "Role",
                    "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c651237"
                    "0a110a017212001a0022002a0032003800420012220a036765740a046c69737412001a04706f64731a0a636f"
                    "6e6669676d6170732201781a002200",
                    R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role",)"
                    R"("metadata":{"creationTimestamp":null,"name":"r"},"rules":[{"apiGroups":[""],)"
                    R"("resourceNames":["x"],"resources":["pods","configmaps"],"verbs":["get","list"]}]})"},
        KubectlCase{"create clusterrole cr --aggregation-rule=foo=bar", "rbac.authorization.k8s.io/v1", "ClusterRole",
                    "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c757374"
                    "6572526f6c6512240a120a02637212001a0022002a003200380042001a0e0a0c0a0a0a03666f6f1203626172"
                    "1a002200",
                    R"({"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"foo":"bar"}}]},)"
                    R"("apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",)"
                    R"("metadata":{"creationTimestamp":null,"name":"cr"},"rules":null})"},
        KubectlCase{"create rolebinding rb --role=r --user=u --serviceaccount=default:sa --group=g",
                    "rbac.authorization.k8s.io/v1", "RoleBinding",
                    "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c6542"
                    "696e64696e6712ac010a120a02726212001a0022002a0032003800420012260a04557365721219726261632e"
                    "617574686f72697a6174696f6e2e6b38732e696f1a0175220012270a0547726f75701219726261632e617574"
                    "686f72697a6174696f6e2e6b38732e696f1a01672200121f0a0e536572766963654163636f756e7412001a02"
                    "7361220764656661756c741a240a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f"
                    "6c651a01721a002200",
                    R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",)"
                    R"("metadata":{"creationTimestamp":null,"name":"rb"},)"
                    R"("roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},)"
                    R"("subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"u"},)"
                    R"({"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"g"},)"
                    R"({"kind":"ServiceAccount","name":"sa","namespace":"default"}]})"},
        KubectlCase{"create service nodeport np --tcp=81:http --node-port=30001", "v1", "Service",
                    "6b3873000a0d0a027631120753657276696365126a0a1d0a026e7012001a0022002a003200380042005a090a"
                    "0361707012026e7012450a200a0738312d6874747012035443501851220a080110001a046874747028b1ea01"
                    "12090a0361707012026e701a0022084e6f6465506f72743a00420052005a00600068001a020a001a002200",
                    R"({"apiVersion":"v1","kind":"Service",)"
                    R"("metadata":{"creationTimestamp":null,"labels":{"app":"np"},"name":"np"},)"
                    R"("spec":{"ports":[{"name":"81-http","nodePort":30001,"port":81,"protocol":"TCP",)"
                    R"("targetPort":"http"}],"selector":{"app":"np"},"type":"NodePort"},)"
                    R"("status":{"loadBalancer":{}}})"},
        KubectlCase{"create deployment d --image=nginx --replicas=2 --port=80", "apps/v1", "Deployment",
                    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b0010a1b0a016412001a0022002a0032"
                    "0038004200"
                    "5a080a036170701201641282010802120a0a080a036170701201641a6a0a1a0a0012001a0022002a00320038"
                    "0042005a080a03617070120164124c122e0a056e67696e7812056e67696e782a00320a0a0010001850220"
                    "02a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009a"
                    "0100c2010022020a00280038001a0c0800100018002000280038001a002200",
                    R"({"apiVersion":"apps/v1","kind":"Deployment",)"
                    R"("metadata":{"creationTimestamp":null,"labels":{"app":"d"},"name":"d"},)"
                    R"("spec":{"replicas":2,"selector":{"matchLabels":{"app":"d"}},"strategy":{},)"
                    R"("template":{"metadata":{"creationTimestamp":null,"labels":{"app":"d"}},)"
                    R"("spec":{"containers":[{"image":"nginx","name":"nginx","ports":[{"containerPort":80}],)"
                    R"("resources":{}}]}}},"status":{}})"}),
    KindName);

// ---- Hand-built bodies, one or more per decoded kind.

TEST(ProtobufBodyTest, NamespaceWithLabelsAnnotationsOwnerReferencesAndFinalizers) {
  const std::string owner = Field(5, "v1") + Field(1, "ConfigMap") + Field(3, "cfg") + Field(4, "u-1") +
                            VarintField(6, 1) + VarintField(7, 0);
  const std::string meta =
      Meta("ml", MapEntry(11, "team", "a") + MapEntry(11, "tier", "b") + MapEntry(12, "note", "é") + Field(13, owner) +
                     Field(14, "x/y") + Field(14, "z"));
  const json object =
      DecodeProtobufObject(Envelope("v1", "Namespace", meta + Field(2, Field(1, "kubernetes"))), "v1", "Namespace");
  EXPECT_EQ(object, json::parse(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ml",
      "creationTimestamp":null,"labels":{"team":"a","tier":"b"},"annotations":{"note":"é"},
      "ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"cfg","uid":"u-1","controller":true,
      "blockOwnerDeletion":false}],"finalizers":["x/y","z"]},"spec":{"finalizers":["kubernetes"]},"status":{}})"));
}

TEST(ProtobufBodyTest, SecretDataIsBase64AndPointerFieldsKeepFalse) {
  const std::string raw = Meta("s") + MapEntry(2, "bin", std::string("\x00\xff", 2)) + MapEntry(2, "k", "v") +
                          Field(3, "Opaque") + MapEntry(4, "plain", "text") + VarintField(5, 0);
  EXPECT_EQ(DecodeProtobufObject(Envelope("v1", "Secret", raw), "v1", "Secret"),
            json::parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","creationTimestamp":null},
                "data":{"bin":"AP8=","k":"dg=="},"type":"Opaque","stringData":{"plain":"text"},"immutable":false})"));
}

TEST(ProtobufBodyTest, ConfigMapDataAndBinaryData) {
  const std::string raw = Meta("c") + MapEntry(2, "a", "b") + MapEntry(3, "blob", "hi");
  EXPECT_EQ(DecodeProtobufObject(Envelope("v1", "ConfigMap", raw), "v1", "ConfigMap"),
            json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","creationTimestamp":null},
                "data":{"a":"b"},"binaryData":{"blob":"aGk="}})"));
}

TEST(ProtobufBodyTest, ServiceAccountSecretsAndImagePullSecrets) {
  const std::string raw =
      Meta("sa") + Field(2, Field(3, "tok") + Field(2, "")) + Field(3, Field(1, "regcred")) + VarintField(4, 0);
  EXPECT_EQ(DecodeProtobufObject(Envelope("v1", "ServiceAccount", raw), "v1", "ServiceAccount"),
            json::parse(R"({"apiVersion":"v1","kind":"ServiceAccount",
                "metadata":{"name":"sa","creationTimestamp":null},"secrets":[{"name":"tok"}],
                "imagePullSecrets":[{"name":"regcred"}],"automountServiceAccountToken":false})"));
}

TEST(ProtobufBodyTest, TokenRequestAudiencesExpiryAndBoundObject) {
  const std::string bound = Field(1, "Secret") + Field(2, "v1") + Field(3, "s") + Field(4, "");
  const std::string spec = Field(1, "a") + Field(1, "b") + Field(3, bound) + VarintField(4, 900);
  const json object = DecodeProtobufObject(Envelope("authentication.k8s.io/v1", "TokenRequest", Field(2, spec)),
                                           "authentication.k8s.io/v1", "TokenRequest");
  EXPECT_EQ(object["spec"], json::parse(R"({"audiences":["a","b"],"expirationSeconds":900,
      "boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}})"));
}

TEST(ProtobufBodyTest, ClusterRoleBindingSubjectsAndRoleRef) {
  const std::string raw = Meta("crb") + Field(2, Field(1, "User") + Field(3, "alice")) +
                          Field(3, Field(1, "rbac.authorization.k8s.io") + Field(2, "ClusterRole") + Field(3, "view"));
  EXPECT_EQ(DecodeProtobufObject(Envelope("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", raw),
                                 "rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            json::parse(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",
                "metadata":{"name":"crb","creationTimestamp":null},"subjects":[{"kind":"User","name":"alice"}],
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}})"));
}

TEST(ProtobufBodyTest, ServiceTargetPortAsNumberOrNameAndStatusConditions) {
  const std::string by_number = Field(1, "http") + Field(2, "TCP") + VarintField(3, 80) +
                                Field(4, VarintField(1, 0) + VarintField(2, 8080) + Field(3, "")) + VarintField(5, 0);
  const std::string by_name = VarintField(3, 443) + Field(4, VarintField(1, 1) + VarintField(2, 0) + Field(3, "https"));
  const std::string condition =
      Field(1, "Ready") + Field(2, "True") + Field(4, VarintField(1, 1700000000)) + Field(5, "Up") + Field(6, "");
  const std::string raw = Meta("svc") + Field(2, Field(1, by_number) + Field(1, by_name) + Field(4, "ClusterIP")) +
                          Field(3, Field(1, "") + Field(2, condition));
  const json object = DecodeProtobufObject(Envelope("v1", "Service", raw), "v1", "Service");
  EXPECT_EQ(object["spec"], json::parse(R"({"type":"ClusterIP","ports":[
      {"name":"http","protocol":"TCP","port":80,"targetPort":8080},{"port":443,"targetPort":"https"}]})"));
  EXPECT_EQ(object["status"], json::parse(R"({"loadBalancer":{},"conditions":[{"type":"Ready","status":"True",
      "lastTransitionTime":"2023-11-14T22:13:20Z","reason":"Up","message":""}]})"));
}

TEST(ProtobufBodyTest, LeaseMicroTimesKeepMicroseconds) {
  const std::string spec = Field(1, "holder") + VarintField(2, 15) +
                           Field(4, VarintField(1, 1700000000) + VarintField(2, 123456789)) + VarintField(5, 0);
  const json object = DecodeProtobufObject(Envelope("coordination.k8s.io/v1", "Lease", Meta("l") + Field(2, spec)),
                                           "coordination.k8s.io/v1", "Lease");
  EXPECT_EQ(object["spec"], json::parse(R"({"holderIdentity":"holder","leaseDurationSeconds":15,
      "renewTime":"2023-11-14T22:13:20.123456Z","leaseTransitions":0})"));
}

TEST(ProtobufBodyTest, EventTimesAndReportingFieldsWithoutOmitempty) {
  const std::string raw = Meta("e") + Field(2, Field(1, "Pod") + Field(3, "p")) + Field(3, "Started") +
                          Field(5, Field(1, "kubelet")) + Field(6, VarintField(1, 0)) + Field(7, "") +
                          VarintField(8, 2) + Field(9, "Normal") + Field(10, "");
  EXPECT_EQ(DecodeProtobufObject(Envelope("v1", "Event", raw), "v1", "Event"),
            json::parse(R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","creationTimestamp":null},
                "involvedObject":{"kind":"Pod","name":"p"},"reason":"Started","source":{"component":"kubelet"},
                "firstTimestamp":"1970-01-01T00:00:00Z","lastTimestamp":null,"count":2,"type":"Normal",
                "eventTime":null,"reportingComponent":"","reportingInstance":""})"));
}

TEST(ProtobufBodyTest, PodSpecInlinesProbeHandlersVolumeSourcesAndKeySelectors) {
  const std::string probe =
      Field(1, Field(2, Field(1, "/healthz") + Field(2, VarintField(1, 0) + VarintField(2, 8080)))) + VarintField(2, 5);
  const std::string env =
      Field(1, "TOKEN") + Field(3, Field(4, Field(1, Field(1, "creds")) + Field(2, "token") + VarintField(3, 1)));
  const std::string resources = MapEntry(1, "nvidia.com/gpu", Field(1, "1")) + MapEntry(2, "cpu", Field(1, "500m"));
  const std::string container = Field(1, "main") + Field(2, "busybox") + Field(3, "sleep") + Field(4, "60") +
                                Field(7, env) + Field(8, resources) + Field(10, probe) +
                                Field(15, VarintField(2, 0) + Field(1, Field(2, "ALL")));
  const std::string volume =
      Field(1, "cfg") + Field(2, Field(19, Field(1, Field(1, "app-config")) + VarintField(3, 420)));
  const std::string pod_spec =
      Field(1, volume) + Field(2, container) + Field(3, "Never") + VarintField(11, 1) + MapEntry(7, "disk", "ssd");
  const json object = DecodeProtobufObject(Envelope("v1", "Pod", Meta("p") + Field(2, pod_spec)), "v1", "Pod");
  EXPECT_EQ(object["spec"], json::parse(R"({
      "volumes":[{"name":"cfg","configMap":{"name":"app-config","defaultMode":420}}],
      "containers":[{"name":"main","image":"busybox","command":["sleep"],"args":["60"],
        "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"creds","key":"token","optional":true}}}],
        "resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"cpu":"500m"}},
        "livenessProbe":{"httpGet":{"path":"/healthz","port":8080},"initialDelaySeconds":5},
        "securityContext":{"privileged":false,"capabilities":{"drop":["ALL"]}}}],
      "restartPolicy":"Never","hostNetwork":true,"nodeSelector":{"disk":"ssd"}})"));
  EXPECT_EQ(object["status"], json::object());
}

TEST(ProtobufBodyTest, DeploymentWithoutSelectorWritesNull) {
  const std::string spec = Field(3, Field(1, Field(1, "")) + Field(2, Field(2, Field(1, "c"))));
  const json object =
      DecodeProtobufObject(Envelope("apps/v1", "Deployment", Meta("d") + Field(2, spec)), "apps/v1", "Deployment");
  EXPECT_TRUE(object["spec"]["selector"].is_null());
  EXPECT_EQ(object["spec"]["template"]["spec"]["containers"], json::parse(R"([{"name":"c","resources":{}}])"));
  EXPECT_EQ(object["spec"]["strategy"], json::object());
}

TEST(ProtobufBodyTest, RepeatedPiecesOfOneMessageMergeAsProtobufDoes) {
  const std::string raw = Field(1, Field(1, "first")) + Field(1, MapEntry(11, "a", "b")) + Field(1, Field(1, "last"));
  const json object = DecodeProtobufObject(Envelope("v1", "ConfigMap", raw), "v1", "ConfigMap");
  EXPECT_EQ(object["metadata"], json::parse(R"({"name":"last","labels":{"a":"b"},"creationTimestamp":null})"));
}

TEST(ProtobufBodyTest, PackedAndUnpackedRepeatedIntegersBothDecode) {
  const std::string packed = Field(4, Varint(1000) + Varint(2000));
  const std::string unpacked = VarintField(4, 3000);
  const std::string pod_spec = Field(14, packed + unpacked);
  const json object = DecodeProtobufObject(Envelope("v1", "Pod", Field(2, pod_spec)), "v1", "Pod");
  EXPECT_EQ(object["spec"]["securityContext"]["supplementalGroups"], json::parse("[1000,2000,3000]"));
}

TEST(ProtobufBodyTest, NegativeInt64IsTenByteTwosComplement) {
  const std::string raw = Meta("ns", VarintField(7, static_cast<std::uint64_t>(-5)));
  EXPECT_EQ(DecodeProtobufObject(Envelope("v1", "Namespace", raw), "v1", "Namespace")["metadata"]["generation"], -5);
}

TEST(ProtobufBodyTest, EnvelopeWithoutTypeMetaTakesTheUrlsKind) {
  const std::string body = std::string("k8s\0", 4) + Field(2, Meta("ml"));
  const json object = DecodeProtobufObject(body, "v1", "Namespace");
  EXPECT_EQ(object["kind"], "Namespace");
  EXPECT_EQ(object["apiVersion"], "v1");
  EXPECT_EQ(object["metadata"]["name"], "ml");
}

TEST(ProtobufBodyTest, ListsTheKindsItDecodes) {
  const std::vector<std::string> kinds = ProtobufDecodableKinds();
  for (const char* expected :
       {"v1 Namespace", "v1 Secret", "v1 ConfigMap", "v1 ServiceAccount", "authentication.k8s.io/v1 TokenRequest",
        "rbac.authorization.k8s.io/v1 Role", "apps/v1 Deployment", "coordination.k8s.io/v1 Lease"}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), expected), kinds.end()) << expected;
  }
}

// ---- DeleteOptions and Eviction, as kubectl drain sends them.

// kubectl drain node-b --disable-eviction --force --grace-period=3 (kubectl v1.32.4, -v=8 dump).
TEST(ProtobufDeleteOptionsTest, KubectlDrainsDeleteBodyDecodes) {
  const std::string body = Unhex("6b3873000a130a027631120d44656c6574654f7074696f6e73120208031a002200");
  EXPECT_EQ(DecodeProtobufDeleteOptions(body),
            json::parse(R"({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 3})"));
}

TEST(ProtobufDeleteOptionsTest, EveryFieldWithPointersKeepingZeroValues) {
  const std::string raw = VarintField(1, 0) + Field(2, Field(1, "u-1") + Field(2, "")) + VarintField(3, 0) +
                          Field(4, "Foreground") + Field(5, "All");
  EXPECT_EQ(DecodeProtobufDeleteOptions(Envelope("meta.k8s.io/v1", "DeleteOptions", raw)),
            json::parse(R"({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                            "preconditions": {"uid": "u-1", "resourceVersion": ""}, "orphanDependents": false,
                            "propagationPolicy": "Foreground", "dryRun": ["All"]})"));
}

TEST(ProtobufDeleteOptionsTest, AnyApiVersionDecodesButNotAnotherKind) {
  const json options = DecodeProtobufDeleteOptions(Envelope("policy/v1", "DeleteOptions", VarintField(1, 5)));
  EXPECT_EQ(options["gracePeriodSeconds"], 5);
  try {
    DecodeProtobufDeleteOptions(Envelope("v1", "Pod", ""));
    ADD_FAILURE() << "a Pod decoded as DeleteOptions";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 400);
    EXPECT_EQ(error.message, "the kind in the data (Pod) does not match the expected kind (DeleteOptions)");
  }
}

// The Eviction kubectl drain posts (it sends JSON today; client-go's protobuf form of the same).
TEST(ProtobufEvictionTest, MetadataAndDeleteOptionsDecodeToTheJsonForm) {
  const std::string raw = Field(1, Field(1, "q") + Field(3, "default")) + Field(2, VarintField(1, 3));
  EXPECT_EQ(DecodeProtobufEviction(Envelope("policy/v1", "Eviction", raw)),
            json::parse(R"({"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": "q", "namespace": "default", "creationTimestamp": null},
                            "deleteOptions": {"gracePeriodSeconds": 3}})"));
  const json bare = DecodeProtobufEviction(Envelope("policy/v1beta1", "Eviction", Field(1, Field(1, "q"))));
  EXPECT_EQ(bare["apiVersion"], "policy/v1beta1");
  EXPECT_FALSE(bare.contains("deleteOptions"));
}

TEST(ProtobufEvictionTest, AnotherApiVersionIsRefusedAsForAJsonEviction) {
  try {
    DecodeProtobufEviction(Envelope("v1", "Eviction", ""));
    ADD_FAILURE() << "a v1 Eviction decoded";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 400);
    EXPECT_EQ(error.message, "the API version in the data (v1) does not match the expected API version (policy/v1)");
  }
}

// ---- Refusals.

TEST(ProtobufBodyTest, KindWithoutATableIs415NamingItAndTheDecodedKinds) {
  const auto error = ErrorOf(Envelope("v1", "Node", Meta("n")), "v1", "Node");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, 415);
  EXPECT_EQ(error->reason, "UnsupportedMediaType");
  EXPECT_NE(error->message.find("does not decode Node (v1)"), std::string::npos) << error->message;
  EXPECT_NE(error->message.find("v1 Namespace"), std::string::npos) << error->message;
  EXPECT_NE(error->message.find("application/json"), std::string::npos) << error->message;
}

TEST(ProtobufBodyTest, VolumeSourceWithoutATableIs415NamingThePath) {
  const std::string volume = Field(1, "data") + Field(2, Field(9, Field(1, "ep") + Field(2, "/x")));
  const auto error = ErrorOf(Envelope("v1", "Pod", Field(2, Field(1, volume))), "v1", "Pod");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, 415);
  EXPECT_NE(error->message.find("spec.volumes[0].glusterfs (field 9 of k8s.io.api.core.v1.VolumeSource)"),
            std::string::npos)
      << error->message;
}

TEST(ProtobufBodyTest, UnknownFieldNumberIs400NamingKindMessageAndNumber) {
  const auto error = ErrorOf(Envelope("v1", "Namespace", Field(2, Field(7, "x"))), "v1", "Namespace");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, 400);
  EXPECT_EQ(error->message,
            "the protobuf Namespace has field 7 in k8s.io.api.core.v1.NamespaceSpec at spec, which is not a field "
            "of that message in Kubernetes 1.32 as devcluster knows it");
}

struct MalformedCase {
  const char* name;  // a C identifier: it names the test
  std::string body;
  const char* message_part;
};
void PrintTo(const MalformedCase& c, std::ostream* out) { *out << c.name; }
std::string CaseName(const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; }

class MalformedBodyTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedBodyTest, Is400WithAClearMessage) {
  const MalformedCase& c = GetParam();
  const auto error = ErrorOf(c.body, "v1", "Namespace");
  ASSERT_TRUE(error) << c.name;
  EXPECT_EQ(error->code, 400) << c.name << ": " << error->message;
  EXPECT_NE(error->message.find(c.message_part), std::string::npos) << c.name << ": " << error->message;
}

const std::string kNamespace = Envelope("v1", "Namespace", Meta("ml"));

INSTANTIATE_TEST_SUITE_P(
    Bodies, MalformedBodyTest,
    ::testing::Values(
        MalformedCase{"Empty", "", "must start with the 4 bytes"},
        MalformedCase{"Json", R"({"kind":"Namespace"})", "must start with the 4 bytes"},
        MalformedCase{"Truncated", kNamespace.substr(0, kNamespace.size() - 5), "runs past the end"},
        MalformedCase{"HugeLength", std::string("k8s\0", 4) + Varint(18) + Varint(UINT64_MAX >> 1),
                      "runs past the end"},
        MalformedCase{"TruncatedVarint", Envelope("v1", "Namespace", Field(1, "\x38\xff")), "varint is truncated"},
        MalformedCase{"FieldZero", Envelope("v1", "Namespace", std::string("\x00\x00", 2)), "names field 0"},
        MalformedCase{"WrongWireType", Envelope("v1", "Namespace", VarintField(1, 3)),
                      "at metadata: wire type 0 (varint) where the field has 2 (length-delimited)"},
        MalformedCase{"StringInAVarintField", Envelope("v1", "Namespace", Field(1, Field(7, "x"))),
                      "at metadata.generation: wire type 2"},
        MalformedCase{"GroupWireType", Envelope("v1", "Namespace", Varint((1 << 3) | 3)), "wire type 3"},
        MalformedCase{"BadUtf8", Envelope("v1", "Namespace", Field(1, Field(1, "\xc3\x28"))),
                      "at metadata.name: a string is not valid UTF-8"},
        MalformedCase{"KindMismatch", Envelope("v1", "Secret", Meta("s")),
                      "the kind in the data (Secret) does not match the expected kind (Namespace)"},
        MalformedCase{"ApiVersionMismatch", Envelope("apps/v1", "Namespace", Meta("s")),
                      "the API version in the data (apps/v1) does not match the expected API version (v1)"},
        MalformedCase{"ContentEncoding", kNamespace + Field(3, "gzip"), "contentEncoding \"gzip\""},
        MalformedCase{"UnknownEnvelopeField", kNamespace + Field(9, "x"), "envelope"},
        MalformedCase{"TimeOutOfRange", Envelope("v1", "Namespace", Field(1, Field(8, VarintField(1, 253402300800)))),
                      "outside the years 0001 to 9999"},
        MalformedCase{"UnknownTimestampField", Envelope("v1", "Namespace", Field(1, Field(8, VarintField(3, 1)))),
                      "field 3 in k8s.io.apimachinery.pkg.apis.meta.v1.Time at metadata.creationTimestamp"},
        MalformedCase{"MapEntryWithField3", Envelope("v1", "Namespace", Field(1, Field(11, Field(3, "x")))),
                      "entries have only key (1) and value (2)"}),
    CaseName);

TEST(ProtobufBodyTest, Int32OverflowIsRefused) {
  const std::string port = VarintField(3, 1ULL << 40);
  const auto error = ErrorOf(Envelope("v1", "Service", Field(2, Field(1, port))), "v1", "Service");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, 400);
  EXPECT_NE(error->message.find("spec.ports[0].port: 1099511627776 does not fit the field's int32"), std::string::npos)
      << error->message;
}

TEST(ProtobufBodyTest, BadQuantityIsRefusedInParseQuantitysWords) {
  const std::string resources = MapEntry(1, "cpu", Field(1, "1.5.3"));
  const std::string container = Field(1, "c") + Field(8, resources);
  const auto error = ErrorOf(Envelope("v1", "Pod", Field(2, Field(2, container))), "v1", "Pod");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, 400);
  EXPECT_NE(error->message.find("quantities must match the regular expression"), std::string::npos) << error->message;
}

TEST(ProtobufBodyTest, IntOrStringWithAnUnknownTypeIsRefused) {
  const std::string port = VarintField(3, 80) + Field(4, VarintField(1, 2));
  const auto error = ErrorOf(Envelope("v1", "Service", Field(2, Field(1, port))), "v1", "Service");
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("IntOrString type 2"), std::string::npos) << error->message;
}

// Regression guard for hostile input: every prefix of a real body, and every single-byte change to
// it, either decodes or is refused with an ApiError; nothing else escapes.
TEST(ProtobufBodyTest, EveryTruncationAndByteFlipOfARealBodyIsDecodedOrRefused) {
  const std::string body = Unhex(
      "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b0010a1b0a016412001a0022002a00320038004200"
      "5a080a036170701201641282010802120a0a080a036170701201641a6a0a1a0a0012001a0022002a003200380042005a"
      "080a03617070120164124c122e0a056e67696e7812056e67696e782a00320a0a001000185022002a0042006a0072008001"
      "00880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c08"
      "00100018002000280038001a002200");
  ASSERT_NO_THROW(DecodeProtobufObject(body, "apps/v1", "Deployment"));
  for (std::size_t length = 0; length < body.size(); ++length) {
    try {
      DecodeProtobufObject(body.substr(0, length), "apps/v1", "Deployment");
    } catch (const ApiError&) {
    }
  }
  for (std::size_t i = 4; i < body.size(); ++i) {
    for (const unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string changed = body;
      changed[i] = static_cast<char>(static_cast<unsigned char>(changed[i]) ^ flip);
      try {
        DecodeProtobufObject(changed, "apps/v1", "Deployment");
      } catch (const ApiError&) {
      }
    }
  }
}

}  // namespace
}  // namespace ringleader::devcluster
