// TrainingJobs queued by a real Kueue (v0.17, scripts/build-kueue) on devcluster's real control
// plane: its webhook gates each attempt's Pods, its scheduler admits a gang whole against the
// ClusterQueue's quota (examples/kueue), and the real operator, sidecars and trainers run them.
// One devcluster with Kueue serves every TEST (about 15 s to start); each TEST removes its jobs.
// Its Nodes: node-a and node-b with 4 GPUs each, for the ClusterQueue of examples/kueue, and two
// blocks of two Nodes with 2 GPUs each, for topology-aware scheduling (examples/kueue/topology.yaml).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "operator/api/trainingjob.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/kueue.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kQueueLabel[] = "kueue.x-k8s.io/queue-name";
constexpr char kGroupLabel[] = "kueue.x-k8s.io/pod-group-name";
constexpr char kAdmissionGate[] = "kueue.x-k8s.io/admission";

// A job of the bed's example trainer queued in LocalQueue `queue` of namespace default, as one
// Kueue group per attempt, with `gpus` GPUs per rank and the Pods' priority class, if any.
std::string QueuedJob(const JobSpec& spec, const std::string& queue, const std::string& priority_class = "") {
  json job = yaml::ParseYaml(JobYaml(spec));
  job["metadata"]["labels"][kQueueLabel] = queue;
  job["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Kueue"}};
  if (!priority_class.empty()) {
    job["spec"]["template"]["spec"]["priorityClassName"] = priority_class;
  }
  return job.dump();  // JSON is YAML to kubectl
}

// The same job in one domain of the node label `key`, by Kueue's topology-aware scheduling.
std::string QueuedJobInOne(const JobSpec& spec, const std::string& queue, const std::string& key) {
  json job = json::parse(QueuedJob(spec, queue));
  job["spec"]["runPolicy"]["schedulingPolicy"]["topology"] = {{"mode", "Required"}, {"key", key}};
  return job.dump();
}

constexpr char kBlockLabel[] = "example.com/block";

// The Kueue group (and so the Workload's name) of a rank's current Pod; "" without one.
std::string GroupOf(EndToEnd& bed, const std::string& pod) {
  const json object = bed.Get("pod", pod);
  return object.is_object() ? object["metadata"].value("labels", json::object()).value(kGroupLabel, "") : "";
}

// A WaitForJob predicate: Scheduled=False with `words` in its message.
std::function<bool(const json&)> ScheduledFalseSaying(std::string words) {
  return [words = std::move(words)](const json& job) {
    const json* scheduled = FindJobCondition(job, "Scheduled");
    return scheduled != nullptr && scheduled->value("status", "") == "False" &&
           scheduled->value("message", "").find(words) != std::string::npos;
  };
}

bool Gated(const json& pod) {
  if (!pod.is_object()) {
    return false;
  }
  for (const json& gate : pod["spec"].value("schedulingGates", json::array())) {
    if (gate.value("name", "") == kAdmissionGate) {
      return true;
    }
  }
  return false;
}

// The Workload's condition `type` (QuotaReserved, Admitted, Finished, ...); null when absent.
json WorkloadCondition(const json& workload, const std::string& type) {
  if (!workload.is_object()) {
    return nullptr;
  }
  for (const json& condition : workload.value("status", json::object()).value("conditions", json::array())) {
    if (condition.value("type", "") == type) {
      return condition;
    }
  }
  return nullptr;
}

// An image whose trainer exits 0 when its Pod is stopped (SIGTERM), as many training scripts do
// after a last checkpoint: the example trainer under a shell that answers SIGTERM with exit 0.
constexpr char kGracefulTrainer[] = "ringleader/graceful-trainer";

std::string WriteGracefulTrainer(const std::filesystem::path& path, const std::string& trainer) {
  {
    std::ofstream out(path);
    out << "#!/bin/sh\n"
           "trap 'kill -TERM \"$child\" 2>/dev/null; wait \"$child\"; exit 0' TERM\n'"
        << trainer << "' \"$@\" &\nchild=$!\nwait \"$child\"\n";
    if (!out) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                         std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec);
  return path.string();
}

class KueueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      skip_ = "end-to-end runs need network namespaces: " + why;
      return;
    }
    scripts_ = MakeTempDir("kueue-test");
    bed_ = std::make_unique<EndToEnd>(
        [](devcluster::Options& options) {
          options.kueue = true;
          // The block Nodes lack nothing TAS needs; the flavor finds them by the GPU label.
          for (const char* block : {"a", "b"}) {
            for (const char* node : {"1", "2"}) {
              options.nodes.push_back(devcluster::NodeConfig{
                  .name = std::string("block-") + block + "-" + node,
                  .gpus = 2,
                  .labels = {{kBlockLabel, block}, {"nvidia.com/gpu.present", "true"}}});
            }
          }
          options.images[kGracefulTrainer] =
              WriteGracefulTrainer(scripts_ / "graceful-trainer", options.images.at("ringleader/example-trainer"));
        },
        EndToEnd::Operator::kLater);
    // A gated Pod waits on Kueue, not on a node: the job says so after 2 s instead of 60.
    bed_->StartOperatorWith({"--unschedulable-after", "2"});
    const std::string managed =
        std::string(devcluster::kKueueManagedNamespaceLabel) + "=" + devcluster::kKueueManagedNamespaceValue;
    setup_ = bed_->Kubectl({"label", "namespace", "default", managed});
    if (setup_.exit_code == 0) {
      // What the chart installs beside the CRD: the queue-name policy.
      setup_ = bed_->Kubectl({"apply", "-f", "crds/ringleader.dev_kueue-queue-name-policy.yaml"});
    }
    if (setup_.exit_code == 0) {
      // The documented example: a ClusterQueue of 8 GPUs (both Nodes' 4), and its priority classes.
      setup_ = bed_->Kubectl({"apply", "-f", "examples/kueue/cluster-queue.yaml", "-f",
                              "examples/kueue/priority-classes.yaml"});
    }
    if (setup_.exit_code == 0) {
      setup_ = bed_->Apply("local-queue", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n"
                                          "  name: team-a\n  namespace: default\nspec:\n  clusterQueue: training\n");
    }
  }
  static void TearDownTestSuite() {
    bed_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(scripts_, ignored);
  }

  void SetUp() override {
    if (!skip_.empty()) {
      GTEST_SKIP() << skip_;
    }
    ASSERT_TRUE(bed_) << "the bed did not start";
    ASSERT_EQ(setup_.exit_code, 0) << setup_.output;
  }

  EndToEnd& bed() { return *bed_; }
  json Workload(const std::string& name) { return bed_->Get("workloads.kueue.x-k8s.io", name); }
  // The Workload's condition `type` once Kueue has written it (within 20 s); null if it never did.
  json AwaitWorkloadCondition(const std::string& name, const std::string& type) {
    json condition;
    WaitUntil(
        [&] {
          condition = WorkloadCondition(Workload(name), type);
          return condition.is_object();
        },
        seconds(20));
    return condition;
  }

  static inline std::filesystem::path scripts_;
  static inline std::unique_ptr<EndToEnd> bed_;
  static inline std::string skip_;
  static inline CommandOutput setup_;
};

