// Tests for TrainingJob validation: each rule accepted at its boundary and rejected past it, with
// an error that names the exact field path and the bad value; the shipped examples pass clean.
#include "operator/api/validation.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"
#include "tests/operator/api/field_error_matchers.h"
#include "sidecar/contract/contract.h"

namespace ringleader::api {
namespace {

using nlohmann::json;
using testing::ErrorAt;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr std::int64_t kGi = std::int64_t{1} << 30;

std::vector<std::string> Strings(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const FieldError& error : errors) {
    out.push_back(error.ToString());
  }
  return out;
}

json ValidJob() {
  return ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: demo, namespace: default}
spec:
  replicas: 4
  template:
    spec:
      containers:
        - name: trainer
          image: ringleader/example-trainer:0.1.0
          env: [{name: NCCL_DEBUG, value: INFO}]
          ports: [{containerPort: 8080}]
)");
}

std::vector<std::string> Check(const json& object, const ValidationOptions& options = {}) {
  TrainingJob job;
  return Strings(ParseAndValidate(object, options, &job));
}

// ValidJob() with one value replaced (or added) at a JSON pointer.
json With(const std::string& pointer, const json& value) {
  json object = ValidJob();
  object[json::json_pointer(pointer)] = value;
  return object;
}

json Without(const std::string& pointer) {
  json object = ValidJob();
  const json::json_pointer where(pointer);
  object[where.parent_pointer()].erase(where.back());
  return object;
}

constexpr const char* kContainer = "/spec/template/spec/containers/0";
constexpr const char* kContainerPath = "spec.template.spec.containers[0]";
constexpr const char* kPod = "/spec/template/spec";

TEST(ValidationTest, ValidJobHasNoErrors) {
  EXPECT_THAT(Check(ValidJob()), IsEmpty());
}

// Without the profiler plugin nothing detects a stall, so a restart on one would never come.
TEST(ValidationTest, RestartOnStallNeedsTelemetry) {
  json object = With("/spec/communication/telemetry/onStall", "Restart");
  EXPECT_THAT(Check(object), IsEmpty());
  object["spec"]["communication"]["telemetry"]["enabled"] = false;
  EXPECT_THAT(Check(object), ElementsAre(ErrorAt("spec.communication.telemetry.onStall",
                                                 "Restart needs spec.communication.telemetry.enabled true")));
  EXPECT_THAT(Check(With("/spec/communication/telemetry/enabled", false)), IsEmpty()) << "Report needs nothing";
}

TEST(ValidationTest, ExamplesValidateClean) {
  int documents = 0;
  for (const auto& entry : std::filesystem::directory_iterator("examples")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (const json& object : ringleader::yaml::ParseYamlDocuments(text)) {
      EXPECT_THAT(Check(object), IsEmpty());
      ++documents;
    }
  }
  EXPECT_GE(documents, 3);
}

struct RuleCase {
  std::string name;
  std::string pointer;
  json value;
  std::string expected;  // one error's full ToString(); empty when the value must pass
};

void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.pointer << " = " << c.value.dump(); }

std::string CaseName(const ::testing::TestParamInfo<RuleCase>& info) { return info.param.name; }

class ValidationRangeRejectTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ValidationRangeRejectTest, NamesThePathAndTheBadValue) {
  EXPECT_THAT(Check(With(GetParam().pointer, GetParam().value)), Contains(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Ranges, ValidationRangeRejectTest,
    ::testing::Values(
        RuleCase{"ReplicasZero", "/spec/replicas", 0, "spec.replicas: must be at least 1, got 0"},
        RuleCase{"ReplicasNegative", "/spec/replicas", -1,
                 "spec.replicas: must be at least 1, got -1"},
        RuleCase{"ReplicasAboveMax", "/spec/replicas", 16385,
                 "spec.replicas: must be at most 16384, got 16385"},
        RuleCase{"GpusNegative", "/spec/gpusPerReplica", -1,
                 "spec.gpusPerReplica: must be at least 0, got -1"},
        RuleCase{"GpusAboveMax", "/spec/gpusPerReplica", 65,
                 "spec.gpusPerReplica: must be at most 64, got 65"},
        RuleCase{"ProcessesZero", "/spec/processesPerReplica", 0,
                 "spec.processesPerReplica: must be at least 1, got 0"},
        RuleCase{"ProcessesAboveMax", "/spec/processesPerReplica", 257,
                 "spec.processesPerReplica: must be at most 256, got 257"},
        RuleCase{"MinBytesBelowOneElement", "/spec/communication/preflight/minBytes", 3,
                 "spec.communication.preflight.minBytes: must be at least 4, got 3"},
        RuleCase{"MinBytesAboveMax", "/spec/communication/preflight/minBytes",
                 "17179869185",
                 "spec.communication.preflight.minBytes: must be at most 17179869184, got "
                 "17179869185"},
        RuleCase{"MaxBytesBelowOneElement", "/spec/communication/preflight/maxBytes", "3",
                 "spec.communication.preflight.maxBytes: must be at least 4, got 3"},
        RuleCase{"MaxBytes32Gi", "/spec/communication/preflight/maxBytes", "32Gi",
                 "spec.communication.preflight.maxBytes: must be at most 17179869184, got "
                 "34359738368"},
        RuleCase{"StepFactorOne", "/spec/communication/preflight/stepFactor", 1,
                 "spec.communication.preflight.stepFactor: must be at least 2, got 1"},
        RuleCase{"StepFactorAboveMax", "/spec/communication/preflight/stepFactor", 1025,
                 "spec.communication.preflight.stepFactor: must be at most 1024, got 1025"},
        RuleCase{"TimeoutZero", "/spec/communication/preflight/timeoutSeconds", 0,
                 "spec.communication.preflight.timeoutSeconds: must be at least 1, got 0"},
        RuleCase{"TimeoutAboveADay", "/spec/communication/preflight/timeoutSeconds", 86401,
                 "spec.communication.preflight.timeoutSeconds: must be at most 86400, got 86401"},
        RuleCase{"StallSecondsNine", "/spec/communication/telemetry/stallSeconds", 9,
                 "spec.communication.telemetry.stallSeconds: must be at least 10, got 9"},
        RuleCase{"StallSecondsAboveADay", "/spec/communication/telemetry/stallSeconds", 86401,
                 "spec.communication.telemetry.stallSeconds: must be at most 86400, got 86401"},
        RuleCase{"IntervalFour", "/spec/communication/monitor/intervalSeconds", 4,
                 "spec.communication.monitor.intervalSeconds: must be at least 5, got 4"},
        RuleCase{"IntervalAboveADay", "/spec/communication/monitor/intervalSeconds", 86401,
                 "spec.communication.monitor.intervalSeconds: must be at most 86400, got 86401"},
        RuleCase{"MessageBytesBelowOneElement", "/spec/communication/monitor/messageBytes", 3,
                 "spec.communication.monitor.messageBytes: must be at least 4, got 3"},
        RuleCase{"MessageBytes2Gi", "/spec/communication/monitor/messageBytes", "2Gi",
                 "spec.communication.monitor.messageBytes: must be at most 1073741824, got "
                 "2147483648"},
        RuleCase{"BackoffNegative", "/spec/runPolicy/backoffLimit", -1,
                 "spec.runPolicy.backoffLimit: must be at least 0, got -1"},
        RuleCase{"BackoffAboveMax", "/spec/runPolicy/backoffLimit", 1001,
                 "spec.runPolicy.backoffLimit: must be at most 1000, got 1001"},
        RuleCase{"DeadlineZero", "/spec/runPolicy/activeDeadlineSeconds", 0,
                 "spec.runPolicy.activeDeadlineSeconds: must be at least 1, got 0"},
        RuleCase{"DeadlineAboveMax", "/spec/runPolicy/activeDeadlineSeconds",
                 (std::int64_t{1} << 40) + 1,
                 "spec.runPolicy.activeDeadlineSeconds: must be at most 1099511627776, got "
                 "1099511627777"},
        RuleCase{"TtlNegative", "/spec/runPolicy/ttlSecondsAfterFinished", -1,
                 "spec.runPolicy.ttlSecondsAfterFinished: must be at least 0, got -1"},
        RuleCase{"TtlAboveMax", "/spec/runPolicy/ttlSecondsAfterFinished",
                 std::int64_t{1} << 31,
                 "spec.runPolicy.ttlSecondsAfterFinished: must be at most 2147483647, got "
                 "2147483648"}),
    CaseName);

class ValidationRangeAcceptTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ValidationRangeAcceptTest, AcceptsTheBoundary) {
  EXPECT_THAT(Check(With(GetParam().pointer, GetParam().value)), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Boundaries, ValidationRangeAcceptTest,
    ::testing::Values(
        RuleCase{"ReplicasOne", "/spec/replicas", 1, ""},
        RuleCase{"ReplicasMax", "/spec/replicas", 16384, ""},
        RuleCase{"GpusZero", "/spec/gpusPerReplica", 0, ""},
        RuleCase{"GpusMax", "/spec/gpusPerReplica", 64, ""},
        RuleCase{"ProcessesOne", "/spec/processesPerReplica", 1, ""},
        RuleCase{"ProcessesMax", "/spec/processesPerReplica", 256, ""},
        RuleCase{"MinBytesOneElement", "/spec/communication/preflight/minBytes", 4, ""},
        RuleCase{"MaxBytes16Gi", "/spec/communication/preflight/maxBytes", "16Gi", ""},
        RuleCase{"MinBytesEqualsMaxBytes", "/spec/communication/preflight/minBytes", "64Mi", ""},
        RuleCase{"MinBusBandwidthZero", "/spec/communication/preflight/minBusBandwidth", 0, ""},
        RuleCase{"MinBusBandwidthHigh", "/spec/communication/preflight/minBusBandwidth", "900G",
                 ""},
        RuleCase{"StepFactorTwo", "/spec/communication/preflight/stepFactor", 2, ""},
        RuleCase{"StepFactorMax", "/spec/communication/preflight/stepFactor", 1024, ""},
        RuleCase{"TimeoutOne", "/spec/communication/preflight/timeoutSeconds", 1, ""},
        RuleCase{"TimeoutADay", "/spec/communication/preflight/timeoutSeconds", 86400, ""},
        RuleCase{"StallSecondsTen", "/spec/communication/telemetry/stallSeconds", 10, ""},
        RuleCase{"StallSecondsADay", "/spec/communication/telemetry/stallSeconds", 86400, ""},
        RuleCase{"IntervalFive", "/spec/communication/monitor/intervalSeconds", 5, ""},
        RuleCase{"IntervalADay", "/spec/communication/monitor/intervalSeconds", 86400, ""},
        RuleCase{"MessageBytesOneElement", "/spec/communication/monitor/messageBytes", 4, ""},
        RuleCase{"MessageBytes1Gi", "/spec/communication/monitor/messageBytes", "1Gi", ""},
        RuleCase{"BackoffZero", "/spec/runPolicy/backoffLimit", 0, ""},
        RuleCase{"BackoffMax", "/spec/runPolicy/backoffLimit", 1000, ""},
        RuleCase{"DeadlineOne", "/spec/runPolicy/activeDeadlineSeconds", 1, ""},
        RuleCase{"DeadlineMax", "/spec/runPolicy/activeDeadlineSeconds", std::int64_t{1} << 40,
                 ""},
        RuleCase{"TtlZero", "/spec/runPolicy/ttlSecondsAfterFinished", 0, ""},
        RuleCase{"TtlMax", "/spec/runPolicy/ttlSecondsAfterFinished", (std::int64_t{1} << 31) - 1, ""},
        RuleCase{"BackendGlooWithoutGpus", "/spec/communication/backend", "gloo", ""},
        RuleCase{"BackendAutoWithoutGpus", "/spec/communication/backend", "auto", ""},
        RuleCase{"RestartPolicyNever", "/spec/template/spec/restartPolicy", "Never", ""},
        RuleCase{"SuspendedJob", "/spec/runPolicy/suspend", true, ""}),
    CaseName);

TEST(ValidationTest, SingleBadValueGivesExactlyOneError) {
  EXPECT_THAT(Check(With("/spec/replicas", 0)),
              ElementsAre("spec.replicas: must be at least 1, got 0"));
  EXPECT_THAT(Check(With("/spec/communication/preflight/stepFactor", 1)),
              ElementsAre("spec.communication.preflight.stepFactor: must be at least 2, got 1"));
}

TEST(ValidationTest, MetadataNameIsRequired) {
  EXPECT_THAT(Check(Without("/metadata/name")), ElementsAre("metadata.name: is required"));
}

TEST(ValidationTest, MetadataNameMustBeADnsLabel) {
  for (const std::string& name : std::vector<std::string>{
           "Demo_Job", "DEMO", "1demo", "-demo", "demo-", "de.mo", "de mo", std::string(64, 'a')}) {
    SCOPED_TRACE(name);
    EXPECT_THAT(Check(With("/metadata/name", name)),
                ElementsAre(ErrorAt("metadata.name", "must be a DNS label")));
    EXPECT_THAT(Check(With("/metadata/name", name)),
                ElementsAre(HasSubstr("got \"" + name + "\"")));
  }
}

TEST(ValidationTest, MetadataNameAcceptsDnsLabels) {
  for (const std::string name : {"a", "demo", "demo-2", "a1-b2", "llama-finetune"}) {
    EXPECT_THAT(Check(With("/metadata/name", name)), IsEmpty()) << name;
  }
}

// Pods are named <name>-<rank>, and that is also their 63-character DNS hostname.
TEST(ValidationTest, NameLeavesRoomForTheLargestRankSuffix) {
  json object = With("/metadata/name", std::string(61, 'a'));
  object["spec"]["replicas"] = 10;  // ranks 0..9: "-9" needs 2 characters
  EXPECT_THAT(Check(object), IsEmpty());
  object["spec"]["replicas"] = 11;  // "-10" needs 3
  EXPECT_THAT(Check(object),
              ElementsAre("metadata.name: must be at most 60 characters so Pod hostnames "
                          "<name>-<rank> fit in 63, got 61"));
  object["metadata"]["name"] = std::string(62, 'a');
  object["spec"]["replicas"] = 1;
  EXPECT_THAT(Check(object), ElementsAre(ErrorAt("metadata.name", "at most 61 characters")));
}

TEST(ValidationTest, TemplateIsRequired) {
  EXPECT_THAT(Check(Without("/spec/template")),
              ElementsAre(ErrorAt("spec.template", "is required")));
  EXPECT_THAT(Check(With("/spec/template", json::object())),
              ElementsAre(ErrorAt("spec.template", "is required")));
}

TEST(ValidationTest, TemplateNeedsAPodSpec) {
  EXPECT_THAT(Check(With("/spec/template", {{"metadata", {{"labels", {{"a", "b"}}}}}})),
              ElementsAre(ErrorAt("spec.template.spec", "is required")));
  EXPECT_THAT(Check(With("/spec/template/spec", "containers")),
              ElementsAre(ErrorAt("spec.template.spec", "is required")));
}

TEST(ValidationTest, TemplateNeedsATrainerContainer) {
  for (const json& containers : {json::array(), json("trainer"), json::object()}) {
    EXPECT_THAT(Check(With("/spec/template/spec/containers", containers)),
                ElementsAre(ErrorAt("spec.template.spec.containers", "at least one")))
        << containers.dump();
  }
  EXPECT_THAT(Check(Without("/spec/template/spec/containers")),
              ElementsAre(ErrorAt("spec.template.spec.containers", "at least one")));
}

TEST(ValidationTest, ContainerMustBeAnObject) {
  EXPECT_THAT(Check(With("/spec/template/spec/containers", json::array({"trainer"}))),
              ElementsAre(ErrorAt(kContainerPath, "\"trainer\"")));
}

TEST(ValidationTest, ContainerNeedsANameAndAnImage) {
  const std::string name = std::string(kContainerPath) + ".name";
  const std::string image = std::string(kContainerPath) + ".image";
  EXPECT_THAT(Check(Without(std::string(kContainer) + "/name")),
              ElementsAre(name + ": is required"));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/name", "")),
              ElementsAre(name + ": is required"));
  EXPECT_THAT(Check(Without(std::string(kContainer) + "/image")),
              ElementsAre(image + ": is required"));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/image", "")),
              ElementsAre(image + ": is required"));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/image", 5)),
              ElementsAre(image + ": is required"));
}

