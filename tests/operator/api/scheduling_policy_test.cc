// spec.runPolicy.schedulingPolicy: parsing and writing back, defaults, and every validation rule,
// each refused with the field it names.
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
using ::testing::ElementsAre;
using ::testing::IsEmpty;

json Job(const json& scheduling_policy, int replicas = 4) {
  json job = ringleader::yaml::ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: demo, namespace: default}
spec:
  replicas: 4
  template:
    spec:
      containers: [{name: trainer, image: ringleader/example-trainer:0.1.0}]
)");
  job["spec"]["replicas"] = replicas;
  job["spec"]["runPolicy"]["schedulingPolicy"] = scheduling_policy;
  return job;
}

json KueueJob(json scheduling_policy = {{"provider", "Kueue"}}) {
  json job = Job(scheduling_policy);
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  return job;
}

TEST(SchedulingPolicyTest, ParsesEveryFieldAndWritesThemBack) {
  const json object = Job({{"provider", "Volcano"},
                           {"minAvailable", 3},
                           {"queue", "research"},
                           {"priorityClassName", "high"},
                           {"schedulerName", "volcano"}});
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(object, &errors);
  ASSERT_THAT(errors, IsEmpty());
  const SchedulingPolicy& policy = job.spec.run_policy.scheduling_policy;
  EXPECT_EQ(policy.provider, SchedulingProvider::kVolcano);
  EXPECT_EQ(policy.min_available, 3);
  EXPECT_EQ(policy.queue, "research");
  EXPECT_EQ(policy.priority_class_name, "high");
  EXPECT_EQ(policy.scheduler_name, "volcano");
  EXPECT_EQ(job.ToJson()["spec"]["runPolicy"]["schedulingPolicy"], object["spec"]["runPolicy"]["schedulingPolicy"]);
  EXPECT_THAT(Errors(object), IsEmpty());
}

TEST(SchedulingPolicyTest, AbsentPolicyIsNoneAndIsNotWrittenIntoOldObjects) {
  json object = Job({});
  object["spec"]["runPolicy"].erase("schedulingPolicy");
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(object, &errors);
  EXPECT_EQ(job.spec.run_policy.scheduling_policy, SchedulingPolicy{});
  EXPECT_FALSE(job.ToJson()["spec"]["runPolicy"].contains("schedulingPolicy"));
  EXPECT_EQ(job.spec.run_policy.scheduling_policy.EffectiveMinAvailable(4), 4);
  EXPECT_EQ(job.spec.run_policy.scheduling_policy.EffectiveSchedulerName(), std::nullopt);
}

TEST(SchedulingPolicyTest, EffectiveSchedulerNameIsTheProvidersUnlessOverridden) {
  SchedulingPolicy policy;
  policy.provider = SchedulingProvider::kCoscheduling;
  EXPECT_EQ(policy.EffectiveSchedulerName(), "scheduler-plugins-scheduler");
  policy.provider = SchedulingProvider::kVolcano;
  EXPECT_EQ(policy.EffectiveSchedulerName(), "volcano");
  policy.provider = SchedulingProvider::kKueue;
  EXPECT_EQ(policy.EffectiveSchedulerName(), std::nullopt);
  policy.scheduler_name = "my-scheduler";
  EXPECT_EQ(policy.EffectiveSchedulerName(), "my-scheduler");
}

