// Strict field checking against the TrainingJob CRD's schema (as kube-apiserver's strict field
// validation reports it; tests/devcluster/kubectl_validation_test.sh checks the same bad jobs
// against the real server) and against small schemas for the rules the CRD does not use.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/trainingjob.h"
#include "operator/api/trainingjob_schema.h"
#include "operator/api/unknown_fields.h"
#include "operator/yaml/yaml_to_json.h"

namespace ringleader::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

json ValidJob() {
  return yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata:
  name: demo
  namespace: default
  labels: {team: research}
  annotations: {note: x}
spec:
  replicas: 2
  communication:
    backend: gloo
    preflight: {minBytes: 1Mi, maxBytes: 4Mi, minBusBandwidth: 1G}
  runPolicy:
    failurePolicy:
      rules:
        - action: Ignore
          onExitCodes: {operator: In, values: [3]}
  template:
    metadata:
      labels: {team: research}
    spec:
      containers:
        - name: trainer
          image: ringleader/example-trainer:0.1.0
)");
}

std::vector<std::string> Paths(const FieldErrors& errors) {
  std::vector<std::string> paths;
  for (const FieldError& error : errors) {
    EXPECT_EQ(error.message, "unknown field") << error.path;
    paths.push_back(error.path);
  }
  return paths;
}

TEST(UnknownFieldsTest, AValidJobHasNone) {
  EXPECT_THAT(UnknownTrainingJobFields(ValidJob()), IsEmpty());
}

// Every field the operator writes back (ToJson spells out each typed field, trainerStore and the
// rest) is one the CRD declares, so a parsed-and-written job passes the server's strict check.
TEST(UnknownFieldsTest, WhatTheOperatorWritesBackHasNone) {
  FieldErrors errors;
  const json written = TrainingJob::FromJson(ValidJob(), &errors).ToJson();
  ASSERT_THAT(errors, IsEmpty());
  ASSERT_EQ(written["spec"]["communication"].value("trainerStore", ""), "Sidecar");
  EXPECT_THAT(Paths(UnknownTrainingJobFields(written)), IsEmpty()) << written.dump(2);
}

TEST(UnknownFieldsTest, EveryExampleHasNone) {
  int jobs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator("examples")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    std::ifstream in(entry.path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (const json& document : yaml::ParseYamlDocuments(text)) {
      if (document.is_object() && document.value("kind", "") == "TrainingJob") {
        ++jobs;
        EXPECT_THAT(Paths(UnknownTrainingJobFields(document)), IsEmpty()) << entry.path();
      }
    }
  }
  EXPECT_GE(jobs, 3);
}

TEST(UnknownFieldsTest, NamesAnUnknownSpecField) {
  json job = ValidJob();
  job["spec"]["bogusField"] = true;
  const FieldErrors errors = UnknownTrainingJobFields(job);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].ToString(), "spec.bogusField: unknown field");
}

TEST(UnknownFieldsTest, NamesNestedAndListItemFieldsAtTheirFullPath) {
  json job = ValidJob();
  job["spec"]["communication"]["preflight"]["minBandwidth"] = "40G";
  job["spec"]["runPolicy"]["failurePolicy"]["rules"][0]["exitCodes"] = json::array({3});
  EXPECT_THAT(Paths(UnknownTrainingJobFields(job)),
              ElementsAre("spec.communication.preflight.minBandwidth",
                          "spec.runPolicy.failurePolicy.rules[0].exitCodes"));
}

// The server lists them sorted, in one error: `unknown field "spec.bogusA", unknown field ...`.
TEST(UnknownFieldsTest, ListsEveryUnknownFieldSortedByPath) {
  json job = ValidJob();
  job["topBogus"] = 1;
  job["status"] = {{"bogusStatus", 1}};
  job["spec"]["bogusB"] = 2;
  job["spec"]["bogusA"] = 1;
  EXPECT_THAT(Paths(UnknownTrainingJobFields(job)),
              ElementsAre("spec.bogusA", "spec.bogusB", "status.bogusStatus", "topBogus"));
}

