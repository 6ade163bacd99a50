// A trainer process's NCCL as the profiler plugin sees it, for tests of the sidecar's telemetry:
// the built plugin loaded in this process and driven through the ncclProfiler ABI, sending its
// snapshots to a sidecar's socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "tests/sidecar/profiler/plugin_harness.h"

namespace ringleader::testing {

inline constexpr std::size_t kCount = 262144;         // float32 elements: S = 1 MiB
inline constexpr double kBytesPerCall = 4.0 * kCount;  // nccl-tests' S of one all_reduce call

// The built plugin, loaded; null (with a test failure) when it cannot be.
std::unique_ptr<profiler::testing::LoadedPlugin> LoadPlugin();

// A communicator of `nranks` whose rank `rank` runs `calls` all_reduce calls of kCount float32
// elements, each on one kernel channel that ran `gpu_ns` on the GPU. Finalize sends the last
// snapshot to `socket` before it returns.
void RunTrainer(const profiler::testing::LoadedPlugin& plugin, const std::filesystem::path& socket,
                std::uint64_t comm_hash, int nranks, int rank, int calls, std::uint64_t gpu_ns);

}  // namespace ringleader::testing