TEST_F(KueueTest, ASecondGangWaitsGatedForQuotaAndRunsOnceTheFirstFinishes) {
  EndToEnd& bed = this->bed();
  // 2 ranks of 3 GPUs each: one job's gang fits the queue's 8 GPUs, two do not.
  ASSERT_EQ(bed.Apply("first", QueuedJob({.name = "first", .replicas = 2, .steps = 100, .step_delay_ms = 100,
                                          .gpus_per_replica = 3},
                                         "team-a"))
                .exit_code,
            0);
  const json first_running = bed.WaitForJob("first", JobRunning, seconds(90));
  ASSERT_EQ(JobState(first_running), "Running") << first_running.dump(2) << bed.Diagnostics();
  ASSERT_EQ(bed.Apply("second", QueuedJob({.name = "second", .replicas = 2, .steps = 5, .gpus_per_replica = 3},
                                          "team-a"))
                .exit_code,
            0);

  // Kueue's webhook gated both of its Pods; its scheduler found no quota for the group, and the
  // job's condition says so in Kueue's words.
  const json waiting = bed.WaitForJob(
      "second", ScheduledFalseSaying("; Kueue: Workload second-"), seconds(30));
  const json* scheduled = FindJobCondition(waiting, "Scheduled");
  ASSERT_NE(scheduled, nullptr) << waiting.dump(2) << bed.Diagnostics();
  EXPECT_EQ(scheduled->value("reason", ""), "SchedulingGated") << scheduled->dump();
  EXPECT_THAT(scheduled->value("message", ""), ::testing::HasSubstr("insufficient unused quota for nvidia.com/gpu"))
      << scheduled->dump();
  EXPECT_TRUE(Gated(bed.Get("pod", "second-0"))) << bed.Get("pod", "second-0").dump(2);
  EXPECT_TRUE(Gated(bed.Get("pod", "second-1"))) << bed.Get("pod", "second-1").dump(2);
  // Both jobs' Pods carry Kueue's marks, and the operator sees them (no false NotManagedByKueue).
  EXPECT_TRUE(JobConditionIs(waiting, "KueueManaged", "True")) << waiting.dump(2);
  EXPECT_TRUE(JobConditionIs(bed.Get("trainingjob", "first"), "KueueManaged", "True"))
      << bed.Get("trainingjob", "first").dump(2);
  const std::string group = GroupOf(bed, "second-0");
  ASSERT_FALSE(group.empty());
  const json reserved = AwaitWorkloadCondition(group, "QuotaReserved");
  ASSERT_TRUE(reserved.is_object()) << Workload(group).dump(2);
  EXPECT_EQ(reserved.value("status", ""), "False") << reserved.dump();
  EXPECT_THAT(reserved.value("message", ""), ::testing::HasSubstr("insufficient unused quota for nvidia.com/gpu"))
      << reserved.dump();
  EXPECT_EQ(JobState(bed.Get("trainingjob", "first")), "Running") << "the second job waited only for the first";

  const json first_done = bed.WaitForJob("first", JobFinished, seconds(90));
  ASSERT_EQ(JobState(first_done), "Succeeded") << first_done.dump(2) << bed.Diagnostics();
  const json second_done = bed.WaitForJob("second", JobFinished, seconds(90));
  ASSERT_EQ(JobState(second_done), "Succeeded") << second_done.dump(2) << bed.Diagnostics();
  EXPECT_EQ(WorkloadCondition(Workload(group), "Finished").value("status", ""), "True") << Workload(group).dump(2);
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "first", "second"}).exit_code, 0);
}

TEST_F(KueueTest, APreemptedGangIsADisruptionNotAFailureAndRunsAgainOnceQuotaIsFree) {
  EndToEnd& bed = this->bed();
  // Each gang takes the queue's 8 GPUs. backoffLimit 0: one counted restart would fail the job.
  // Its trainers exit 0 when stopped: a preempted gang must still not count as Succeeded.
  json low = json::parse(QueuedJob({.name = "low", .replicas = 2, .steps = 100, .step_delay_ms = 100,
                                    .backoff_limit = 0, .gpus_per_replica = 4},
                                   "team-a", "training-low"));
  low["spec"]["template"]["spec"]["containers"][0]["image"] = kGracefulTrainer;
  ASSERT_EQ(bed.Apply("low", low.dump()).exit_code, 0);
  const json low_running = bed.WaitForJob("low", JobRunning, seconds(90));
  ASSERT_EQ(JobState(low_running), "Running") << low_running.dump(2) << bed.Diagnostics();
  ASSERT_EQ(bed.Apply("high", QueuedJob({.name = "high", .replicas = 2, .steps = 10, .gpus_per_replica = 4},
                                        "team-a", "training-high"))
                .exit_code,
            0);

  // Kueue evicts the low job's Workload: TerminationTarget on each Pod, then deletes them.
  const json preempted = bed.WaitForJob(
      "low", [](const json& job) { return job.value("status", json::object()).contains("disruption"); }, seconds(60));
  ASSERT_TRUE(preempted.is_object()) << bed.Diagnostics();
  const json disruption = preempted["status"]["disruption"];
  EXPECT_EQ(disruption.value("reason", ""), "WorkloadEvictedDueToPreempted") << disruption.dump();
  EXPECT_EQ(disruption.value("attempt", -1), 0) << disruption.dump();

  EXPECT_NE(JobState(preempted), "Succeeded") << "preempted trainers that exit 0 are stopped, not done";
  const json high_done = bed.WaitForJob("high", JobFinished, seconds(90));
  ASSERT_EQ(JobState(high_done), "Succeeded") << high_done.dump(2) << bed.Diagnostics();
  const json low_done = bed.WaitForJob("low", JobFinished, seconds(120));
  ASSERT_EQ(JobState(low_done), "Succeeded") << low_done.dump(2) << bed.Diagnostics();
  EXPECT_GE(low_done["status"].value("restarts", 0), 1) << low_done["status"].dump(2);
  EXPECT_EQ(low_done["status"].value("countedRestarts", 0), 0) << low_done["status"].dump(2);
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "low", "high"}).exit_code, 0);
}

