// The trainers' store as the real sidecar serves it: rank 0's native sidecar ("sidecar" mode)
// with RINGLEADER_TRAINER_STORE_PORT has the port bound before it reports started, a real
// PyTorch job (every rank a client, as the operator's env makes it) meets there, /metrics counts
// its clients and requests, other ranks leave the port alone, and a port in use is fatal with
// the port named.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/sidecar/app/exposition.h"
#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/http_fetch.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

const std::filesystem::path kRoot = RINGLEADER_SOURCE_DIR;

std::string Metrics(SidecarWorld& world, int rank) {
  const auto reply =
      HttpGet("http://127.0.0.1:" + std::to_string(world.metrics_port(rank)) + "/metrics");
  return reply && reply->status == 200 ? reply->body : "";
}

bool Healthy(SidecarWorld& world, int rank, seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto reply =
        HttpGet("http://127.0.0.1:" + std::to_string(world.metrics_port(rank)) + "/healthz",
                milliseconds(500));
    if (reply && reply->status == 200) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// A TCP connection to 127.0.0.1:port succeeds now.
bool Accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

// The first interpreter that imports torch with Gloo: the project's current PyTorch, else
// Debian's 1.13; "" when neither does.
std::string TorchPython() {
  for (const std::string& python :
       {(kRoot / ".deps/torch-venv/bin/python").string(), std::string("/usr/bin/python3")}) {
    if (!std::filesystem::exists(python)) {
      continue;
    }
    ChildOptions check;
    check.binary = python;
    check.args = {"-c", "import torch.distributed as d; assert d.is_gloo_available()"};
    ChildProcess process(check);
    const auto exit = process.WaitFor(std::chrono::minutes(2));
    if (exit && exit->exited() && exit->exit_code == 0) {
      return python;
    }
  }
  return "";
}

TEST(SidecarTrainerStoreTest, RankZeroServesItBeforeStartingAndARealJobMeetsThere) {
  const std::string python = TorchPython();
  if (python.empty()) {
    GTEST_SKIP() << "no Python here imports torch with Gloo (scripts/setup installs "
                    "python3-torch and .deps/torch-venv)";
  }
  const int trainer_port = FreePort();
  SidecarWorld world({.world_size = 2,
                      .mode = "sidecar",
                      .env = {{"RINGLEADER_TRAINER_STORE_PORT", std::to_string(trainer_port)}}});
  world.StartAll();
  ASSERT_TRUE(Healthy(world, 0, seconds(20))) << world.AllLogs();
  EXPECT_TRUE(Accepts(trainer_port)) << "rank 0's sidecar reported started before binding";
  EXPECT_TRUE(world.WaitForLog(0, "serving the trainers' store (PyTorch's TCPStore protocol) on port " +
                                      std::to_string(trainer_port),
                               seconds(5)));
  ASSERT_TRUE(world.WaitForLog(1, "only rank 0's sidecar serves the trainers' store: ignored",
                               seconds(20)))
      << world.AllLogs();

  // Two trainers, every rank a client of the sidecar's store, as the operator's env makes them.
  const std::filesystem::path dir = MakeTempDir("ringleader-sidecar-trainer-store");
  std::vector<std::unique_ptr<ChildProcess>> trainers;
  for (int rank = 0; rank < 2; ++rank) {
    ChildOptions trainer;
    trainer.binary = python;
    trainer.args = {(kRoot / "tests/sidecar/rendezvous/testdata/torch_store_trainer.py").string()};
    trainer.env = std::map<std::string, std::string>{
        {"PATH", std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin"},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(trainer_port)},
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", "2"},
        {"TORCHELASTIC_USE_AGENT_STORE", "True"},
        {"TORCHELASTIC_RESTART_COUNT", "0"},
        {"GLOO_SOCKET_IFNAME", "lo"},
        {"OMP_NUM_THREADS", "1"}};
    trainer.log = dir / ("trainer" + std::to_string(rank) + ".log");
    trainers.push_back(std::make_unique<ChildProcess>(trainer));
  }
  for (int rank = 0; rank < 2; ++rank) {
    const auto exit = trainers[static_cast<std::size_t>(rank)]->WaitFor(std::chrono::minutes(4));
    const std::string log = ReadLog(dir / ("trainer" + std::to_string(rank) + ".log"));
    ASSERT_TRUE(exit && exit->exited() && exit->exit_code == 0) << log << world.AllLogs();
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(rank) + " of 2 ok"));
  }

  const std::string metrics = Metrics(world, 0);
  EXPECT_GE(SeriesValue(metrics, "ringleader_sidecar_trainer_store_connections_total").value_or(0), 2)
      << metrics;
  EXPECT_GT(SeriesValue(metrics, "ringleader_sidecar_trainer_store_requests_total{query=\"add\"}")
                .value_or(0),
            0);
  EXPECT_GT(SeriesValue(metrics, "ringleader_sidecar_trainer_store_requests_total{query=\"wait\"}")
                .value_or(0),
            0);
  EXPECT_EQ(SeriesValue(metrics, "ringleader_sidecar_trainer_store_closed_connections_total{reason=\"unknown_query\"}"),
            0);
  // The trainers are gone, and so are their connections.
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (SeriesValue(Metrics(world, 0), "ringleader_sidecar_trainer_store_clients").value_or(-1) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(SeriesValue(Metrics(world, 0), "ringleader_sidecar_trainer_store_clients"), 0);
  // Only rank 0 has the store, and its series.
  EXPECT_EQ(SeriesValue(Metrics(world, 1), "ringleader_sidecar_trainer_store_clients"), std::nullopt);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TEST(SidecarTrainerStoreTest, APortInUseIsFatalAndNamed) {
  // Something else holds the port on every address.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);

  SidecarWorld world({.world_size = 1,
                      .mode = "sidecar",
                      .env = {{"RINGLEADER_TRAINER_STORE_PORT", std::to_string(port)}}});
  world.Start(0);
  const auto exits = world.WaitAll(seconds(30));
  ASSERT_TRUE(exits.at(0).has_value()) << world.AllLogs();
  EXPECT_EQ(exits.at(0)->exit_code, 1);
  EXPECT_THAT(world.Log(0), HasSubstr("trainer store (PyTorch TCPStore protocol): cannot listen on"));
  EXPECT_THAT(world.Log(0), HasSubstr(":" + std::to_string(port) + ": Address already in use"));
  EXPECT_THAT(world.Log(0), HasSubstr("RINGLEADER_TRAINER_STORE_PORT " + std::to_string(port)));
  ::close(fd);
}

}  // namespace
}  // namespace ringleader::testing
