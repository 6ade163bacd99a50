// PrometheusServer: the config file, the process and instant queries over HTTP.
#include "tests/support/prometheus_server.h"

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/support/http_fetch.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {

bool PrometheusServer::Installed() { return std::filesystem::exists(kBinary); }

PrometheusServer::PrometheusServer(const std::filesystem::path& dir, const std::string& scrape_configs_yaml)
    : dir_(dir), port_(FreePort()) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                         << "scrape_configs:\n"
                                         << scrape_configs_yaml;
  ChildOptions options;
  options.binary = kBinary;
  options.args = {"--config.file=" + (dir_ / "prometheus.yml").string(),
                  "--storage.tsdb.path=" + (dir_ / "data").string(),
                  "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
  options.log = dir_ / "prometheus.log";
  process_ = std::make_unique<ChildProcess>(options);
}

PrometheusServer::~PrometheusServer() {
  process_->Signal(SIGKILL);
  process_->WaitFor(std::chrono::seconds(5));
}

std::optional<nlohmann::json> PrometheusServer::Query(const std::string& promql) {
  const auto reply = HttpGet("http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query?query=" + UrlEncode(promql));
  if (!reply || (reply->status != 200 && reply->status != 400 && reply->status != 422)) {
    return std::nullopt;
  }
  const nlohmann::json body = nlohmann::json::parse(reply->body, nullptr, false);
  if (!body.is_object() || body.value("status", "") != "success") {
    throw std::runtime_error("prometheus refused " + promql + ": " + reply->body);
  }
  return body["data"]["result"];
}

nlohmann::json PrometheusServer::WaitForSeries(const std::string& promql, std::size_t series,
                                               std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  nlohmann::json last = nlohmann::json::array();
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto result = Query(promql)) {
      last = *result;
      if (last.size() >= series) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return last;
}

std::string PrometheusServer::Log() const { return ReadLog(dir_ / "prometheus.log"); }

}  // namespace ringleader::testing