TEST_F(KueueTest, AJobInANamespaceKueueDoesNotManageIsWarnedAboutInTheReconcileThatSeesItsPods) {
  EndToEnd& bed = this->bed();
  // A namespace without the label kueue-managed: Kueue's webhook leaves its Pods alone.
  ASSERT_EQ(bed.Kubectl({"create", "namespace", "unqueued"}).exit_code, 0);
  json spec = json::parse(QueuedJob({.name = "unqueued", .replicas = 2, .steps = 5}, "team-a"));
  spec["metadata"]["namespace"] = "unqueued";
  ASSERT_EQ(bed.Apply("unqueued", spec.dump()).exit_code, 0);
  json job;
  const json* managed = nullptr;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const CommandOutput got = bed.Kubectl({"-n", "unqueued", "get", "trainingjob", "unqueued", "-o", "json"});
        job = json::parse(got.output, nullptr, false);
        managed = FindJobCondition(job, "KueueManaged");
        return managed != nullptr;
      },
      seconds(30)))
      << job.dump(2) << bed.Diagnostics();
  EXPECT_EQ(managed->value("status", ""), "False") << managed->dump();
  EXPECT_EQ(managed->value("reason", ""), "NotManagedByKueue") << managed->dump();
  EXPECT_THAT(managed->value("message", ""),
              ::testing::HasSubstr("namespace \"unqueued\" is not selected by Kueue's managedJobsNamespaceSelector"));
  // Said in the reconcile that first saw the Pods, the one after the reconcile that made them.
  const json* created = FindJobCondition(job, "Created");
  ASSERT_NE(created, nullptr) << job.dump(2);
  EXPECT_LE(api::ParseTime(managed->value("lastTransitionTime", "")).value() -
                api::ParseTime(created->value("lastTransitionTime", "")).value(),
            seconds(1))
      << job["status"].dump(2);
  EXPECT_FALSE(Gated(json::parse(bed.Kubectl({"-n", "unqueued", "get", "pod", "unqueued-0", "-o", "json"}).output,
                                 nullptr, false)));

  const CommandOutput events = bed.Kubectl({"-n", "unqueued", "get", "events", "-o", "json"});
  int warnings = 0;
  for (const json& event : json::parse(events.output, nullptr, false).value("items", json::array())) {
    if (event.value("reason", "") == "NotManagedByKueue" && event.value("type", "") == "Warning" &&
        event["involvedObject"].value("name", "") == "unqueued") {
      warnings += event.value("count", 1);
      EXPECT_EQ(event.value("message", ""), managed->value("message", ""));
    }
  }
  EXPECT_EQ(warnings, 1) << events.output;
  ASSERT_EQ(bed.Kubectl({"delete", "namespace", "unqueued", "--wait=false"}).exit_code, 0);
}

