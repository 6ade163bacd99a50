// spec.elasticPolicy and the elastic status fields: parsing and writing back, defaults, and every
// validation rule (the CRD's CEL rules, mirrored, and torchrun in the trainers' command), each
// refused with the field it names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/trainingjob.h"
#include "operator/api/validation.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/operator/api/field_error_matchers.h"

namespace ringleader::api {
namespace {

using nlohmann::json;
using testing::Errors;
using testing::ErrorAt;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// min 2, max 4, replicas 2, a trainer launched with torchrun.
json ElasticJob() {
  return ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: demo, namespace: default}
spec:
  replicas: 2
  elasticPolicy: {minReplicas: 2, maxReplicas: 4}
  template:
    spec:
      containers:
        - name: trainer
          image: ringleader/example-trainer:0.1.0
          command: [torchrun]
          args: [train.py]
)");
}

TEST(ElasticPolicyTest, ParsesEveryFieldAndWritesThemBack) {
  json object = ElasticJob();
  object["spec"]["elasticPolicy"] = {
      {"minReplicas", 2}, {"maxReplicas", 4}, {"maxRestarts", 7}, {"minReplicasTimeoutSeconds", 60}};
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(object, &errors);
  ASSERT_THAT(errors, IsEmpty());
  ASSERT_TRUE(job.spec.elastic_policy.has_value());
  EXPECT_EQ(*job.spec.elastic_policy,
            (ElasticPolicy{.min_replicas = 2, .max_replicas = 4, .max_restarts = 7, .min_replicas_timeout_seconds = 60}));
  EXPECT_EQ(job.ToJson()["spec"]["elasticPolicy"], object["spec"]["elasticPolicy"]);
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(ElasticPolicyTest, DefaultsAreTheCrdsAndAreWrittenOut) {
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(ElasticJob(), &errors);
  ASSERT_THAT(errors, IsEmpty());
  ASSERT_TRUE(job.spec.elastic_policy.has_value());
  EXPECT_EQ(job.spec.elastic_policy->max_restarts, 3);
  EXPECT_EQ(job.spec.elastic_policy->min_replicas_timeout_seconds, 300);
  EXPECT_EQ(job.ToJson()["spec"]["elasticPolicy"],
            json({{"minReplicas", 2}, {"maxReplicas", 4}, {"maxRestarts", 3}, {"minReplicasTimeoutSeconds", 300}}));
}

TEST(ElasticPolicyTest, ARigidJobHasNoneAndWritesNone) {
  json object = ElasticJob();
  object["spec"].erase("elasticPolicy");
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(object, &errors);
  EXPECT_FALSE(job.spec.elastic_policy.has_value());
  EXPECT_FALSE(job.ToJson()["spec"].contains("elasticPolicy"));
  // The command check is for elastic jobs only.
  object["spec"]["template"]["spec"]["containers"][0]["command"] = json::array({"python", "train.py"});
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(ElasticPolicyTest, TypeErrorsNameTheirField) {
  json object = ElasticJob();
  object["spec"]["elasticPolicy"] = {{"minReplicas", "two"}, {"maxReplicas", 4}, {"maxRestarts", 1.5}};
  EXPECT_THAT(Errors(object), AllOf(Contains(ErrorAt("spec.elasticPolicy.minReplicas", "must be an integer")),
                                    Contains(ErrorAt("spec.elasticPolicy.maxRestarts", "must be an integer"))));
  object["spec"]["elasticPolicy"] = "yes";
  EXPECT_THAT(Errors(object), Contains(ErrorAt("spec.elasticPolicy", "must be an object")));
}

TEST(ElasticPolicyTest, MinAndMaxReplicasAreRequired) {
  json object = ElasticJob();
  object["spec"]["elasticPolicy"] = json::object();
  EXPECT_THAT(Errors(object), AllOf(Contains(ErrorAt("spec.elasticPolicy.minReplicas", "is required")),
                                    Contains(ErrorAt("spec.elasticPolicy.maxReplicas", "is required"))));
}

TEST(ElasticPolicyTest, BoundsOfEachField) {
  json object = ElasticJob();
  object["spec"]["elasticPolicy"] = {
      {"minReplicas", 0}, {"maxReplicas", 16385}, {"maxRestarts", -1}, {"minReplicasTimeoutSeconds", 0}};
  object["spec"]["replicas"] = 1;
  EXPECT_THAT(Errors(object),
              AllOf(Contains(ErrorAt("spec.elasticPolicy.minReplicas", "must be at least 1, got 0")),
                    Contains(ErrorAt("spec.elasticPolicy.maxReplicas", "must be at most 16384, got 16385")),
                    Contains(ErrorAt("spec.elasticPolicy.maxRestarts", "must be at least 0, got -1")),
                    Contains(ErrorAt("spec.elasticPolicy.minReplicasTimeoutSeconds", "must be at least 1, got 0"))));
}

TEST(ElasticPolicyTest, MinReplicasMustNotExceedMaxReplicas) {
  json object = ElasticJob();
  object["spec"]["elasticPolicy"] = {{"minReplicas", 5}, {"maxReplicas", 4}};
  object["spec"]["replicas"] = 4;
  EXPECT_THAT(Errors(object), Contains(ErrorAt("spec.elasticPolicy.minReplicas", "must be at most maxReplicas (4), got 5")));
}

TEST(ElasticPolicyTest, ReplicasMustLieWithinTheRangeAndTheErrorNamesTheBound) {
  json object = ElasticJob();
  object["spec"]["replicas"] = 5;
  EXPECT_THAT(Errors(object),
              ElementsAre(ErrorAt("spec.replicas", "must be at most elasticPolicy.maxReplicas (4), got 5")));
  object["spec"]["replicas"] = 1;
  EXPECT_THAT(Errors(object),
              ElementsAre(ErrorAt("spec.replicas", "must be at least elasticPolicy.minReplicas (2), got 1")));
  for (int replicas : {2, 3, 4}) {
    object["spec"]["replicas"] = replicas;
    EXPECT_THAT(Errors(object), IsEmpty()) << replicas << " replicas";
  }
}

TEST(ElasticPolicyTest, OnlyProvidersNoneAndKueue) {
  json object = ElasticJob();
  for (const char* provider : {"Coscheduling", "Volcano", "Kubernetes"}) {
    object["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", provider}};
    EXPECT_THAT(Errors(object),
                ElementsAre(ErrorAt("spec.elasticPolicy", "support spec.runPolicy.schedulingPolicy.provider None and "
                                                          "Kueue only")))
        << provider;
  }
  object["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "None"}};
  EXPECT_THAT(Errors(object), IsEmpty());
  object["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Kueue"}};
  object["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(ElasticPolicyTest, NeedsTheSidecarsStore) {
  json object = ElasticJob();
  object["spec"]["communication"]["trainerStore"] = "Trainer";
  EXPECT_THAT(Errors(object), ElementsAre(ErrorAt("spec.communication.trainerStore", "must be Sidecar for an elastic job")));
}

TEST(ElasticPolicyTest, TrainersMustLaunchWithTorchrun) {
  json object = ElasticJob();
  json& containers = object["spec"]["template"]["spec"]["containers"];
  containers.push_back({{"name", "helper"}, {"image", "busybox"}, {"command", {"python", "train.py"}}});
  EXPECT_THAT(Errors(object), ElementsAre(ErrorAt("spec.template.spec.containers[1].command",
                                                  "elastic jobs must launch with torchrun")));
  // Either name, in command or in args, alone or inside a shell line.
  for (const json& launch : {json({{"command", {"python", "-m", "torch.distributed.run"}}, {"args", {"train.py"}}}),
                             json({{"command", {"python"}}, {"args", {"-m", "torch.distributed.run", "train.py"}}}),
                             json({{"command", {"/opt/venv/bin/torchrun", "train.py"}}}),
                             json({{"command", {"bash", "-c", "exec torchrun train.py"}}})}) {
    containers[1].erase("args");
    containers[1].update(launch);
    EXPECT_THAT(Errors(object), IsEmpty()) << launch.dump();
  }
}

// An image's ENTRYPOINT cannot be seen: a container without a command is taken on trust.
TEST(ElasticPolicyTest, AContainerWithoutACommandIsAccepted) {
  json object = ElasticJob();
  object["spec"]["template"]["spec"]["containers"][0].erase("command");
  object["spec"]["template"]["spec"]["containers"][0]["args"] = {"python", "train.py"};
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(ElasticPolicyTest, TheNameLeavesRoomForTheLargestRankOfMaxReplicas) {
  json object = ElasticJob();
  object["metadata"]["name"] = std::string(60, 'a');  // room for a two-digit rank, not three
  object["spec"]["elasticPolicy"]["maxReplicas"] = 101;  // largest rank 100
  EXPECT_THAT(Errors(object), ElementsAre(ErrorAt("metadata.name", "must be at most 59 characters")));
  object["spec"]["elasticPolicy"]["maxReplicas"] = 100;
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(ElasticStatusTest, RoundTripsAndWritesTheCrdFieldNames) {
  TrainingJobStatus status;
  status.elastic_restarts = 2;
  status.below_min_replicas_since = ParseTime("2026-01-02T15:04:05Z");
  status.selector = "ringleader.dev/job-name=demo,ringleader.dev/job-uid=0123";
  const json written = StatusToJson(status);
  EXPECT_EQ(written["elasticRestarts"], 2);
  EXPECT_EQ(written["belowMinReplicasSince"], "2026-01-02T15:04:05Z");
  EXPECT_EQ(written["selector"], "ringleader.dev/job-name=demo,ringleader.dev/job-uid=0123");
  FieldErrors errors;
  EXPECT_EQ(StatusFromJson(written, &errors), status);
  EXPECT_THAT(errors, IsEmpty());
}

TEST(ElasticStatusTest, ARigidJobsStatusHasNoneOfThem) {
  const json written = StatusToJson(TrainingJobStatus{});
  EXPECT_FALSE(written.contains("elasticRestarts"));
  EXPECT_FALSE(written.contains("belowMinReplicasSince"));
  EXPECT_FALSE(written.contains("selector"));
}

TEST(ElasticStatusTest, TypeErrorsNameTheirField) {
  FieldErrors errors;
  StatusFromJson(json({{"elasticRestarts", "two"}, {"belowMinReplicasSince", "yesterday"}, {"selector", 3}}), &errors);
  std::vector<std::string> texts;
  for (const FieldError& error : errors) {
    texts.push_back(error.ToString());
  }
  EXPECT_THAT(texts, AllOf(Contains(ErrorAt("status.elasticRestarts", "must be an integer")),
                           Contains(ErrorAt("status.belowMinReplicasSince", "must be an RFC 3339 time")),
                           Contains(ErrorAt("status.selector", "must be a string")),
                           Not(Contains(HasSubstr("status.restarts")))));
}

}  // namespace
}  // namespace ringleader::api
