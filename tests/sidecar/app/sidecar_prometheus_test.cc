// A real Prometheus (Debian's package) scrapes a 4-rank world of real sidecars; the all-reduce
// bus bandwidth series of every rank comes back through Prometheus' HTTP API.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/child_process.h"
#include "tests/support/http_fetch.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using std::chrono::seconds;

constexpr const char* kPrometheus = "/usr/bin/prometheus";

TEST(SidecarPrometheusTest, PrometheusScrapesBusBandwidthFromEveryRank) {
  if (!std::filesystem::exists(kPrometheus)) {
    GTEST_SKIP() << "no Prometheus server installed (scripts/setup installs Debian's)";
  }
  constexpr int kRanks = 4;
  SidecarWorld world({.world_size = kRanks, .mode = "run"});
  world.StartAll();

  const auto dir = MakeTempDir("ringleader-prometheus");
  std::string targets;
  for (int rank = 0; rank < kRanks; ++rank) {
    targets += (targets.empty() ? "" : ", ") + std::string("'127.0.0.1:") +
               std::to_string(world.metrics_port(rank)) + "'";
  }
  {
    std::ofstream config(dir / "prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
           << "scrape_configs:\n  - job_name: ringleader-sidecar\n    static_configs:\n"
           << "      - targets: [" << targets << "]\n";
  }
  const int port = FreePort();
  ChildOptions options;
  options.binary = kPrometheus;
  options.args = {"--config.file=" + (dir / "prometheus.yml").string(),
                  "--storage.tsdb.path=" + (dir / "data").string(),
                  "--web.listen-address=127.0.0.1:" + std::to_string(port)};
  options.log = dir / "prometheus.log";
  ChildProcess prometheus(options);

  const std::string query = "ringleader_sidecar_bus_bandwidth_bytes_per_second{collective=\"all_reduce\"} > 0";
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/api/v1/query?query=" + UrlEncode(query);
  std::set<std::string> instances;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline && instances.size() < kRanks) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto reply = HttpGet(url);
    if (!reply || reply->status != 200) {
      continue;
    }
    const auto body = nlohmann::json::parse(reply->body);
    ASSERT_EQ(body.at("status"), "success") << reply->body;
    instances.clear();
    for (const auto& series : body.at("data").at("result")) {
      instances.insert(series.at("metric").at("instance").get<std::string>());
      EXPECT_GT(std::stod(series.at("value").at(1).get<std::string>()), 0.0);
    }
  }
  EXPECT_EQ(instances.size(), static_cast<std::size_t>(kRanks))
      << ReadLog(dir / "prometheus.log") << world.AllLogs();
  prometheus.Signal(SIGKILL);
  prometheus.WaitFor(seconds(5));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace ringleader::testing