TEST(ValidationTest, ContainerMayNotUseTheSidecarName) {
  json object = ValidJob();
  object["spec"]["template"]["spec"]["containers"].push_back(
      {{"name", "ringleader-sidecar"}, {"image", "x"}});
  EXPECT_THAT(Check(object), ElementsAre(ErrorAt("spec.template.spec.containers[1].name",
                                                 "\"ringleader-sidecar\"")));
}

// The operator injects its sidecar as a native sidecar in initContainers, so a user init
// container of that name collides with it (and plan.cc would read its status as the sidecar's).
TEST(ValidationTest, InitContainerMayNotUseTheSidecarName) {
  const json object = With("/spec/template/spec/initContainers",
                           json::array({{{"name", "ringleader-sidecar"}, {"image", "x"}}}));
  EXPECT_THAT(Check(object), Contains(ErrorAt("spec.template.spec.initContainers[0].name",
                                              "ringleader-sidecar")));
}

// The preflight init container is injected as well (last in initContainers).
TEST(ValidationTest, NoContainerMayUseThePreflightName) {
  json object = ValidJob();
  object["spec"]["template"]["spec"]["containers"].push_back(
      {{"name", "ringleader-preflight"}, {"image", "x"}});
  object["spec"]["template"]["spec"]["initContainers"] =
      json::array({{{"name", "setup"}, {"image", "x"}}, {{"name", "ringleader-preflight"}, {"image", "x"}}});
  EXPECT_THAT(Check(object),
              ElementsAre(ErrorAt("spec.template.spec.containers[1].name",
                                  "\"ringleader-preflight\" is the name of a container ringleader injects"),
                          ErrorAt("spec.template.spec.initContainers[1].name",
                                  "\"ringleader-preflight\" is the name of a container ringleader injects")));
}