TEST_F(KueueTest, AQueueNameThatIsNoDnsSubdomainIsRefusedAtApplyNamingTheLabel) {
  EndToEnd& bed = this->bed();
  const std::string job = QueuedJob({.name = "badqueue", .replicas = 2}, "Team_A");
  // The policy binds within a second of its apply in SetUpTestSuite; until then a create passes.
  CommandOutput applied;
  ASSERT_TRUE(WaitUntil(
      [&] {
        applied = bed.Apply("badqueue", job);
        if (applied.exit_code == 0) {
          bed.Kubectl({"delete", "trainingjob", "badqueue", "--wait=false"});
        }
        return applied.exit_code != 0;
      },
      seconds(20)))
      << applied.output;
  EXPECT_THAT(applied.output, ::testing::HasSubstr("metadata.labels.kueue.x-k8s.io/queue-name"));
  EXPECT_THAT(applied.output, ::testing::HasSubstr("Team_A"));
  EXPECT_FALSE(bed.Get("trainingjob", "badqueue").is_object());
}

TEST_F(KueueTest, AJobMadeAgainUnderTheSameNameRightAfterItsDeletionRunsCleanly) {
  EndToEnd& bed = this->bed();
  const std::string job =
      QueuedJob({.name = "again", .replicas = 2, .steps = 600, .step_delay_ms = 100, .gpus_per_replica = 1}, "team-a");
  ASSERT_EQ(bed.Apply("again", job).exit_code, 0);
  const json first = bed.WaitForJob("again", JobRunning, seconds(90));
  ASSERT_EQ(JobState(first), "Running") << first.dump(2) << bed.Diagnostics();
  const std::string old_group = GroupOf(bed, "again-0");
  ASSERT_FALSE(old_group.empty());

  // Its Pods and Workload are still going when the new job arrives: the garbage collector and
  // Kueue remove them after the job itself.
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "again"}).exit_code, 0);
  ASSERT_EQ(bed.Apply("again", QueuedJob({.name = "again", .replicas = 2, .steps = 5, .gpus_per_replica = 1},
                                         "team-a"))
                .exit_code,
            0);
  EXPECT_TRUE(Workload(old_group).is_object()) << "the old job's Workload was gone before the new job came";
  const json done = bed.WaitForJob("again", JobFinished, seconds(120));
  ASSERT_EQ(JobState(done), "Succeeded") << done.dump(2) << bed.Diagnostics();
  EXPECT_EQ(done["status"].value("restarts", 0), 0) << done["status"].dump(2);
  EXPECT_NE(done["metadata"]["uid"], first["metadata"]["uid"]);
  const CommandOutput listed = bed.Kubectl({"get", "workloads.kueue.x-k8s.io", "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const json workloads = json::parse(listed.output);
  int admitted_for_new_job = 0;
  for (const json& workload : workloads["items"]) {
    const std::string name = workload["metadata"]["name"];
    if (name != old_group && name.rfind("again-", 0) == 0 &&
        WorkloadCondition(workload, "Finished").value("status", "") == "True") {
      ++admitted_for_new_job;
    }
  }
  EXPECT_EQ(admitted_for_new_job, 1) << "the new job ran as one Workload of its own, not the old one's\n"
                                     << workloads.dump(2);
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "again"}).exit_code, 0);
}