TEST(SchedulingPolicyTest, UnknownProviderIsRefusedNamingTheChoices) {
  EXPECT_THAT(Errors(Job({{"provider", "YuniKorn"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.provider",
                                  "must be one of None, Coscheduling, Volcano, Kueue, Kubernetes, got \"YuniKorn\"")));
}

TEST(SchedulingPolicyTest, MinAvailableIsBetweenOneAndReplicas) {
  EXPECT_THAT(Errors(Job({{"provider", "Coscheduling"}, {"minAvailable", 4}})), IsEmpty());
  EXPECT_THAT(Errors(Job({{"provider", "Coscheduling"}, {"minAvailable", 5}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.minAvailable", "must be at most 4, got 5")));
  EXPECT_THAT(Errors(Job({{"provider", "Volcano"}, {"minAvailable", 0}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.minAvailable", "must be at least 1, got 0")));
  EXPECT_THAT(Errors(Job({{"provider", "Volcano"}, {"minAvailable", "two"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.minAvailable", "must be an integer")));
}

TEST(SchedulingPolicyTest, ProviderSpecificFieldsAreRefusedElsewhere) {
  EXPECT_THAT(Errors(Job({{"provider", "Volcano"}, {"scheduleTimeoutSeconds", 60}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
                                  "applies only to provider Coscheduling")));
  EXPECT_THAT(Errors(Job({{"provider", "Coscheduling"}, {"scheduleTimeoutSeconds", 0}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "must be at least 1")));
  EXPECT_THAT(Errors(Job({{"provider", "Coscheduling"}, {"queue", "research"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.queue", "applies only to provider Volcano")));
  EXPECT_THAT(Errors(Job({{"provider", "None"}, {"priorityClassName", "high"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.priorityClassName",
                                  "with None set spec.template.spec.priorityClassName")));
  EXPECT_THAT(Errors(Job({{"provider", "Volcano"}, {"queue", "Research Queue"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.queue", "a DNS subdomain")));
}

TEST(SchedulingPolicyTest, KueueQueueGoesInTheJobsLabelNotInQueue) {
  EXPECT_THAT(Errors(KueueJob({{"provider", "Kueue"}, {"queue", "team-a"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.queue",
                                  "put the LocalQueue's name in the TrainingJob's label kueue.x-k8s.io/queue-name")));
}

TEST(SchedulingPolicyTest, KueueNeedsTheQueueLabelAWholeGroupAndAShortName) {
  EXPECT_THAT(Errors(KueueJob()), IsEmpty());
  EXPECT_THAT(Errors(Job({{"provider", "Kueue"}})),
              ElementsAre(ErrorAt("metadata.labels.kueue.x-k8s.io/queue-name", "is required with")));
  EXPECT_THAT(Errors(KueueJob({{"provider", "Kueue"}, {"minAvailable", 3}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.minAvailable",
                                  "must equal spec.replicas (4) or be unset with provider Kueue")));
  json long_name = KueueJob();
  long_name["metadata"]["name"] = std::string(45, 'a');
  EXPECT_THAT(Errors(long_name), ElementsAre(ErrorAt("metadata.name", "must be at most 44 characters with provider Kueue")));
}

// Kueue's webhook refuses a queue name that is no DNS-1123 subdomain, long after the job was
// accepted (the job then ends as CreateRefused); the operator refuses it up front.
TEST(SchedulingPolicyTest, TheKueueQueueLabelMustBeADnsSubdomain) {
  for (const char* bad : {"Team_A", "team-a-", ".team", "TEAM"}) {
    json job = KueueJob();
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = bad;
    EXPECT_THAT(Errors(job), ElementsAre(ErrorAt("metadata.labels.kueue.x-k8s.io/queue-name",
                                                 std::string("must be a LocalQueue name, a DNS-1123 subdomain")))) << bad;
  }
  for (const char* good : {"team-a", "team.a", "a", "0q"}) {
    json job = KueueJob();
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = good;
    EXPECT_THAT(Errors(job), IsEmpty()) << good;
  }
}

TEST(SchedulingPolicyTest, KubernetesParsesAndOwnsThePodsSchedulingGroup) {
  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"minAvailable", 2}})), IsEmpty());
  json own = Job({{"provider", "Kubernetes"}});
  own["spec"]["template"]["spec"]["schedulingGroup"] = {{"podGroupName", "mine"}};
  EXPECT_THAT(Errors(own), ElementsAre(ErrorAt("spec.template.spec.schedulingGroup",
                                               "provider Kubernetes (the attempt's PodGroup); remove it")));
  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"queue", "q"}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.queue", "applies only to provider Volcano")));
}

TEST(SchedulingPolicyTest, TopologyParsesRoundTripsAndIsCheckedPerProvider) {
  const json required = {{"mode", "Required"}, {"key", "example.com/block"}};
  FieldErrors errors;
  const TrainingJob job = TrainingJob::FromJson(Job({{"provider", "Kubernetes"}, {"topology", required}}), &errors);
  ASSERT_TRUE(errors.empty());
  ASSERT_TRUE(job.spec.run_policy.scheduling_policy.topology.has_value());
  EXPECT_EQ(job.spec.run_policy.scheduling_policy.topology->key, "example.com/block");
  EXPECT_EQ(job.ToJson()["spec"]["runPolicy"]["schedulingPolicy"]["topology"], required);
  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"topology", required}})), IsEmpty());
  json kueue = KueueJob({{"provider", "Kueue"}, {"topology", {{"mode", "Preferred"}, {"key", "rack"}}}});
  EXPECT_THAT(Errors(kueue), IsEmpty());

  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"topology", {{"mode", "Preferred"}, {"key", "rack"}}}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.topology.mode",
                                  "Preferred cannot be expressed with provider Kubernetes")));
  EXPECT_THAT(Errors(Job({{"provider", "Volcano"}, {"topology", required}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.topology",
                                  "applies only to providers Kubernetes (the PodGroup's topology constraint) and "
                                  "Kueue")));
  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"topology", {{"mode", "Required"}, {"key", "-rack"}}}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.topology.key", "must be a node label key")));
  EXPECT_THAT(Errors(Job({{"provider", "Kubernetes"}, {"topology", {{"mode", "Always"}, {"key", "rack"}}}})),
              ElementsAre(ErrorAt("spec.runPolicy.schedulingPolicy.topology.mode",
                                  "must be Required or Preferred, got \"Always\"")));
}

TEST(SchedulingPolicyTest, TemplateSchedulerNameMustMatchTheEffectiveOne) {
  json same = Job({{"provider", "Volcano"}});
  same["spec"]["template"]["spec"]["schedulerName"] = "volcano";
  EXPECT_THAT(Errors(same), IsEmpty());

  json other = Job({{"provider", "Volcano"}});
  other["spec"]["template"]["spec"]["schedulerName"] = "default-scheduler";
  EXPECT_THAT(Errors(other),
              ElementsAre(ErrorAt("spec.template.spec.schedulerName",
                                  "is \"default-scheduler\", but spec.runPolicy.schedulingPolicy.provider Volcano "
                                  "schedules the Pods with \"volcano\"")));

  json overridden = Job({{"provider", "Coscheduling"}, {"schedulerName", "gang"}});
  overridden["spec"]["template"]["spec"]["schedulerName"] = "scheduler-plugins-scheduler";
  EXPECT_THAT(Errors(overridden),
              ElementsAre(ErrorAt("spec.template.spec.schedulerName", "spec.runPolicy.schedulingPolicy.schedulerName")));

  // Without a provider or an override, the template's own scheduler stands.
  json plain = Job({{"provider", "None"}});
  plain["spec"]["template"]["spec"]["schedulerName"] = "my-scheduler";
  EXPECT_THAT(Errors(plain), IsEmpty());
}

TEST(SchedulingPolicyTest, TemplateMayNotSetWhatTheProviderGetsFromRingleader) {
  json coscheduling = Job({{"provider", "Coscheduling"}});
  coscheduling["spec"]["template"]["metadata"]["labels"] = {{"scheduling.x-k8s.io/pod-group", "mine"}};
  EXPECT_THAT(Errors(coscheduling), ElementsAre(ErrorAt("spec.template.metadata.labels.scheduling.x-k8s.io/pod-group",
                                                        "is set by ringleader on every Pod")));
  json kueue = KueueJob();
  kueue["spec"]["template"]["metadata"]["annotations"] = {{"kueue.x-k8s.io/pod-group-total-count", "2"}};
  EXPECT_THAT(Errors(kueue),
              ElementsAre(ErrorAt("spec.template.metadata.annotations.kueue.x-k8s.io/pod-group-total-count",
                                  "provider Kueue; remove it")));
}

}  // namespace
}  // namespace ringleader::api
