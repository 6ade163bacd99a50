// Gang scheduling through the real kubectl, operator, sidecars and example trainer on devcluster,
// whose scheduler binds a coscheduling PodGroup's Pods all together or not at all
// (docs/devcluster.md). One node with 4 GPUs holds one 4-Pod job of 1 GPU per Pod. The first job's
// ranks 1-3 linger after training, so once its rank 0 is done one GPU stays free for a while: with
// gang scheduling the second job takes nothing until all 4 fit; without it, its rank 0 takes that
// GPU and sits waiting for peers that cannot be placed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/bed_test.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/child_process.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr int kReplicas = 4;
constexpr int kLingerSeconds = 6;
constexpr const char* kPodGroupCrd = "tests/devcluster/testdata/coscheduling-podgroup-crd.yaml";

// A job of 4 ranks with 1 GPU each; every rank but 0 lingers `linger_seconds` after training.
std::string GangJobYaml(const std::string& name, bool gang, int linger_seconds) {
  std::string yaml = "apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " + name +
                     "\n  namespace: default\nspec:\n  replicas: " + std::to_string(kReplicas) +
                     "\n  gpusPerReplica: 1\n  processesPerReplica: 1\n"
                     "  communication:\n    backend: gloo\n"
                     "    preflight: {minBytes: 64Ki, maxBytes: 256Ki, stepFactor: 4, timeoutSeconds: 120}\n"
                     "    monitor: {intervalSeconds: 5, messageBytes: 64Ki}\n"
                     "  runPolicy:\n    backoffLimit: 2\n";
  if (gang) {
    yaml += "    schedulingPolicy:\n      provider: Coscheduling\n";
  }
  yaml += "  template:\n    spec:\n      containers:\n        - name: trainer\n"
          "          image: ringleader/example-trainer:0.1.0\n"
          "          args: [\"--steps\", \"10\", \"--step-delay-ms\", \"50\", "
          "\"--linger-after-training-seconds\", \"" + std::to_string(linger_seconds) + "\"]\n";
  return yaml;
}

// What a `kubectl get pods --watch --output-watch-events -o json` saw, replayed in order: after
// each event, the Pods as they then stood.
class PodTimeline {
 public:
  // The log holds kubectl's stderr too ("No resources found" before the first Pod): anything
  // before an object's opening brace is skipped.
  explicit PodTimeline(const std::string& watch_output) {
    std::map<std::string, json> pods;
    for (std::size_t pos = watch_output.find('{'); pos != std::string::npos;
         pos = watch_output.find('{', pos)) {
      std::istringstream in(watch_output.substr(pos));
      json event;
      try {
        in >> event;
      } catch (const json::exception&) {
        break;  // the watch was cut off mid-object when it was stopped
      }
      const std::streamoff consumed = in.tellg();
      pos = consumed < 0 ? watch_output.size() : pos + static_cast<std::size_t>(consumed);
      const json& pod = event["object"];
      const std::string name = pod["metadata"].value("name", "");
      if (event.value("type", "") == "DELETED") {
        pods.erase(name);
      } else {
        pods[name] = pod;
      }
      states_.push_back(pods);
    }
  }

  using Pods = std::map<std::string, json>;
  const std::vector<Pods>& states() const { return states_; }

