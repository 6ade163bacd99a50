// A stand-in for NCCL's side of the profiler plugin ABI (sidecar/profiler/nccl_profiler_abi.h).
// This trainer all-reduces with Gloo, not NCCL, so nothing would load NCCL_PROFILER_PLUGIN; the
// stand-in loads it the way NCCL does and reports each Gloo all-reduce to it as NCCL reports a
// collective, so the plugin, the sidecar's training metrics and the dashboard can be exercised
// on machines without a GPU. It never fails training: a plugin it cannot use costs one log line.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sidecar/profiler/nccl_profiler_abi.h"
#include "sidecar/profiler/plugin_loader.h"

namespace ringleader::examples {

// NCCL's datatype name for float32 (ncclDatatypeToString), which the trainer's all-reduce sums.
inline constexpr const char* kFloat32DatatypeName = "ncclFloat32";

struct StandInOptions {
  std::string plugin_path;  // opened as given, as NCCL opens NCCL_PROFILER_PLUGIN
  // The communicator the stand-in reports for, as ncclCommInitRank would give it to init.
  std::string comm_name;
  std::uint64_t comm_hash = 0;
  int nnodes = 1;
  int nranks = 1;
  int rank = 0;
  // Multiplies every reported collective time (a test aid: --stand-in-slowdown).
  double time_factor = 1;
};

// One line of the stand-in's own log (without a newline).
using StandInLog = std::function<void(const std::string& line)>;

// The communicator hash every rank of one run computes alike, as NCCL's is shared by a
// communicator's ranks: from the rendezvous address, the world size and the attempt.
std::uint64_t StandInCommHash(std::string_view master_addr, std::uint16_t master_port,
                              int world_size, int attempt);

// Now on the wall clock in Unix ns, the scale of the GPU's globaltimer that NCCL reports.
std::uint64_t UnixNowNs();

class ProfilerStandIn {
 public:
  // Loads the plugin as NCCL does (profiler::PluginLibrary), takes ncclProfiler_v5 or else
  // ncclProfiler_v4, and inits the communicator. nullptr, after one line saying why, when the
  // library, both symbols or init fail (NCCL then runs without a profiler too). Logs which
  // version it drives, and the slowdown when there is one.
  static std::unique_ptr<ProfilerStandIn> Start(const StandInOptions& options,
                                                const StandInLog& log);
  // Finalizes the communicator (the plugin then sends its last snapshot) and unloads the plugin.
  ~ProfilerStandIn();
  ProfilerStandIn(const ProfilerStandIn&) = delete;
  ProfilerStandIn& operator=(const ProfilerStandIn&) = delete;

  // An all-reduce this rank entered and has not finished (its coll event; null when the plugin
  // took none, or did not activate coll events).
  struct Entered {
    void* coll = nullptr;
  };

  // Reports that this rank enters an all-reduce of `count` float32 elements per rank, before
  // the call, as NCCL does when it launches the collective (whether or not its peers have come):
  // the coll event and its stop (NCCL stops a collective once it is enqueued). The plugin counts
  // it started now, so a rank whose peers never join shows as waiting in it.
  Entered EnterAllReduce(std::size_t count);
  // After the call that ran on the wall clock from `start_unix_ns` for `duration`: each kernel
  // channel with GPU start and stop timer values from that real time (times time_factor; at
  // least 1 ns), which completes the collective.
  void FinishAllReduce(const Entered& entered, std::uint64_t start_unix_ns,
                       std::chrono::nanoseconds duration);
  // Both at once, after the fact.
  void ReportAllReduce(std::size_t count, std::uint64_t start_unix_ns,
                       std::chrono::nanoseconds duration);

  int version() const { return version_; }  // 5 or 4

  // The kernel channels each reported collective runs on.
  static constexpr int kChannels = 1;

 private:
  ProfilerStandIn(std::unique_ptr<profiler::PluginLibrary> library, const StandInOptions& options);
  // Sends one collective's events through whichever version was found.
  template <typename Descr, typename Profiler>
  Entered Enter(const Profiler& profiler, std::size_t count);
  template <typename Descr, typename Profiler>
  void Finish(const Profiler& profiler, const Entered& entered, std::uint64_t start_ns,
              std::uint64_t stop_ns);

  std::unique_ptr<profiler::PluginLibrary> library_;  // destroyed after the finalize
  const profiler::abi::ProfilerV5* v5_;  // the one driven when present
  const profiler::abi::ProfilerV4* v4_;
  int version_;
  int rank_;
  double time_factor_;
  void* context_ = nullptr;
  int activation_mask_ = 0;  // the event types init asked for; NCCL reports no others
  std::uint64_t sequence_ = 0;
};

}  // namespace ringleader::examples
