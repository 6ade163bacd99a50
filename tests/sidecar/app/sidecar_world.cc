#include "tests/sidecar/app/sidecar_world.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Waits until `log` contains `text`; false at the deadline or when `child` exited without it.
bool WaitForText(const std::function<std::string()>& log, ChildProcess& child,
                 const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (log().find(text) != std::string::npos) {
      return true;
    }
    if (!child.Running()) {
      return log().find(text) != std::string::npos;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

SidecarWorld::SidecarWorld(const SidecarWorldOptions& options)
    : options_(options), dir_(MakeTempDir("ringleader-sidecar-world")) {
  // One rendezvous port and a metrics port per rank, all different.
  metrics_ports_ = FreePorts(options.world_size + 1);
  rendezvous_port_ = metrics_ports_.back();
  metrics_ports_.pop_back();
  for (int rank = 0; rank < options.world_size; ++rank) {
    std::filesystem::create_directories(plugin_dir(rank));
  }
  WriteFile(dir_ / "token", "job-token-for-tests\n");
}

SidecarWorld::~SidecarWorld() {
  pod_preflights_.clear();
  processes_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::filesystem::path SidecarWorld::run_dir(int rank) const {
  return dir_ / ("rank-" + std::to_string(rank));
}

std::filesystem::path SidecarWorld::plugin_dir(int rank) const { return run_dir(rank) / "profiler"; }

std::filesystem::path SidecarWorld::profiler_socket(int rank) const {
  return run_dir(rank) / "profiler.sock";
}

std::map<std::string, std::string> SidecarWorld::RankEnv(int rank,
                                                         const std::filesystem::path& token_file) const {
  const auto rank_dir = run_dir(rank);
  std::map<std::string, std::string> env = {
      {"RINGLEADER_JOB_NAME", "probe-test"},
      {"RINGLEADER_JOB_NAMESPACE", "default"},
      {"RINGLEADER_RANK", std::to_string(rank)},
      {"RINGLEADER_REPLICAS", std::to_string(options_.world_size)},
      {"RINGLEADER_RENDEZVOUS_ADDR", "127.0.0.1"},
      {"RINGLEADER_RENDEZVOUS_PORT", std::to_string(rendezvous_port_)},
      {"RINGLEADER_METRICS_PORT", std::to_string(metrics_ports_.at(rank))},
      {"RINGLEADER_METRICS_BIND_ADDRESS", "127.0.0.1"},
      {"RINGLEADER_BACKEND", "gloo"},
      {"RINGLEADER_MODE", options_.mode},
      {"RINGLEADER_TOKEN_FILE", token_file.string()},
      {"RINGLEADER_RUN_DIR", rank_dir.string()},
      {"RINGLEADER_POD_IP", "127.0.0.1"},
      {"RINGLEADER_PREFLIGHT_MIN_BYTES", "1024"},
      {"RINGLEADER_PREFLIGHT_MAX_BYTES", "65536"},
      {"RINGLEADER_PREFLIGHT_STEP_FACTOR", "4"},
      {"RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS", "1"},
      {"RINGLEADER_PREFLIGHT_ITERATIONS", "3"},
      {"RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS", "10"},
      {"RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS", std::to_string(options_.rendezvous_timeout_seconds)},
      {"RINGLEADER_MONITOR_INTERVAL_SECONDS", "1"},
      {"RINGLEADER_MONITOR_MESSAGE_BYTES", "65536"},
      {"RINGLEADER_PROFILER_PLUGIN_DIR", plugin_dir(rank).string()},
  };
  // Sanitizer settings (suppressions, halt_on_error) reach the sidecars of a sanitizer build.
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) {
      env[name] = value;
    }
  }
  for (const auto& [name, value] : options_.env) {
    env[name] = value;
  }
  if (const auto own = options_.rank_env.find(rank); own != options_.rank_env.end()) {
    for (const auto& [name, value] : own->second) {
      env[name] = value;
    }
  }
  return env;
}

void SidecarWorld::Start(int rank, const std::optional<std::string>& token) {
  std::filesystem::path token_file = dir_ / "token";
  if (token) {
    token_file = run_dir(rank) / "token";
    WriteFile(token_file, *token);
  }
  ChildOptions child;
  child.binary = RINGLEADER_SIDECAR_PATH;
  child.env = RankEnv(rank, token_file);
  child.log = run_dir(rank) / "log";
  processes_[rank] = std::make_unique<ChildProcess>(child);
}

void SidecarWorld::StartPodPreflight(int rank, const std::map<std::string, std::string>& env) {
  ChildOptions child;
  child.binary = RINGLEADER_SIDECAR_PATH;
  std::map<std::string, std::string> rank_env = RankEnv(rank, dir_ / "token");
  rank_env["RINGLEADER_MODE"] = "pod-preflight";
  for (const auto& [name, value] : env) {
    rank_env[name] = value;
  }
  child.env = std::move(rank_env);
  child.log = run_dir(rank) / "preflight-log";
  pod_preflights_[rank] = std::make_unique<ChildProcess>(child);
}

std::string SidecarWorld::PodPreflightLog(int rank) const {
  return ReadLog(run_dir(rank) / "preflight-log");
}

void SidecarWorld::StartAll() {
  for (int rank = 0; rank < options_.world_size; ++rank) {
    Start(rank);
  }
}

std::string SidecarWorld::Log(int rank) const {
  return ReadLog(dir_ / ("rank-" + std::to_string(rank)) / "log");
}

bool SidecarWorld::WaitForLog(int rank, const std::string& text, std::chrono::milliseconds timeout) {
  return WaitForText([&] { return Log(rank); }, process(rank), text, timeout);
}

bool SidecarWorld::WaitForPodPreflightLog(int rank, const std::string& text,
                                          std::chrono::milliseconds timeout) {
  return WaitForText([&] { return PodPreflightLog(rank); }, pod_preflight(rank), text, timeout);
}

std::filesystem::path SidecarWorld::contract_file(int rank) const {
  return dir_ / ("rank-" + std::to_string(rank)) / "contract.json";
}

std::map<int, std::optional<ChildExit>> SidecarWorld::WaitAll(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::map<int, std::optional<ChildExit>> exits;
  for (auto& [rank, child] : processes_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    exits[rank] = child->WaitFor(std::max(left, std::chrono::milliseconds(0)));
  }
  return exits;
}

std::string SidecarWorld::AllLogs() const {
  std::string text;
  for (const auto& [rank, child] : processes_) {
    text += "--- rank " + std::to_string(rank) + " ---\n" + Log(rank);
  }
  return text;
}

}  // namespace ringleader::testing
