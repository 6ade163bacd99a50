// The trainer store (PyTorch's TCPStore protocol) against real PyTorch clients only: Debian's
// 1.13 (/usr/bin/python3) and the project's current PyTorch (.deps/torch-venv), each skipped
// with the reason when it cannot import torch. A StoreServer serves it as a LoopGuest, as rank
// 0's sidecar does: client ops, init_process_group with every rank a client (two attempts),
// torchrun's c10d rendezvous on it, and the bad-input acceptance (garbage, truncated requests, an
// unknown query, a 2 GiB length, 400 idle connections) with a real client afterwards.
#include "sidecar/rendezvous/torch_store_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/store_server.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::rendezvous {
namespace {

namespace ts = torch_store;
using ::testing::HasSubstr;
using ringleader::testing::ChildExit;
using ringleader::testing::ChildOptions;
using ringleader::testing::ChildProcess;
using ringleader::testing::MakeTempDir;
using ringleader::testing::ReadLog;
using ringleader::testing::WaitUntil;

const std::filesystem::path kRoot = RINGLEADER_SOURCE_DIR;
const std::filesystem::path kTestdata = kRoot / "tests/sidecar/rendezvous/testdata";
constexpr char kDebianPython[] = "/usr/bin/python3";
std::string VenvPython() { return (kRoot / ".deps/torch-venv/bin/python").string(); }

// Whether `python` imports torch with Gloo; `why` says what is missing. Checked once per Python.
bool TorchAvailable(const std::string& python, std::string* why) {
  static std::map<std::string, std::string> checked;
  if (!checked.contains(python)) {
    std::string reason;
    if (!std::filesystem::exists(python)) {
      reason = python + " is missing";
    } else {
      const std::filesystem::path dir = MakeTempDir("ringleader-torch-check");
      ChildOptions child;
      child.binary = python;
      child.args = {"-c", "import torch.distributed as d; assert d.is_gloo_available(), 'no Gloo'"};
      child.log = dir / "import.log";
      ChildProcess check(child);
      const std::optional<ChildExit> exit = check.WaitFor(std::chrono::minutes(2));
      if (!exit || !exit->exited() || exit->exit_code != 0) {
        reason = python + " cannot import torch with Gloo: " + ReadLog(child.log);
      }
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    checked[python] = reason;
  }
  *why = checked[python];
  return why->empty();
}

// The interpreter to run under (the test parameter), or a skip naming what is missing.
#define REQUIRE_TORCH(python)                                                                \
  do {                                                                                       \
    std::string why;                                                                         \
    if (!TorchAvailable(python, &why)) {                                                     \
      GTEST_SKIP() << why << " (scripts/setup installs python3-torch and .deps/torch-venv)"; \
    }                                                                                        \
  } while (false)

// rank 0's sidecar in small: the native store with the trainer store as its loop guest.
class TrainerStore {
 public:
  explicit TrainerStore(TorchStoreOptions torch = {}) {
    ServerOptions options;
    options.token = "job-token";
    options.make_guest = TorchStoreServer::GuestFactory(std::move(torch));
    server_ = std::make_unique<StoreServer>(std::move(options));
  }
  TorchStoreServer& torch() const { return *static_cast<TorchStoreServer*>(server_->guest()); }
  std::uint16_t port() const { return torch().port(); }
  TorchStoreStats Stats() const { return torch().Stats(); }

 private:
  std::unique_ptr<StoreServer> server_;
};

// A Python process with its output in `log`.
struct PythonRun {
  std::filesystem::path log;
  std::unique_ptr<ChildProcess> process;
};

PythonRun StartPython(const std::string& python, std::vector<std::string> args,
                      const std::map<std::string, std::string>& extra_env,
                      const std::filesystem::path& log) {
  ChildOptions options;
  options.binary = python;
  options.args = std::move(args);
  std::map<std::string, std::string> env;
  for (const char* name : {"PATH", "HOME", "LANG", "TMPDIR"}) {
    if (const char* value = std::getenv(name)) {
      env[name] = value;
    }
  }
  // Gloo finds its address from the loopback interface; one CPU thread each, as two cores serve
  // several ranks.
  env["GLOO_SOCKET_IFNAME"] = "lo";
  env["OMP_NUM_THREADS"] = "1";
  for (const auto& [name, value] : extra_env) {
    env[name] = value;
  }
  options.env = env;
  options.log = log;
  return PythonRun{log, std::make_unique<ChildProcess>(options)};
}

// Waits for the run to end and returns its log; fails the test when it did not exit 0.
std::string Finish(PythonRun& run, std::chrono::seconds timeout) {
  const std::optional<ChildExit> exit = run.process->WaitFor(timeout);
  const std::string log = ReadLog(run.log);
  if (!exit) {
    run.process->Signal(SIGKILL);
    ADD_FAILURE() << run.log << " still ran after " << timeout.count() << " s:\n" << log;
  } else if (!exit->exited() || exit->exit_code != 0) {
    ADD_FAILURE() << run.log << " ended with exit code " << exit->exit_code << ", signal "
                  << exit->signal << ":\n" << log;
  }
  return log;
}

std::string Script(const char* name) { return (kTestdata / name).string(); }

std::vector<ts::Query> Torch1Queries() {
  return {ts::Query::kSet,        ts::Query::kGet,       ts::Query::kAdd,
          ts::Query::kCompareSet, ts::Query::kWait,      ts::Query::kGetNumKeys,
          ts::Query::kDeleteKey};
}

class TorchStoreServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Python() const { return GetParam() == "torch1" ? kDebianPython : VenvPython(); }
  bool Torch2() const { return GetParam() == "torch2"; }

  std::filesystem::path dir_ = MakeTempDir("ringleader-torch-store");
};

INSTANTIATE_TEST_SUITE_P(PyTorch, TorchStoreServerTest, ::testing::Values("torch1", "torch2"),
                         [](const auto& param_info) { return param_info.param; });

TEST_P(TorchStoreServerTest, EveryClientOpIsAnsweredAsPyTorchsOwnServerAnswersIt) {
  REQUIRE_TORCH(Python());
  TrainerStore store;
  PythonRun run = StartPython(Python(), {Script("torch_store_client.py"), "ops",
                                         std::to_string(store.port()), "ops/"},
                              {}, dir_ / "ops.log");
  EXPECT_THAT(Finish(run, std::chrono::seconds(180)), HasSubstr("ok"));

  const TorchStoreStats stats = store.Stats();
  std::vector<ts::Query> expected = Torch1Queries();
  if (Torch2()) {
    for (const ts::Query query :
         {ts::Query::kValidate, ts::Query::kPing, ts::Query::kCheck, ts::Query::kAppend,
          ts::Query::kMultiGet, ts::Query::kMultiSet, ts::Query::kCancelWait,
          ts::Query::kQueuePush, ts::Query::kQueuePop, ts::Query::kQueueLen,
          ts::Query::kListKeys, ts::Query::kBarrier}) {
      expected.push_back(query);
    }
  }
  for (const ts::Query query : expected) {
    EXPECT_GT(stats.Requests(query), 0u) << ts::QueryName(query) << " was never sent";
  }
  EXPECT_TRUE(stats.unknown_queries.empty());
  EXPECT_TRUE(stats.closed_by_reason.empty());
  EXPECT_TRUE(WaitUntil([&] { return store.Stats().open == 0; }, std::chrono::seconds(10),
                        std::chrono::milliseconds(50)))
      << "connections still open after the client exited: " << store.Stats().open;
  EXPECT_EQ(store.Stats().pending, 0u);
}

// The acceptance's job: every rank (rank 0 included) a client of the sidecar's store, under two
// attempts. 1.13 keeps each attempt's keys under /worker/attempt_N, so both meet in one store.
// PyTorch 2.x adds no attempt prefix (it expects a new store per retry, as torchelastic's agent
// makes one): there each attempt gets a store of its own, as a gang restart's new rank-0 Pod
// brings a new sidecar.
TEST_P(TorchStoreServerTest, InitProcessGroupWithEveryRankAClientTrainsUnderTwoAttempts) {
  REQUIRE_TORCH(Python());
  auto store = std::make_unique<TrainerStore>();
  constexpr int kWorld = 3;
  std::uint64_t accepted = 0;
  for (const int attempt : {0, 1}) {
    if (Torch2() && attempt > 0) {
      accepted += store->Stats().accepted;
      store = std::make_unique<TrainerStore>();
    }
    std::vector<PythonRun> ranks;
    for (int rank = 0; rank < kWorld; ++rank) {
      ranks.push_back(StartPython(
          Python(), {Script("torch_store_trainer.py")},
          {{"MASTER_ADDR", "127.0.0.1"},
           {"MASTER_PORT", std::to_string(store->port())},
           {"RANK", std::to_string(rank)},
           {"WORLD_SIZE", std::to_string(kWorld)},
           {"TORCHELASTIC_USE_AGENT_STORE", "True"},
           {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)}},
          dir_ / ("attempt" + std::to_string(attempt) + "-rank" + std::to_string(rank) + ".log")));
    }
    for (int rank = 0; rank < kWorld; ++rank) {
      EXPECT_THAT(Finish(ranks[static_cast<std::size_t>(rank)], std::chrono::seconds(240)),
                  HasSubstr("rank " + std::to_string(rank) + " of 3 ok: local rank -, sum 6, attempt " +
                            std::to_string(attempt)));
    }
    const TorchStoreStats stats = store->Stats();
    EXPECT_GT(stats.Requests(ts::Query::kAdd), 0u);
    EXPECT_GT(stats.Requests(ts::Query::kWait), 0u);
    EXPECT_GT(stats.Requests(ts::Query::kGet), 0u);
    EXPECT_TRUE(stats.unknown_queries.empty());
    EXPECT_TRUE(stats.closed_by_reason.empty());
  }
  accepted += store->Stats().accepted;
  EXPECT_GE(accepted, 2u * kWorld);

