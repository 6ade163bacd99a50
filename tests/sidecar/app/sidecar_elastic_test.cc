// An elastic job's Pods as real processes on 127.0.0.1 (issue 31), both halves of each Pod
// ("sidecar" and "pod-preflight" modes, as pod_split_test). The attempt's first Pods meet in a
// Job-scope preflight of RINGLEADER_REPLICAS Pods while rank 0's store admits ranks up to
// RINGLEADER_MAX_REPLICAS; a Pod of a scale-up runs its preflight with scope Pod against the
// running rank 0 (its own ranks, and a round trip to rank 0's store); rank 0 compares the training
// reports of the ranks that are there, the new one included and a removed one left out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sidecar/rendezvous/torch_store_client.h"
#include "sidecar/service/preflight_result.h"
#include "tests/sidecar/app/profiled_trainer.h"
#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/http_fetch.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Base(SidecarWorld& world, int rank) {
  return "http://127.0.0.1:" + std::to_string(world.metrics_port(rank));
}

// Polls `url` until it answers `status` with `text` in its body; false at the deadline.
bool WaitForStatus(const std::string& url, int status, const std::string& text = "",
                   seconds timeout = seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto reply = HttpGet(url, milliseconds(500));
        reply && reply->status == status && reply->body.find(text) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

std::optional<ChildExit> ExitOf(ChildProcess& process) { return process.WaitFor(seconds(60)); }

nlohmann::json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

// Polls rank 0's /summary until `done(summary)` holds; the last summary either way.
nlohmann::json SummaryUntil(SidecarWorld& world, const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json summary;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline && world.process(0).Running()) {
    if (const auto reply = HttpGet(Base(world, 0) + "/summary", milliseconds(1000));
        reply && reply->status == 200) {
      summary = nlohmann::json::parse(reply->body);
      if (done(summary)) {
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return summary;
}

int RanksReporting(const nlohmann::json& summary) {
  return summary.contains("training") ? summary["training"].value("ranksReporting", 0) : 0;
}

// The settings the operator gives every Pod of an elastic job with maxReplicas 4 whose attempt
// started with 2 Pods.
std::map<std::string, std::string> ElasticEnv() {
  return {{"RINGLEADER_REPLICAS", "2"},
          {"RINGLEADER_MAX_REPLICAS", "4"},
          {"RINGLEADER_MONITOR_ENABLED", "false"},
          {"RINGLEADER_PROFILER_INTERVAL_MS", "200"}};
}

// Rank 0 and rank 1 as the attempt's first Pods: both halves, the preflight passed.
void StartFirstPods(SidecarWorld& world) {
  for (int rank = 0; rank < 2; ++rank) {
    world.Start(rank);
    ASSERT_TRUE(WaitForStatus(Base(world, rank) + "/healthz", 200)) << world.AllLogs();
    world.StartPodPreflight(rank);
  }
  for (int rank = 0; rank < 2; ++rank) {
    const auto exit = ExitOf(world.pod_preflight(rank));
    ASSERT_TRUE(exit && exit->exited() && exit->exit_code == 0)
        << world.PodPreflightLog(rank) << world.AllLogs();
    ASSERT_TRUE(WaitForStatus(Base(world, rank) + "/readyz", 200)) << world.AllLogs();
  }
}

TEST(SidecarElasticTest, APodOfAScaleUpProvesRankZerosStoreAndItsReportsAreCompared) {
  // Ports and run dirs for the 4 ranks the job may grow to. Rank 0 serves the trainers' store
  // too. Rank 2 comes with a scale-up from 2 to 3: scope Pod, and 2 local ranks so that its own
  // sweep has something to measure.
  const int trainer_port = FreePort();
  SidecarWorld world({.world_size = 4,
                      .mode = "sidecar",
                      .env = ElasticEnv(),
                      .rank_env = {{0, {{"RINGLEADER_TRAINER_STORE_PORT", std::to_string(trainer_port)}}},
                                   {2,
                                    {{"RINGLEADER_REPLICAS", "3"},
                                     {"RINGLEADER_PREFLIGHT_SCOPE", "Pod"},
                                     {"RINGLEADER_LOCAL_RANKS", "2"}}}}});
  StartFirstPods(world);
  // The first Pods' preflight was the Job's: a world of 2 Pods, while the store admits 4.
  EXPECT_THAT(world.PodPreflightLog(0),
              HasSubstr("preflight scope Job: every Pod of the attempt meets in one world of 2 Pods"));
  EXPECT_THAT(world.PodPreflightLog(0), HasSubstr("# ringleader preflight, gloo, 2 ranks"));
  EXPECT_THAT(world.Log(0), HasSubstr("(elastic: Pod ranks below 4 admitted; the preflight "
                                      "barrier waits for 2)"));
  EXPECT_EQ(ReadJson(world.contract_file(1)).value("worldSize", 0), 2);
  // The monitor's probes need a fixed world: off (RINGLEADER_MONITOR_ENABLED=false), and rank 0
  // serves its store on without one.
  EXPECT_THAT(world.Log(0), Not(HasSubstr("monitor rendezvous")));

  // The scale-up's Pod: its preflight ran against the running rank 0, with no barrier.
  world.Start(2);
  ASSERT_TRUE(WaitForStatus(Base(world, 2) + "/healthz", 200)) << world.AllLogs();
  world.StartPodPreflight(2);
  const auto exit = ExitOf(world.pod_preflight(2));
  ASSERT_TRUE(exit && exit->exited() && exit->exit_code == 0) << world.PodPreflightLog(2) << world.AllLogs();
  const std::string log = world.PodPreflightLog(2);
  EXPECT_THAT(log, HasSubstr("ringleader-preflight rank 2/3: preflight scope Pod: this Pod's 2 "
                             "local rank(s) form the world"));
  EXPECT_THAT(log, HasSubstr("reached rank 0's store at 127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("authenticated with the job token, a set and get round trip under "
                             "pod-scope/2/"));
  EXPECT_THAT(log, HasSubstr("# ringleader preflight (scope Pod), gloo, 2 ranks"));
  EXPECT_THAT(log, HasSubstr("among this Pod's local ranks (scope Pod)"));
  const nlohmann::json contract = ReadJson(world.contract_file(2));
  EXPECT_EQ(contract.value("worldSize", 0), 3);
  EXPECT_EQ(contract.value("rank", -1), 2);
  EXPECT_EQ(contract.value("masterAddr", ""), "127.0.0.1");  // rank 0's own record
  const auto result = sidecar::ReadPreflightResult((world.run_dir(2) / "preflight.json").string());
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->passed) << result->reason;
  EXPECT_EQ(result->ranks, 2);
  EXPECT_FALSE(result->rows.empty());
  EXPECT_TRUE(result->rendezvous_seconds.has_value());
  ASSERT_TRUE(WaitForStatus(Base(world, 2) + "/readyz", 200)) << world.AllLogs();

  // Rank 2, beyond the world rank 0 started with, reports its trainers' collectives and rank 0
  // compares them: one 2-rank communicator of rank 0's and rank 2's trainers, rank 2's kernels 4x
  // as long.
  const auto plugin = LoadPlugin();
  ASSERT_NE(plugin, nullptr);
  RunTrainer(*plugin, world.profiler_socket(0), 0xe1a571c, 2, 0, 4, 1'000'000);
  RunTrainer(*plugin, world.profiler_socket(2), 0xe1a571c, 2, 1, 4, 4'000'000);
  nlohmann::json summary = SummaryUntil(world, [](const nlohmann::json& s) { return RanksReporting(s) == 2; });
  ASSERT_EQ(RanksReporting(summary), 2) << summary.dump() << world.AllLogs();
  EXPECT_EQ(summary["training"].value("slowestRank", -1), 2);

  // The scale-down deletes rank 2's Pod: it leaves the comparison, and rank 0 serves on.
  world.process(2).Signal(SIGTERM);
  const auto stopped = world.process(2).WaitFor(seconds(15));
  ASSERT_TRUE(stopped && stopped->exited() && stopped->exit_code == 0) << world.AllLogs();
  summary = SummaryUntil(world, [](const nlohmann::json& s) { return RanksReporting(s) == 1; });
  EXPECT_EQ(RanksReporting(summary), 1) << summary.dump() << world.AllLogs();
  EXPECT_FALSE(summary["training"].contains("slowestRank")) << summary.dump();
  EXPECT_THAT(world.Log(2), Not(HasSubstr("cannot report")));
  EXPECT_TRUE(world.process(0).Running());
  EXPECT_TRUE(WaitForStatus(Base(world, 0) + "/healthz", 200, "", seconds(2)));
  // Rank 0's trainers' store serves on through all of it, without a monitor: torchrun's c10d
  // rendezvous lives there while the world changes.
  rendezvous::TorchStoreClientOptions store;
  store.host = "127.0.0.1";
  store.port = static_cast<std::uint16_t>(trainer_port);
  store.key_prefix = "/worker/attempt_0/";
  store.deadline = std::chrono::steady_clock::now() + seconds(5);
  auto trainers = rendezvous::TorchStoreClient::Connect(store);
  ASSERT_TRUE(trainers.ok()) << trainers.error() << world.AllLogs();
  const auto added = trainers.value()->Add("rdzv/round", 1);
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(added.value(), 1);
}

TEST(SidecarElasticTest, AScopePodPreflightNamesRankZeroWhenItCannotReachItsStore) {
  // Rank 0 alone started the attempt; rank 1 comes later, alone, with one local rank.
  const int nobody = FreePorts(1).at(0);
  std::map<std::string, std::string> env = ElasticEnv();
  env["RINGLEADER_REPLICAS"] = "1";
  SidecarWorld world({.world_size = 2,
                      .mode = "sidecar",
                      .env = env,
                      .rank_env = {{1,
                                    {{"RINGLEADER_REPLICAS", "2"},
                                     {"RINGLEADER_PREFLIGHT_SCOPE", "Pod"},
                                     {"RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS", "2"}}}}});
  world.Start(0);
  ASSERT_TRUE(WaitForStatus(Base(world, 0) + "/healthz", 200)) << world.AllLogs();
  world.StartPodPreflight(0);
  const auto first = ExitOf(world.pod_preflight(0));
  ASSERT_TRUE(first && first->exited() && first->exit_code == 0) << world.PodPreflightLog(0);

  // A wrong rendezvous address: nothing listens there. The preflight fails within its timeout,
  // naming rank 0's store and the address it tried, and the sidecar's /readyz says so.
  world.Start(1);
  ASSERT_TRUE(WaitForStatus(Base(world, 1) + "/healthz", 200)) << world.AllLogs();
  const auto started = std::chrono::steady_clock::now();
  world.StartPodPreflight(1, {{"RINGLEADER_RENDEZVOUS_PORT", std::to_string(nobody)}});
  const auto failed = ExitOf(world.pod_preflight(1));
  ASSERT_TRUE(failed && failed->exited()) << world.PodPreflightLog(1);
  EXPECT_EQ(failed->exit_code, 1) << world.PodPreflightLog(1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(10));
  const std::string where = "rank 0's store at 127.0.0.1:" + std::to_string(nobody);
  EXPECT_THAT(world.PodPreflightLog(1),
              HasSubstr("scope Pod: this Pod cannot reach " + where +
                        " (RINGLEADER_RENDEZVOUS_ADDR:RINGLEADER_RENDEZVOUS_PORT) within the "
                        "preflight timeout of 2 s"));
  const auto result = sidecar::ReadPreflightResult((world.run_dir(1) / "preflight.json").string());
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->passed);
  EXPECT_THAT(result->reason, HasSubstr(where));
  EXPECT_TRUE(WaitForStatus(Base(world, 1) + "/readyz", 503, where)) << world.AllLogs();

  // Its preflight container again, with the right address: one local rank has no sweep to run,
  // and says so; the round trip to rank 0's store is what it proves.
  world.StartPodPreflight(1);
  const auto passed = ExitOf(world.pod_preflight(1));
  ASSERT_TRUE(passed && passed->exited() && passed->exit_code == 0) << world.PodPreflightLog(1);
  EXPECT_THAT(world.PodPreflightLog(1), HasSubstr("scope Pod with one local rank: no sweep"));
  EXPECT_THAT(world.PodPreflightLog(1), HasSubstr("preflight (scope Pod) passed without a sweep"));
  const auto second = sidecar::ReadPreflightResult((world.run_dir(1) / "preflight.json").string());
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->passed);
  EXPECT_TRUE(second->rows.empty());
}