// Kueue's topology-aware scheduling (TAS) on two blocks of two Nodes with 2 GPUs each. A gang of
// 6 that requires one block is never admitted, and says why; a gang of 4 gets one block, and
// Kueue pins its ranks to the Nodes in order: it fills the block's Nodes sorted by their label
// values (block, then hostname), rank 0 first (pod-group-pod-index-label: ringleader.dev/rank).
TEST_F(KueueTest, AGangThatRequiresOneBlockGetsOneInRankOrderAndOneTooBigForABlockWaits) {
  EndToEnd& bed = this->bed();
  ASSERT_EQ(bed.Kubectl({"apply", "-f", "examples/kueue/topology.yaml"}).exit_code, 0);
  ASSERT_EQ(bed.Apply("blocks-queue", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n"
                                      "  name: team-blocks\n  namespace: default\nspec:\n"
                                      "  clusterQueue: training-blocks\n")
                .exit_code,
            0);

  // 6 Pods on 8 idle GPUs of quota and Nodes: they would fit, but no block has 6.
  ASSERT_EQ(bed.Apply("too-big", QueuedJobInOne({.name = "too-big", .replicas = 6, .steps = 5, .gpus_per_replica = 1},
                                                "team-blocks", kBlockLabel))
                .exit_code,
            0);
  // The job's condition carries Kueue's reason from the Workload.
  const json waiting = bed.WaitForJob(
      "too-big", ScheduledFalseSaying("allows to fit only 4 out of 6 pod(s)"), seconds(30));
  const json* scheduled = FindJobCondition(waiting, "Scheduled");
  ASSERT_NE(scheduled, nullptr) << waiting.dump(2) << bed.Diagnostics();
  EXPECT_EQ(scheduled->value("reason", ""), "SchedulingGated") << scheduled->dump();
  EXPECT_THAT(scheduled->value("message", ""), ::testing::HasSubstr("; Kueue: Workload too-big-")) << scheduled->dump();
  std::printf("too big for a block: Scheduled=False %s: %s\n", scheduled->value("reason", "").c_str(),
              scheduled->value("message", "").c_str());
  const std::string group = GroupOf(bed, "too-big-0");
  ASSERT_FALSE(group.empty());
  const json reserved = AwaitWorkloadCondition(group, "QuotaReserved");
  ASSERT_TRUE(reserved.is_object()) << Workload(group).dump(2);
  EXPECT_EQ(reserved.value("status", ""), "False") << reserved.dump();
  const std::string why = reserved.value("message", "");
  EXPECT_THAT(why, ::testing::HasSubstr("topology \"blocks\" allows to fit only 4 out of 6 pod(s)")) << why;
  std::printf("too big for a block: Workload %s QuotaReserved=False: %s\n", group.c_str(), why.c_str());
  // Kueue read the Pods' annotations: its pod set requires one block, ranked by ringleader's label.
  const json request = Workload(group)["spec"]["podSets"][0].value("topologyRequest", json::object());
  EXPECT_EQ(request.value("required", ""), kBlockLabel) << request.dump();
  EXPECT_EQ(request.value("podIndexLabel", ""), "kueue.x-k8s.io/pod-group-pod-index") << request.dump();

  // A gang of 4 behind it (BestEffortFIFO) is admitted into one block and runs.
  ASSERT_EQ(bed.Apply("fits", QueuedJobInOne({.name = "fits", .replicas = 4, .steps = 5, .gpus_per_replica = 1},
                                             "team-blocks", kBlockLabel))
                .exit_code,
            0);
  const json fits = bed.WaitForJob("fits", JobFinished, seconds(120));
  ASSERT_EQ(JobState(fits), "Succeeded") << fits.dump(2) << bed.Diagnostics();
  std::map<int, std::string> node_of_rank;
  std::set<std::string> blocks;
  for (int rank = 0; rank < 4; ++rank) {
    const json pod = bed.Get("pod", "fits-" + std::to_string(rank));
    ASSERT_TRUE(pod.is_object()) << "no Pod fits-" << rank;
    const std::string node = pod["spec"].value("nodeName", "");
    node_of_rank[rank] = node;
    blocks.insert(node.substr(0, std::string("block-a").size()));
    // Kueue pinned the Pod to its Node when it lifted its topology gate.
    EXPECT_EQ(pod["spec"].value("nodeSelector", json::object()).value("kubernetes.io/hostname", ""), node)
        << pod["spec"].dump(2);
    EXPECT_EQ(pod["metadata"]["labels"].value("kueue.x-k8s.io/pod-group-pod-index", ""), std::to_string(rank));
  }
  ASSERT_EQ(blocks.size(), 1u) << "the gang's Pods ran in more than one block";
  // Ranks 0 and 1 on the block's first Node, 2 and 3 on its second: consecutive ranks share a Node.
  const std::string block = *blocks.begin();
  EXPECT_EQ(node_of_rank, (std::map<int, std::string>{
                              {0, block + "-1"}, {1, block + "-1"}, {2, block + "-2"}, {3, block + "-2"}}));
  std::printf("one block: ranks 0-3 ran on %s %s %s %s\n", node_of_rank[0].c_str(), node_of_rank[1].c_str(),
              node_of_rank[2].c_str(), node_of_rank[3].c_str());
  EXPECT_TRUE(Gated(bed.Get("pod", "too-big-0"))) << "the gang of 6 was admitted after all";
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "too-big", "fits"}).exit_code, 0);
}

}  // namespace
}  // namespace ringleader::testing