TEST(ValidationTest, ReservedEnvNamesAreRejected) {
  std::vector<std::string> reserved(contract::env::kReservedTrainerEnv.begin(),
                                    contract::env::kReservedTrainerEnv.end());
  reserved.insert(reserved.end(), {"RINGLEADER_ANYTHING", "RINGLEADER_RANK", "RINGLEADER_"});
  for (const std::string& name : reserved) {
    SCOPED_TRACE(name);
    json object = ValidJob();
    object["spec"]["template"]["spec"]["containers"][0]["env"].push_back(
        {{"name", name}, {"value", "1"}});
    EXPECT_THAT(Check(object),
                ElementsAre(ErrorAt(std::string(kContainerPath) + ".env[1].name",
                                    name + " is set by ringleader")));
  }
}

TEST(ValidationTest, ReservedEnvNameInASecondContainerNamesThatContainer) {
  json object = ValidJob();
  object["spec"]["template"]["spec"]["containers"].push_back(
      {{"name", "helper"}, {"image", "x"}, {"env", {{{"name", "WORLD_SIZE"}, {"value", "8"}}}}});
  EXPECT_THAT(Check(object), ElementsAre(ErrorAt("spec.template.spec.containers[1].env[0].name",
                                                 "WORLD_SIZE")));
}

