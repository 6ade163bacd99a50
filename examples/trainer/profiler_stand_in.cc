// The NCCL profiler plugin stand-in (profiler_stand_in.h).
#include "examples/trainer/profiler_stand_in.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

namespace ringleader::examples {
namespace {

namespace abi = profiler::abi;

// The largest time reported, so that a slowdown cannot overflow the timer arithmetic (146 years).
constexpr double kMaxReportedNs = 0x1.0p62;

// NCCL's logger as the plugin sees it: the plugin's lines go to stderr, marked as NCCL's would be.
void LogFromPlugin(int /*level*/, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
                   const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  std::fprintf(stderr, "ringleader-example-trainer: NCCL INFO %s\n", line);
}

}  // namespace

std::uint64_t StandInCommHash(std::string_view master_addr, std::uint16_t master_port,
                              int world_size, int attempt) {
  const std::string text = "ringleader-example-trainer/" + std::string(master_addr) + ":" +
                           std::to_string(master_port) + "/" + std::to_string(world_size) + "/" +
                           std::to_string(attempt);
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char c : text) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  }
  return hash;
}

std::uint64_t UnixNowNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::unique_ptr<ProfilerStandIn> ProfilerStandIn::Start(const StandInOptions& options,
                                                        const StandInLog& log) {
  const std::string& path = options.plugin_path;
  std::string error;
  std::unique_ptr<profiler::PluginLibrary> library = profiler::PluginLibrary::Open(path, &error);
  if (library == nullptr) {
    log("profiler stand-in: cannot load NCCL_PROFILER_PLUGIN (" + error +
        "); training without it");
    return nullptr;
  }
  if (library->newest_version() == 0) {
    log("profiler stand-in: " + path +
        " has neither ncclProfiler_v5 nor ncclProfiler_v4; training without it");
    return nullptr;
  }
  std::unique_ptr<ProfilerStandIn> stand_in(new ProfilerStandIn(std::move(library), options));
  const abi::ProfilerV5* v5 = stand_in->v5_;
  const abi::ProfilerV4* v4 = stand_in->v4_;
  const std::string symbol = "ncclProfiler_v" + std::to_string(stand_in->version_);
  const abi::Result result =
      v5 != nullptr
          ? v5->init(&stand_in->context_, options.comm_hash, &stand_in->activation_mask_,
                     options.comm_name.c_str(), options.nnodes, options.nranks, options.rank,
                     &LogFromPlugin)
          : v4->init(&stand_in->context_, &stand_in->activation_mask_, options.comm_name.c_str(),
                     options.comm_hash, options.nnodes, options.nranks, options.rank,
                     &LogFromPlugin);
  if (result != abi::kSuccess) {
    // NCCL disables a plugin whose init fails, and finalizes nothing.
    log("profiler stand-in: " + path + ": " + symbol + ".init failed (ncclResult_t " +
        std::to_string(static_cast<int>(result)) + "); training without it");
    stand_in->v5_ = nullptr;
    stand_in->v4_ = nullptr;
    return nullptr;
  }
  log("profiler stand-in: driving " + path + " through " + symbol +
      " (this trainer uses Gloo, not NCCL)");
  if (options.time_factor != 1) {
    char factor[32];
    std::snprintf(factor, sizeof(factor), "%g", options.time_factor);
    log("profiler stand-in: reporting this rank's collectives as taking " + std::string(factor) +
        " times their real time (--stand-in-slowdown, a test aid)");
  }
  return stand_in;
}

ProfilerStandIn::ProfilerStandIn(std::unique_ptr<profiler::PluginLibrary> library,
                                 const StandInOptions& options)
    : library_(std::move(library)),
      v5_(library_->v5()),
      v4_(v5_ != nullptr ? nullptr : library_->v4()),
      version_(library_->newest_version()),
      rank_(options.rank),
      time_factor_(options.time_factor) {}

ProfilerStandIn::~ProfilerStandIn() {
  if (v5_ != nullptr) {
    v5_->finalize(context_);
  } else if (v4_ != nullptr) {
    v4_->finalize(context_);
  }
}

ProfilerStandIn::Entered ProfilerStandIn::EnterAllReduce(std::size_t count) {
  return v5_ != nullptr ? Enter<abi::EventDescrV5>(*v5_, count) : Enter<abi::EventDescrV4>(*v4_, count);
}

void ProfilerStandIn::FinishAllReduce(const Entered& entered, std::uint64_t start_unix_ns,
                                      std::chrono::nanoseconds duration) {
  const double scaled = static_cast<double>(duration.count()) * time_factor_;
  const auto reported = static_cast<std::uint64_t>(std::clamp(std::round(scaled), 1.0, kMaxReportedNs));
  if (v5_ != nullptr) {
    Finish<abi::EventDescrV5>(*v5_, entered, start_unix_ns, start_unix_ns + reported);
  } else {
    Finish<abi::EventDescrV4>(*v4_, entered, start_unix_ns, start_unix_ns + reported);
  }
}

void ProfilerStandIn::ReportAllReduce(std::size_t count, std::uint64_t start_unix_ns,
                                      std::chrono::nanoseconds duration) {
  FinishAllReduce(EnterAllReduce(count), start_unix_ns, duration);
}

template <typename Descr, typename Profiler>
ProfilerStandIn::Entered ProfilerStandIn::Enter(const Profiler& profiler, std::size_t count) {
  // NCCL reports only the event types init activated.
  if ((activation_mask_ & static_cast<int>(abi::kEventColl)) == 0) {
    return {};
  }
  decltype(Descr::coll) coll{};
  coll.seqNumber = sequence_++;
  coll.func = "AllReduce";
  coll.count = count;
  coll.datatype = kFloat32DatatypeName;
  coll.nChannels = static_cast<std::uint8_t>(kChannels);
  coll.algo = "Ring";  // Gloo's all-reduce is a ring too
  coll.proto = "Simple";
  Descr descr{};
  descr.type = abi::kEventColl;
  descr.parentObj = nullptr;  // group events are never activated here
  descr.rank = rank_;
  descr.coll = coll;
  void* coll_handle = nullptr;
  profiler.startEvent(context_, &coll_handle, &descr);
  if (coll_handle == nullptr) {
    return {};
  }
  profiler.stopEvent(coll_handle);  // NCCL stops a collective once it is enqueued
  return Entered{coll_handle};
}

template <typename Descr, typename Profiler>
void ProfilerStandIn::Finish(const Profiler& profiler, const Entered& entered,
                             std::uint64_t start_ns, std::uint64_t stop_ns) {
  // A kernel channel belongs to its collective.
  if (entered.coll == nullptr || (activation_mask_ & static_cast<int>(abi::kEventKernelCh)) == 0) {
    return;
  }
  for (int channel = 0; channel < kChannels; ++channel) {
    abi::KernelChDescr kernel_channel{};
    kernel_channel.channelId = static_cast<std::uint8_t>(channel);
    kernel_channel.pTimer = start_ns;
    Descr channel_descr{};
    channel_descr.type = abi::kEventKernelCh;
    channel_descr.parentObj = entered.coll;
    channel_descr.rank = rank_;
    channel_descr.kernelCh = kernel_channel;
    void* handle = nullptr;
    profiler.startEvent(context_, &handle, &channel_descr);
    if (handle == nullptr) {
      continue;
    }
    abi::EventStateArgs args{};
    args.kernelCh.pTimer = stop_ns;
    profiler.recordEventState(handle, abi::kStateKernelChStop, &args);
    profiler.stopEvent(handle);
  }
}

}  // namespace ringleader::examples
