// Kubernetes' own gang scheduling (provider Kubernetes) on the real kube-scheduler, whose
// GangScheduling plugin devcluster's control plane turns on (GenericWorkload), on one Node with 4
// GPUs: a gang of 4 binds no Pod while another job holds a GPU, says why in Scheduled=False, and
// then binds whole; without a provider the same Pods bind as far as the free GPUs go. With
// topology (TopologyAwareWorkloadScheduling), on Nodes labelled in two blocks: a gang that
// requires one block gets all its Pods in one, and one that cannot fit a block waits, saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// A job of `replicas` Pods of 1 GPU each, under `provider` ("" for none), in one domain of
// `topology_key` when one is given.
std::string GpuJob(const std::string& name, int replicas, int steps, const std::string& provider,
                   const std::string& topology_key = "") {
  std::string yaml = JobYaml({.name = name, .replicas = replicas, .steps = steps, .step_delay_ms = 100,
                              .gpus_per_replica = 1});
  if (!provider.empty()) {
    const std::string run_policy = "  runPolicy:\n";
    std::string policy = "    schedulingPolicy:\n      provider: " + provider + "\n";
    if (!topology_key.empty()) {
      policy += "      topology: {mode: Required, key: " + topology_key + "}\n";
    }
    yaml.replace(yaml.find(run_policy), run_policy.size(), run_policy + policy);
  }
  return yaml;
}

struct Binding {
  int bound = 0;    // Pods with a node
  int holding = 0;  // Pods with a node that have not finished: they hold their GPU
  int total = 0;
};

// The job's current Pods as the API server has them.
Binding Bindings(EndToEnd& bed, const std::string& job) {
  Binding out;
  const CommandOutput pods = bed.Kubectl({"get", "pods", "-l", "ringleader.dev/job-name=" + job, "-o", "json"});
  if (pods.exit_code != 0) {
    return out;
  }
  for (const json& pod : json::parse(pods.output).value("items", json::array())) {
    ++out.total;
    const bool bound = !pod["spec"].value("nodeName", "").empty();
    const std::string phase = pod.value("status", json::object()).value("phase", "");
    out.bound += bound ? 1 : 0;
    out.holding += bound && phase != "Succeeded" && phase != "Failed" ? 1 : 0;
  }
  return out;
}

// One devcluster for both tests (each leaves no Pod holding a GPU).
class GangSchedulingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      return;
    }
    bed_ = new EndToEnd(
        [](devcluster::Options& options) { options.nodes = {devcluster::NodeConfig{.name = "node-a", .gpus = 4}}; },
        EndToEnd::Operator::kLater);
    // Scheduled=False as soon as a Pod has waited 2 s, rather than a minute.
    bed_->StartOperatorWith({"--unschedulable-after", "2"});
  }
  static void TearDownTestSuite() {
    delete bed_;
    bed_ = nullptr;
  }
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
  }
  static EndToEnd* bed_;
};
EndToEnd* GangSchedulingTest::bed_ = nullptr;