TEST(ValidationTest, SimilarEnvNamesAreAllowed) {
  for (const std::string name : {"MY_MASTER_ADDR", "master_addr", "RANKS", "RINGLEADER",
                                 "XRINGLEADER_A", "ringleader_x", "NCCL_SOCKET_IFNAME"}) {
    EXPECT_THAT(Check(With(std::string(kContainer) + "/env/0/name", name)), IsEmpty()) << name;
  }
}

TEST(ValidationTest, EnvMustBeAListOfNamedEntries) {
  const std::string env = std::string(kContainerPath) + ".env";
  EXPECT_THAT(Check(With(std::string(kContainer) + "/env", "A=B")),
              ElementsAre(ErrorAt(env, "\"A=B\"")));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/env/0", {{"value", "x"}})),
              ElementsAre(env + "[0].name: is required"));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/env/0", "MASTER_ADDR")),
              ElementsAre(env + "[0].name: is required"));
}

TEST(ValidationTest, PortsMustBeValidPortNumbers) {
  const std::string port = std::string(kContainerPath) + ".ports[0]";
  for (const std::int64_t value : {0, -1, 65536, 70000}) {
    EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/containerPort", value)),
                ElementsAre(port + ".containerPort: must be between 1 and 65535, got " +
                            std::to_string(value)));
    EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/hostPort", value)),
                ElementsAre(port + ".hostPort: must be between 1 and 65535, got " +
                            std::to_string(value)));
  }
}

TEST(ValidationTest, PortsInTheOperatorRangeAreRejected) {
  const std::string port = std::string(kContainerPath) + ".ports[0]";
  for (const std::int64_t value : {61000, 63000, 65535}) {
    SCOPED_TRACE(value);
    EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/containerPort", value)),
                ElementsAre(AllOf(ErrorAt(port + ".containerPort", "61000-65535"),
                                  HasSubstr("got " + std::to_string(value)))));
    EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/hostPort", value)),
                ElementsAre(AllOf(ErrorAt(port + ".hostPort", "61000-65535"),
                                  HasSubstr("got " + std::to_string(value)))));
  }
}

TEST(ValidationTest, PortsOutsideTheOperatorRangeAreFine) {
  for (const std::int64_t value : {1, 80, 8080, 60999}) {
    json object = With(std::string(kContainer) + "/ports/0/containerPort", value);
    object[json::json_pointer(std::string(kContainer) + "/ports/0/hostPort")] = value;
    EXPECT_THAT(Check(object), IsEmpty()) << value;
  }
}

TEST(ValidationTest, PortRangeComesFromTheOptions) {
  const ValidationOptions options{.port_range_first = 40000, .port_range_last = 40010};
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/containerPort", 40005), options),
              ElementsAre(AllOf(HasSubstr("40000-40010"), HasSubstr("got 40005"))));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/containerPort", 61000), options),
              IsEmpty());
}

