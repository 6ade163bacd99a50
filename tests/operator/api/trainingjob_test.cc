// Tests for the TrainingJob C++ types: defaults, JSON round trips that keep unknown fields and the
// user's spelling, status round trips, type errors named by path, and RFC 3339 times.
#include "operator/api/trainingjob.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::api {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::IsEmpty;
using namespace std::chrono_literals;

std::vector<std::string> Strings(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const FieldError& error : errors) {
    out.push_back(error.ToString());
  }
  return out;
}

// The smallest object the API server would accept: everything optional left out.
json MinimalJob() {
  return ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata:
  name: demo
  namespace: default
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: trainer
          image: ringleader/example-trainer:0.1.0
)");
}

TrainingJob Parse(const json& object) {
  FieldErrors errors;
  TrainingJob job = TrainingJob::FromJson(object, &errors);
  EXPECT_THAT(Strings(errors), IsEmpty()) << object.dump();
  return job;
}

Time At(int year, unsigned month, unsigned day, int hour, int minute, int second) {
  return std::chrono::sys_days{std::chrono::year{year} / month / day} + std::chrono::hours{hour} +
         std::chrono::minutes{minute} + std::chrono::seconds{second};
}

void ExpectSameSpec(const TrainingJobSpec& actual, const TrainingJobSpec& expected) {
  EXPECT_EQ(actual.replicas, expected.replicas);
  EXPECT_EQ(actual.gpus_per_replica, expected.gpus_per_replica);
  EXPECT_EQ(actual.processes_per_replica, expected.processes_per_replica);
  EXPECT_EQ(actual.host_network, expected.host_network);
  const CommunicationSpec& a = actual.communication;
  const CommunicationSpec& e = expected.communication;
  EXPECT_EQ(a.backend, e.backend);
  EXPECT_EQ(a.trainer_store, e.trainer_store);
  EXPECT_EQ(a.preflight.enabled, e.preflight.enabled);
  EXPECT_EQ(a.preflight.min_bytes, e.preflight.min_bytes);
  EXPECT_EQ(a.preflight.max_bytes, e.preflight.max_bytes);
  EXPECT_EQ(a.preflight.step_factor, e.preflight.step_factor);
  EXPECT_EQ(a.preflight.min_bus_bandwidth, e.preflight.min_bus_bandwidth);
  EXPECT_EQ(a.preflight.timeout_seconds, e.preflight.timeout_seconds);
  EXPECT_EQ(a.monitor.enabled, e.monitor.enabled);
  EXPECT_EQ(a.monitor.interval_seconds, e.monitor.interval_seconds);
  EXPECT_EQ(a.monitor.message_bytes, e.monitor.message_bytes);
  EXPECT_EQ(a.telemetry.enabled, e.telemetry.enabled);
  EXPECT_EQ(a.telemetry.stall_seconds, e.telemetry.stall_seconds);
  EXPECT_EQ(a.telemetry.on_stall, e.telemetry.on_stall);
  EXPECT_EQ(actual.run_policy.backoff_limit, expected.run_policy.backoff_limit);
  EXPECT_EQ(actual.run_policy.active_deadline_seconds, expected.run_policy.active_deadline_seconds);
  EXPECT_EQ(actual.run_policy.ttl_seconds_after_finished,
            expected.run_policy.ttl_seconds_after_finished);
  EXPECT_EQ(actual.run_policy.suspend, expected.run_policy.suspend);
  EXPECT_EQ(actual.run_policy.success_policy, expected.run_policy.success_policy);
  EXPECT_EQ(actual.run_policy.failure_policy, expected.run_policy.failure_policy);
}

// Fills absent properties from `default`, recursing into present (or just defaulted) objects,
// the way the API server defaults a structural schema.
void ApplyCrdDefaults(json& value, const json& schema) {
  if (!value.is_object() || !schema.contains("properties")) {
    return;
  }
  for (const auto& [name, property] : schema["properties"].items()) {
    if (!value.contains(name) && property.contains("default")) {
      value[name] = property["default"];
    }
    if (value.contains(name)) {
      ApplyCrdDefaults(value[name], property);
    }
  }
}

TEST(TrainingJobFromJsonTest, FillsDefaultsEqualToTheStructDefaults) {
  const TrainingJob job = Parse(MinimalJob());
  EXPECT_EQ(job.metadata.name, "demo");
  EXPECT_EQ(job.metadata.namespace_, "default");
  EXPECT_EQ(job.Key(), "default/demo");
  ExpectSameSpec(job.spec, TrainingJobSpec{});
  EXPECT_EQ(job.status, TrainingJobStatus{});
  EXPECT_EQ(job.spec.template_, MinimalJob()["spec"]["template"]);
  EXPECT_EQ(job.spec.EffectiveProcessesPerReplica(), 1);
  EXPECT_EQ(job.spec.EffectiveBackend(), Backend::kGloo);
}

TEST(TrainingJobFromJsonTest, StructDefaultsMatchTheCrdSchemaDefaults) {
  const json crd = ringleader::yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml");
  const json& schema = crd.at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema");
  json defaulted = MinimalJob();
  ApplyCrdDefaults(defaulted, schema);
  // The defaulting reached every nested block, so the comparison below means something.
  const json& comm = defaulted["spec"]["communication"];
  ASSERT_TRUE(comm["preflight"].contains("minBytes")) << defaulted.dump(2);
  ASSERT_TRUE(comm["monitor"].contains("messageBytes")) << defaulted.dump(2);
  ASSERT_TRUE(comm["telemetry"].contains("enabled")) << defaulted.dump(2);
  ASSERT_TRUE(comm["telemetry"].contains("stallSeconds")) << defaulted.dump(2);
  ASSERT_EQ(comm["telemetry"]["onStall"], "Report") << defaulted.dump(2);
  ASSERT_EQ(comm["trainerStore"], "Sidecar") << defaulted.dump(2);
  ASSERT_TRUE(defaulted["spec"]["runPolicy"].contains("backoffLimit")) << defaulted.dump(2);
  ASSERT_EQ(defaulted["spec"]["runPolicy"]["successPolicy"], "AllRanks") << defaulted.dump(2);
  ASSERT_TRUE(defaulted["spec"]["runPolicy"]["failurePolicy"]["restartBackoff"].contains("initialSeconds"))
      << defaulted.dump(2);
  // hostNetwork has no schema default: unset, the operator's --default-host-network decides.
  EXPECT_FALSE(defaulted["spec"]["networking"].contains("hostNetwork")) << defaulted.dump(2);
  ASSERT_TRUE(defaulted["spec"].contains("gpusPerReplica")) << defaulted.dump(2);

  ExpectSameSpec(Parse(defaulted).spec, TrainingJobSpec{});
}