TEST(SidecarElasticTest, BadMaxReplicasAndScopeValuesStopTheSidecarNamingTheVariable) {
  SidecarWorld world({.world_size = 2, .mode = "pod-preflight", .env = ElasticEnv()});
  const auto error_of = [&](const std::map<std::string, std::string>& env) {
    world.StartPodPreflight(1, env);
    const auto exit = ExitOf(world.pod_preflight(1));
    EXPECT_TRUE(exit && exit->exited() && exit->exit_code == 2) << world.PodPreflightLog(1);
    return world.PodPreflightLog(1);
  };
  EXPECT_THAT(error_of({{"RINGLEADER_MAX_REPLICAS", "1"}}),
              HasSubstr("ringleader-sidecar: RINGLEADER_MAX_REPLICAS: 1 is below RINGLEADER_REPLICAS (2)"));
  EXPECT_THAT(error_of({{"RINGLEADER_PREFLIGHT_SCOPE", "Node"}}),
              HasSubstr("RINGLEADER_PREFLIGHT_SCOPE: \"Node\" is not one of Job, Pod"));
  EXPECT_THAT(error_of({{"RINGLEADER_PREFLIGHT_SCOPE", "Pod"}, {"RINGLEADER_RANK", "0"}}),
              HasSubstr("RINGLEADER_PREFLIGHT_SCOPE: Pod, but RINGLEADER_RANK is 0"));
}

}  // namespace
}  // namespace ringleader::testing