TEST(ValidationTest, PortsMustBeIntegersInAList) {
  const std::string ports = std::string(kContainerPath) + ".ports";
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0/containerPort", "8080")),
              ElementsAre(ports + "[0].containerPort: must be an integer, got \"8080\""));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports/0", {{"name", "http"}})),
              ElementsAre(ports + "[0].containerPort: must be an integer, got null"));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports", "8080")),
              ElementsAre(ErrorAt(ports, "\"8080\"")));
  EXPECT_THAT(Check(With(std::string(kContainer) + "/ports", json::array({8080}))),
              ElementsAre(ErrorAt(ports + "[0]", "8080")));
}

TEST(ValidationTest, RestartPolicyMustBeNever) {
  for (const std::string policy : {"OnFailure", "Always"}) {
    EXPECT_THAT(Check(With(std::string(kPod) + "/restartPolicy", policy)),
                ElementsAre(AllOf(ErrorAt("spec.template.spec.restartPolicy", "must be Never"),
                                  HasSubstr("\"" + policy + "\""))));
  }
}

TEST(ValidationTest, PodFieldsTheOperatorOwnsAreRejected) {
  EXPECT_THAT(Check(With(std::string(kPod) + "/hostname", "h")),
              ElementsAre(ErrorAt("spec.template.spec.hostname", "set by ringleader")));
  EXPECT_THAT(Check(With(std::string(kPod) + "/subdomain", "s")),
              ElementsAre(ErrorAt("spec.template.spec.subdomain", "set by ringleader")));
  for (const bool host_network : {true, false}) {
    EXPECT_THAT(Check(With(std::string(kPod) + "/hostNetwork", host_network)),
                ElementsAre(ErrorAt("spec.template.spec.hostNetwork",
                                    "spec.networking.hostNetwork")));
  }
  EXPECT_THAT(Check(With("/spec/networking/hostNetwork", true)), IsEmpty());
}

TEST(ValidationTest, ReservedVolumeNamesAreRejected) {
  for (const std::string name : {"ringleader-token", "ringleader-run", "ringleader-profiler"}) {
    const json volumes = json::array({{{"name", "data"}, {"emptyDir", json::object()}},
                                      {{"name", name}, {"emptyDir", json::object()}}});
    EXPECT_THAT(Check(With(std::string(kPod) + "/volumes", volumes)),
                ElementsAre(ErrorAt("spec.template.spec.volumes[1].name", name)));
  }
  const json others = json::array({{{"name", "ringleader-data"}, {"emptyDir", json::object()}}});
  EXPECT_THAT(Check(With(std::string(kPod) + "/volumes", others)), IsEmpty());
}

TEST(ValidationTest, NcclNeedsGpus) {
  json object = With("/spec/communication/backend", "nccl");
  EXPECT_THAT(Check(object),
              ElementsAre("spec.communication.backend: nccl needs spec.gpusPerReplica of at "
                          "least 1"));
  object["spec"]["gpusPerReplica"] = 1;
  EXPECT_THAT(Check(object), IsEmpty());
}

TEST(ValidationTest, MinBytesMustNotExceedMaxBytes) {
  json object = With("/spec/communication/preflight", {{"minBytes", "64Mi"}, {"maxBytes", "1Mi"}});
  EXPECT_THAT(Check(object), ElementsAre("spec.communication.preflight.maxBytes: must be at least "
                                         "minBytes (64Mi), got 1Mi"));
  object["spec"]["communication"]["preflight"]["maxBytes"] = 64 << 20;
  EXPECT_THAT(Check(object), IsEmpty());
}

// minBusBandwidth has no range check, so an integer -5 (the CRD's quantity pattern only applies
// to strings) passes and reaches the sidecar as RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH=-5.
TEST(ValidationTest, MinBusBandwidthMustNotBeNegative) {
  EXPECT_THAT(Check(With("/spec/communication/preflight/minBusBandwidth", -5)),
              Contains(ErrorAt("spec.communication.preflight.minBusBandwidth", "-5")));
}

// The CRD lists replicas in spec.required; the C++ check promises the same rules.
TEST(ValidationTest, ReplicasIsRequiredAsInTheCrd) {
  EXPECT_THAT(Check(Without("/spec/replicas")), Contains(ErrorAt("spec.replicas", "required")));
}