TEST(TrainingJobFromJsonTest, EffectiveValuesFollowGpus) {
  json object = MinimalJob();
  object["spec"]["gpusPerReplica"] = 8;
  TrainingJob job = Parse(object);
  EXPECT_EQ(job.spec.EffectiveProcessesPerReplica(), 8);
  EXPECT_EQ(job.spec.EffectiveBackend(), Backend::kNccl);
  object["spec"]["processesPerReplica"] = 2;
  object["spec"]["communication"] = {{"backend", "gloo"}};
  job = Parse(object);
  EXPECT_EQ(job.spec.EffectiveProcessesPerReplica(), 2);
  EXPECT_EQ(job.spec.EffectiveBackend(), Backend::kGloo);
}

TEST(TrainingJobFromJsonTest, ReadsEveryTypedField) {
  const TrainingJob job = Parse(ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata:
  name: big
  namespace: ml
  uid: 0b7c-11
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2026-01-02T15:04:05Z"
  labels: {team: research}
  annotations: {note: hi}
spec:
  replicas: 4
  gpusPerReplica: 8
  processesPerReplica: 4
  networking: {hostNetwork: true}
  communication:
    backend: nccl
    trainerStore: Trainer
    preflight: {enabled: false, minBytes: 8Mi, maxBytes: 1Gi, stepFactor: 4,
                minBusBandwidth: 300G, timeoutSeconds: 600}
    monitor: {enabled: false, intervalSeconds: 300, messageBytes: 256Mi}
    telemetry: {enabled: false, stallSeconds: 45, onStall: Restart}
  runPolicy:
    backoffLimit: 5
    activeDeadlineSeconds: 86400
    ttlSecondsAfterFinished: 3600
    suspend: true
    successPolicy: RankZero
    failurePolicy:
      rules:
        - {action: FailJob, onExitCodes: {containerName: trainer, operator: In, values: [3, 42]}}
        - {action: Ignore, onPodConditions: [{type: DisruptionTarget}, {type: Ready, status: "False"}]}
        - {action: RestartJob, onExitCodes: {operator: NotIn, values: [0]}}
      restartBackoff: {initialSeconds: 2, maxSeconds: 60}
  template: {spec: {containers: [{name: trainer, image: t}]}}
)"));
  EXPECT_EQ(job.metadata.uid, "0b7c-11");
  EXPECT_EQ(job.metadata.resource_version, "42");
  EXPECT_EQ(job.metadata.generation, 3);
  EXPECT_EQ(job.metadata.creation_timestamp, At(2026, 1, 2, 15, 4, 5));
  EXPECT_EQ(job.metadata.labels, (std::map<std::string, std::string>{{"team", "research"}}));
  EXPECT_EQ(job.metadata.annotations, (std::map<std::string, std::string>{{"note", "hi"}}));
  TrainingJobSpec expected;
  expected.replicas = 4;
  expected.gpus_per_replica = 8;
  expected.processes_per_replica = 4;
  expected.host_network = true;
  expected.communication.backend = Backend::kNccl;
  expected.communication.trainer_store = TrainerStore::kTrainer;
  expected.communication.preflight = {.enabled = false,
                                      .min_bytes = 8 << 20,
                                      .max_bytes = 1 << 30,
                                      .step_factor = 4,
                                      .min_bus_bandwidth = 300'000'000'000,
                                      .timeout_seconds = 600};
  expected.communication.monitor = {
      .enabled = false, .interval_seconds = 300, .message_bytes = 256 << 20};
  expected.communication.telemetry.enabled = false;
  expected.communication.telemetry.stall_seconds = 45;
  expected.communication.telemetry.on_stall = StallAction::kRestart;
  expected.run_policy.backoff_limit = 5;
  expected.run_policy.active_deadline_seconds = 86400;
  expected.run_policy.ttl_seconds_after_finished = 3600;
  expected.run_policy.suspend = true;
  expected.run_policy.success_policy = SuccessPolicy::kRankZero;
  expected.run_policy.failure_policy.rules = {
      {.action = FailureAction::kFailJob,
       .on_exit_codes = ExitCodeRequirement{.container_name = "trainer",
                                            .op = ExitCodeOperator::kIn,
                                            .values = {3, 42}},
       .on_pod_conditions = std::nullopt},
      {.action = FailureAction::kIgnore,
       .on_exit_codes = std::nullopt,
       .on_pod_conditions = std::vector<PodConditionPattern>{{.type = "DisruptionTarget", .status = "True"},
                                                             {.type = "Ready", .status = "False"}}},
      {.action = FailureAction::kRestartJob,
       .on_exit_codes = ExitCodeRequirement{.container_name = std::nullopt,
                                            .op = ExitCodeOperator::kNotIn,
                                            .values = {0}},
       .on_pod_conditions = std::nullopt}};
  expected.run_policy.failure_policy.restart_backoff = {.initial_seconds = 2, .max_seconds = 60};
  ExpectSameSpec(job.spec, expected);
}

