// The shipped flavour of libnccl-profiler-ringleader.so (static C++ runtime, unsanitized): it
// shows the world only the ncclProfiler_vN structs, needs nothing beyond libc-level libraries,
// and still loads and records in that form. Runs nm -D and ldd on the built library.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sidecar/profiler/nccl_profiler_abi.h"
#include "tests/sidecar/profiler/plugin_harness.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
// Where NCCL's own header is installed, the result codes the plugin returns are NCCL's.
static_assert(sizeof(ncclResult_t) == sizeof(ringleader::profiler::abi::Result));
static_assert(static_cast<int>(ncclSuccess) == ringleader::profiler::abi::kSuccess);
static_assert(static_cast<int>(ncclSystemError) == ringleader::profiler::abi::kSystemError);
static_assert(static_cast<int>(ncclInternalError) == ringleader::profiler::abi::kInternalError);
#endif

namespace ringleader::profiler {
namespace {

// stdout of a shell command; fails the test when it cannot run or exits non-zero.
std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return output;
  }
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << command << ":\n" << output;
  return output;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  return lines;
}

TEST(PluginExportsTest, DynamicSymbolTableHoldsOnlyTheProfilerStructs) {
  const std::string output = RunCommand("nm -D --defined-only " + testing::BuiltPluginPath());
  std::set<std::string> names;
  for (const std::string& line : Lines(output)) {
    std::istringstream fields(line);
    std::string address, type, name;
    fields >> address >> type >> name;
    names.insert(name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"ncclProfiler_v4", "ncclProfiler_v5"})) << output;
}

TEST(PluginExportsTest, NeedsOnlyLibcLevelLibraries) {
  const std::string output = RunCommand("ldd " + testing::BuiltPluginPath());
  const std::vector<std::string> allowed = {"linux-vdso.so", "libc.so", "libm.so",   "libdl.so",
                                            "libpthread.so", "librt.so", "ld-linux"};
  const std::vector<std::string> lines = Lines(output);
  EXPECT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    bool ok = false;
    for (const std::string& prefix : allowed) {
      ok = ok || line.find(prefix) != std::string::npos;
    }
    EXPECT_TRUE(ok) << "not a libc-level library: " << line << "\nldd:\n" << output;
  }
}

// A smoke run of this flavour through the ABI: the driver test covers the behaviour in the
// sanitized builds.
TEST(PluginExportsTest, LoadsAndRecordsOneCollectiveInThisForm) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/profiler.sock";
  setenv("RINGLEADER_PROFILER_SOCKET", socket.c_str(), 1);
  testing::SnapshotServer server(socket);
  {
    std::string error;
    auto plugin = testing::LoadedPlugin::Load(testing::BuiltPluginPath(), &error);
    ASSERT_NE(plugin, nullptr) << error;
    const abi::ProfilerV5& v5 = plugin->v5();
    void* context = nullptr;
    int mask = 0;
    ASSERT_EQ(v5.init(&context, 0x600D, &mask, "smoke", 1, 2, 0, nullptr), abi::kSuccess);
    abi::EventDescrV5 coll{};
    coll.type = abi::kEventColl;
    coll.coll.func = "AllGather";
    coll.coll.datatype = "ncclBfloat16";
    coll.coll.count = 1 << 20;
    coll.coll.nChannels = 1;
    void* op = nullptr;
    ASSERT_EQ(v5.startEvent(context, &op, &coll), abi::kSuccess);
    abi::EventDescrV5 channel{};
    channel.type = abi::kEventKernelCh;
    channel.parentObj = op;
    channel.kernelCh = {0, 1'000'000};
    void* ch = nullptr;
    ASSERT_EQ(v5.startEvent(context, &ch, &channel), abi::kSuccess);
    abi::EventStateArgs args{};
    args.kernelCh.pTimer = 1'000'000 + 4'194'304;  // 4 MiB in 4.19 ms: 1 GB/s
    EXPECT_EQ(v5.recordEventState(ch, abi::kStateKernelChStop, &args), abi::kSuccess);
    EXPECT_EQ(v5.stopEvent(ch), abi::kSuccess);
    EXPECT_EQ(v5.stopEvent(op), abi::kSuccess);
    EXPECT_EQ(v5.finalize(context), abi::kSuccess);
  }
  unsetenv("RINGLEADER_PROFILER_SOCKET");
  ASSERT_TRUE(server.WaitFor([](const testing::Received& received) {
    return received.latest.count({0x600D, 0}) == 1 &&
           received.latest.at({0x600D, 0}).cells.size() == 1;
  }));
  const Cell cell = server.Get().latest.at({0x600D, 0}).cells[0];
  EXPECT_EQ(cell.op, Op::kAllGather);
  EXPECT_EQ(cell.bytes, 4U << 20);  // 1 Mi bf16 per rank x 2 ranks
  EXPECT_EQ(cell.bucket, 22);
  EXPECT_DOUBLE_EQ(cell.algbw_gbps, 1.0);
  EXPECT_DOUBLE_EQ(cell.busbw_gbps, 0.5);  // (n-1)/n at n = 2
}

}  // namespace
}  // namespace ringleader::profiler
