// The NCCL profiler plugin's cost on NCCL's own threads: one collective with its kernel-channel
// events, through the built libnccl-profiler-ringleader.so's ncclProfiler_v5 exactly as NCCL
// calls it - startEvent (coll), then per channel startEvent (kernelCh), recordEventState
// (KernelChStop) and stopEvent, then stopEvent (coll), which completes the op into its cell.
// The target (issue 18) is at most 200 ns per collective. The sidecar is absent (its socket path
// does not exist), so the background thread only drops snapshots, once a second.
//
// BM_CollectiveHandedToProxyThread splits the same work as NCCL 2.28 does: the user's thread
// starts and stops the collective, NCCL's proxy thread starts and stops its kernel channels, so
// the op's slot and its communicator's cells and progress move between two cores.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/profiler/nccl_profiler_abi.h"

namespace {

namespace abi = ringleader::profiler::abi;

const abi::ProfilerV5& Plugin() {
  static const abi::ProfilerV5* plugin = [] {
    setenv("RINGLEADER_PROFILER_SOCKET", "/nonexistent/ringleader-bench/profiler.sock", 1);
    setenv("RINGLEADER_PROFILER_INTERVAL_MS", "1000", 1);
    void* library = dlopen(RINGLEADER_PROFILER_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      std::abort();
    }
    return static_cast<const abi::ProfilerV5*>(dlsym(library, "ncclProfiler_v5"));
  }();
  return *plugin;
}

// One communicator per benchmark thread, as each NCCL communicator has its own.
void* Communicator(std::uint64_t hash) {
  void* context = nullptr;
  int mask = 0;
  if (Plugin().init(&context, hash, &mask, "bench", 1, 8, 0, nullptr) != abi::kSuccess) {
    std::abort();
  }
  return context;
}

// A 1 Mi-element bf16 ring all-reduce on `channels` kernel channels, as NCCL describes it.
abi::EventDescrV5 AllReduceDescr(std::uint8_t channels) {
  abi::EventDescrV5 coll{};
  coll.type = abi::kEventColl;
  coll.coll.func = "AllReduce";
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.count = 1 << 20;
  coll.coll.nChannels = channels;
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  return coll;
}

// The op's kernel channels as NCCL's proxy reports them: each started at the GPU clock, given its
// stop time, stopped; the clock then moves past the kernel. `handles` holds `channels` slots.
void RunKernelChannels(const abi::ProfilerV5& plugin, void* context, void* op, std::uint8_t channels,
                       std::uint64_t& gpu_clock, std::vector<void*>& handles) {
  abi::EventDescrV5 channel{};
  channel.type = abi::kEventKernelCh;
  channel.parentObj = op;
  abi::EventStateArgs stop{};
  for (std::uint8_t j = 0; j < channels; ++j) {
    channel.kernelCh = {j, gpu_clock + j};
    plugin.startEvent(context, &handles[j], &channel);
  }
  for (std::uint8_t j = 0; j < channels; ++j) {
    stop.kernelCh.pTimer = gpu_clock + 20'000 + j;
    plugin.recordEventState(handles[j], abi::kStateKernelChStop, &stop);
    plugin.stopEvent(handles[j]);
  }
  gpu_clock += 50'000;
}

void BM_CollectiveWithKernelChannels(benchmark::State& state) {
  const abi::ProfilerV5& plugin = Plugin();
  const auto channels = static_cast<std::uint8_t>(state.range(0));
  void* context = Communicator(0xBE7C0000ULL + static_cast<std::uint64_t>(state.thread_index()));
  abi::EventDescrV5 coll = AllReduceDescr(channels);  // startEvent takes it non-const
  std::vector<void*> handles(channels);
  std::uint64_t gpu_clock = 1'000'000'000;
  for (auto _ : state) {
    void* op = nullptr;
    plugin.startEvent(context, &op, &coll);
    RunKernelChannels(plugin, context, op, channels, gpu_clock, handles);
    plugin.stopEvent(op);
    benchmark::DoNotOptimize(op);
  }
  state.SetItemsProcessed(state.iterations());
  plugin.finalize(context);
}
// NCCL 2.28's split, measured without the scheduler's noise: the user's thread starts and stops a
// batch of 64 collectives (as many as NCCL keeps in flight for a communicator here), then the
// proxy thread, pinned to another CPU, starts and stops their kernel channels, which completes
// them. Each side times only its own work, so the waits between batches, and a core lent to
// another process meanwhile, are left out; the counters are ns per collective on each thread.
// With proxy_thread 0 the same batches run on one thread: the difference is the hand-off.
void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

double ElapsedNs(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - since).count();
}

