// libnccl-profiler-ringleader.so: NCCL's profiler plugin ABI (v4 and v5, nccl_profiler_abi.h)
// over the lock-free Recorder, and the one background thread that sends its snapshots to the
// sidecar. The only exported symbols are ncclProfiler_v4 and ncclProfiler_v5 (exports.map).
//
// What the plugin promises the trainer it runs in: no call returns an error but init (which
// NCCL answers by disabling the plugin); events never allocate, lock or wait; a sidecar that is
// gone or slow costs a dropped snapshot on the background thread, nothing on NCCL's; and the
// thread is joined when the last communicator is finalized (NCCL may then unload the library),
// when the library is unloaded, and is forgotten in a forked child.
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "sidecar/contract/contract.h"
#include "sidecar/profiler/nccl_profiler_abi.h"
#include "sidecar/profiler/recorder.h"
#include "sidecar/profiler/snapshot_sender.h"

namespace ringleader::profiler {
namespace {

constexpr int kActivationMask =
    static_cast<int>(abi::kEventColl | abi::kEventP2p | abi::kEventKernelCh);
constexpr long kDefaultIntervalMs = 5000;
constexpr long kMinIntervalMs = 10;
constexpr long kMaxIntervalMs = 600000;
// A stopped op whose kernel channels have not all reported after this many intervals is counted
// as incomplete and recorded without a GPU time (30 s at the default interval).
constexpr long kIncompleteAfterIntervals = 6;
constexpr int kMaxSendTimeoutMs = 1000;
// The flush when the last communicator goes: finalize (and process exit) wait at most this.
constexpr int kFinalSendTimeoutMs = 250;

Recorder g_recorder;  // fixed tables, zero-initialized: they cost address space, not memory

// Everything else the plugin keeps. `registry` serialises init, finalize and unload (never an
// event); `wake` is the sender thread's sleep, which finalize cuts short.
struct Runtime {
  pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t wake = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t wake_cond{};
  bool running = false;
  bool stop = false;                  // under wake
  std::atomic<bool> stopping{false};  // set at stop: a periodic send gives up at once
  pthread_t thread{};
  int live = 0;  // contexts between init and finalize, the dropped ones included
  bool atfork_registered = false;
  abi::DebugLogger logger = nullptr;
  long interval_ms = kDefaultIntervalMs;
  SnapshotSender sender;
  std::uint8_t* buffer = nullptr;  // one frame, reserved at the first init
  std::uint32_t pid = 0;
  std::uint64_t process_start_ns = 0;
  std::int32_t local_rank = -1;
  std::uint64_t sequence = 0;
  bool sidecar_reachable = true;  // sender thread: logs only the changes
};
Runtime g_runtime;

std::uint64_t UnixTimeNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// When a collective started, for stall detection: the realtime clock as of the kernel's last tick
// (clock_getres: 4 ms on the development machine, where it cost 6-12 ns a read against 31-38 ns
// for CLOCK_REALTIME), since a stall is judged over tens of seconds.
std::uint64_t CoarseUnixTimeNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

long EnvLong(std::string_view name, long fallback, long min, long max) {
  const char* text = std::getenv(name.data());
  if (text == nullptr || *text == '\0') {
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0') {
    return fallback;
  }
  return value < min ? min : (value > max ? max : value);
}

template <typename... Args>
void Log(const char* format, Args... args) {
  if (g_runtime.logger != nullptr) {
    g_runtime.logger(abi::kLogInfo, abi::kLogSubsysInit, __FILE__, __LINE__, format, args...);
  }
}

void SendOneSnapshot(bool final) {
  Runtime& rt = g_runtime;
  g_recorder.SetNow(static_cast<std::uint64_t>(MonotonicMs()));
  g_recorder.Sweep(static_cast<std::uint64_t>(rt.interval_ms * kIncompleteAfterIntervals));
  SnapshotHeader header;
  header.pid = rt.pid;
  header.process_start_ns = rt.process_start_ns;
  header.local_rank = rt.local_rank;
  header.sequence = ++rt.sequence;
  header.unix_time_ns = UnixTimeNs();
  const auto size = g_recorder.WriteSnapshot(header, std::span(rt.buffer, kMaxFrameBytes));
  const int timeout_ms =
      final ? kFinalSendTimeoutMs
            : static_cast<int>(rt.interval_ms / 2 < kMaxSendTimeoutMs ? rt.interval_ms / 2
                                                                      : kMaxSendTimeoutMs);
  const auto outcome =
      size ? rt.sender.Send(std::span<const std::uint8_t>(rt.buffer, *size), timeout_ms,
                            final ? nullptr : &rt.stopping)
           : SnapshotSender::Outcome::kFailed;
  const bool delivered = outcome == SnapshotSender::Outcome::kSent;
  if (delivered) {
    if (!rt.sidecar_reachable) {
      Log("ringleader profiler: sending snapshots to %s again", rt.sender.path());
    }
    rt.sidecar_reachable = true;
  } else {
    g_recorder.Count(Counter::kSnapshotsDropped);
    if (rt.sidecar_reachable) {
      Log("ringleader profiler: cannot send to %s (%s); dropping snapshots until the sidecar "
          "takes them",
          rt.sender.path(), std::strerror(rt.sender.last_errno()));
    }
    rt.sidecar_reachable = false;
  }
  g_recorder.ReleaseWrittenFinalized(delivered);
}

void* SenderMain(void*) {
  Runtime& rt = g_runtime;
  for (;;) {
    timespec deadline{};
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += rt.interval_ms / 1000;
    deadline.tv_nsec += (rt.interval_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&rt.wake);
    while (!rt.stop && pthread_cond_timedwait(&rt.wake_cond, &rt.wake, &deadline) != ETIMEDOUT) {
    }
    const bool stopping = rt.stop;
    pthread_mutex_unlock(&rt.wake);
    SendOneSnapshot(stopping);
    if (stopping) {
      return nullptr;
    }
  }
}

// Under registry. False when the thread cannot start (init then fails, and NCCL runs without us).
bool StartSenderLocked(abi::DebugLogger logger) {
  Runtime& rt = g_runtime;
  if (rt.buffer == nullptr) {
    rt.buffer = static_cast<std::uint8_t*>(std::malloc(kMaxFrameBytes));
    if (rt.buffer == nullptr) {
      return false;
    }
  }
  rt.logger = logger;
  rt.interval_ms = EnvLong(contract::env::kProfilerIntervalMs, kDefaultIntervalMs, kMinIntervalMs,
                           kMaxIntervalMs);
  const char* path = std::getenv(contract::env::kProfilerSocket.data());
  rt.sender.Configure(path != nullptr && *path != '\0' ? path
                                                        : contract::path::kProfilerSocket.data());
  // Set by torchrun and most launchers; the sidecar labels a process's collectives with it.
  rt.local_rank = static_cast<std::int32_t>(EnvLong("LOCAL_RANK", -1, -1, 1 << 20));
  if (rt.process_start_ns == 0) {
    rt.pid = static_cast<std::uint32_t>(getpid());
    rt.process_start_ns = UnixTimeNs();
  }
  rt.sidecar_reachable = true;
  rt.stop = false;
  rt.stopping.store(false);
  g_recorder.SetNow(static_cast<std::uint64_t>(MonotonicMs()));  // ops stamp their stop with it
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
  pthread_cond_init(&rt.wake_cond, &attributes);
  pthread_condattr_destroy(&attributes);
  // The thread takes no signals (they stay with the trainer's threads) and names itself in top -H.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int created = pthread_create(&rt.thread, nullptr, &SenderMain, nullptr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (created != 0) {
    pthread_cond_destroy(&rt.wake_cond);
    return false;
  }
  pthread_setname_np(rt.thread, "rl-nccl-profile");
  rt.running = true;
  Log("ringleader profiler: snapshots every %ld ms to %s", rt.interval_ms, rt.sender.path());
  return true;
}

// Under registry: the last snapshot goes out, then the thread ends.
void StopSenderLocked() {
  Runtime& rt = g_runtime;
  if (!rt.running) {
    return;
  }
  rt.stopping.store(true);
  pthread_mutex_lock(&rt.wake);
  rt.stop = true;
  pthread_cond_signal(&rt.wake_cond);
  pthread_mutex_unlock(&rt.wake);
  pthread_join(rt.thread, nullptr);
  pthread_cond_destroy(&rt.wake_cond);
  rt.sender.Close();
  rt.running = false;
}

// A forked child has no sender thread and must not write to its parent's connection.
void ForgetSenderInChild() {
  Runtime& rt = g_runtime;
  pthread_mutex_init(&rt.registry, nullptr);
  pthread_mutex_init(&rt.wake, nullptr);
  rt.sender.Close();
  rt.running = false;
  rt.live = 0;
  rt.process_start_ns = 0;
  rt.sequence = 0;
}

__attribute__((destructor)) void StopSenderOnUnload() {
  Runtime& rt = g_runtime;
  pthread_mutex_lock(&rt.registry);
  StopSenderLocked();
  std::free(rt.buffer);
  rt.buffer = nullptr;
  pthread_mutex_unlock(&rt.registry);
}

abi::Result Init(void** context, int* activation_mask, const char* name, std::uint64_t comm_hash,
                 int nnodes, int nranks, int rank, abi::DebugLogger logger) {
  if (context == nullptr) {
    return abi::kInternalError;
  }
  Runtime& rt = g_runtime;
  pthread_mutex_lock(&rt.registry);
  if (!rt.atfork_registered) {
    rt.atfork_registered = pthread_atfork(nullptr, nullptr, &ForgetSenderInChild) == 0;
  }
  if (!rt.running && !StartSenderLocked(logger)) {
    pthread_mutex_unlock(&rt.registry);
    *context = nullptr;
    return abi::kSystemError;
  }
  ++rt.live;
  *context = g_recorder.AddCommunicator(comm_hash, name, nnodes, nranks, rank);
  pthread_mutex_unlock(&rt.registry);
  if (activation_mask != nullptr) {
    *activation_mask = kActivationMask;
  }
  return abi::kSuccess;
}

abi::Result InitV4(void** context, int* activation_mask, const char* name, std::uint64_t comm_hash,
                   int nnodes, int nranks, int rank, abi::DebugLogger logger) {
  return Init(context, activation_mask, name, comm_hash, nnodes, nranks, rank, logger);
}

abi::Result InitV5(void** context, std::uint64_t comm_id, int* activation_mask, const char* name,
                   int nnodes, int nranks, int rank, abi::DebugLogger logger) {
  return Init(context, activation_mask, name, comm_id, nnodes, nranks, rank, logger);
}

abi::Result Finalize(void* context) {
  Runtime& rt = g_runtime;
  pthread_mutex_lock(&rt.registry);
  const bool known =
      g_recorder.FinalizeCommunicator(context) || context == g_recorder.OverflowContext();
  if (known && rt.live > 0) {
    if (--rt.live == 0) {
      StopSenderLocked();
    }
  }
  pthread_mutex_unlock(&rt.registry);
  return abi::kSuccess;
}

template <typename Descr>
abi::Result StartEvent(void* context, void** handle, Descr* descr) {
  if (handle == nullptr || descr == nullptr) {
    g_recorder.Count(Counter::kEventsIgnored);
    return abi::kSuccess;
  }
  *handle = nullptr;
  switch (descr->type) {
    case abi::kEventGroup:
      // NCCL 2.27 starts a plan's collective and p2p events only under a non-NULL Group handle
      // (src/plugin/profiler.cc: `if (plan->groupEventHandle)`), so every Group gets the one
      // placeholder handle; stopping it, or recording a state on it, does nothing.
      *handle = g_recorder.GroupHandle();
      break;
    case abi::kEventColl:
      *handle = g_recorder.StartOp(context, {descr->coll.func, descr->coll.datatype,
                                             descr->coll.count, descr->coll.nChannels,
                                             CoarseUnixTimeNs()});
      break;
    case abi::kEventP2p:
      *handle = g_recorder.StartOp(context, {descr->p2p.func, descr->p2p.datatype,
                                             descr->p2p.count, descr->p2p.nChannels});
      break;
    case abi::kEventKernelCh:
      *handle = g_recorder.StartChannel(descr->parentObj, descr->kernelCh.channelId,
                                        descr->kernelCh.pTimer);
      break;
    default:
      g_recorder.Count(Counter::kEventsIgnored);
      break;
  }
  return abi::kSuccess;
}

abi::Result StopEvent(void* handle) {
  g_recorder.Stop(handle);
  return abi::kSuccess;
}

abi::Result RecordEventState(void* handle, int state, abi::EventStateArgs* args) {
  if (state == abi::kStateKernelChStop) {
    g_recorder.RecordChannelStop(handle, args != nullptr ? args->kernelCh.pTimer : 0);
  }
  return abi::kSuccess;
}

}  // namespace
}  // namespace ringleader::profiler

// The symbols NCCL looks up (dlsym); exports.map keeps every other symbol local.
extern "C" {
__attribute__((visibility("default"))) ringleader::profiler::abi::ProfilerV4 ncclProfiler_v4 = {
    "ringleader",
    &ringleader::profiler::InitV4,
    &ringleader::profiler::StartEvent<ringleader::profiler::abi::EventDescrV4>,
    &ringleader::profiler::StopEvent,
    &ringleader::profiler::RecordEventState,
    &ringleader::profiler::Finalize,
};
__attribute__((visibility("default"))) ringleader::profiler::abi::ProfilerV5 ncclProfiler_v5 = {
    "ringleader",
    &ringleader::profiler::InitV5,
    &ringleader::profiler::StartEvent<ringleader::profiler::abi::EventDescrV5>,
    &ringleader::profiler::StopEvent,
    &ringleader::profiler::RecordEventState,
    &ringleader::profiler::Finalize,
};
}
