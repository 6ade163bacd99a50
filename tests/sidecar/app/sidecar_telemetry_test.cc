// The sidecar's side of the NCCL profiler plugin with real parts: ringleader-sidecar processes,
// and the built libnccl-profiler-ringleader.so driven in this process through the ncclProfiler ABI
// as NCCL drives it, sending to the sidecar's socket. The plugin is in place before /healthz
// answers, the trainers' calls, bytes and bandwidth reach /metrics exactly, rank 0's /summary
// names the rank whose kernels took longest and a rank that never entered a collective, and bad
// bytes on the socket are counted while the sidecar stays up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/contract/contract.h"
#include "sidecar/profiler/nccl_profiler_abi.h"
#include "tests/sidecar/app/profiled_trainer.h"
#include "tests/sidecar/app/sidecar_world.h"
#include "tests/sidecar/profiler/plugin_harness.h"
#include "tests/support/http_fetch.h"

namespace ringleader::testing {
namespace {

namespace abi = profiler::abi;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kCell = R"(collective="all_reduce",local_rank="0",rank="0",size="1MiB")";

std::string Base(SidecarWorld& world, int rank) {
  return "http://127.0.0.1:" + std::to_string(world.metrics_port(rank));
}

// The value of `series` (`name{labels}` as the exposition writes it) in a /metrics body.
std::optional<double> Value(const std::string& body, const std::string& series) {
  const std::string prefix = series + " ";
  for (std::size_t at = body.find(prefix); at != std::string::npos; at = body.find(prefix, at + 1)) {
    if (at == 0 || body[at - 1] == '\n') {
      return std::stod(body.substr(at + prefix.size()));
    }
  }
  return std::nullopt;
}

// The series counting frames the socket turned away for `reason`.
std::string Rejected(const std::string& reason) {
  return R"(ringleader_training_profiler_frames_rejected_total{reason=")" + reason + R"("})";
}

std::string Metrics(SidecarWorld& world, int rank) {
  return HttpGet(Base(world, rank) + "/metrics", milliseconds(2000)).value_or(HttpReply{}).body;
}

// Scrapes until `done(body)` holds; the last body either way.
std::string ScrapeUntil(SidecarWorld& world, int rank, const std::function<bool(const std::string&)>& done,
                        seconds timeout = seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string body = Metrics(world, rank);
  while (!done(body) && std::chrono::steady_clock::now() < deadline && world.process(rank).Running()) {
    std::this_thread::sleep_for(milliseconds(50));
    body = Metrics(world, rank);
  }
  return body;
}

bool WaitForHealthz(SidecarWorld& world, int rank) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline && world.process(rank).Running()) {
    if (const auto reply = HttpGet(Base(world, rank) + "/healthz", milliseconds(500));
        reply && reply->status == 200) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A raw client of the profiler socket.
class RawClient {
 public:
  explicit RawClient(const std::filesystem::path& path)
      : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  bool connected() const { return connected_; }
  bool Write(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

 private:
  int fd_;
  bool connected_ = false;
};

TEST(SidecarTelemetryTest, ThePluginIsInPlaceBeforeHealthzAnswers) {
  SidecarWorld world({.world_size = 1, .mode = "sidecar"});
  const std::filesystem::path installed =
      world.plugin_dir(0) / std::string(contract::kProfilerPluginFileName);
  ASSERT_FALSE(std::filesystem::exists(installed));
  world.Start(0);
  // The first 200 from the startup probe's endpoint finds the whole plugin there.
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  ASSERT_TRUE(std::filesystem::exists(installed)) << world.AllLogs();
  EXPECT_EQ(ReadAll(installed), ReadAll(profiler::testing::BuiltPluginPath()));
  struct stat info {};
  ASSERT_EQ(::stat(installed.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u);
  // The socket is open to trainers of any uid.
  ASSERT_EQ(::stat(world.profiler_socket(0).c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0666u);
  const std::string metrics = Metrics(world, 0);
  EXPECT_EQ(Value(metrics, "ringleader_training_profiler_plugin_installed"), 1) << metrics;
  EXPECT_EQ(Value(metrics, "ringleader_training_profiler_processes"), 0);
  EXPECT_THAT(world.Log(0), HasSubstr("installed the NCCL profiler plugin in " +
                                      world.plugin_dir(0).string()));
}

TEST(SidecarTelemetryTest, AMissingPluginDirectoryIsLoggedAndShownButFailsNothing) {
  const std::string missing = "/nonexistent-ringleader-plugin-dir";
  SidecarWorld world({.world_size = 1, .mode = "sidecar",
                      .env = {{"RINGLEADER_PROFILER_PLUGIN_DIR", missing}}});
  world.Start(0);
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  EXPECT_EQ(Value(Metrics(world, 0), "ringleader_training_profiler_plugin_installed"), 0);
  EXPECT_THAT(world.Log(0), HasSubstr("profiler plugin not installed, so the trainers' own "
                                      "collectives go unmeasured: " + missing +
                                      ": cannot create a file: No such file or directory"));
  // Its socket still takes snapshots: a trainer may bring its own copy of the plugin.
  EXPECT_TRUE(std::filesystem::exists(world.profiler_socket(0)));
  EXPECT_TRUE(world.process(0).Running());
}

TEST(SidecarTelemetryTest, TelemetryOffCopiesNothingAndOpensNoSocket) {
  SidecarWorld world({.world_size = 1, .mode = "sidecar",
                      .env = {{"RINGLEADER_TELEMETRY_ENABLED", "false"}}});
  world.Start(0);
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  EXPECT_TRUE(std::filesystem::is_empty(world.plugin_dir(0)));
  EXPECT_FALSE(std::filesystem::exists(world.profiler_socket(0)));
  EXPECT_THAT(Metrics(world, 0), Not(HasSubstr("ringleader_training_")));
  EXPECT_THAT(world.Log(0), HasSubstr("telemetry off"));
}

TEST(SidecarTelemetryTest, TheTrainersCallsBytesAndBandwidthReachMetricsExactly) {
  SidecarWorld world({.world_size = 1, .mode = "sidecar"});
  world.Start(0);
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  const auto plugin = LoadPlugin();
  ASSERT_NE(plugin, nullptr);
  // 5 calls of 1 MiB, 2 ms each on the GPU, as rank 0 of 4: all_reduce's busbw factor 2 x 3/4.
  RunTrainer(*plugin, world.profiler_socket(0), 0xfeed, 4, 0, 5, 2'000'000);
  const std::string calls = "ringleader_training_collective_calls_total{" + kCell + "}";
  const std::string metrics =
      ScrapeUntil(world, 0, [&](const std::string& body) { return Value(body, calls).has_value(); });
  EXPECT_EQ(Value(metrics, calls), 5) << metrics;
  EXPECT_EQ(Value(metrics, "ringleader_training_collective_bytes_total{" + kCell + "}"),
            5 * kBytesPerCall);
  EXPECT_DOUBLE_EQ(
      Value(metrics, "ringleader_training_collective_gpu_seconds_total{" + kCell + "}").value_or(0),
      0.01);
  const double algbw = 5 * kBytesPerCall / 0.01;
  EXPECT_DOUBLE_EQ(Value(metrics, "ringleader_training_collective_algorithm_bandwidth_bytes_per_second{" +
                                      kCell + "}")
                       .value_or(0),
                   algbw);
  EXPECT_DOUBLE_EQ(
      Value(metrics, "ringleader_training_collective_bus_bandwidth_bytes_per_second{" + kCell + "}")
          .value_or(0),
      algbw * 1.5);
  EXPECT_EQ(Value(metrics, R"(ringleader_training_profiler_snapshots_total{result="received"})"), 1);
  EXPECT_EQ(Value(metrics, R"(ringleader_training_profiler_snapshots_total{result="missed"})"), 0);
  EXPECT_EQ(Value(metrics, R"(ringleader_training_profiler_dropped_total{what="ops_incomplete"})"), 0);
  // The plugin closed its connection after its last snapshot.
  const std::string after = ScrapeUntil(world, 0, [](const std::string& body) {
    return Value(body, "ringleader_training_profiler_processes") == 0;
  });
  EXPECT_EQ(Value(after, "ringleader_training_profiler_processes"), 0);
}

TEST(SidecarTelemetryTest, BadBytesOnTheSocketAreCountedAndTheSidecarStaysUp) {
  SidecarWorld world({.world_size = 1, .mode = "sidecar"});
  world.Start(0);
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  {
    RawClient http(world.profiler_socket(0));
    ASSERT_TRUE(http.connected());
    ASSERT_TRUE(http.Write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    // A snapshot header (version 2) announcing a 100 MiB payload, over the sidecar's 4 MiB cap.
    RawClient huge(world.profiler_socket(0));
    ASSERT_TRUE(huge.Write(std::string("RLPS\x00\x02\x00\x01\x06\x40\x00\x00", 12)));
    const std::string counted = ScrapeUntil(world, 0, [](const std::string& body) {
      return Value(body, Rejected("bad_header")) == 1 && Value(body, Rejected("too_large")) == 1;
    });
    EXPECT_EQ(Value(counted, Rejected("bad_header")), 1) << counted;
    EXPECT_EQ(Value(counted, Rejected("too_large")), 1);
  }
  // A real trainer's snapshot is still taken.
  const auto plugin = LoadPlugin();
  ASSERT_NE(plugin, nullptr);
  RunTrainer(*plugin, world.profiler_socket(0), 0xbeef, 2, 0, 3, 1'000'000);
  const std::string calls = "ringleader_training_collective_calls_total{" + kCell + "}";
  const std::string metrics =
      ScrapeUntil(world, 0, [&](const std::string& body) { return Value(body, calls).has_value(); });
  EXPECT_EQ(Value(metrics, calls), 3) << world.AllLogs();
  // Its connection closed (so the cap below counts only the flood's).
  ASSERT_EQ(Value(ScrapeUntil(world, 0,
                              [](const std::string& body) {
                                return Value(body, "ringleader_training_profiler_processes") == 0;
                              }),
                  "ringleader_training_profiler_processes"),
            0);
  {
    // More connections than the cap (256): the ones beyond are closed at once and counted.
    std::vector<std::unique_ptr<RawClient>> flood;
    for (int i = 0; i < 300; ++i) {
      flood.push_back(std::make_unique<RawClient>(world.profiler_socket(0)));
    }
    const std::string counted = ScrapeUntil(world, 0, [](const std::string& body) {
      return Value(body, Rejected("too_many_connections")) >= 44;
    });
    EXPECT_EQ(Value(counted, Rejected("too_many_connections")), 44);
  }
  EXPECT_TRUE(world.process(0).Running());
  const auto healthz = HttpGet(Base(world, 0) + "/healthz");
  ASSERT_TRUE(healthz.has_value());
  EXPECT_EQ(healthz->status, 200);
}

TEST(SidecarTelemetryTest, RankZerosSummaryNamesTheRankWhoseKernelsTookLongest) {
  SidecarWorld world({.world_size = 2, .mode = "run",
                      .env = {{"RINGLEADER_MONITOR_ENABLED", "false"},
                              {"RINGLEADER_PROFILER_INTERVAL_MS", "200"}}});
  world.StartAll();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(WaitForHealthz(world, rank)) << world.AllLogs();
  }
  const auto plugin = LoadPlugin();
  ASSERT_NE(plugin, nullptr);
  // Both Pod ranks' trainers in one 2-rank communicator: 4 calls of 1 MiB each, 1 ms on rank 0's
  // GPU and 4 ms on rank 1's (all_reduce's busbw factor on 2 ranks is 1).
  RunTrainer(*plugin, world.profiler_socket(0), 0xc0ffee, 2, 0, 4, 1'000'000);
  RunTrainer(*plugin, world.profiler_socket(1), 0xc0ffee, 2, 1, 4, 4'000'000);
  const double fast = kBytesPerCall / 0.001;
  const double slow = kBytesPerCall / 0.004;

  nlohmann::json training;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline && world.process(0).Running()) {
    if (const auto reply = HttpGet(Base(world, 0) + "/summary", milliseconds(1000)); reply && reply->status == 200) {
      const auto summary = nlohmann::json::parse(reply->body);
      if (summary.contains("training") && summary["training"].value("ranksReporting", 0) == 2) {
        training = summary["training"];
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_FALSE(training.is_null()) << world.AllLogs();
  EXPECT_EQ(training.at("collective"), "all_reduce");
  EXPECT_EQ(training.at("size"), "1MiB");
  EXPECT_EQ(training.at("ranksReporting"), 2);
  EXPECT_DOUBLE_EQ(training.at("busBandwidthBytesPerSecond").get<double>(), (fast + slow) / 2);
  EXPECT_EQ(training.at("slowestRank"), 1);
  EXPECT_DOUBLE_EQ(training.at("slowestRankBusBandwidthBytesPerSecond").get<double>(), slow);
  // Only rank 0 compares.
  const auto rank1 = HttpGet(Base(world, 1) + "/summary");
  ASSERT_TRUE(rank1.has_value());
  EXPECT_FALSE(nlohmann::json::parse(rank1->body).contains("training"));

  for (int rank = 0; rank < 2; ++rank) {
    world.process(rank).Signal(SIGTERM);
  }
  for (const auto& [rank, exit] : world.WaitAll(seconds(15))) {
    ASSERT_TRUE(exit.has_value()) << world.AllLogs();
    EXPECT_TRUE(exit->exited() && exit->exit_code == 0) << world.AllLogs();
  }
}

// Starts one all_reduce of kCount float32 elements on `context`, as NCCL does when it launches the
// kernel; `finish` stops its kernel channel (the collective completes) or leaves it running.
void StartAllReduce(const abi::ProfilerV5& v5, void* context, std::uint64_t sequence, bool finish) {
  abi::EventDescrV5 coll{};
  coll.type = abi::kEventColl;
  coll.coll = {sequence, "AllReduce", nullptr, nullptr, kCount, 0, "ncclFloat32", 1, 4, "RING", "LL", nullptr};
  void* op = nullptr;
  ASSERT_EQ(v5.startEvent(context, &op, &coll), abi::kSuccess);
  ASSERT_NE(op, nullptr);
  abi::EventDescrV5 channel{};
  channel.type = abi::kEventKernelCh;
  channel.parentObj = op;
  channel.kernelCh = {0, 1'000'000'000};
  void* kernel = nullptr;
  ASSERT_EQ(v5.startEvent(context, &kernel, &channel), abi::kSuccess);
  ASSERT_EQ(v5.stopEvent(op), abi::kSuccess);
  if (finish) {
    abi::EventStateArgs stop{};
    stop.kernelCh.pTimer = 1'000'100'000;
    ASSERT_EQ(v5.recordEventState(kernel, abi::kStateKernelChStop, &stop), abi::kSuccess);
    ASSERT_EQ(v5.stopEvent(kernel), abi::kSuccess);
  }
}

// Polls rank 0's /summary until `done(summary)` holds; the last summary either way.
nlohmann::json SummaryUntil(SidecarWorld& world, const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json summary;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline && world.process(0).Running()) {
    if (const auto reply = HttpGet(Base(world, 0) + "/summary", milliseconds(1000)); reply && reply->status == 200) {
      summary = nlohmann::json::parse(reply->body);
      if (done(summary)) {
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return summary;
}

// Both ranks of a 2-rank communicator run in one trainer process of Pod rank 0, as two GPUs of one
// Pod do: rank 0 enters all_reduce #3, rank 1 stays at #2. Once rank 1's own snapshots have shown
// it behind for stallSeconds (1 here), /summary names it and the gauge says 1; when it enters #3,
// both clear.
TEST(SidecarTelemetryTest, RankZerosSummaryNamesTheRankThatNeverEnteredACollectiveUntilItDoes) {
  SidecarWorld world({.world_size = 1, .mode = "run",
                      .env = {{"RINGLEADER_MONITOR_ENABLED", "false"},
                              {"RINGLEADER_PROFILER_INTERVAL_MS", "200"},
                              {"RINGLEADER_STALL_SECONDS", "1"}}});
  world.StartAll();
  ASSERT_TRUE(WaitForHealthz(world, 0)) << world.AllLogs();
  const auto plugin = LoadPlugin();
  ASSERT_NE(plugin, nullptr);
  ::setenv("RINGLEADER_PROFILER_SOCKET", world.profiler_socket(0).c_str(), 1);
  ::setenv("RINGLEADER_PROFILER_INTERVAL_MS", "200", 1);
  const abi::ProfilerV5& v5 = plugin->v5();
  constexpr std::uint64_t kHash = 0x5ca1ab1e00c0ffeeULL;
  void* ranks[2] = {nullptr, nullptr};
  int mask = 0;
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(v5.init(&ranks[rank], kHash, &mask, "world", 1, 2, rank, nullptr), abi::kSuccess);
  }
  for (std::uint64_t sequence = 0; sequence < 2; ++sequence) {
    StartAllReduce(v5, ranks[0], sequence, true);
    StartAllReduce(v5, ranks[1], sequence, true);
  }
  const auto started = std::chrono::steady_clock::now();
  StartAllReduce(v5, ranks[0], 2, false);  // rank 0 waits inside #3; rank 1 never comes

  const nlohmann::json stalled = SummaryUntil(world, [](const nlohmann::json& s) { return s.contains("stall"); });
  ASSERT_TRUE(stalled.contains("stall")) << stalled.dump() << "\n" << world.AllLogs();
  EXPECT_GE(std::chrono::steady_clock::now() - started, seconds(1));
  EXPECT_EQ(stalled["stall"], nlohmann::json::parse(R"({"collective": "all_reduce", "bytes": 1048576,
      "sequence": 3, "communicator": "0x5ca1ab1e00c0ffee", "missingRanks": [1], "missingRankCount": 1,
      "missingPods": [0], "waitingRanks": 1, "waitedSeconds": )" +
      std::to_string(stalled["stall"].value("waitedSeconds", -1)) + R"(, "attempt": 0})"));
  EXPECT_GE(stalled["stall"].value("waitedSeconds", -1), 1);
  const std::string gauge = R"(ringleader_training_stalled{rank="0"})";
  EXPECT_EQ(Value(ScrapeUntil(world, 0, [&](const std::string& b) { return Value(b, gauge) == 1.0; }), gauge), 1.0);
  EXPECT_TRUE(world.WaitForLog(0, "stalled: 1 communicator rank(s) (1; Pod rank(s) 0) never entered all_reduce #3",
                               milliseconds(5000)))
      << world.AllLogs();

  StartAllReduce(v5, ranks[1], 2, true);  // rank 1 catches up
  const nlohmann::json cleared = SummaryUntil(world, [](const nlohmann::json& s) { return !s.contains("stall"); });
  EXPECT_FALSE(cleared.contains("stall")) << cleared.dump();
  EXPECT_EQ(Value(ScrapeUntil(world, 0, [&](const std::string& b) { return Value(b, gauge) == 0.0; }), gauge), 0.0);
  for (void* context : ranks) {
    ASSERT_EQ(v5.finalize(context), abi::kSuccess);
  }
  world.process(0).Signal(SIGTERM);
  for (const auto& [rank, exit] : world.WaitAll(seconds(15))) {
    ASSERT_TRUE(exit.has_value()) << world.AllLogs();
    EXPECT_TRUE(exit->exited() && exit->exit_code == 0) << world.AllLogs();
  }
}

}  // namespace
}  // namespace ringleader::testing
