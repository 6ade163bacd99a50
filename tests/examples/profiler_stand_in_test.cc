// The example trainer's NCCL profiler stand-in in-process: the exact calls it makes (a fake v4
// plugin traces them), what the built plugin makes of them (its snapshots), and that a plugin it
// cannot use costs one log line and nothing else.
#include "examples/trainer/profiler_stand_in.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/profiler/snapshot_protocol.h"
#include "tests/sidecar/profiler/plugin_harness.h"

namespace ringleader::examples {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace abi = profiler::abi;

constexpr int kCollAndChannels = static_cast<int>(abi::kEventColl | abi::kEventKernelCh);

StandInOptions Options(const std::string& path) {
  StandInOptions options;
  options.plugin_path = path;
  options.comm_name = "example";
  options.comm_hash = 42;
  options.nnodes = 2;
  options.nranks = 4;
  options.rank = 1;
  return options;
}

// The fake plugin, opened by the test too so it can configure the fake and read its trace (the
// stand-in's dlopen then finds the same library loaded).
class FakePlugin {
 public:
  FakePlugin(int activation_mask, abi::Result init_result)
      : handle_(dlopen(RINGLEADER_FAKE_PROFILER_V4_PATH, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      ADD_FAILURE() << dlerror();
      return;
    }
    reinterpret_cast<void (*)(int, int)>(dlsym(handle_, "ringleader_fake_profiler_configure"))(
        activation_mask, init_result);
  }
  ~FakePlugin() {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  FakePlugin(const FakePlugin&) = delete;
  FakePlugin& operator=(const FakePlugin&) = delete;

  std::string Trace() const {
    return reinterpret_cast<const char* (*)()>(
        dlsym(handle_, "ringleader_fake_profiler_trace"))();
  }

 private:
  void* handle_;
};

struct CapturedLines {
  std::vector<std::string> lines;
  StandInLog Log() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
};

TEST(ProfilerStandInTest, ReportsAnAllReduceAsNcclDoesThroughV4WhenThereIsNoV5) {
  FakePlugin fake(kCollAndChannels, abi::kSuccess);
  CapturedLines log;
  {
    auto stand_in = ProfilerStandIn::Start(Options(RINGLEADER_FAKE_PROFILER_V4_PATH), log.Log());
    ASSERT_NE(stand_in, nullptr);
    EXPECT_EQ(stand_in->version(), 4);
    stand_in->ReportAllReduce(10, 1'000'000, std::chrono::nanoseconds(500));
    stand_in->ReportAllReduce(10, 2'000'000, std::chrono::nanoseconds(700));
  }
  EXPECT_EQ(fake.Trace(),
            "init name=example hash=42 nnodes=2 nranks=4 rank=1 logger=set\n"
            "start coll func=AllReduce datatype=ncclFloat32 count=10 nChannels=1 seq=0 rank=1 "
            "parent=null context=context\n"
            "stop coll\n"
            "start kernelCh channel=0 pTimer=1000000 rank=1 parent=coll context=context\n"
            "state kernelCh 22 pTimer=1000500\n"
            "stop kernelCh\n"
            "start coll func=AllReduce datatype=ncclFloat32 count=10 nChannels=1 seq=1 rank=1 "
            "parent=null context=context\n"
            "stop coll\n"
            "start kernelCh channel=0 pTimer=2000000 rank=1 parent=coll context=context\n"
            "state kernelCh 22 pTimer=2000700\n"
            "stop kernelCh\n"
            "finalize context\n");
  EXPECT_THAT(log.lines, ElementsAre("profiler stand-in: driving " +
                                     std::string(RINGLEADER_FAKE_PROFILER_V4_PATH) +
                                     " through ncclProfiler_v4 (this trainer uses Gloo, not NCCL)"));
}

// The fake's trace of one reported all-reduce when init activates `activation_mask`.
std::string TraceOfOneCall(int activation_mask) {
  FakePlugin fake(activation_mask, abi::kSuccess);
  CapturedLines log;
  auto stand_in = ProfilerStandIn::Start(Options(RINGLEADER_FAKE_PROFILER_V4_PATH), log.Log());
  if (stand_in == nullptr) {
    return "no stand-in";
  }
  stand_in->ReportAllReduce(3, 5, std::chrono::nanoseconds(1));
  stand_in.reset();
  return fake.Trace();
}

TEST(ProfilerStandInTest, ReportsOnlyTheEventTypesInitActivated) {
  const std::string colls_only = TraceOfOneCall(static_cast<int>(abi::kEventColl));
  EXPECT_THAT(colls_only, HasSubstr("stop coll\nfinalize"));
  EXPECT_THAT(colls_only, ::testing::Not(HasSubstr("kernelCh")));
  EXPECT_THAT(TraceOfOneCall(0), ::testing::EndsWith("logger=set\nfinalize context\n"));
  EXPECT_THAT(TraceOfOneCall(static_cast<int>(abi::kEventKernelCh)),
              ::testing::EndsWith("logger=set\nfinalize context\n"))
      << "a kernel channel belongs to a collective";
}

TEST(ProfilerStandInTest, ScalesTheReportedTimeAndNeverReportsAnEmptyOne) {
  FakePlugin fake(kCollAndChannels, abi::kSuccess);
  CapturedLines log;
  StandInOptions options = Options(RINGLEADER_FAKE_PROFILER_V4_PATH);
  options.time_factor = 2.5;
  {
    auto stand_in = ProfilerStandIn::Start(options, log.Log());
    ASSERT_NE(stand_in, nullptr);
    stand_in->ReportAllReduce(1, 100, std::chrono::nanoseconds(40));
    stand_in->ReportAllReduce(1, 100, std::chrono::nanoseconds(0));
  }
  EXPECT_THAT(fake.Trace(), HasSubstr("state kernelCh 22 pTimer=200\n"));
  EXPECT_THAT(fake.Trace(), HasSubstr("state kernelCh 22 pTimer=101\n"));
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[1],
            "profiler stand-in: reporting this rank's collectives as taking 2.5 times their real "
            "time (--stand-in-slowdown, a test aid)");
}

TEST(ProfilerStandInTest, AFailedInitIsOneLineAndNothingElse) {
  FakePlugin fake(kCollAndChannels, abi::kSystemError);
  CapturedLines log;
  EXPECT_EQ(ProfilerStandIn::Start(Options(RINGLEADER_FAKE_PROFILER_V4_PATH), log.Log()), nullptr);
  EXPECT_EQ(fake.Trace(), "init name=example hash=42 nnodes=2 nranks=4 rank=1 logger=set\n")
      << "no finalize after a failed init";
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_THAT(log.lines[0], HasSubstr("ncclProfiler_v4.init failed (ncclResult_t 2); training "
                                      "without it"));
}

TEST(ProfilerStandInTest, AMissingFileIsOneLine) {
  profiler::testing::TempDir dir;
  const std::string missing = dir.path() + "/libnccl-profiler-missing.so";
  CapturedLines log;
  EXPECT_EQ(ProfilerStandIn::Start(Options(missing), log.Log()), nullptr);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_THAT(log.lines[0], HasSubstr("profiler stand-in: cannot load NCCL_PROFILER_PLUGIN ("));
  EXPECT_THAT(log.lines[0], HasSubstr(missing));
  EXPECT_THAT(log.lines[0], HasSubstr("training without it"));
}

TEST(ProfilerStandInTest, ALibraryWithoutProfilerSymbolsIsOneLine) {
  CapturedLines log;
  EXPECT_EQ(ProfilerStandIn::Start(Options(RINGLEADER_FAKE_PROFILER_WITHOUT_SYMBOLS_PATH),
                                   log.Log()),
            nullptr);
  EXPECT_THAT(log.lines,
              ElementsAre("profiler stand-in: " +
                          std::string(RINGLEADER_FAKE_PROFILER_WITHOUT_SYMBOLS_PATH) +
                          " has neither ncclProfiler_v5 nor ncclProfiler_v4; training without it"));
}

TEST(ProfilerStandInTest, RanksOfOneRunShareTheCommHashAndOtherRunsDoNot) {
  const std::uint64_t hash = StandInCommHash("10.0.0.1", 29500, 4, 0);
  EXPECT_EQ(hash, StandInCommHash("10.0.0.1", 29500, 4, 0));
  EXPECT_NE(hash, StandInCommHash("10.0.0.1", 29500, 4, 1)) << "another attempt";
  EXPECT_NE(hash, StandInCommHash("10.0.0.1", 29501, 4, 0)) << "another port";
  EXPECT_NE(hash, StandInCommHash("10.0.0.1", 29500, 8, 0)) << "another world";
}

// The built plugin, through v5, as the trainer drives it: its last snapshot holds every call, its
// bytes and the reported (scaled) GPU time.
TEST(ProfilerStandInTest, TheBuiltPluginRecordsTheReportedCallsBytesAndTime) {
  profiler::testing::TempDir dir;
  const std::string socket = dir.path() + "/profiler.sock";
  profiler::testing::SnapshotServer server(socket);
  ASSERT_EQ(setenv("RINGLEADER_PROFILER_SOCKET", socket.c_str(), 1), 0);
  ASSERT_EQ(setenv("RINGLEADER_PROFILER_INTERVAL_MS", "20", 1), 0);
  StandInOptions options = Options(profiler::testing::BuiltPluginPath());
  options.time_factor = 3;
  CapturedLines log;
  {
    auto stand_in = ProfilerStandIn::Start(options, log.Log());
    ASSERT_NE(stand_in, nullptr) << ::testing::PrintToString(log.lines);
    EXPECT_EQ(stand_in->version(), 5);
    for (int call = 0; call < 7; ++call) {
      stand_in->ReportAllReduce(10, UnixNowNs(), std::chrono::microseconds(100));
    }
  }
  unsetenv("RINGLEADER_PROFILER_SOCKET");
  unsetenv("RINGLEADER_PROFILER_INTERVAL_MS");
  const profiler::testing::CommunicatorKey key{42, 1};
  ASSERT_TRUE(server.WaitFor([&](const profiler::testing::Received& received) {
    const auto it = received.latest.find(key);
    return it != received.latest.end() && it->second.info.finalized;
  })) << "no final snapshot";
  const profiler::testing::Received received = server.Get();
  EXPECT_THAT(received.errors, ::testing::IsEmpty());
  const profiler::Communicator& comm = received.latest.at(key);
  EXPECT_EQ(comm.info.name, "example");
  EXPECT_EQ(comm.info.nranks, 4u);
  EXPECT_EQ(comm.info.nnodes, 2u);
  ASSERT_EQ(comm.cells.size(), 1u);
  const profiler::Cell& cell = comm.cells[0];
  EXPECT_EQ(cell.op, profiler::Op::kAllReduce);
  EXPECT_EQ(cell.bucket, profiler::SizeBucket(40));
  EXPECT_EQ(cell.calls, 7u);
  EXPECT_EQ(cell.bytes, 7u * 40);
  EXPECT_EQ(cell.timed_calls, 7u);
  EXPECT_EQ(cell.timed_bytes, 7u * 40);
  EXPECT_EQ(cell.gpu_ns, 7u * 300'000);
  EXPECT_GT(cell.busbw_gbps, 0);
}

// A rank that enters an all-reduce is counted as having started it before the call returns, as
// NCCL counts a launched collective; finishing it reports its kernel and completes it.
TEST(ProfilerStandInTest, EnteringAnAllReduceReportsItsStartBeforeTheCallAndFinishingCompletesIt) {
  FakePlugin fake(kCollAndChannels, abi::kSuccess);
  CapturedLines log;
  auto stand_in = ProfilerStandIn::Start(Options(RINGLEADER_FAKE_PROFILER_V4_PATH), log.Log());
  ASSERT_NE(stand_in, nullptr);
  const ProfilerStandIn::Entered entered = stand_in->EnterAllReduce(10);
  EXPECT_NE(entered.coll, nullptr);
  EXPECT_THAT(fake.Trace(), ::testing::EndsWith("parent=null context=context\nstop coll\n"));
  stand_in->FinishAllReduce(entered, 1'000'000, std::chrono::nanoseconds(300));
  EXPECT_THAT(fake.Trace(), ::testing::EndsWith("stop coll\n"
                                                "start kernelCh channel=0 pTimer=1000000 rank=1 parent=coll context=context\n"
                                                "state kernelCh 22 pTimer=1000300\n"
                                                "stop kernelCh\n"));
}

TEST(ProfilerStandInTest, TheBuiltPluginCountsAnEnteredAllReduceStartedAndAFinishedOneCompleted) {
  profiler::testing::TempDir dir;
  const std::string socket = dir.path() + "/profiler.sock";
  profiler::testing::SnapshotServer server(socket);
  ASSERT_EQ(setenv("RINGLEADER_PROFILER_SOCKET", socket.c_str(), 1), 0);
  ASSERT_EQ(setenv("RINGLEADER_PROFILER_INTERVAL_MS", "20", 1), 0);
  CapturedLines log;
  auto stand_in = ProfilerStandIn::Start(Options(profiler::testing::BuiltPluginPath()), log.Log());
  ASSERT_NE(stand_in, nullptr) << ::testing::PrintToString(log.lines);
  const profiler::testing::CommunicatorKey key{42, 1};
  const auto progress_is = [&](std::uint64_t started, std::uint64_t completed) {
    return server.WaitFor([&](const profiler::testing::Received& received) {
      const auto it = received.latest.find(key);
      return it != received.latest.end() && it->second.info.progress.collectives_started == started &&
             it->second.info.progress.collectives_completed == completed;
    });
  };
  stand_in->ReportAllReduce(10, UnixNowNs(), std::chrono::microseconds(100));
  const ProfilerStandIn::Entered entered = stand_in->EnterAllReduce(10);
  EXPECT_TRUE(progress_is(2, 1)) << "the second all-reduce is entered, not finished";
  stand_in->FinishAllReduce(entered, UnixNowNs(), std::chrono::microseconds(100));
  EXPECT_TRUE(progress_is(2, 2));
  const profiler::CollectiveProgress progress = server.Get().latest.at(key).info.progress;
  EXPECT_EQ(progress.last_started_op, profiler::Op::kAllReduce);
  EXPECT_EQ(progress.last_started_bytes, 40u);
  stand_in.reset();
  unsetenv("RINGLEADER_PROFILER_SOCKET");
  unsetenv("RINGLEADER_PROFILER_INTERVAL_MS");
}

}  // namespace
}  // namespace ringleader::examples