// Everything ringleader does not model: new API fields, server-side metadata and the whole Pod
// template must come back exactly as they were read.
json JobWithUnknownFields() {
  return ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
futureRootField: {nested: [1, 2, {deep: true}]}
metadata:
  name: demo
  namespace: default
  uid: 6d1f
  resourceVersion: "981"
  generation: 2
  creationTimestamp: "2026-01-02T15:04:05Z"
  labels: {team: research}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
  finalizers: [example.com/keep]
  managedFields:
    - manager: kubectl
      operation: Apply
      fieldsV1: {"f:spec": {"f:replicas": {}}}
  ownerReferences:
    - {apiVersion: v1, kind: ConfigMap, name: owner, uid: 77aa, controller: false}
spec:
  replicas: 2
  futureSpecField: "keep me"
  networking: {hostNetwork: false, futureNetworkingField: rdma}
  communication:
    backend: gloo
    futureCommunicationField: {knob: 7}
    preflight: {minBytes: 64Ki, futurePreflightField: [a, b]}
    monitor: {intervalSeconds: 15, futureMonitorField: 0.5}
    telemetry: {futureTelemetryField: x}
  runPolicy:
    backoffLimit: 2
    futureRunPolicyField: null
    failurePolicy:
      futureFailurePolicyField: 1
      rules:
        - action: FailJob
          futureRuleField: [x]
          onExitCodes: {operator: In, values: [3], futureOnExitCodesField: y}
        - action: Ignore
          onPodConditions: [{type: DisruptionTarget, futurePatternField: z}]
      restartBackoff: {initialSeconds: 5, futureBackoffField: true}
  template:
    metadata:
      labels: {team: research}
      annotations: {sidecar.istio.io/inject: "false"}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000,
                        seccompProfile: {type: RuntimeDefault}}
      tolerations:
        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
        - {key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 30}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: topology.kubernetes.io/zone, operator: In, values: [a, b]}
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: {matchLabels: {team: research}}
      priorityClassName: high
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}
      initContainers:
        - {name: fetch, image: busybox, command: [sh, -c, "echo hi"]}
      volumes:
        - {name: data, persistentVolumeClaim: {claimName: data}}
        - {name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}
      containers:
        - name: trainer
          image: ringleader/example-trainer:0.1.0
          args: ["--steps", "20"]
          env:
            - {name: NCCL_DEBUG, value: INFO}
            - name: HF_TOKEN
              valueFrom: {secretKeyRef: {name: hf, key: token}}
          resources:
            requests: {cpu: 1500m, memory: 8Gi}
            limits: {memory: 8Gi, nvidia.com/gpu: 1}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
          volumeMounts:
            - {name: shm, mountPath: /dev/shm}
          ports:
            - {name: tb, containerPort: 6006, protocol: TCP}
)");
}

TEST(TrainingJobRoundTripTest, KeepsUnknownFieldsEverywhere) {
  const json original = JobWithUnknownFields();
  const json written = Parse(original).ToJson();

  EXPECT_EQ(written["futureRootField"], original["futureRootField"]);
  for (const char* key : {"uid", "resourceVersion", "generation", "creationTimestamp", "labels",
                          "annotations", "finalizers", "managedFields", "ownerReferences"}) {
    EXPECT_EQ(written["metadata"][key], original["metadata"][key]) << "metadata." << key;
  }
  EXPECT_EQ(written["spec"]["futureSpecField"], "keep me");
  EXPECT_EQ(written["spec"]["networking"]["futureNetworkingField"], "rdma");
  const json& comm = written["spec"]["communication"];
  EXPECT_EQ(comm["futureCommunicationField"],
            original["spec"]["communication"]["futureCommunicationField"]);
  EXPECT_EQ(comm["preflight"]["futurePreflightField"], json::array({"a", "b"}));
  EXPECT_EQ(comm["monitor"]["futureMonitorField"], 0.5);
  EXPECT_EQ(comm["telemetry"], json({{"futureTelemetryField", "x"},
                                     {"enabled", true},
                                     {"stallSeconds", 120},
                                     {"onStall", "Report"}}));
  EXPECT_TRUE(written["spec"]["runPolicy"].contains("futureRunPolicyField"));
  const json& failure = written["spec"]["runPolicy"]["failurePolicy"];
  EXPECT_EQ(failure["futureFailurePolicyField"], 1);
  EXPECT_EQ(failure["rules"][0]["futureRuleField"], json::array({"x"}));
  EXPECT_EQ(failure["rules"][0]["onExitCodes"]["futureOnExitCodesField"], "y");
  EXPECT_EQ(failure["rules"][1]["onPodConditions"][0]["futurePatternField"], "z");
  EXPECT_EQ(failure["restartBackoff"]["futureBackoffField"], true);
  // The pattern's status is written with its default.
  EXPECT_EQ(failure["rules"][1]["onPodConditions"][0]["status"], "True");
}

TEST(TrainingJobRoundTripTest, KeepsThePodTemplateExactly) {
  const json original = JobWithUnknownFields();
  const TrainingJob job = Parse(original);
  EXPECT_EQ(job.spec.template_.dump(), original["spec"]["template"].dump());
  const json written = job.ToJson();
  EXPECT_EQ(written["spec"]["template"].dump(), original["spec"]["template"].dump());
  const json& pod = written["spec"]["template"]["spec"];
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(pod["tolerations"].size(), 2U);
  EXPECT_EQ(pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
               ["weight"],
            100);
  EXPECT_EQ(pod["containers"][0]["resources"]["requests"]["cpu"], "1500m");
}

TEST(TrainingJobRoundTripTest, SecondRoundTripChangesNothing) {
  const json once = Parse(JobWithUnknownFields()).ToJson();
  const json twice = Parse(once).ToJson();
  EXPECT_EQ(twice.dump(), once.dump());
  ExpectSameSpec(Parse(twice).spec, Parse(JobWithUnknownFields()).spec);
}

// An object that already spells out every typed field comes back byte for byte.
TEST(TrainingJobRoundTripTest, FullySpelledOutObjectIsUnchanged) {
  const json original = ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: full, namespace: ml}
spec:
  replicas: 3
  gpusPerReplica: 2
  processesPerReplica: 2
  template: {spec: {containers: [{name: trainer, image: t}]}}
  networking: {hostNetwork: true}
  communication:
    backend: nccl
    trainerStore: Sidecar
    preflight: {enabled: true, minBytes: 1Mi, maxBytes: 67108864, stepFactor: 2,
                minBusBandwidth: 40G, timeoutSeconds: 300}
    monitor: {enabled: true, intervalSeconds: 60, messageBytes: 16Mi}
    telemetry: {enabled: true, stallSeconds: 120, onStall: Report}
  runPolicy: {backoffLimit: 3, activeDeadlineSeconds: 7200, ttlSecondsAfterFinished: 60,
              suspend: false, successPolicy: RankZero,
              failurePolicy: {rules: [{action: FailJob, onExitCodes: {containerName: trainer,
                                                                       operator: In, values: [3]}},
                                      {action: Ignore, onPodConditions: [{type: DisruptionTarget,
                                                                          status: "True"}]}],
                              restartBackoff: {initialSeconds: 10, maxSeconds: 300}}}