TEST(ValidationTest, ReportsEveryProblemAtOnce) {
  json object = With("/spec/replicas", 0);
  object["spec"]["communication"]["preflight"]["stepFactor"] = 1;
  object["spec"]["template"]["spec"]["containers"][0].erase("image");
  object["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"] = "MASTER_ADDR";
  EXPECT_THAT(Check(object),
              UnorderedElementsAre("spec.replicas: must be at least 1, got 0",
                                   "spec.communication.preflight.stepFactor: must be at least 2, "
                                   "got 1",
                                   std::string(kContainerPath) + ".image: is required",
                                   ErrorAt(std::string(kContainerPath) + ".env[0].name",
                                           "MASTER_ADDR")));
}

TEST(ValidationTest, TypeErrorsAndRuleErrorsAreBothReported) {
  json object = With("/spec/replicas", "four");
  object["spec"]["gpusPerReplica"] = 65;
  EXPECT_THAT(Check(object),
              UnorderedElementsAre("spec.replicas: must be an integer, got \"four\"",
                                   "spec.gpusPerReplica: must be at most 64, got 65"));
}

TEST(ValidationTest, ParseAndValidateFillsTheJob) {
  TrainingJob job;
  EXPECT_THAT(ParseAndValidate(ValidJob(), ValidationOptions{}, &job), IsEmpty());
  EXPECT_EQ(job.metadata.name, "demo");
  EXPECT_EQ(job.spec.replicas, 4);
  EXPECT_EQ(job.spec.template_, ValidJob()["spec"]["template"]);
}

TEST(ValidationTest, ValidateAloneChecksATypedJob) {
  TrainingJob job;
  ASSERT_THAT(ParseAndValidate(ValidJob(), ValidationOptions{}, &job), IsEmpty());
  job.spec.communication.preflight.max_bytes = 17 * kGi;
  EXPECT_THAT(Strings(Validate(job, ValidationOptions{})),
              ElementsAre(ErrorAt("spec.communication.preflight.maxBytes", "got 18253611008")));
}

// ValidJob() with spec.runPolicy.failurePolicy.rules = [rule].
json WithRule(const json& rule) {
  return With("/spec/runPolicy", json{{"failurePolicy", {{"rules", json::array({rule})}}}});
}

json ExitCodes(const std::string& op, const json& values) {
  return {{"action", "FailJob"}, {"onExitCodes", {{"operator", op}, {"values", values}}}};
}

constexpr const char* kRule = "spec.runPolicy.failurePolicy.rules[0]";

TEST(FailurePolicyValidationTest, AcceptsRulesAsJobsPodFailurePolicyDoes) {
  json rules = json::array(
      {ExitCodes("In", {1, 42, 255}), ExitCodes("NotIn", {0, 1}),
       {{"action", "Ignore"}, {"onPodConditions", {{{"type", "DisruptionTarget"}}, {{"type", "example.com/Bad-Config"}, {"status", "Unknown"}}}}},
       {{"action", "RestartJob"},
        {"onExitCodes", {{"containerName", "ringleader-preflight"}, {"operator", "In"}, {"values", {3}}}}}});
  EXPECT_THAT(Check(With("/spec/runPolicy", json{{"failurePolicy", {{"rules", rules}}}})), IsEmpty());
}

TEST(FailurePolicyValidationTest, ARuleNeedsExactlyOneRequirement) {
  const std::string message = std::string(kRule) + ": must set exactly one of onExitCodes and onPodConditions";
  EXPECT_THAT(Check(WithRule({{"action", "Ignore"}})), ElementsAre(message));
  json both = ExitCodes("In", {3});
  both["onPodConditions"] = {{{"type", "DisruptionTarget"}}};
  EXPECT_THAT(Check(WithRule(both)), ElementsAre(message));
}

TEST(FailurePolicyValidationTest, ExitCodeValuesFollowJobsRules) {
  const std::string values = std::string(kRule) + ".onExitCodes.values";
  EXPECT_THAT(Check(WithRule(ExitCodes("In", {0, 3}))),
              ElementsAre(ErrorAt(values + "[0]", "must not be 0 with the In operator")));
  EXPECT_THAT(Check(WithRule(ExitCodes("NotIn", {0, 3}))), IsEmpty());
  EXPECT_THAT(Check(WithRule(ExitCodes("In", {3, 3}))), ElementsAre(values + "[1]: duplicates exit code 3"));
  EXPECT_THAT(Check(WithRule(ExitCodes("In", {4, 3}))),
              ElementsAre(values + "[1]: must be sorted in ascending order: 3 follows 4"));
  EXPECT_THAT(Check(WithRule(ExitCodes("In", {256}))), ElementsAre(values + "[0]: must be at most 255, got 256"));
  EXPECT_THAT(Check(WithRule(ExitCodes("In", {-1}))), ElementsAre(values + "[0]: must be at least 0, got -1"));
  EXPECT_THAT(Check(WithRule(ExitCodes("In", json::array()))), ElementsAre(values + ": must list at least one exit code"));
  json many = json::array();
  for (int code = 1; code <= 255; ++code) {
    many.push_back(code);
  }
  EXPECT_THAT(Check(WithRule(ExitCodes("In", many))), IsEmpty());
}