  static bool Bound(const Pods& pods, const std::string& name) {
    const auto it = pods.find(name);
    return it != pods.end() && !it->second["spec"].value("nodeName", "").empty();
  }
  static std::string Phase(const Pods& pods, const std::string& name) {
    const auto it = pods.find(name);
    return it == pods.end() ? "" : it->second["status"].value("phase", "");
  }
  // How many of `job`'s ranks have a Pod bound to a node.
  static int BoundRanks(const Pods& pods, const std::string& job) {
    int bound = 0;
    for (int rank = 0; rank < kReplicas; ++rank) {
      bound += Bound(pods, job + "-" + std::to_string(rank)) ? 1 : 0;
    }
    return bound;
  }
  // The first job's rank 0 is done (its GPU free) and its other ranks still hold theirs.
  static bool OneGpuFree(const Pods& pods) {
    if (Phase(pods, "first-0") != "Succeeded") {
      return false;
    }
    for (int rank = 1; rank < kReplicas; ++rank) {
      const std::string phase = Phase(pods, "first-" + std::to_string(rank));
      if (phase != "Running" && phase != "Pending") {
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<Pods> states_;
};

class GangSchedulingTest : public BedTest {
 protected:
  // One node, 4 GPUs: room for one of the jobs. The coscheduling PodGroup CRD is served before
  // the operator starts, as on a cluster with scheduler-plugins installed.
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    bed_ = std::make_unique<EndToEnd>(
        [](devcluster::Options& options) {
          devcluster::NodeConfig node;
          node.name = "node-a";
          node.gpus = kReplicas;
          options.nodes = {node};
        },
        EndToEnd::Operator::kLater);
    const CommandOutput crd = bed_->Kubectl({"apply", "-f", kPodGroupCrd});
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    // Pods unscheduled for 2 s already make the job's Scheduled=False (the default is a minute).
    bed_->StartOperatorWith({"--unschedulable-after", "2"});
  }

  // Runs the two jobs: the second is applied once the first's 4 Pods run; returns the timeline of
  // every Pod of both until both jobs finished.
  PodTimeline RunBothJobs(bool gang) {
    ChildOptions watch;
    watch.binary = FindProgram("kubectl");
    watch.args = {"--kubeconfig", bed_->cluster().kubeconfig_path(), "get", "pods", "--watch",
                  "--output-watch-events", "-o", "json"};
    watch.log = bed_->dir() / "pod-watch.json";
    ChildProcess watcher(watch);

    const CommandOutput first = bed_->Apply("first", GangJobYaml("first", gang, kLingerSeconds));
    EXPECT_EQ(first.exit_code, 0) << first.output;
    const json running = bed_->WaitForJob(
        "first", [](const json& job) { return JobConditionIs(job, "Running", "True"); }, seconds(120));
    EXPECT_TRUE(running.is_object()) << bed_->Diagnostics();
    const CommandOutput second = bed_->Apply("second", GangJobYaml("second", gang, 0));
    EXPECT_EQ(second.exit_code, 0) << second.output;

    // The second job waits with Scheduled=False while the first runs.
    const json waiting = bed_->WaitForJob(
        "second", [](const json& job) { return JobConditionIs(job, "Scheduled", "False"); }, seconds(60));
    EXPECT_TRUE(waiting.is_object()) << bed_->Get("trainingjob", "second").dump(2) << bed_->Diagnostics();
    if (waiting.is_object()) {
      const json* scheduled = FindJobCondition(waiting, "Scheduled");
      EXPECT_EQ(scheduled->value("reason", ""), "Unschedulable") << waiting.dump(2);
      EXPECT_THAT(scheduled->value("message", ""), HasSubstr("second-")) << waiting.dump(2);
    }
    scheduled_false_seen_ = waiting.is_object();

    const json first_done = bed_->WaitForJob("first", JobFinished, seconds(180));
    EXPECT_EQ(JobState(first_done), "Succeeded") << first_done.dump(2) << bed_->Diagnostics();
    const json second_done = bed_->WaitForJob("second", JobFinished, seconds(180));
    EXPECT_EQ(JobState(second_done), "Succeeded") << second_done.dump(2) << bed_->Diagnostics();
    if (second_done.is_object()) {
      EXPECT_TRUE(JobConditionIs(second_done, "Scheduled", "True")) << second_done.dump(2);
      EXPECT_EQ(second_done["status"].value("restarts", -1), 0) << second_done.dump(2);
    }
    watcher.Signal(SIGTERM);
    watcher.WaitFor(std::chrono::seconds(5));
    return PodTimeline(ReadLog(watch.log));
  }

  bool scheduled_false_seen_ = false;
};

TEST_F(GangSchedulingTest, TheSecondJobTakesNoGpuUntilAllFourFit) {
  const PodTimeline timeline = RunBothJobs(/*gang=*/true);
  ASSERT_TRUE(scheduled_false_seen_);

  // The PodGroup the operator made: owned by the job, minMember = replicas.
  const json group = bed_->Get("podgroups.scheduling.x-k8s.io", "second");
  ASSERT_TRUE(group.is_object()) << bed_->Diagnostics();
  EXPECT_EQ(group["spec"].value("minMember", 0), kReplicas) << group.dump(2);
  EXPECT_EQ(group["metadata"]["ownerReferences"][0].value("kind", ""), "TrainingJob") << group.dump(2);

  int free_gpu_states = 0;
  bool all_bound_seen = false;
  for (const PodTimeline::Pods& pods : timeline.states()) {
    const int bound = PodTimeline::BoundRanks(pods, "second");
    if (PodTimeline::OneGpuFree(pods)) {
      ++free_gpu_states;
      EXPECT_EQ(bound, 0) << "the second job took a GPU while its gang could not fit";
    }
    all_bound_seen = all_bound_seen || bound == kReplicas;
    // While any of the first job's Pods holds its GPU, none of the second's is bound.
    bool first_holds = false;
    for (int rank = 0; rank < kReplicas; ++rank) {
      const std::string phase = PodTimeline::Phase(pods, "first-" + std::to_string(rank));
      first_holds = first_holds || phase == "Running" || phase == "Pending";
    }
    if (first_holds) {
      EXPECT_EQ(bound, 0);
    }
  }
  // The lingering ranks kept one GPU free for a while: the case gang scheduling is for.
  EXPECT_GT(free_gpu_states, 0) << "the watch never saw rank 0 of the first job done while ranks 1-3 lingered";
  EXPECT_TRUE(all_bound_seen);
}

TEST_F(GangSchedulingTest, WithoutGangSchedulingTheSecondJobsRankZeroHoldsTheFreedGpuAlone) {
  const PodTimeline timeline = RunBothJobs(/*gang=*/false);
  ASSERT_TRUE(scheduled_false_seen_);
  EXPECT_TRUE(bed_->Get("podgroups.scheduling.x-k8s.io", "second").is_null());

  // Pods are placed one by one: the GPU the first job's rank 0 frees goes to the second job's
  // oldest Pod, which then waits for three peers that have nowhere to run.
  int partly_placed = 0;
  for (const PodTimeline::Pods& pods : timeline.states()) {
    if (PodTimeline::OneGpuFree(pods) && PodTimeline::BoundRanks(pods, "second") == 1) {
      ++partly_placed;
      EXPECT_TRUE(PodTimeline::Bound(pods, "second-0"));
    }
  }
  EXPECT_GT(partly_placed, 0) << "the second job was never seen with 1 of its 4 Pods placed";
}

}  // namespace
}  // namespace ringleader::testing
