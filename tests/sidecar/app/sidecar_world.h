// A world of real ringleader-sidecar processes on 127.0.0.1 for integration tests: one token,
// one rendezvous port, a metrics port, run directory and log per rank.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace ringleader::testing {

struct SidecarWorldOptions {
  int world_size = 2;
  std::string mode = "preflight";
  // Added to (and overriding) every rank's environment.
  std::map<std::string, std::string> env = {};
  // Added to (and overriding) one rank's environment, after `env`: e.g. an elastic job's rank
  // that joins later with a larger RINGLEADER_REPLICAS. world_size is then how many ranks the
  // world has ports and run dirs for.
  std::map<int, std::map<std::string, std::string>> rank_env = {};
  int rendezvous_timeout_seconds = 30;
};

class SidecarWorld {
 public:
  explicit SidecarWorld(const SidecarWorldOptions& options);
  ~SidecarWorld();

  // Starts one rank; `token` replaces the job token for this rank alone when given.
  void Start(int rank, const std::optional<std::string>& token = std::nullopt);
  void StartAll();
  // Starts `rank`'s other half of an operator-made Pod: the same settings and run dir with
  // RINGLEADER_MODE=pod-preflight and a log of its own (the world's mode is then "sidecar").
  void StartPodPreflight(int rank, const std::map<std::string, std::string>& env = {});
  ChildProcess& pod_preflight(int rank) { return *pod_preflights_.at(rank); }
  std::string PodPreflightLog(int rank) const;
  // As WaitForLog, for `rank`'s preflight container.
  bool WaitForPodPreflightLog(int rank, const std::string& text, std::chrono::milliseconds timeout);
  std::filesystem::path run_dir(int rank) const;
  // Where `rank`'s sidecar copies the NCCL profiler plugin (RINGLEADER_PROFILER_PLUGIN_DIR, an
  // existing directory in the run dir), and the socket it takes the plugin's snapshots on (the
  // default, run_dir/profiler.sock).
  std::filesystem::path plugin_dir(int rank) const;
  std::filesystem::path profiler_socket(int rank) const;

  ChildProcess& process(int rank) { return *processes_.at(rank); }
  std::string Log(int rank) const;
  // Waits until `rank`'s log contains `text`; false at the deadline or when the rank exited.
  bool WaitForLog(int rank, const std::string& text, std::chrono::milliseconds timeout);
  int metrics_port(int rank) const { return metrics_ports_.at(rank); }
  std::filesystem::path contract_file(int rank) const;
  // Every started rank's exit, waiting up to `timeout` in all; nullopt for ranks still running.
  std::map<int, std::optional<ChildExit>> WaitAll(std::chrono::milliseconds timeout);
  // All logs, for failure messages.
  std::string AllLogs() const;

 private:
  SidecarWorldOptions options_;
  std::filesystem::path dir_;
  int rendezvous_port_ = 0;
  std::vector<int> metrics_ports_;
  std::map<int, std::unique_ptr<ChildProcess>> processes_;
  std::map<int, std::unique_ptr<ChildProcess>> pod_preflights_;

  std::map<std::string, std::string> RankEnv(int rank, const std::filesystem::path& token_file) const;
};

}  // namespace ringleader::testing
