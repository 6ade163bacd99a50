// The NCCL profiler plugin's cost on NCCL's own threads: one collective with its kernel-channel
// events, through the built libnccl-profiler-ringleader.so's ncclProfiler_v5 exactly as NCCL
// calls it - startEvent (coll), then per channel startEvent (kernelCh), recordEventState
// (KernelChStop) and stopEvent, then stopEvent (coll), which completes the op into its cell.
// The target (issue 18) is at most 200 ns per collective. The sidecar is absent (its socket path
// does not exist), so the background thread only drops snapshots, once a second.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
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

void BM_CollectiveWithKernelChannels(benchmark::State& state) {
  const abi::ProfilerV5& plugin = Plugin();
  const auto channels = static_cast<std::uint8_t>(state.range(0));
  void* context = Communicator(0xBE7C0000ULL + static_cast<std::uint64_t>(state.thread_index()));
  abi::EventDescrV5 coll{};
  coll.type = abi::kEventColl;
  coll.coll.func = "AllReduce";
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.count = 1 << 20;
  coll.coll.nChannels = channels;
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  abi::EventDescrV5 channel{};
  channel.type = abi::kEventKernelCh;
  abi::EventStateArgs stop{};
  std::vector<void*> handles(channels);
  std::uint64_t gpu_clock = 1'000'000'000;
  for (auto _ : state) {
    void* op = nullptr;
    plugin.startEvent(context, &op, &coll);
    channel.parentObj = op;
    for (std::uint8_t j = 0; j < channels; ++j) {
      channel.kernelCh = {j, gpu_clock + j};
      plugin.startEvent(context, &handles[j], &channel);
    }
    for (std::uint8_t j = 0; j < channels; ++j) {
      stop.kernelCh.pTimer = gpu_clock + 20'000 + j;
      plugin.recordEventState(handles[j], abi::kStateKernelChStop, &stop);
      plugin.stopEvent(handles[j]);
    }
    plugin.stopEvent(op);
    gpu_clock += 50'000;
    benchmark::DoNotOptimize(op);
  }
  state.SetItemsProcessed(state.iterations());
  plugin.finalize(context);
}
// 1 channel is the yardstick; NCCL runs small messages on few channels and large ones on
// up to 32 (one event triple each).
BENCHMARK(BM_CollectiveWithKernelChannels)->Arg(0)->Arg(1)->Arg(2)->Arg(8)->Arg(32);
// Two threads, two communicators: what they share is the op table's claim cursor.
BENCHMARK(BM_CollectiveWithKernelChannels)->Arg(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
