// Every query of the Grafana dashboard returns data from a real Prometheus that scrapes an
// end-to-end run: the sidecars of a training job (found as a PodMonitor would find them) and
// the operator. A panel whose query matches nothing here would be blank for users too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
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

constexpr const char* kDashboard = "charts/ringleader/dashboards/ringleader.json";

struct PanelQuery {
  std::string panel;
  std::string expr;
};

// Every target's expression, with Grafana's variables set to the run's job and namespace.
std::vector<PanelQuery> DashboardQueries(const std::string& job) {
  std::ifstream in(kDashboard);
  const json dashboard = json::parse(in);
  std::vector<PanelQuery> queries;
  for (const json& panel : dashboard.at("panels")) {
    for (const json& target : panel.value("targets", json::array())) {
      std::string expr = target.at("expr");
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval|\$__interval|\$__range)"), "1m");
      expr = std::regex_replace(expr, std::regex(R"(\$\{?namespace\}?)"), "default");
      expr = std::regex_replace(expr, std::regex(R"(\$\{?job\}?)"), job);
      expr = std::regex_replace(expr, std::regex(R"(\$\{?collective\}?)"), "all_reduce");
      queries.push_back({panel.at("title"), expr});
    }
  }
  return queries;
}

TEST(DashboardTest, EveryPanelsQueryReturnsDataFromAnEndToEndRun) {
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
  // The sidecars as the chart's PodMonitor scrapes them (honorLabels, namespace and pod target
  // labels), and the operator as its ServiceMonitor does.
  PrometheusServer prometheus(
      bed.dir() / "prometheus",
      SidecarScrapeConfig(targets) +
          "  - job_name: ringleader-operator\n    static_configs:\n      - targets: ['127.0.0.1:" +
          std::to_string(bed.operator_metrics_port()) + "']\n");
  // 20 s of training: the sidecars' monitor (every 5 s) measures the edges meanwhile.
  const CommandOutput applied =
      bed.Apply("graphed", JobYaml({.name = "graphed", .replicas = 4, .steps = 200, .step_delay_ms = 100}));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  // Scraped from their first moment, so the rendezvous is counted too.
  ASSERT_TRUE(bed.WritePodMonitorTargets(targets, "graphed", 4, seconds(60))) << bed.Diagnostics();

  ASSERT_EQ(bed.WaitForJob("graphed", JobRunning, seconds(120)).is_object(), true) << bed.Diagnostics();

  // Every query, again and again until each has returned data once (the edge and rate panels
  // need a monitor round and two scrapes), for at most 40 s.
  const std::vector<PanelQuery> queries = DashboardQueries("graphed");
  ASSERT_GE(queries.size(), 20u);
  std::vector<bool> answered(queries.size(), false);
  const auto until = std::chrono::steady_clock::now() + seconds(40);
  while (std::chrono::steady_clock::now() < until &&
         std::find(answered.begin(), answered.end(), false) != answered.end()) {
    for (std::size_t i = 0; i < queries.size(); ++i) {
      if (!answered[i]) {
        const auto result = prometheus.Query(queries[i].expr);
        answered[i] = result && !result->empty();
      }
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  for (std::size_t i = 0; i < queries.size(); ++i) {
    EXPECT_TRUE(answered[i]) << "panel \"" << queries[i].panel << "\" got no data from: " << queries[i].expr;
  }
}

}  // namespace
}  // namespace ringleader::testing
