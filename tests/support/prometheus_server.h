// A real Prometheus server (Debian's package) for integration tests: started on a free port of
// 127.0.0.1 with the scrape configs a test gives, queried through its HTTP API.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/support/child_process.h"

namespace ringleader::testing {

class PrometheusServer {
 public:
  static constexpr const char* kBinary = "/usr/bin/prometheus";
  static bool Installed();

  // Writes prometheus.yml into `dir` (a 1 s scrape and evaluation interval, then
  // `scrape_configs_yaml`: the list under scrape_configs:, indented 2) and starts the server
  // with its data under `dir`.
  PrometheusServer(const std::filesystem::path& dir, const std::string& scrape_configs_yaml);
  ~PrometheusServer();  // kills it
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // The `data.result` of an instant query; nullopt while Prometheus does not answer. A query
  // Prometheus rejects throws std::runtime_error with its error message.
  std::optional<nlohmann::json> Query(const std::string& promql);
  // Polls Query until it returns at least `series` series or `timeout` passes; the last result.
  nlohmann::json WaitForSeries(const std::string& promql, std::size_t series, std::chrono::seconds timeout);

  std::string Log() const;

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace ringleader::testing