void BM_CollectiveHandedToProxyThread(benchmark::State& state) {
  constexpr std::size_t kBatch = 64;
  const abi::ProfilerV5& plugin = Plugin();
  const auto channels = static_cast<std::uint8_t>(state.range(0));
  const bool proxy_thread = state.range(1) != 0;
  void* context = Communicator(0xBE7D0000ULL + static_cast<std::uint64_t>(channels));
  abi::EventDescrV5 coll = AllReduceDescr(channels);  // startEvent takes it non-const
  std::vector<void*> ops(kBatch);
  std::uint64_t gpu_clock = 1'000'000'000;
  // The proxy's work on one batch: every op's kernel channels, started, stop time, stopped.
  const auto run_channels = [&] {
    std::vector<void*> handles(channels);
    for (void* op : ops) {
      RunKernelChannels(plugin, context, op, channels, gpu_clock, handles);
    }
  };
  cpu_set_t before;
  pthread_getaffinity_np(pthread_self(), sizeof(before), &before);
  std::atomic<std::uint64_t> posted{0};
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> quit{false};
  double proxy_batch_ns = 0;  // written by the proxy before `done`, read after it
  std::thread proxy;
  if (proxy_thread) {
    PinToCpu(0);
    proxy = std::thread([&] {
      PinToCpu(1);
      for (std::uint64_t round = 1;; ++round) {
        while (posted.load(std::memory_order_acquire) < round) {
          if (quit.load(std::memory_order_acquire)) {
            return;
          }
          std::this_thread::yield();
        }
        const auto start = std::chrono::steady_clock::now();
        run_channels();
        proxy_batch_ns = ElapsedNs(start);
        done.store(round, std::memory_order_release);
      }
    });
  }
  double user_ns = 0;
  double proxy_ns = 0;
  std::uint64_t round = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (void*& op : ops) {
      plugin.startEvent(context, &op, &coll);
      plugin.stopEvent(op);  // at enqueue, before the kernel runs
    }
    const double user_batch_ns = ElapsedNs(start);
    double channels_batch_ns = 0;
    if (proxy_thread) {
      posted.store(++round, std::memory_order_release);
      while (done.load(std::memory_order_acquire) < round) {
        std::this_thread::yield();
      }
      channels_batch_ns = proxy_batch_ns;
    } else {
      const auto channels_start = std::chrono::steady_clock::now();
      run_channels();
      channels_batch_ns = ElapsedNs(channels_start);
    }
    state.SetIterationTime((user_batch_ns + channels_batch_ns) / 1e9);
    user_ns += user_batch_ns;
    proxy_ns += channels_batch_ns;
  }
  if (proxy_thread) {
    quit.store(true, std::memory_order_release);
    proxy.join();
    pthread_setaffinity_np(pthread_self(), sizeof(before), &before);
  }
  const double collectives = static_cast<double>(state.iterations() * kBatch);
  state.SetItemsProcessed(static_cast<std::int64_t>(collectives));
  state.counters["user_thread_ns"] = user_ns / collectives;
  state.counters["proxy_thread_ns"] = proxy_ns / collectives;
  state.counters["total_ns"] = (user_ns + proxy_ns) / collectives;
  plugin.finalize(context);
}

// 1 channel is the yardstick; NCCL runs small messages on few channels and large ones on
// up to 32 (one event triple each).
BENCHMARK(BM_CollectiveWithKernelChannels)->Arg(0)->Arg(1)->Arg(2)->Arg(8)->Arg(32);
// Two threads, two communicators: what they share is the op table's claim cursor.
BENCHMARK(BM_CollectiveWithKernelChannels)->Arg(1)->Threads(2);
// Time and CPU columns are per batch of 64; read the counters.
BENCHMARK(BM_CollectiveHandedToProxyThread)
    ->ArgNames({"channels", "proxy_thread"})
    ->ArgsProduct({{1, 8}, {0, 1}})
    ->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