  // 1.13's two attempts in the one store, each under PyTorch's own attempt prefix (listed by a
  // 2.x client: 1.13 has no list_keys).
  std::string why;
  if (!Torch2() && TorchAvailable(VenvPython(), &why)) {
    PythonRun list = StartPython(VenvPython(), {Script("torch_store_client.py"), "keys",
                                                std::to_string(store->port())},
                                 {}, dir_ / "keys.log");
    const std::string keys = Finish(list, std::chrono::seconds(120));
    EXPECT_THAT(keys, HasSubstr("worker/attempt_0/"));
    EXPECT_THAT(keys, HasSubstr("worker/attempt_1/"));
  }
}

// torchrun's c10d rendezvous on a store it does not host (is_host=false), two "nodes" of two
// workers each; every worker checks RANK, LOCAL_RANK and WORLD_SIZE through an all_reduce. The
// agents meet in the trainer store; the workers' own MASTER_PORT is a store that 2.x's node-0
// agent starts on a free port of its own (dynamic_rendezvous.py, TCP store sharing), not ours.
TEST_P(TorchStoreServerTest, TorchrunC10dRendezvousOnTheStoreGivesEveryWorkerItsRanks) {
  if (!Torch2()) {
    GTEST_SKIP() << "torchrun's hyphenated flags and c10d's is_host need PyTorch 2.x (1.13's "
                    "torchrun fails before starting any worker)";
  }
  REQUIRE_TORCH(Python());
  TrainerStore store;
  std::vector<PythonRun> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(StartPython(
        Python(),
        {"-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
         "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(store.port()),
         "--rdzv-id", "job-uid-attempt-0", "--rdzv-conf", "is_host=false", "--max-restarts", "0",
         "--monitor-interval", "1", Script("torch_store_trainer.py")},
        {}, dir_ / ("node" + std::to_string(node) + ".log")));
  }
  std::string logs;
  for (PythonRun& node : nodes) {
    logs += Finish(node, std::chrono::seconds(300));
  }
  std::set<std::string> seen;
  for (int rank = 0; rank < 4; ++rank) {
    for (int local = 0; local < 2; ++local) {
      const std::string line = "rank " + std::to_string(rank) + " of 4 ok: local rank " +
                               std::to_string(local) + ", sum 10, attempt 0, master port ";
      if (logs.find(line) != std::string::npos) {
        seen.insert(std::to_string(rank));
      }
    }
  }
  EXPECT_EQ(seen.size(), 4u) << "every global rank, each with local rank 0 or 1:\n" << logs;
  // The agents' c10d rendezvous ran on the store (its state is a compare_set loop).
  EXPECT_GT(store.Stats().Requests(ts::Query::kCompareSet), 0u);
  EXPECT_TRUE(store.Stats().unknown_queries.empty());
  EXPECT_TRUE(store.Stats().closed_by_reason.empty());
}