TEST_F(GangSchedulingTest, ASecondGangBindsNothingWhileTheFirstHoldsAGpuThenBindsWhole) {
  EndToEnd& bed = *bed_;
  ASSERT_EQ(bed.Apply("first", GpuJob("first", 4, 60, "Kubernetes")).exit_code, 0);
  const json running = bed.WaitForJob("first", JobRunning, seconds(120));
  ASSERT_EQ(JobState(running), "Running") << running.dump(2) << bed.Diagnostics();
  ASSERT_EQ(bed.Apply("second", GpuJob("second", 4, 5, "Kubernetes")).exit_code, 0);

  // From now until the first job's last Pod lets go of its GPU, the second binds nothing.
  bool said_why = false;
  std::string scheduled_reason;
  std::string scheduled_message;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  for (;;) {
    const Binding second = Bindings(bed, "second");
    const Binding first = Bindings(bed, "first");
    if (first.holding == 0) {
      break;
    }
    ASSERT_EQ(second.bound, 0) << "the second gang bound a Pod while the first held " << first.holding
                               << " GPUs" << bed.Diagnostics();
    if (!said_why) {
      const json job = bed.Get("trainingjob", "second");
      if (const json* scheduled = FindJobCondition(job, "Scheduled");
          scheduled != nullptr && scheduled->value("status", "") == "False") {
        said_why = true;
        scheduled_reason = scheduled->value("reason", "");
        scheduled_message = scheduled->value("message", "");
      }
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the first job never let its GPUs go" << bed.Diagnostics();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(said_why) << "Scheduled never turned False for the waiting gang" << bed.Diagnostics();
  // The scheduler's reason and words, as the Pods' PodScheduled condition has them.
  EXPECT_EQ(scheduled_reason, "Unschedulable");
  EXPECT_THAT(scheduled_message, ::testing::HasSubstr("nvidia.com/gpu")) << scheduled_message;
  std::printf("waiting gang: Scheduled=False %s: %s\n", scheduled_reason.c_str(), scheduled_message.c_str());

  const json first = bed.WaitForJob("first", JobFinished, seconds(60));
  EXPECT_EQ(JobState(first), "Succeeded") << first.dump(2);
  const json second = bed.WaitForJob("second", JobFinished, seconds(120));
  EXPECT_EQ(JobState(second), "Succeeded") << second.dump(2) << bed.Diagnostics();
  EXPECT_EQ(Bindings(bed, "second").bound, 4);
  EXPECT_TRUE(JobConditionIs(second, "Scheduled", "True")) << second.dump(2);
  // The gang's own PodGroup, owned by its job, per attempt.
  const CommandOutput groups =
      bed.Kubectl({"get", "podgroups.scheduling.k8s.io", "-o", "jsonpath={.items[*].spec.schedulingPolicy.gang.minCount}"});
  EXPECT_EQ(groups.output, "4 4") << groups.output;
}

// Two GPUs held by a plain job: a gang of 4 binds none of its Pods; the same 4 Pods without a
// provider bind 2 and leave 2 waiting, the partial binding a gang prevents.
TEST_F(GangSchedulingTest, WithoutAProviderTheSamePodsBindPartially) {
  EndToEnd& bed = *bed_;
  ASSERT_EQ(bed.Apply("holder", GpuJob("holder", 2, 600, "")).exit_code, 0);
  const json holding = bed.WaitForJob("holder", JobRunning, seconds(120));
  ASSERT_EQ(JobState(holding), "Running") << holding.dump(2) << bed.Diagnostics();

  ASSERT_EQ(bed.Apply("gang", GpuJob("gang", 4, 5, "Kubernetes")).exit_code, 0);
  const json waiting = bed.WaitForJob(
      "gang", [](const json& job) { return JobConditionIs(job, "Scheduled", "False"); }, seconds(60));
  ASSERT_TRUE(JobConditionIs(waiting, "Scheduled", "False")) << waiting.dump(2) << bed.Diagnostics();
  EXPECT_EQ(Bindings(bed, "gang").bound, 0) << "2 GPUs are free, but a gang of 4 binds all or nothing";

  ASSERT_EQ(bed.Apply("plain", GpuJob("plain", 4, 5, "")).exit_code, 0);
  const json partial = bed.WaitForJob(
      "plain", [](const json& job) { return JobConditionIs(job, "Scheduled", "False"); }, seconds(60));
  ASSERT_TRUE(JobConditionIs(partial, "Scheduled", "False")) << partial.dump(2) << bed.Diagnostics();
  const Binding plain = Bindings(bed, "plain");
  EXPECT_EQ(plain.total, 4);
  EXPECT_EQ(plain.bound, 2) << "without a provider the free GPUs go to as many Pods as they fit";
  EXPECT_EQ(Bindings(bed, "gang").bound, 0);
  ASSERT_EQ(bed.Kubectl({"delete", "trainingjob", "holder", "plain", "gang"}).exit_code, 0);
}

// Two blocks of two Nodes with 2 GPUs each: 4 GPUs per block.
TEST(GangTopologyTest, AGangThatRequiresOneBlockGetsOneAndOneTooBigForABlockWaits) {
  std::string why;
  if (!EndToEnd::Supported(&why)) {
    GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
  }
  constexpr char kBlock[] = "example.com/block";
  EndToEnd bed(
      [&](devcluster::Options& options) {
        options.nodes.clear();
        for (const char* block : {"a", "b"}) {
          for (const char* node : {"1", "2"}) {
            options.nodes.push_back(devcluster::NodeConfig{.name = std::string("node-") + block + node,
                                                           .gpus = 2,
                                                           .labels = {{kBlock, block}}});
          }
        }
      },
      EndToEnd::Operator::kLater);
  bed.StartOperatorWith({"--unschedulable-after", "2"});
  // 6 Pods on an idle cluster of 8 GPUs: they would fit, but no block has 6.
  ASSERT_EQ(bed.Apply("too-big", GpuJob("too-big", 6, 5, "Kubernetes", kBlock)).exit_code, 0);
  const json waiting = bed.WaitForJob(
      "too-big", [](const json& job) { return JobConditionIs(job, "Scheduled", "False"); }, seconds(60));
  const json* scheduled = FindJobCondition(waiting, "Scheduled");
  ASSERT_NE(scheduled, nullptr) << waiting.dump(2) << bed.Diagnostics();
  EXPECT_EQ(Bindings(bed, "too-big").bound, 0);
  const std::string message = scheduled->value("message", "");
  EXPECT_THAT(message, ::testing::HasSubstr("0/2 placements are available")) << message;
  std::printf("too big for a block: Scheduled=False %s: %s\n", scheduled->value("reason", "").c_str(),
              message.c_str());

  ASSERT_EQ(bed.Apply("fits", GpuJob("fits", 4, 5, "Kubernetes", kBlock)).exit_code, 0);
  const json fits = bed.WaitForJob("fits", JobFinished, seconds(120));
  EXPECT_EQ(JobState(fits), "Succeeded") << fits.dump(2) << bed.Diagnostics();
  const CommandOutput nodes = bed.Kubectl(
      {"get", "pods", "-l", "ringleader.dev/job-name=fits", "-o", "jsonpath={range .items[*]}{.spec.nodeName} {end}"});
  std::set<char> blocks;
  for (std::size_t at = nodes.output.find("node-"); at != std::string::npos; at = nodes.output.find("node-", at + 1)) {
    blocks.insert(nodes.output[at + 5]);
  }
  EXPECT_EQ(blocks.size(), 1u) << "the gang's Pods are on " << nodes.output;
  std::printf("one block: the gang's Pods ran on %s\n", nodes.output.c_str());
  EXPECT_EQ(Bindings(bed, "too-big").bound, 0);
}

}  // namespace
}  // namespace ringleader::testing