status:
  observedGeneration: 1
  state: Running
  conditions:
    - {type: Running, status: "True", reason: AllReplicasReady, message: all 3 ready,
       lastTransitionTime: "2026-01-02T15:04:05Z", observedGeneration: 1}
  ports: {master: 61000, rendezvous: 61001, metrics: 61002, spare: 61003}
  masterAddr: full-0.full.ml.svc
  replicas: {active: 3, ready: 3, succeeded: 0, failed: 0}
  restarts: 2
  countedRestarts: 1
  nextRestartTime: "2026-01-02T15:01:00Z"
  disruption: {attempt: 1, pod: full-2, reason: PreemptionByScheduler, message: preempted}
  startTime: "2026-01-02T15:00:00Z"
  communication: {backend: nccl, busBandwidth: 110 GB/s, lastAllReduceBusBandwidth: 11.8 GB/s,
                  lastAllReduceBusBandwidthBytes: 11800000000,
                  lastProbeTime: "2026-01-02T15:05:00Z", preflight: Passed, slowestRank: "2",
                  training: {collective: all_reduce, size: 64MiB, busBandwidth: 110 GB/s,
                             busBandwidthBytes: 110000000000, ranksReporting: 3, slowestRank: "1",
                             slowestRankBusBandwidth: 90 GB/s,
                             slowestRankBusBandwidthBytes: 90000000000}}
)");
  EXPECT_EQ(Parse(original).ToJson().dump(), original.dump());
}

TEST(TrainingJobRoundTripTest, KeepsTheUsersSpellingOfQuantities) {
  json object = MinimalJob();
  object["spec"]["communication"] = {
      {"preflight",
       {{"minBytes", "64Mi"}, {"maxBytes", 1048576 * 64}, {"minBusBandwidth", "1.5G"}}},
      {"monitor", {{"messageBytes", "2e3"}}}};
  const json preflight = Parse(object).ToJson()["spec"]["communication"]["preflight"];
  EXPECT_EQ(preflight["minBytes"], "64Mi");
  ASSERT_TRUE(preflight["maxBytes"].is_number_integer()) << preflight.dump();
  EXPECT_EQ(preflight["maxBytes"], 1048576 * 64);
  EXPECT_EQ(preflight["minBusBandwidth"], "1.5G");
  EXPECT_EQ(Parse(object).ToJson()["spec"]["communication"]["monitor"]["messageBytes"], "2e3");
}

TEST(TrainingJobRoundTripTest, ChangedQuantityIsWrittenInItsShortestForm) {
  json object = MinimalJob();
  object["spec"]["communication"]["preflight"] = {{"minBytes", "64Mi"}, {"maxBytes", 1048576}};
  TrainingJob job = Parse(object);
  job.spec.communication.preflight.min_bytes = 1 << 20;
  job.spec.communication.preflight.max_bytes = 128 << 20;
  const json preflight = job.ToJson()["spec"]["communication"]["preflight"];
  EXPECT_EQ(preflight["minBytes"], "1Mi");
  EXPECT_EQ(preflight["maxBytes"], "128Mi");
}

TEST(TrainingJobRoundTripTest, AbsentOptionalFieldsStayAbsent) {
  const json written = Parse(MinimalJob()).ToJson();
  EXPECT_FALSE(written["spec"].contains("processesPerReplica"));
  EXPECT_FALSE(written["spec"]["runPolicy"].contains("activeDeadlineSeconds"));
  EXPECT_FALSE(written["spec"]["runPolicy"].contains("ttlSecondsAfterFinished"));
  EXPECT_FALSE(written["spec"]["runPolicy"]["failurePolicy"].contains("rules"));
  EXPECT_FALSE(written.contains("status"));
}

TEST(TrainingJobRoundTripTest, SuccessPolicyDefaultsToAllRanksAndIsWrittenOut) {
  const TrainingJob job = Parse(MinimalJob());
  EXPECT_EQ(job.spec.run_policy.success_policy, SuccessPolicy::kAllRanks);
  EXPECT_EQ(job.ToJson()["spec"]["runPolicy"]["successPolicy"], "AllRanks");
  json rank_zero = MinimalJob();
  rank_zero["spec"]["runPolicy"] = {{"successPolicy", "RankZero"}};
  EXPECT_EQ(Parse(rank_zero).spec.run_policy.success_policy, SuccessPolicy::kRankZero);
  EXPECT_EQ(Parse(rank_zero).ToJson()["spec"]["runPolicy"]["successPolicy"], "RankZero");
}

TEST(TrainingJobRoundTripTest, FailurePolicyDefaultsAreWrittenOut) {
  const json written = Parse(MinimalJob()).ToJson()["spec"]["runPolicy"]["failurePolicy"];
  EXPECT_EQ(written, json({{"restartBackoff", {{"initialSeconds", 10}, {"maxSeconds", 300}}}}));
}

TEST(RestartBackoffTest, DoublesFromInitialUpToMax) {
  const RestartBackoff backoff{.initial_seconds = 10, .max_seconds = 300};
  std::vector<std::int64_t> delays;
  for (std::int64_t restart = 1; restart <= 8; ++restart) {
    delays.push_back(backoff.Delay(restart).count());
  }
  EXPECT_EQ(delays, (std::vector<std::int64_t>{10, 20, 40, 80, 160, 300, 300, 300}));
  EXPECT_EQ(backoff.Delay(1000).count(), 300) << "no overflow however many restarts";
}

TEST(RestartBackoffTest, ZeroInitialMeansNoWait) {
  const RestartBackoff none{.initial_seconds = 0, .max_seconds = 300};
  EXPECT_EQ(none.Delay(1).count(), 0);
  EXPECT_EQ(none.Delay(20).count(), 0);
  const RestartBackoff flat{.initial_seconds = 7, .max_seconds = 7};
  EXPECT_EQ(flat.Delay(5).count(), 7);
}

// Status written before the failure policy existed counted every restart.
TEST(TrainingJobStatusTest, CountedRestartsDefaultToRestartsInOldStatus) {
  FieldErrors errors;
  const TrainingJobStatus status = StatusFromJson(json{{"restarts", 2}}, &errors);
  EXPECT_EQ(status.restarts, 2);
  EXPECT_EQ(status.counted_restarts, 2);
  EXPECT_EQ(StatusFromJson(json{{"restarts", 2}, {"countedRestarts", 0}}, &errors).counted_restarts, 0);
  EXPECT_THAT(Strings(errors), IsEmpty());
}