// --- Bad input (the acceptance): bytes, not a client, so raw sockets send them ---------------

int Connect(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
  }
  return fd;
}

void SendAll(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return;  // the server may close first: that is what it should do
    }
    sent += static_cast<std::size_t>(n);
  }
}

// This process's resident memory, in bytes.
std::size_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoul(line.substr(6)) * 1024;
    }
  }
  return 0;
}

std::string Le64(std::uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  return out;
}

const std::string kValidate = std::string("\x00\xce\xf7\x85\x3c", 5);

TEST_P(TorchStoreServerTest, BadInputLeavesTheServerUpWithinItsMemoryAndARealClientStillWorks) {
  REQUIRE_TORCH(Python());
  TrainerStore store;
  const std::size_t rss_before = ResidentBytes();

  // Garbage, a 1.13 SET announcing a key of 2^63 bytes.
  std::vector<int> fds;
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), std::string("\x00\xff\xff\xff\xff\xff\xff\xff\x7fgarbage", 16));
  // Random bytes.
  std::string noise;
  for (int i = 0; i < 4096; ++i) {
    noise.push_back(static_cast<char>((i * 2654435761u) >> 13));
  }
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), noise);
  // Truncated requests, left hanging: a 2.x opening then half a SET; a 1.13 GET's length only.
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), kValidate + "\x01" + Le64(1000) + "abc");
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), std::string("\x02\x05\x00\x00", 4));
  // An unknown query type (0x42) after a 2.x opening, and 1.13's WATCH_KEY.
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), kValidate + "\x42");
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), std::string("\x07", 1));
  // A 2 GiB length prefix: a 2.x SET's value, after a valid key.
  fds.push_back(Connect(store.port()));
  SendAll(fds.back(), kValidate + "\x01" + Le64(1) + "k" + Le64(std::uint64_t{2} << 30));
  // 400 idle connections.
  for (int i = 0; i < 400; ++i) {
    fds.push_back(Connect(store.port()));
  }
  EXPECT_TRUE(WaitUntil([&] { return store.Stats().accepted >= fds.size(); },
                        std::chrono::seconds(20), std::chrono::milliseconds(20)));
  EXPECT_TRUE(WaitUntil(
      [&] {
        const TorchStoreStats stats = store.Stats();
        return stats.unknown_queries.contains("torch2/66") && stats.unknown_queries.contains("torch1/7") &&
               stats.closed_by_reason.contains(std::string(torch_close::kTooLarge));
      },
      std::chrono::seconds(20), std::chrono::milliseconds(20)));

  // A real client works meanwhile, with every bad and idle connection still open.
  PythonRun run = StartPython(Python(), {Script("torch_store_client.py"), "ops",
                                         std::to_string(store.port()), "after-bad-input/"},
                              {}, dir_ / "after.log");
  EXPECT_THAT(Finish(run, std::chrono::seconds(180)), HasSubstr("ok"));

  const TorchStoreStats stats = store.Stats();
  const std::size_t rss_after = ResidentBytes();
  EXPECT_LT(rss_after, rss_before + (64u << 20))
      << "resident memory grew from " << rss_before << " to " << rss_after << " bytes";
  EXPECT_EQ(stats.unknown_queries.at("torch2/66"), 1u);
  EXPECT_EQ(stats.unknown_queries.at("torch1/7"), 1u);
  EXPECT_GE(stats.closed_by_reason.at(std::string(torch_close::kTooLarge)), 2u);
  EXPECT_GE(stats.open, 400u);  // the idle ones stay: under the cap, nothing needs their room
  EXPECT_LT(stats.peak_buffered_bytes, 8u << 20);
  for (const int fd : fds) {
    ::close(fd);
  }
  EXPECT_TRUE(WaitUntil([&] { return store.Stats().open == 0; }, std::chrono::seconds(20),
                        std::chrono::milliseconds(20)));
}

}  // namespace
}  // namespace ringleader::rendezvous