TEST(FailurePolicyValidationTest, ContainerNameMustNameAContainer) {
  json rule = ExitCodes("In", {3});
  rule["onExitCodes"]["containerName"] = "trainr";
  EXPECT_THAT(Check(WithRule(rule)),
              ElementsAre(ErrorAt(std::string(kRule) + ".onExitCodes.containerName",
                                  "must name a container of the template or ringleader's (ringleader-sidecar, "
                                  "ringleader-preflight, trainer), got \"trainr\"")));
  rule["onExitCodes"]["containerName"] = "trainer";
  EXPECT_THAT(Check(WithRule(rule)), IsEmpty());
  rule["onExitCodes"]["containerName"] = "ringleader-sidecar";
  EXPECT_THAT(Check(WithRule(rule)), IsEmpty());
}

TEST(FailurePolicyValidationTest, PodConditionPatternsNeedATypeAndAStatus) {
  const std::string patterns = std::string(kRule) + ".onPodConditions";
  EXPECT_THAT(Check(WithRule({{"action", "Ignore"}, {"onPodConditions", json::array()}})),
              ElementsAre(patterns + ": must list 1 to 20 conditions, got 0"));
  EXPECT_THAT(Check(WithRule({{"action", "Ignore"}, {"onPodConditions", {{{"type", "Disruption Target"}}}}})),
              ElementsAre(ErrorAt(patterns + "[0].type", "got \"Disruption Target\"")));
  EXPECT_THAT(Check(WithRule({{"action", "Ignore"}, {"onPodConditions", {{{"status", "True"}}}}})),
              ElementsAre(ErrorAt(patterns + "[0].type", "got \"\"")));
  EXPECT_THAT(Check(WithRule({{"action", "Ignore"},
                              {"onPodConditions", {{{"type", "DisruptionTarget"}, {"status", "yes"}}}}})),
              ElementsAre(patterns + "[0].status: must be True, False or Unknown, got \"yes\""));
}

TEST(FailurePolicyValidationTest, AtMostTwentyRules) {
  json rules = json::array();
  for (int i = 0; i < 21; ++i) {
    rules.push_back(ExitCodes("In", {i + 1}));
  }
  EXPECT_THAT(Check(With("/spec/runPolicy", json{{"failurePolicy", {{"rules", rules}}}})),
              ElementsAre("spec.runPolicy.failurePolicy.rules: must have at most 20 rules, got 21"));
}

TEST(FailurePolicyValidationTest, RestartBackoffBounds) {
  const auto backoff = [](const json& value) {
    return Check(With("/spec/runPolicy", json{{"failurePolicy", {{"restartBackoff", value}}}}));
  };
  const std::string base = "spec.runPolicy.failurePolicy.restartBackoff.";
  EXPECT_THAT(backoff({{"initialSeconds", 0}}), IsEmpty());
  EXPECT_THAT(backoff({{"initialSeconds", 3600}, {"maxSeconds", 86400}}), IsEmpty());
  EXPECT_THAT(backoff({{"initialSeconds", -1}}), ElementsAre(base + "initialSeconds: must be at least 0, got -1"));
  EXPECT_THAT(backoff({{"initialSeconds", 3601}, {"maxSeconds", 86400}}),
              ElementsAre(base + "initialSeconds: must be at most 3600, got 3601"));
  EXPECT_THAT(backoff({{"maxSeconds", 86401}}), ElementsAre(base + "maxSeconds: must be at most 86400, got 86401"));
  EXPECT_THAT(backoff({{"initialSeconds", 60}, {"maxSeconds", 30}}),
              ElementsAre(base + "maxSeconds: must be at least initialSeconds (60), got 30"));
}

TEST(ValidationTest, JoinErrorsSeparatesWithSemicolons) {
  EXPECT_EQ(JoinErrors({}), "");
  EXPECT_EQ(JoinErrors({{"spec.replicas", "must be at least 1, got 0"}}),
            "spec.replicas: must be at least 1, got 0");
  EXPECT_EQ(JoinErrors({{"a", "x"}, {"b", "y"}}), "a: x; b: y");
}

}  // namespace
}  // namespace ringleader::api