TrainingJobStatus FullStatus() {
  TrainingJobStatus status;
  status.observed_generation = 7;
  status.state = "Restarting";
  status.conditions = {
      Condition{.type = "Created",
                .status = "True",
                .reason = "PodsCreated",
                .message = "created 4 Pods",
                .last_transition_time = At(2026, 1, 2, 15, 4, 5),
                .observed_generation = 7},
      Condition{.type = "Restarting",
                .status = "True",
                .reason = "PodFailed",
                .message = "demo-3 failed: exit code 137 (OOMKilled)",
                .last_transition_time = At(2026, 1, 2, 16, 0, 0),
                .observed_generation = 0},
      Condition{.type = "PreflightPassed",
                .status = "Unknown",
                .reason = "",
                .message = "",
                .last_transition_time = At(2024, 2, 29, 23, 59, 59),
                .observed_generation = 6}};
  status.ports = JobPorts{.master = 61004, .rendezvous = 61005, .metrics = 61006, .spare = 61007};
  status.ports_released = true;
  status.master_addr = "demo-0.demo.default.svc";
  status.replicas = ReplicaCounts{.active = 3, .ready = 2, .succeeded = 0, .failed = 1};
  status.restarts = 2;
  status.counted_restarts = 1;
  status.next_restart_time = At(2026, 1, 2, 16, 0, 20);
  status.disruption = Disruption{.attempt = 1,
                                 .pod = "demo-3",
                                 .reason = "EvictionByEvictionAPI",
                                 .message = "Eviction API: evicting"};
  status.start_time = At(2026, 1, 2, 15, 4, 0);
  status.completion_time = At(2026, 1, 3, 0, 0, 0);
  status.communication = CommunicationStatus{.backend = "gloo",
                                             .last_all_reduce_bus_bandwidth = "1.25 GB/s",
                                             .last_all_reduce_bus_bandwidth_bytes = 1'250'000'000,
                                             .last_probe_time = At(2026, 1, 2, 15, 30, 0),
                                             .preflight = "Passed",
                                             .slowest_rank = "3",
                                             .transport = "tcp",
                                             .training = TrainingCommunicationStatus{
                                                 .collective = "all_reduce",
                                                 .size = "64MiB",
                                                 .bus_bandwidth = "110 GB/s",
                                                 .bus_bandwidth_bytes = 110'000'000'000,
                                                 .ranks_reporting = 4,
                                                 .slowest_rank = "2",
                                                 .slowest_rank_bus_bandwidth = "90 GB/s",
                                                 .slowest_rank_bus_bandwidth_bytes = 90'000'000'000}};
  return status;
}

TEST(TrainingJobStatusTest, FullStatusRoundTripsEqual) {
  const TrainingJobStatus status = FullStatus();
  FieldErrors errors;
  EXPECT_EQ(StatusFromJson(StatusToJson(status), &errors), status);
  EXPECT_THAT(Strings(errors), IsEmpty());
}

TEST(TrainingJobStatusTest, EmptyStatusRoundTripsEqual) {
  FieldErrors errors;
  EXPECT_EQ(StatusFromJson(StatusToJson(TrainingJobStatus{}), &errors), TrainingJobStatus{});
  EXPECT_THAT(Strings(errors), IsEmpty());
}

TEST(TrainingJobStatusTest, PartialCommunicationRoundTripsEqual) {
  TrainingJobStatus status;
  // Only these two are set; every other member keeps its empty default.
  CommunicationStatus communication;
  communication.backend = "nccl";
  communication.preflight = "Failed";
  status.communication = communication;
  FieldErrors errors;
  EXPECT_EQ(StatusFromJson(StatusToJson(status), &errors), status);
  EXPECT_THAT(Strings(errors), IsEmpty());
}

TEST(TrainingJobStatusTest, TrainingWithoutASlowestRankRoundTripsEqual) {
  TrainingJobStatus status;
  TrainingCommunicationStatus training;  // slowest_rank and its bandwidth stay empty
  training.collective = "all_gather";
  training.size = "1MiB";
  training.bus_bandwidth = "0 B/s";
  training.bus_bandwidth_bytes = 0;
  training.ranks_reporting = 1;
  CommunicationStatus communication;
  communication.backend = "nccl";
  communication.training = training;
  status.communication = communication;
  FieldErrors errors;
  EXPECT_EQ(StatusFromJson(StatusToJson(status), &errors), status);
  EXPECT_THAT(Strings(errors), IsEmpty());
  EXPECT_EQ(StatusToJson(status)["communication"]["training"],
            json({{"collective", "all_gather"},
                  {"size", "1MiB"},
                  {"busBandwidth", "0 B/s"},
                  {"busBandwidthBytes", 0},
                  {"ranksReporting", 1}}));
}

TEST(TrainingJobStatusTest, WritesTheCrdFieldNames) {
  const json written = StatusToJson(FullStatus());
  EXPECT_EQ(written["ports"], json({{"master", 61004}, {"rendezvous", 61005}, {"metrics", 61006},
                                    {"spare", 61007}}));
  EXPECT_EQ(written["portsReleased"], true);
  EXPECT_EQ(written["conditions"][0]["lastTransitionTime"], "2026-01-02T15:04:05Z");
  EXPECT_FALSE(written["conditions"][1].contains("observedGeneration"));
  EXPECT_FALSE(written["conditions"][2].contains("reason"));
  EXPECT_EQ(written["communication"]["lastAllReduceBusBandwidthBytes"], 1'250'000'000);
  EXPECT_EQ(written["communication"]["training"],
            json({{"collective", "all_reduce"},
                  {"size", "64MiB"},
                  {"busBandwidth", "110 GB/s"},
                  {"busBandwidthBytes", 110'000'000'000},
                  {"ranksReporting", 4},
                  {"slowestRank", "2"},
                  {"slowestRankBusBandwidth", "90 GB/s"},
                  {"slowestRankBusBandwidthBytes", 90'000'000'000}}));
  EXPECT_EQ(written["startTime"], "2026-01-02T15:04:00Z");
  EXPECT_EQ(written["countedRestarts"], 1);
  EXPECT_EQ(written["nextRestartTime"], "2026-01-02T16:00:20Z");
  EXPECT_EQ(written["disruption"], json({{"attempt", 1},
                                         {"pod", "demo-3"},
                                         {"reason", "EvictionByEvictionAPI"},
                                         {"message", "Eviction API: evicting"}}));
}

TEST(TrainingJobStatusTest, StatusSurvivesAJobRoundTrip) {
  TrainingJob job = Parse(MinimalJob());
  job.status = FullStatus();
  const TrainingJob back = Parse(job.ToJson());
  EXPECT_EQ(back.status, FullStatus());
  EXPECT_TRUE(back.status.IsTrue("Restarting"));
  EXPECT_FALSE(back.status.IsTrue("PreflightPassed"));
  EXPECT_FALSE(back.status.IsTrue("Succeeded"));
  ASSERT_NE(back.status.FindCondition("Created"), nullptr);
  EXPECT_EQ(back.status.FindCondition("Created")->reason, "PodsCreated");
}

struct TypeErrorCase {
  std::string name;
  std::string json_pointer;  // where the wrong value goes in MinimalJob()
  json value;
  std::string expected;      // one error's ToString()
};

void PrintTo(const TypeErrorCase& c, std::ostream* os) {
  *os << c.json_pointer << " = " << c.value.dump();
}

class TrainingJobTypeErrorTest : public ::testing::TestWithParam<TypeErrorCase> {};

TEST_P(TrainingJobTypeErrorTest, NamesThePathAndTheValue) {
  const TypeErrorCase& c = GetParam();
  json object = MinimalJob();
  object[json::json_pointer(c.json_pointer)] = c.value;
  FieldErrors errors;
  TrainingJob::FromJson(object, &errors);
  EXPECT_THAT(Strings(errors), Contains(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    WrongTypes, TrainingJobTypeErrorTest,
    ::testing::Values(
        TypeErrorCase{"ReplicasString", "/spec/replicas", "four",
                      R"(spec.replicas: must be an integer, got "four")"},
        TypeErrorCase{"ReplicasFloat", "/spec/replicas", 2.5,
                      "spec.replicas: must be an integer, got 2.5"},
        TypeErrorCase{"ReplicasBool", "/spec/replicas", true,
                      "spec.replicas: must be an integer, got true"},
        TypeErrorCase{"GpusString", "/spec/gpusPerReplica", "8",
                      R"(spec.gpusPerReplica: must be an integer, got "8")"},
        TypeErrorCase{"ProcessesList", "/spec/processesPerReplica", json::array({1}),
                      "spec.processesPerReplica: must be an integer, got [1]"},
        TypeErrorCase{"HostNetworkString", "/spec/networking", json{{"hostNetwork", "yes"}},
                      R"(spec.networking.hostNetwork: must be true or false, got "yes")"},
        TypeErrorCase{"NetworkingString", "/spec/networking", "host",
                      R"(spec.networking: must be an object, got "host")"},
        TypeErrorCase{"BackendNumber", "/spec/communication", json{{"backend", 3}},
                      "spec.communication.backend: must be a string, got 3"},
        TypeErrorCase{"BackendUnknown", "/spec/communication", json{{"backend", "mpi"}},
                      R"(spec.communication.backend: must be one of auto, nccl, gloo, got "mpi")"},
        TypeErrorCase{"TrainerStoreUnknown", "/spec/communication", json{{"trainerStore", "Host"}},
                      R"(spec.communication.trainerStore: must be one of Sidecar, Trainer, got "Host")"},
        TypeErrorCase{"TrainerStoreBool", "/spec/communication", json{{"trainerStore", true}},
                      "spec.communication.trainerStore: must be a string, got true"},
        TypeErrorCase{"CommunicationString", "/spec/communication", "nccl",
                      R"(spec.communication: must be an object, got "nccl")"},
        TypeErrorCase{"PreflightEnabledString", "/spec/communication",
                      json{{"preflight", {{"enabled", "true"}}}},
                      R"(spec.communication.preflight.enabled: must be true or false, got "true")"},
        TypeErrorCase{"TelemetryEnabledString", "/spec/communication",
                      json{{"telemetry", {{"enabled", "no"}}}},
                      R"(spec.communication.telemetry.enabled: must be true or false, got "no")"},
        TypeErrorCase{"StallSecondsString", "/spec/communication",
                      json{{"telemetry", {{"stallSeconds", "2m"}}}},
                      R"(spec.communication.telemetry.stallSeconds: must be an integer, got "2m")"},
        TypeErrorCase{"OnStallUnknown", "/spec/communication",
                      json{{"telemetry", {{"onStall", "Kill"}}}},
                      R"(spec.communication.telemetry.onStall: must be one of Report, Restart, got "Kill")"},
        TypeErrorCase{"TelemetryList", "/spec/communication", json{{"telemetry", json::array()}},
                      "spec.communication.telemetry: must be an object, got []"},
        TypeErrorCase{"TrainingRanksString", "/status",
                      json{{"communication", {{"training", {{"ranksReporting", "4"}}}}}},
                      R"(status.communication.training.ranksReporting: must be an integer, got "4")"},
        TypeErrorCase{"MinBytesWord", "/spec/communication",
                      json{{"preflight", {{"minBytes", "fast"}}}},
                      "spec.communication.preflight.minBytes: must be a whole non-negative "
                      "quantity such as 64Mi or 10G, got \"fast\""},
        TypeErrorCase{"MinBytesFloat", "/spec/communication",
                      json{{"preflight", {{"minBytes", 1.5}}}},
                      "spec.communication.preflight.minBytes: must be an integer or a quantity "
                      "string such as 64Mi, got 1.5"},
        TypeErrorCase{"StepFactorString", "/spec/communication",
                      json{{"preflight", {{"stepFactor", "2"}}}},
                      R"(spec.communication.preflight.stepFactor: must be an integer, got "2")"},
        TypeErrorCase{"MessageBytesFractional", "/spec/communication",
                      json{{"monitor", {{"messageBytes", "1500m"}}}},
                      "spec.communication.monitor.messageBytes: must be a whole non-negative "
                      "quantity such as 64Mi or 10G, got \"1500m\""},
        TypeErrorCase{"DeadlineString", "/spec/runPolicy", json{{"activeDeadlineSeconds", "1h"}},
                      R"(spec.runPolicy.activeDeadlineSeconds: must be an integer, got "1h")"},
        TypeErrorCase{"SuspendNumber", "/spec/runPolicy", json{{"suspend", 1}},
                      "spec.runPolicy.suspend: must be true or false, got 1"},
        TypeErrorCase{"SuccessPolicyUnknown", "/spec/runPolicy", json{{"successPolicy", "AnyRank"}},
                      R"(spec.runPolicy.successPolicy: must be one of AllRanks, RankZero, got "AnyRank")"},
        TypeErrorCase{"SuccessPolicyBool", "/spec/runPolicy", json{{"successPolicy", true}},
                      "spec.runPolicy.successPolicy: must be a string, got true"},
        TypeErrorCase{"FailurePolicyList", "/spec/runPolicy", json{{"failurePolicy", json::array()}},
                      "spec.runPolicy.failurePolicy: must be an object, got []"},
        TypeErrorCase{"RulesObject", "/spec/runPolicy", json{{"failurePolicy", {{"rules", {{"action", "Ignore"}}}}}},
                      R"(spec.runPolicy.failurePolicy.rules: must be a list of rules, got {"action":"Ignore"})"},
        TypeErrorCase{"RuleString", "/spec/runPolicy", json{{"failurePolicy", {{"rules", {"FailJob"}}}}},
                      R"(spec.runPolicy.failurePolicy.rules[0]: must be a rule object, got "FailJob")"},
        TypeErrorCase{"ActionUnknown", "/spec/runPolicy",
                      json{{"failurePolicy", {{"rules", {{{"action", "Count"}}}}}}},
                      R"(spec.runPolicy.failurePolicy.rules[0].action: must be one of FailJob, RestartJob, Ignore, got "Count")"},
        TypeErrorCase{"ActionMissing", "/spec/runPolicy", json{{"failurePolicy", {{"rules", {json::object()}}}}},
                      "spec.runPolicy.failurePolicy.rules[0].action: is required: one of FailJob, RestartJob, Ignore"},
        TypeErrorCase{"OperatorUnknown", "/spec/runPolicy",
                      json{{"failurePolicy",
                            {{"rules", {{{"action", "FailJob"}, {"onExitCodes", {{"operator", "Equals"}, {"values", {3}}}}}}}}}},
                      R"(spec.runPolicy.failurePolicy.rules[0].onExitCodes.operator: must be In or NotIn, got "Equals")"},
        TypeErrorCase{"ExitCodeString", "/spec/runPolicy",
                      json{{"failurePolicy",
                            {{"rules", {{{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}, {"values", {3, "4"}}}}}}}}}},
                      R"(spec.runPolicy.failurePolicy.rules[0].onExitCodes.values[1]: must be an integer exit code, got "4")"},
        TypeErrorCase{"ValuesMissing", "/spec/runPolicy",
                      json{{"failurePolicy", {{"rules", {{{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}}}}}}}}},
                      "spec.runPolicy.failurePolicy.rules[0].onExitCodes.values: is required: the exit codes to match"},
        TypeErrorCase{"PodConditionsObject", "/spec/runPolicy",
                      json{{"failurePolicy", {{"rules", {{{"action", "Ignore"}, {"onPodConditions", {{"type", "X"}}}}}}}}},
                      R"(spec.runPolicy.failurePolicy.rules[0].onPodConditions: must be a list of {type, status}, got {"type":"X"})"},
        TypeErrorCase{"InitialSecondsString", "/spec/runPolicy",
                      json{{"failurePolicy", {{"restartBackoff", {{"initialSeconds", "10s"}}}}}},
                      R"(spec.runPolicy.failurePolicy.restartBackoff.initialSeconds: must be an integer, got "10s")"},
        TypeErrorCase{"NextRestartTimeBad", "/status", json{{"nextRestartTime", "soon"}},
                      "status.nextRestartTime: must be an RFC 3339 time such as 2026-01-02T15:04:05Z, "
                      "got \"soon\""},
        TypeErrorCase{"TemplateList", "/spec/template", json::array({"trainer"}),
                      R"(spec.template: must be a PodTemplateSpec object, got ["trainer"])"},
        TypeErrorCase{"SpecString", "/spec", "replicas=4",
                      R"(spec: must be an object, got "replicas=4")"},
        TypeErrorCase{"MetadataList", "/metadata", json::array({"demo"}),
                      R"(metadata: must be an object, got ["demo"])"},
        TypeErrorCase{"NameNumber", "/metadata/name", 7, "metadata.name: must be a string, got 7"},
        TypeErrorCase{"LabelNumber", "/metadata/labels", json{{"team", "a"}, {"tier", 3}},
                      "metadata.labels.tier: must be a string, got 3"},
        TypeErrorCase{"LabelsList", "/metadata/labels", json::array({"a"}),
                      R"(metadata.labels: must be a map of strings, got ["a"])"},
        TypeErrorCase{"CreationTimestampWord", "/metadata/creationTimestamp", "yesterday",
                      "metadata.creationTimestamp: must be an RFC 3339 time such as "
                      "2026-01-02T15:04:05Z, got \"yesterday\""},
        TypeErrorCase{"ApiVersionWrong", "/apiVersion", "ringleader.dev/v1",
                      R"(apiVersion: must be ringleader.dev/v1alpha1, got "ringleader.dev/v1")"},
        TypeErrorCase{"KindWrong", "/kind", "Job", R"(kind: must be TrainingJob, got "Job")"},
        TypeErrorCase{"StatusPortString", "/status", json{{"ports", {{"master", "61000"}}}},
                      R"(status.ports.master: must be an integer, got "61000")"},
        TypeErrorCase{"ConditionStatusBool", "/status",
                      json{{"conditions", {{{"type", "Running"}, {"status", true}}}}},
                      "status.conditions[0].status: must be a string, got true"},
        TypeErrorCase{"StartTimeBad", "/status", json{{"startTime", "2026-01-02 15:04:05"}},
                      "status.startTime: must be an RFC 3339 time such as 2026-01-02T15:04:05Z, "
                      "got \"2026-01-02 15:04:05\""}),
    [](const ::testing::TestParamInfo<TypeErrorCase>& case_info) { return case_info.param.name; });

TEST(TrainingJobFromJsonTest, LongBadValueIsShortenedInTheMessage) {
  json object = MinimalJob();
  object["spec"]["replicas"] = std::string(200, 'x');
  FieldErrors errors;
  TrainingJob::FromJson(object, &errors);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].path, "spec.replicas");
  EXPECT_LT(errors[0].message.size(), 120U) << errors[0].message;
  EXPECT_NE(errors[0].message.find("xxx..."), std::string::npos) << errors[0].message;
}

TEST(TrainingJobFromJsonTest, NonObjectIsAnErrorAtTheRoot) {
  for (const json& value : {json(nullptr), json("TrainingJob"), json::array({1, 2}), json(3)}) {
    FieldErrors errors;
    TrainingJob::FromJson(value, &errors);
    ASSERT_EQ(errors.size(), 1U) << value.dump();
    EXPECT_EQ(errors[0].path, "<root>");
    EXPECT_NE(errors[0].message.find(value.dump()), std::string::npos) << errors[0].message;
  }
}

TEST(TrainingJobFromJsonTest, MissingSpecIsRequired) {
  json object = MinimalJob();
  object.erase("spec");
  FieldErrors errors;
  TrainingJob::FromJson(object, &errors);
  EXPECT_THAT(Strings(errors), Contains("spec: is required"));
}

TEST(TrainingJobFromJsonTest, NullFieldsReadAsAbsent) {
  json object = MinimalJob();
  object["spec"]["gpusPerReplica"] = nullptr;
  object["spec"]["communication"] = nullptr;
  const TrainingJob job = Parse(object);
  EXPECT_EQ(job.spec.gpus_per_replica, 0);
  EXPECT_EQ(job.spec.communication.preflight.min_bytes, PreflightSpec{}.min_bytes);
}

TEST(TrainingJobTimeTest, FormatsUtcWithSecondPrecision) {
  EXPECT_EQ(FormatTime(Time{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(At(2026, 1, 2, 15, 4, 5)), "2026-01-02T15:04:05Z");
  EXPECT_EQ(FormatTime(At(2026, 1, 2, 15, 4, 5) + 999ms), "2026-01-02T15:04:05Z");
  EXPECT_EQ(FormatTime(At(2024, 2, 29, 23, 59, 59)), "2024-02-29T23:59:59Z");
}

TEST(TrainingJobTimeTest, FormatThenParseRoundTrips) {
  for (const Time time : {Time{}, At(2026, 1, 2, 15, 4, 5), At(2024, 2, 29, 23, 59, 59),
                          At(1999, 12, 31, 23, 59, 59), At(2038, 1, 19, 3, 14, 8),
                          At(2200, 1, 1, 0, 0, 0)}) {
    const std::string text = FormatTime(time);
    EXPECT_EQ(ParseTime(text), time) << text;
    EXPECT_EQ(FormatTime(*ParseTime(text)), text);
  }
}

TEST(TrainingJobTimeTest, ParsesOffsetsToTheSameInstant) {
  const Time utc = At(2026, 1, 2, 15, 4, 5);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05Z"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05z"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T17:04:05+02:00"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T09:34:05-05:30"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05+00:00"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05-00:00"), utc);
  // An offset that crosses midnight and a year boundary.
  EXPECT_EQ(ParseTime("2027-01-01T01:00:00+10:00"), At(2026, 12, 31, 15, 0, 0));
}

TEST(TrainingJobTimeTest, ParsesAFractionAtSecondPrecision) {
  const Time utc = At(2026, 1, 2, 15, 4, 5);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05.123456Z"), utc);
  EXPECT_EQ(ParseTime("2026-01-02T15:04:05.9+02:00"), utc - 2h);
}

// Time counts nanoseconds in an int64, so it spans roughly 1678 to 2262; a valid RFC 3339 text
// outside that span (Go's zero time "0001-01-01T00:00:00Z" is one) must be refused, not wrapped
// around by a signed overflow into some other date.
TEST(TrainingJobTimeTest, RejectsYearsOutsideWhatTimeCanHold) {
  for (const char* text :
       {"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2300-01-01T00:00:00Z"}) {
    const std::optional<Time> parsed = ParseTime(text);
    EXPECT_FALSE(parsed.has_value())
        << text << " parsed as " << FormatTime(parsed.value_or(Time{}));
  }
}

struct BadTimeCase {
  std::string name;
  std::string text;
};

void PrintTo(const BadTimeCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class TrainingJobParseTimeTest : public ::testing::TestWithParam<BadTimeCase> {};

TEST_P(TrainingJobParseTimeTest, RejectsTextThatIsNotRfc3339) {
  const std::optional<Time> parsed = ParseTime(GetParam().text);
  EXPECT_FALSE(parsed.has_value()) << "\"" << GetParam().text << "\" parsed as "
                                   << FormatTime(parsed.value_or(Time{}));
}

INSTANTIATE_TEST_SUITE_P(
    InvalidTimes, TrainingJobParseTimeTest,
    ::testing::Values(
        BadTimeCase{"Empty", ""},
        BadTimeCase{"Word", "yesterday"},
        BadTimeCase{"DateOnly", "2026-01-02"},
        BadTimeCase{"SpaceSeparator", "2026-01-02 15:04:05Z"},
        BadTimeCase{"NoZone", "2026-01-02T15:04:05"},
        BadTimeCase{"OffsetWithoutColon", "2026-01-02T15:04:05+0200"},
        BadTimeCase{"OffsetHoursOnly", "2026-01-02T15:04:05+02"},
        BadTimeCase{"DoubleZone", "2026-01-02T15:04:05ZZ"},
        BadTimeCase{"TrailingText", "2026-01-02T15:04:05Z trailing"},
        BadTimeCase{"MonthThirteen", "2026-13-01T00:00:00Z"},
        BadTimeCase{"MonthZero", "2026-00-10T00:00:00Z"},
        BadTimeCase{"DayZero", "2026-01-00T00:00:00Z"},
        BadTimeCase{"February30", "2026-02-30T00:00:00Z"},
        BadTimeCase{"February29InACommonYear", "2025-02-29T00:00:00Z"},
        BadTimeCase{"Hour24", "2026-01-02T24:00:00Z"},
        BadTimeCase{"Minute60", "2026-01-02T15:60:00Z"},
        BadTimeCase{"Second61", "2026-01-02T15:04:61Z"},
        BadTimeCase{"ShortYear", "26-01-02T15:04:05Z"},
        BadTimeCase{"SingleDigitMonth", "2026-1-02T15:04:05Z"},
        // sscanf's %d takes a sign or a leading space, which RFC 3339 never has.
        BadTimeCase{"SignedMonth", "2026-+1-02T15:04:05Z"},
        BadTimeCase{"SpacePaddedDay", "2026-01- 2T15:04:05Z"},
        BadTimeCase{"NegativeHour", "2026-01-02T-1:04:05Z"},
        BadTimeCase{"NegativeMinute", "2026-01-02T15:-4:05Z"},
        // The offset's digits are used without checking that they are digits or in range.
        BadTimeCase{"LettersInOffset", "2026-01-02T15:04:05+ab:cd"},
        BadTimeCase{"OffsetHour24", "2026-01-02T15:04:05+24:00"},
        BadTimeCase{"OffsetMinute60", "2026-01-02T15:04:05+02:60"},
        // RFC 3339 time-secfrac is "." followed by at least one digit.
        BadTimeCase{"DotWithoutFraction", "2026-01-02T15:04:05.Z"}),
    [](const ::testing::TestParamInfo<BadTimeCase>& case_info) { return case_info.param.name; });

}  // namespace
}  // namespace ringleader::api
