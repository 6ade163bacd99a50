// The trainer side of the telemetry tests: the plugin driven as NCCL drives it.
#include "tests/sidecar/app/profiled_trainer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "sidecar/profiler/nccl_profiler_abi.h"

namespace ringleader::testing {

namespace abi = profiler::abi;

void RunTrainer(const profiler::testing::LoadedPlugin& plugin, const std::filesystem::path& socket,
                std::uint64_t comm_hash, int nranks, int rank, int calls, std::uint64_t gpu_ns) {
  ::setenv("RINGLEADER_PROFILER_SOCKET", socket.c_str(), 1);
  ::setenv("RINGLEADER_PROFILER_INTERVAL_MS", "600000", 1);  // only finalize's snapshot
  ::setenv("LOCAL_RANK", "0", 1);
  const abi::ProfilerV5& v5 = plugin.v5();
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5.init(&context, comm_hash, &mask, "world", 1, nranks, rank, nullptr), abi::kSuccess);
  ASSERT_NE(context, nullptr);
  std::uint64_t gpu_clock = 1'000'000'000;
  for (int call = 0; call < calls; ++call) {
    abi::EventDescrV5 coll{};
    coll.type = abi::kEventColl;
    coll.coll = {static_cast<std::uint64_t>(call), "AllReduce", nullptr, nullptr, kCount, 0,
                 "ncclFloat32", 1, 4, "RING", "LL", nullptr};
    void* op = nullptr;
    ASSERT_EQ(v5.startEvent(context, &op, &coll), abi::kSuccess);
    ASSERT_NE(op, nullptr);
    abi::EventDescrV5 channel{};
    channel.type = abi::kEventKernelCh;
    channel.parentObj = op;
    channel.kernelCh = {0, gpu_clock};
    void* kernel = nullptr;
    ASSERT_EQ(v5.startEvent(context, &kernel, &channel), abi::kSuccess);
    ASSERT_NE(kernel, nullptr);
    abi::EventStateArgs stop{};
    stop.kernelCh.pTimer = gpu_clock + gpu_ns;
    ASSERT_EQ(v5.recordEventState(kernel, abi::kStateKernelChStop, &stop), abi::kSuccess);
    ASSERT_EQ(v5.stopEvent(kernel), abi::kSuccess);
    ASSERT_EQ(v5.stopEvent(op), abi::kSuccess);
    gpu_clock += 10 * gpu_ns;
  }
  ASSERT_EQ(v5.finalize(context), abi::kSuccess);
}

std::unique_ptr<profiler::testing::LoadedPlugin> LoadPlugin() {
  std::string error;
  auto plugin = profiler::testing::LoadedPlugin::Load(profiler::testing::BuiltPluginPath(), &error);
  EXPECT_NE(plugin, nullptr) << error;
  return plugin;
}

}  // namespace ringleader::testing