// The root metadata is ObjectMeta, checked strictly down to ownerReferences[] and managedFields[].
TEST(UnknownFieldsTest, ChecksMetadataAsObjectMeta) {
  json job = ValidJob();
  job["metadata"]["uid"] = "u";
  job["metadata"]["finalizers"] = json::array({"x/y"});
  job["metadata"]["generateName"] = "demo-";
  EXPECT_THAT(UnknownTrainingJobFields(job), IsEmpty());
  job["metadata"]["label"] = {{"team", "research"}};
  job["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "v1"}, {"kind", "X"}, {"name", "owner"}, {"uid", "z"}, {"foo", 1}}});
  job["metadata"]["managedFields"] =
      json::array({{{"manager", "m"}, {"fieldsV1", {{"f:spec", json::object()}}}, {"bar", 1}}});
  EXPECT_THAT(Paths(UnknownTrainingJobFields(job)),
              ElementsAre("metadata.label", "metadata.managedFields[0].bar",
                          "metadata.ownerReferences[0].foo"));
}

// The CRD marks the Pod template, its spec and each container x-kubernetes-preserve-unknown-fields
// (it is no x-kubernetes-embedded-resource): the server keeps what it does not declare there, so
// a misspelt Pod field passes both, and the Pod create's own validation is what catches it.
TEST(UnknownFieldsTest, AcceptsWhatThePodTemplatePreserves) {
  json job = ValidJob();
  job["spec"]["template"]["bogus"] = 1;
  job["spec"]["template"]["spec"]["bogus"] = 1;
  job["spec"]["template"]["spec"]["containers"][0]["bogus"] = 1;
  job["spec"]["template"]["metadata"]["bogus"] = 1;
  EXPECT_THAT(UnknownTrainingJobFields(job), IsEmpty());
}

TEST(UnknownFieldsTest, LeavesWrongTypesToTheTypeChecks) {
  json job = ValidJob();
  job["spec"]["communication"] = "gloo";
  job["spec"]["runPolicy"]["failurePolicy"]["rules"] = {{"action", "Ignore"}};
  EXPECT_THAT(UnknownTrainingJobFields(job), IsEmpty());
  EXPECT_THAT(UnknownTrainingJobFields(json::array({1})), IsEmpty());
  EXPECT_THAT(UnknownTrainingJobFields("text"), IsEmpty());
}

// Schema rules the TrainingJob CRD does not use today, on small schemas.
TEST(UnknownFieldsTest, AdditionalPropertiesAllowEveryKeyAndCheckEachValue) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "limits": {"type": "object", "additionalProperties": {
        "type": "object", "properties": {"value": {"type": "integer"}}}}}})");
  const json object = json::parse(R"({"limits": {"a": {"value": 1}, "b": {"value": 2, "x": 3}}})");
  EXPECT_THAT(Paths(UnknownFields(object, schema)), ElementsAre("limits.b.x"));
}

TEST(UnknownFieldsTest, AnEmbeddedResourceAllowsApiVersionKindAndObjectMeta) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "object": {"type": "object", "x-kubernetes-embedded-resource": true,
                 "properties": {"spec": {"type": "object", "properties": {"size": {}}}}},
      "plain": {"type": "object", "properties": {"spec": {}}}}})");
  const json object = json::parse(R"({
      "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "nme": "b"},
                 "spec": {"size": 1, "colour": 2}},
      "plain": {"apiVersion": "v1", "spec": {}}})");
  EXPECT_THAT(Paths(UnknownFields(object, schema)),
              ElementsAre("object.metadata.nme", "object.spec.colour", "plain.apiVersion"));
}

TEST(UnknownFieldsTest, PreservingAnObjectStillChecksItsDeclaredFields) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
               "properties": {"closed": {"type": "object", "properties": {"a": {}}}}}}})");
  const json object = json::parse(R"({"open": {"anything": {"deep": 1}, "closed": {"a": 1, "b": 2}}})");
  EXPECT_THAT(Paths(UnknownFields(object, schema)), ElementsAre("open.closed.b"));
}

}  // namespace
}  // namespace ringleader::api
