// The two halves of an operator-made Pod as real processes on 127.0.0.1: per rank a native
// sidecar ("sidecar" mode: rank 0 serves the store) and a preflight init container
// ("pod-preflight" mode) sharing a run dir. The preflight containers run the sweep and exit; the
// sidecars take their result into metrics, /summary and readiness, then monitor on their own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/service/preflight_result.h"
#include "tests/sidecar/app/exposition.h"
#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/http_fetch.h"

namespace ringleader::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string Base(SidecarWorld& world, int rank) {
  return "http://127.0.0.1:" + std::to_string(world.metrics_port(rank));
}

// Polls `url` until it answers `status`; false at the deadline.
bool WaitForStatus(const std::string& url, int status, seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto reply = HttpGet(url, milliseconds(500)); reply && reply->status == status) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

// The series of probe runs of `collective` that ended ok.
std::string OkRunsSeries(const std::string& collective) {
  return "ringleader_sidecar_probe_runs_total{collective=\"" + collective + "\",result=\"ok\"}";
}

// The preflight's ok rows per collective: what a sidecar adds to OkRunsSeries for its result.
std::map<std::string, double> OkRowsByCollective(const sidecar::PreflightResult& result) {
  std::map<std::string, double> rows;
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    if (result.rows[i].wrong == 0 && result.below_floor_row != i) {
      rows[std::string(collectives::CollectiveName(result.rows[i].collective))] += 1;
    }
  }
  return rows;
}

void ExpectExit(ChildProcess& process, int code, const std::string& logs) {
  const auto exit = process.WaitFor(seconds(60));
  ASSERT_TRUE(exit.has_value()) << logs;
  EXPECT_TRUE(exit->exited() && exit->exit_code == code) << "exit " << exit->exit_code << "\n" << logs;
}

TEST(PodSplitTest, ThePreflightContainersResultReachesTheSidecarsMetricsSummaryAndReadiness) {
  SidecarWorld world({.world_size = 2, .mode = "sidecar"});
  world.StartAll();
  // A started sidecar serves /healthz (the startup probe); it is not ready before the result.
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(WaitForStatus(Base(world, rank) + "/healthz", 200, seconds(10))) << world.AllLogs();
    const auto ready = HttpGet(Base(world, rank) + "/readyz");
    ASSERT_TRUE(ready.has_value());
    EXPECT_EQ(ready->status, 503);
    EXPECT_THAT(ready->body, HasSubstr("waiting for the preflight container"));
  }
  for (int rank = 0; rank < 2; ++rank) {
    world.StartPodPreflight(rank, {{"NVIDIA_VISIBLE_DEVICES", "GPU-test-" + std::to_string(rank)}});
  }
  std::vector<sidecar::PreflightResult> results;
  for (int rank = 0; rank < 2; ++rank) {
    ExpectExit(world.pod_preflight(rank), 0, world.PodPreflightLog(rank) + world.AllLogs());
    EXPECT_THAT(world.PodPreflightLog(rank),
                HasSubstr("ringleader-preflight rank " + std::to_string(rank) +
                          "/2: devices: GPU-test-" + std::to_string(rank)));
    // The preflight container wrote the trainers' contract and its result.
    EXPECT_TRUE(std::filesystem::exists(world.contract_file(rank)));
    const auto result = sidecar::ReadPreflightResult((world.run_dir(rank) / "preflight.json").string());
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->passed);
    EXPECT_EQ(result->backend, "gloo");
    EXPECT_EQ(result->transport, "tcp");
    EXPECT_EQ(result->devices, "GPU-test-" + std::to_string(rank));
    EXPECT_FALSE(result->rows.empty());
    results.push_back(*result);
  }
  EXPECT_THAT(world.PodPreflightLog(0), HasSubstr("# ringleader preflight, gloo, 2 ranks"));
  EXPECT_THAT(world.PodPreflightLog(0), HasSubstr("# transport: tcp"));

  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(WaitForStatus(Base(world, rank) + "/readyz", 200, seconds(10))) << world.AllLogs();
    const auto metrics = HttpGet(Base(world, rank) + "/metrics");
    ASSERT_TRUE(metrics.has_value());
    EXPECT_EQ(SeriesValue(metrics->body, "ringleader_sidecar_preflight_state{state=\"passed\"}"), 1.0);
    EXPECT_THAT(metrics->body,
                HasSubstr("ringleader_sidecar_preflight_transport_info{backend=\"gloo\",rdma_fallback=\"false\","
                          "rdma_requested=\"false\",transport=\"tcp\"} 1"));
    const auto summary = HttpGet(Base(world, rank) + "/summary");
    ASSERT_TRUE(summary.has_value());
    const auto json = nlohmann::json::parse(summary->body);
    EXPECT_EQ(json.at("preflight"), "Passed");
    EXPECT_EQ(json.at("transport"), "tcp");
  }
  // Then each sidecar monitors on its own communicator, over the Pod network: its all_reduce
  // runs come on top of the preflight's rows, which counted once. The monitor runs nothing but
  // all_reduce, so every other collective's runs stay exactly its rows, then and at the end; the
  // monitor may have begun by now, so all_reduce's are at least its rows.
  const std::map<std::string, double> preflight_rows = OkRowsByCollective(results.at(1));
  ASSERT_EQ(preflight_rows.size(), collectives::kAllCollectives.size()) << "every collective has a row";
  const auto expect_rows_counted_once = [&preflight_rows](const std::string& exposition) {
    for (const auto& [collective, rows] : preflight_rows) {
      if (collective != "all_reduce") {
        EXPECT_EQ(SeriesValue(exposition, OkRunsSeries(collective)), rows) << collective;
      }
    }
  };
  const std::string ok_runs = OkRunsSeries("all_reduce");
  const std::string after_preflight = HttpGet(Base(world, 1) + "/metrics").value().body;
  expect_rows_counted_once(after_preflight);
  const std::optional<double> preflight_runs = SeriesValue(after_preflight, ok_runs);
  ASSERT_TRUE(preflight_runs.has_value());
  EXPECT_GE(*preflight_runs, preflight_rows.at("all_reduce"));
  ASSERT_TRUE(world.WaitForLog(1, "monitoring: all_reduce", seconds(30))) << world.AllLogs();
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  std::string metrics;
  while (std::chrono::steady_clock::now() < deadline &&
         SeriesValue(metrics, ok_runs).value_or(0) <= *preflight_runs) {
    std::this_thread::sleep_for(milliseconds(100));
    metrics = HttpGet(Base(world, 1) + "/metrics").value_or(HttpReply{}).body;
  }
  EXPECT_GT(SeriesValue(metrics, ok_runs).value_or(0), *preflight_runs) << world.AllLogs();
  expect_rows_counted_once(metrics);
  EXPECT_THAT(metrics, HasSubstr("backend=\"gloo\""));
  EXPECT_THAT(metrics, HasSubstr("measures=\"network\""));
  for (int rank = 0; rank < 2; ++rank) {
    world.process(rank).Signal(SIGTERM);
  }
  for (const auto& [rank, exit] : world.WaitAll(seconds(15))) {
    ASSERT_TRUE(exit.has_value()) << world.AllLogs();
    EXPECT_TRUE(exit->exited() && exit->exit_code == 0) << world.AllLogs();
  }
}

