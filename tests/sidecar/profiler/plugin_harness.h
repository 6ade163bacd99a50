// Test helpers for the NCCL profiler plugin: load the built library as NCCL does (PluginLibrary:
// dlopen by path, dlsym of ncclProfiler_vN), and a Unix socket server standing in for the sidecar
// that keeps every snapshot it receives.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sidecar/profiler/nccl_profiler_abi.h"
#include "sidecar/profiler/plugin_loader.h"
#include "sidecar/profiler/snapshot_protocol.h"

namespace ringleader::profiler::testing {

// The plugin built by this tree (a compile definition set by tests/sidecar/profiler).
std::string BuiltPluginPath();

// The library loaded as NCCL loads profiler plugins (PluginLibrary), with both of the versions
// this tree's plugin exports; unloaded when destroyed.
class LoadedPlugin {
 public:
  // nullptr (and *error says why) when dlopen fails or either version is missing or incomplete.
  static std::unique_ptr<LoadedPlugin> Load(const std::string& path, std::string* error);

  const abi::ProfilerV4& v4() const { return *library_->v4(); }
  const abi::ProfilerV5& v5() const { return *library_->v5(); }
  // dlsym of any other name, e.g. to show that older versions are not exported.
  void* Symbol(const char* name) const { return library_->Symbol(name); }

 private:
  explicit LoadedPlugin(std::unique_ptr<PluginLibrary> library) : library_(std::move(library)) {}
  std::unique_ptr<PluginLibrary> library_;
};

// A communicator's identity in a process's snapshots.
using CommunicatorKey = std::pair<std::uint64_t, std::uint32_t>;  // comm_hash, rank

// What the server has received so far.
struct Received {
  std::vector<Snapshot> snapshots;  // in arrival order
  // The most recent record of each communicator: cumulative, so the last is the whole story.
  std::map<CommunicatorKey, Communicator> latest;
  std::vector<std::string> errors;  // frame or payload errors (a test expects none)
  std::size_t connections = 0;
};

// Listens on a Unix socket path and reads snapshot frames from any number of connections on
// one thread; decoding happens on the caller's thread, so the plugin's writes never wait for it.
class SnapshotServer {
 public:
  explicit SnapshotServer(std::string path);
  ~SnapshotServer();
  SnapshotServer(const SnapshotServer&) = delete;
  SnapshotServer& operator=(const SnapshotServer&) = delete;

  // Waits until predicate(received) holds; false at the deadline.
  bool WaitFor(const std::function<bool(const Received&)>& predicate,
               std::chrono::milliseconds timeout = std::chrono::seconds(60));
  Received Get();

 private:
  void Serve();
  // Decodes what arrived since the last call into received_ (caller_mutex_ held).
  void DecodePending();

  std::string path_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  // Shared with the serving thread.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t version_ = 0;         // bumped on every arrival
  std::vector<std::string> pending_;  // payloads not yet decoded
  std::vector<std::string> frame_errors_;
  std::size_t connections_ = 0;
  // The callers' side.
  std::mutex caller_mutex_;
  Received received_;
  std::thread thread_;
};

// A private directory under /tmp (short enough for a socket path), removed when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// NCCL's logger, standing in for ncclDebugLog: keeps every line the plugin logs.
void CaptureLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
// Waits until a captured line contains `text`.
bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);
std::vector<std::string> CapturedLog();
void ClearCapturedLog();

}  // namespace ringleader::profiler::testing
