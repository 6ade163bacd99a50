// A real Prometheus (Debian's package) scrapes a 4-rank world of real sidecars; the all-reduce
// bus bandwidth series of every rank comes back through Prometheus' HTTP API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/child_process.h"
#include "tests/support/prometheus_server.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using std::chrono::seconds;

TEST(SidecarPrometheusTest, PrometheusScrapesBusBandwidthFromEveryRank) {
  if (!PrometheusServer::Installed()) {
    GTEST_SKIP() << "no Prometheus server installed (scripts/setup installs Debian's)";
  }
  constexpr int kRanks = 4;
  SidecarWorld world({.world_size = kRanks, .mode = "run"});
  world.StartAll();

  const auto dir = MakeTempDir("ringleader-prometheus");
  std::string targets;
  for (int rank = 0; rank < kRanks; ++rank) {
    targets +=
        (targets.empty() ? "" : ", ") + std::string("'127.0.0.1:") + std::to_string(world.metrics_port(rank)) + "'";
  }
  const nlohmann::json series = [&] {
    PrometheusServer prometheus(
        dir, "  - job_name: ringleader-sidecar\n    static_configs:\n      - targets: [" + targets + "]\n");
    const auto result = prometheus.WaitForSeries(
        "max by (instance) (ringleader_sidecar_bus_bandwidth_bytes_per_second{collective=\"all_reduce\"}) > 0", kRanks,
        seconds(60));
    EXPECT_EQ(result.size(), static_cast<std::size_t>(kRanks)) << prometheus.Log() << world.AllLogs();
    return result;
  }();
  std::set<std::string> instances;
  for (const auto& one : series) {
    instances.insert(one.at("metric").at("instance").get<std::string>());
    EXPECT_GT(std::stod(one.at("value").at(1).get<std::string>()), 0.0);
  }
  EXPECT_EQ(instances.size(), static_cast<std::size_t>(kRanks));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace ringleader::testing