TEST(PodSplitTest, AFailedPreflightExitsNonZeroNamingWhyAndTheSidecarReportsIt) {
  // A floor no loopback reaches: every rank's preflight container fails the verdict.
  SidecarWorld world({.world_size = 2, .mode = "sidecar",
                      .env = {{"RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "100000000000000"}}});
  world.StartAll();
  for (int rank = 0; rank < 2; ++rank) {
    world.StartPodPreflight(rank);
  }
  for (int rank = 0; rank < 2; ++rank) {
    ExpectExit(world.pod_preflight(rank), 1, world.PodPreflightLog(rank));
    // The last line is the kubelet's termination message, which the operator quotes.
    std::string log = world.PodPreflightLog(rank);
    while (!log.empty() && log.back() == '\n') {
      log.pop_back();
    }
    const std::string last_line = log.substr(log.rfind('\n') + 1);
    EXPECT_THAT(last_line, HasSubstr("preflight failed: all_reduce bus bandwidth")) << log;
    EXPECT_THAT(last_line, HasSubstr("is below the floor")) << log;
  }
  ASSERT_TRUE(world.WaitForLog(0, "preflight failed", seconds(10))) << world.AllLogs();
  const auto ready = HttpGet(Base(world, 0) + "/readyz");
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(ready->status, 503);
  EXPECT_THAT(ready->body, HasSubstr("preflight failed: all_reduce bus bandwidth"));
  const auto metrics = HttpGet(Base(world, 0) + "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(SeriesValue(metrics->body, "ringleader_sidecar_preflight_state{state=\"failed\"}"), 1.0);
  EXPECT_EQ(SeriesValue(metrics->body,
                        "ringleader_sidecar_probe_runs_total{collective=\"all_reduce\",result=\"below_floor\"}"),
            1.0);
  EXPECT_TRUE(world.process(0).Running()) << "the sidecar waits for the kubelet to stop the Pod";
}

TEST(PodSplitTest, AMissingRanksPreflightFailsTheOthersNamingIt) {
  SidecarWorld world({.world_size = 3, .mode = "sidecar", .rendezvous_timeout_seconds = 2});
  world.StartAll();
  world.StartPodPreflight(0);
  world.StartPodPreflight(1);  // rank 2's never starts
  for (int rank = 0; rank < 2; ++rank) {
    ExpectExit(world.pod_preflight(rank), 1, world.PodPreflightLog(rank));
    EXPECT_THAT(world.PodPreflightLog(rank), HasSubstr("failed: rank 2 of 3 did not join within 2 s"));
  }
  const auto result = sidecar::ReadPreflightResult((world.run_dir(0) / "preflight.json").string());
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->passed);
  EXPECT_THAT(result->reason, HasSubstr("rank 2 of 3 did not join"));
}

TEST(PodSplitTest, APreflightResultThatIsNotOneEndsTheSidecarNamingTheFile) {
  SidecarWorld world({.world_size = 1, .mode = "sidecar"});
  std::filesystem::create_directories(world.run_dir(0));
  std::ofstream(world.run_dir(0) / "preflight.json") << R"({"version": 1, "enabled": true, "passed": "yes", "rows": []})";
  world.StartAll();
  ExpectExit(world.process(0), 1, world.AllLogs());
  EXPECT_THAT(world.Log(0), HasSubstr("preflight.json.passed: must be true or false"));
}

}  // namespace
}  // namespace ringleader::testing
