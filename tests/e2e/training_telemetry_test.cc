// The trainers' own collectives on the dashboard, end to end (issue 18). devcluster has no GPU
// and so no NCCL: the example trainer stands in for NCCL's side of the profiler ABI. It dlopens
// the plugin the operator named in NCCL_PROFILER_PLUGIN (copied there by the native sidecar) and
// reports each of its Gloo all-reduces as NCCL would, with the real call's duration as the
// kernel time. Everything after that is real: the plugin in the trainer process, its snapshots
// over the run dir's socket, the sidecar's metrics, a real Prometheus scraping them, rank 0's
// comparison across ranks and the operator's status.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/prometheus_server.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

json Training(const json& job) {
  return job.value("status", json::object()).value("communication", json::object()).value("training", json());
}

// {rank label: value} of an instant vector.
std::map<std::string, double> ByRank(const json& vector) {
  std::map<std::string, double> values;
  for (const json& sample : vector) {
    values[sample.at("metric").value("rank", "")] = std::stod(sample.at("value").at(1).get<std::string>());
  }
  return values;
}

TEST(TrainingTelemetryTest, EveryRanksTrainingAllReduceIsScrapedAndRankZeroNamesTheSlowedRank) {
  std::string why;
  if (!EndToEnd::Supported(&why)) {
    GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
  }
  if (!PrometheusServer::Installed()) {
    GTEST_SKIP() << "no Prometheus server installed (scripts/setup installs Debian's)";
  }
  EndToEnd bed;
  const std::filesystem::path targets = bed.dir() / "targets.json";
  std::ofstream(targets) << "[]";
  PrometheusServer prometheus(bed.dir() / "prometheus", SidecarScrapeConfig(targets));

  // 25 s of training; the stand-in reports rank 2's all-reduces as 4 times slower than they were.
  const CommandOutput applied = bed.Apply(
      "measured", JobYaml({.name = "measured",
                           .replicas = 4,
                           .steps = 250,
                           .step_delay_ms = 100,
                           .trainer_args = {"--stand-in-slowdown", "2:4"}}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(bed.WritePodMonitorTargets(targets, "measured", 4, seconds(60))) << bed.Diagnostics();

  // Every rank's trainer all-reduces reach Prometheus: calls counted and a bus bandwidth timed.
  const std::string calls =
      R"(sum by (rank) (ringleader_training_collective_calls_total{namespace="default",collective="all_reduce"}))";
  const std::string busbw =
      R"(max by (rank) (ringleader_training_collective_bus_bandwidth_bytes_per_second{namespace="default",collective="all_reduce"}) > 0)";
  std::map<std::string, double> calls_by_rank;
  std::map<std::string, double> busbw_by_rank;
  const auto until = std::chrono::steady_clock::now() + seconds(120);
  while (std::chrono::steady_clock::now() < until && (calls_by_rank.size() < 4 || busbw_by_rank.size() < 4)) {
    if (const auto result = prometheus.Query(calls)) {
      calls_by_rank = ByRank(*result);
    }
    if (const auto result = prometheus.Query(busbw)) {
      busbw_by_rank = ByRank(*result);
    }
    std::this_thread::sleep_for(seconds(1));
  }
  ASSERT_EQ(calls_by_rank.size(), 4u) << "ranks with training all_reduce calls: " << calls_by_rank.size()
                                       << "\n" << bed.Diagnostics();
  ASSERT_EQ(busbw_by_rank.size(), 4u) << bed.Diagnostics();
  for (const auto& [rank, count] : calls_by_rank) {
    // One gradient all-reduce per step, never more than the job runs.
    EXPECT_GT(count, 0) << "rank " << rank;
    EXPECT_LE(count, 250) << "rank " << rank;
  }
  // The slowed rank's busbw is about a quarter of the others'; half leaves room for Gloo's jitter.
  double fastest_other = 0;
  for (const auto& [rank, value] : busbw_by_rank) {
    if (rank != "2") {
      fastest_other = std::max(fastest_other, value);
    }
  }
  EXPECT_LT(busbw_by_rank.at("2"), 0.5 * fastest_other);

  // Rank 0's sidecar compares the ranks' reports and the operator puts it in status (once every
  // rank's first report is in: a rank's trainer may start a snapshot interval later than others).
  // The figures below are awaited, not taken from the first status with all four ranks: in one
  // CI run that status had the median only 1.27 times the slowed rank's, while Prometheus showed
  // rank 2 at under half the others'.
  const auto slowdown_shows = [](const json& training) {
    return training.value("ranksReporting", 0) == 4 && training.value("slowestRank", "") == "2" &&
           training.value("busBandwidthBytes", std::int64_t{0}) >=
               2 * training.value("slowestRankBusBandwidthBytes", std::int64_t{0});
  };
  json job = bed.WaitForJob("measured", [&](const json& seen) {
    const json training = Training(seen);
    return training.is_object() && slowdown_shows(training);
  }, seconds(90));
  if (!job.is_object()) {
    job = bed.Get("trainingjob", "measured");  // the assertions below say what it holds instead
  }
  ASSERT_TRUE(job.is_object()) << bed.Get("trainingjob", "measured").dump(2) << "\n" << bed.Diagnostics();
  const json training = Training(job);
  EXPECT_EQ(training.value("collective", ""), "all_reduce");
  EXPECT_EQ(training.value("slowestRank", ""), "2");
  // busBandwidth is the ranks' median: with ranks 0, 1 and 3 at about x and rank 2 at about x/4 it
  // is about x, so at least twice the slowest (half of 4, for Gloo's jitter). It fails when the
  // figure follows the slowed rank (the slowest's own bandwidth: 1x; {x/4, x/4, x/4, x}: 1x) or
  // the slowdown never reached the reports (about 1x). "Greater than the slowest" could not fail:
  // the mean of the middle two of 4 values equals the lowest only if three tie. The median's
  // arithmetic itself is training_report_test's.
  const auto median = training.value("busBandwidthBytes", std::int64_t{0});
  const auto slowest = training.value("slowestRankBusBandwidthBytes", std::int64_t{0});
  EXPECT_GT(slowest, 0) << training.dump();
  EXPECT_GE(median, 2 * slowest) << training.dump();

  const json done = bed.WaitForJob("measured", JobFinished, seconds(120));
  ASSERT_TRUE(done.is_object()) << bed.Diagnostics();
  EXPECT_EQ(JobState(done), "Succeeded") << bed.Diagnostics();
  // The finished job keeps the trainers' figures, and the BusBW column shows theirs.
  const json communication = done["status"].value("communication", json::object());
  ASSERT_TRUE(Training(done).is_object()) << done.dump(2);
  EXPECT_EQ(communication.value("busBandwidth", ""), Training(done).value("busBandwidth", "")) << done.dump(2);
  EXPECT_NE(communication.value("busBandwidth", ""), "");
  // The trainers say they were driving the plugin, as stand-ins.
  EXPECT_NE(bed.AllPodLogs().find("profiler stand-in"), std::string::npos) << bed.AllPodLogs();
}

}  // namespace
}  // namespace ringleader::testing
