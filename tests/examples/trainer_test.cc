// The example trainer end to end: worlds of real trainer processes on 127.0.0.1 given only
// MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, checked against a single-process reference, with
// rank 0 hosting the store and, as under trainerStore Sidecar, with every rank a client of a
// TCPStore-protocol store that the test serves as rank 0's sidecar does
// (TORCHELASTIC_USE_AGENT_STORE=True); and, given NCCL_PROFILER_PLUGIN, its stand-in for NCCL
// driving the built profiler plugin.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "examples/trainer/linear_regression.h"
#include "sidecar/profiler/snapshot_protocol.h"
#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_client.h"
#include "sidecar/rendezvous/torch_store_server.h"
#include "tests/sidecar/profiler/plugin_harness.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"

namespace ringleader::examples {
namespace {

using ::testing::HasSubstr;
using ringleader::testing::ChildExit;
using ringleader::testing::ChildOptions;
using ringleader::testing::ChildProcess;
using ringleader::testing::ReadLog;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSeed = 7;
constexpr std::uint64_t kSamples = 1000;  // not a multiple of 3 or 4: shards are uneven
constexpr int kSteps = 20;
constexpr double kLearningRate = 0.5;

// Changes rank `rank`'s environment before it starts.
using EnvEdit = std::function<void(int rank, std::map<std::string, std::string>& env)>;

// Who serves the store on MASTER_PORT: the trainers' rank 0 (trainerStore Trainer), or, with
// TORCHELASTIC_USE_AGENT_STORE=True, a store outside them (trainerStore Sidecar) that the test
// serves: started before the trainers, as rank 0's sidecar binds it before any trainer starts,
// or by the test later (StartStore), as other ranks' trainers can start before rank 0's Pod.
enum class Store { kRankZero, kAgent, kAgentLater };

std::string StoreName(Store store) { return store == Store::kRankZero ? "RankZeroStore" : "AgentStore"; }

// rank 0's sidecar in small: the native store with the TCPStore-protocol server as its loop
// guest, on 127.0.0.1:`port`.
class SidecarStore {
 public:
  explicit SidecarStore(int port) {
    rendezvous::TorchStoreOptions torch;
    torch.bind_address = "127.0.0.1";
    torch.port = static_cast<std::uint16_t>(port);
    rendezvous::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = "job-token";
    options.make_guest = rendezvous::TorchStoreServer::GuestFactory(std::move(torch));
    server_ = std::make_unique<rendezvous::StoreServer>(std::move(options));
  }
  rendezvous::TorchStoreStats Stats() const {
    return static_cast<rendezvous::TorchStoreServer*>(server_->guest())->Stats();
  }

 private:
  std::unique_ptr<rendezvous::StoreServer> server_;
};

// The restart count every agent-store world here runs under (TORCHELASTIC_RESTART_COUNT).
constexpr int kRestartCount = 3;

// A world of trainer processes, each logging to its own file; all are killed when it goes.
class TrainerWorld {
 public:
  TrainerWorld(int world_size, const std::vector<std::string>& args, const EnvEdit& edit_env = {},
               Store store = Store::kRankZero)
      : dir_(ringleader::testing::MakeTempDir("trainer-test")),
        port_(ringleader::testing::FreePort()) {
    if (store == Store::kAgent) {
      StartStore();
    }
    for (int rank = 0; rank < world_size; ++rank) {
      std::map<std::string, std::string> env = {
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port_)},
          {"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
      };
      if (store != Store::kRankZero) {
        env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
        env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(kRestartCount);
      }
      // Sanitizer settings (suppressions, halt_on_error) reach the trainers of a sanitizer build.
      for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
        if (const char* value = std::getenv(name)) {
          env[name] = value;
        }
      }
      if (edit_env) {
        edit_env(rank, env);
      }
      ChildOptions child;
      child.binary = RINGLEADER_EXAMPLE_TRAINER_PATH;
      child.args = args;
      child.env = env;
      child.log = dir_ / ("rank-" + std::to_string(rank) + ".log");
      logs_.push_back(child.log);
      ranks_.push_back(std::make_unique<ChildProcess>(child));
    }
  }
  ~TrainerWorld() {
    ranks_.clear();
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Serves the agent store on the world's MASTER_PORT.
  void StartStore() { store_ = std::make_unique<SidecarStore>(port_); }
  const SidecarStore& store() const { return *store_; }
  int port() const { return port_; }

  ChildProcess& rank(int r) { return *ranks_.at(static_cast<std::size_t>(r)); }
  std::string Log(int r) const { return ReadLog(logs_.at(static_cast<std::size_t>(r))); }
  int size() const { return static_cast<int>(ranks_.size()); }

  // Waits for `r` to end, by `deadline`.
  std::optional<ChildExit> WaitUntil(int r, Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return rank(r).WaitFor(std::max(left, std::chrono::milliseconds(1)));
  }

  // Polls rank r's log until it contains `text`, by `deadline`.
  bool WaitForLog(int r, const std::string& text, Clock::time_point deadline) {
    while (Clock::now() < deadline) {
      if (Log(r).find(text) != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::filesystem::path dir_;
  int port_;
  std::vector<std::filesystem::path> logs_;
  std::unique_ptr<SidecarStore> store_;
  std::vector<std::unique_ptr<ChildProcess>> ranks_;
};

std::vector<std::string> TrainingArgs() {
  return {"--steps", std::to_string(kSteps), "--lr", "0.5", "--seed", std::to_string(kSeed),
          "--samples", std::to_string(kSamples), "--timeout-seconds", "15"};
}

// Full-batch gradient descent in one process, in double, written independently of the trainer.
struct Reference {
  Parameters parameters{};
  std::vector<double> losses;  // before each step's update, as rank 0 prints them
};
Reference TrainReference() {
  std::vector<Sample> data;
  for (std::uint64_t i = 0; i < kSamples; ++i) {
    data.push_back(SampleAt(kSeed, i));
  }
  Reference reference;
  for (int step = 0; step < kSteps; ++step) {
    Parameters gradient{};
    double loss = 0;
    for (const Sample& sample : data) {
      double prediction = reference.parameters[kFeatures];
      for (std::size_t j = 0; j < kFeatures; ++j) {
        prediction += reference.parameters[j] * sample.x[j];
      }
      const double error = prediction - sample.y;
      loss += error * error;
      for (std::size_t j = 0; j < kFeatures; ++j) {
        gradient[j] += error * sample.x[j];
      }
      gradient[kFeatures] += error;
    }
    reference.losses.push_back(loss / (2.0 * static_cast<double>(kSamples)));
    for (std::size_t i = 0; i < kParameters; ++i) {
      reference.parameters[i] -= kLearningRate * gradient[i] / static_cast<double>(kSamples);
    }
  }
  return reference;
}

// "final steps 20 checksum C weights a,b,..." from a log.
struct FinalLine {
  std::string checksum;
  std::vector<double> weights;
};
std::optional<FinalLine> ParseFinal(const std::string& log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string final_word, steps_word, steps, checksum_word, weights_word, weights;
    if (!(words >> final_word >> steps_word >> steps >> checksum_word) || final_word != "final") {
      continue;
    }
    FinalLine parsed;
    words >> parsed.checksum >> weights_word >> weights;
    std::istringstream values(weights);
    for (std::string value; std::getline(values, value, ',');) {
      parsed.weights.push_back(std::stod(value));
    }
    return parsed;
  }
  return std::nullopt;
}

std::vector<double> ParseLosses(const std::string& log) {
  std::vector<double> losses;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string step_word, step, loss_word;
    double loss = 0;
    if (words >> step_word >> step >> loss_word >> loss && step_word == "step" && loss_word == "loss") {
      losses.push_back(loss);
    }
  }
  return losses;
}

// Every rank of `world` exits 0 by `deadline`.
void ExpectEveryRankFinishes(TrainerWorld& world, Clock::time_point deadline) {
  for (int r = 0; r < world.size(); ++r) {
    const auto exit = world.WaitUntil(r, deadline);
    ASSERT_TRUE(exit) << "rank " << r << " still runs:\n" << world.Log(r);
    ASSERT_TRUE(exit->exited() && exit->exit_code == 0) << "rank " << r << ":\n" << world.Log(r);
    EXPECT_TRUE(ParseFinal(world.Log(r))) << "rank " << r << ":\n" << world.Log(r);
  }
}

class TrainerWorldTest : public ::testing::TestWithParam<std::tuple<int, Store>> {};

TEST_P(TrainerWorldTest, RanksAgreeAndMatchASingleProcessReference) {
  TrainerWorld world(std::get<0>(GetParam()), TrainingArgs(), {}, std::get<1>(GetParam()));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::vector<FinalLine> finals;
  for (int r = 0; r < world.size(); ++r) {
    const auto exit = world.WaitUntil(r, deadline);
    ASSERT_TRUE(exit) << "rank " << r << " still runs:\n" << world.Log(r);
    ASSERT_TRUE(exit->exited() && exit->exit_code == 0) << "rank " << r << ":\n" << world.Log(r);
    const auto parsed = ParseFinal(world.Log(r));
    ASSERT_TRUE(parsed) << "rank " << r << " printed no final line:\n" << world.Log(r);
    finals.push_back(*parsed);
  }
  for (int r = 1; r < world.size(); ++r) {
    EXPECT_EQ(finals[static_cast<std::size_t>(r)].checksum, finals[0].checksum) << "rank " << r;
  }

  const Reference reference = TrainReference();
  ASSERT_EQ(finals[0].weights.size(), kParameters);
  for (std::size_t i = 0; i < kParameters; ++i) {
    EXPECT_NEAR(finals[0].weights[i], reference.parameters[i], 1e-4) << "parameter " << i;
  }

  const std::vector<double> losses = ParseLosses(world.Log(0));
  ASSERT_EQ(losses.size(), static_cast<std::size_t>(kSteps)) << world.Log(0);
  for (std::size_t step = 0; step < losses.size(); ++step) {
    EXPECT_NEAR(losses[step], reference.losses[step], 1e-4 * reference.losses[step] + 1e-7)
        << "step " << step + 1;
    if (step > 0) {
      EXPECT_LT(losses[step], losses[step - 1]) << "step " << step + 1;
    }
  }
  EXPECT_LT(losses.back(), 0.1 * losses.front());
}

INSTANTIATE_TEST_SUITE_P(Worlds, TrainerWorldTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Values(Store::kRankZero, Store::kAgent)),
                         [](const auto& param_info) {
                           return "World" + std::to_string(std::get<0>(param_info.param)) +
                                  StoreName(std::get<1>(param_info.param));
                         });

TEST(TrainerTest, NamesAMissingRankVariable) {
  TrainerWorld world(1, TrainingArgs(),
                     [](int, std::map<std::string, std::string>& env) { env.erase("RANK"); });
  const auto exit = world.WaitUntil(0, Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(exit);
  EXPECT_TRUE(exit->exited());
  EXPECT_EQ(exit->exit_code, 2);
  EXPECT_THAT(world.Log(0), HasSubstr("RANK is not set"));
}

// Killing one rank mid-run makes every other rank exit non-zero, promptly, naming the lost rank:
// from the native store's connections, or with the agent store (which outlives rank 0's
// trainer, as the sidecar does) from a roll call.
class TrainerKillTest : public ::testing::TestWithParam<std::tuple<int, Store>> {};

TEST_P(TrainerKillTest, SurvivorsExitNonZeroNamingTheVanishedRank) {
  const int victim = std::get<0>(GetParam());
  constexpr int kWorld = 3;
  TrainerWorld world(kWorld, {"--steps", "100000", "--step-delay-ms", "20", "--timeout-seconds", "10"},
                     {}, std::get<1>(GetParam()));
  ASSERT_TRUE(world.WaitForLog(0, "step 5/", Clock::now() + std::chrono::seconds(15)))
      << world.Log(0);
  world.rank(victim).Signal(SIGKILL);
  const auto killed_at = Clock::now();
  for (int r = 0; r < kWorld; ++r) {
    if (r == victim) {
      continue;
    }
    const auto exit = world.WaitUntil(r, killed_at + std::chrono::seconds(8));
    ASSERT_TRUE(exit) << "rank " << r << " still runs 8 s after rank " << victim << " was killed:\n"
                      << world.Log(r);
    EXPECT_TRUE(exit->exited() && exit->exit_code != 0) << world.Log(r);
    EXPECT_THAT(world.Log(r), HasSubstr("rank " + std::to_string(victim) + " of 3"));
  }
}

INSTANTIATE_TEST_SUITE_P(Victims, TrainerKillTest,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Values(Store::kRankZero, Store::kAgent)),
                         [](const auto& param_info) {
                           return "Rank" + std::to_string(std::get<0>(param_info.param)) +
                                  StoreName(std::get<1>(param_info.param));
                         });

// ---- With the agent store (TORCHELASTIC_USE_AGENT_STORE=True, trainerStore Sidecar) ----

// Every rank, rank 0 included, connects to the store the test serves on MASTER_PORT (a rank 0
// that tried to bind it would fail: the store holds it), and the keys go under PyTorch 1.13's
// /worker/attempt_<TORCHELASTIC_RESTART_COUNT>/.
TEST(TrainerAgentStoreTest, EveryRankIsAClientAndItsKeysAreUnderTheAttempt) {
  TrainerWorld world(2, TrainingArgs(), {}, Store::kAgent);
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (int r = 0; r < world.size(); ++r) {
    const auto exit = world.WaitUntil(r, deadline);
    ASSERT_TRUE(exit) << "rank " << r << " still runs:\n" << world.Log(r);
    ASSERT_TRUE(exit->exited() && exit->exit_code == 0) << "rank " << r << ":\n" << world.Log(r);
    EXPECT_THAT(world.Log(r), HasSubstr("connected on 127.0.0.1 to MASTER_ADDR 127.0.0.1:" +
                                        std::to_string(world.port()) +
                                        " (a client of its TCPStore, keys under /worker/attempt_3/)"));
  }
  // Each rank held two connections: Gloo's store and the roll call's.
  EXPECT_EQ(world.store().Stats().accepted, 4u);
  EXPECT_TRUE(world.store().Stats().closed_by_reason.empty());

  rendezvous::TorchStoreClientOptions options;
  options.host = "127.0.0.1";
  options.port = static_cast<std::uint16_t>(world.port());
  options.deadline = Clock::now() + std::chrono::seconds(5);
  auto client = rendezvous::TorchStoreClient::Connect(options);
  ASSERT_TRUE(client) << client.error();
  EXPECT_TRUE(client.value()->Check({"/worker/attempt_3/example-trainer/ranks/0",
                                     "/worker/attempt_3/example-trainer/ranks/1",
                                     "/worker/attempt_3/example-trainer/all-joined"})
                  .value());
  EXPECT_EQ(client.value()->Get("/worker/attempt_3/example-trainer/joined", std::chrono::seconds(1)).value(),
            "2");
  EXPECT_FALSE(client.value()->Check({"example-trainer/ranks/0"}).value());
}

// Other ranks' trainers can start before rank 0's Pod, and with it the sidecar's store: they
// retry until it is there.
TEST(TrainerAgentStoreTest, TrainersThatStartBeforeTheStoreWaitForIt) {
  TrainerWorld world(2, TrainingArgs(), {}, Store::kAgentLater);
  // Long enough for several refused connects; nothing the trainers print says so.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int r = 0; r < world.size(); ++r) {
    ASSERT_TRUE(world.rank(r).Running()) << "rank " << r << " gave up:\n" << world.Log(r);
  }
  world.StartStore();
  ExpectEveryRankFinishes(world, Clock::now() + std::chrono::seconds(30));
}

// A rank that never reaches the store is named by the others' join, as the native join names it.
TEST(TrainerAgentStoreTest, TheJoinNamesARankThatNeverCame) {
  const int nowhere = ringleader::testing::FreePort();
  TrainerWorld world(3, {"--steps", "5", "--timeout-seconds", "3"},
                     [&](int rank, std::map<std::string, std::string>& env) {
                       if (rank == 1) {
                         env["MASTER_PORT"] = std::to_string(nowhere);
                       }
                     },
                     Store::kAgent);
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (const int r : {0, 2}) {
    const auto exit = world.WaitUntil(r, deadline);
    ASSERT_TRUE(exit) << world.Log(r);
    EXPECT_TRUE(exit->exited() && exit->exit_code == 1) << world.Log(r);
    EXPECT_THAT(world.Log(r), HasSubstr("joining: rank 1 of 3 did not join within 3 s")) << world.Log(r);
  }
  const auto exit = world.WaitUntil(1, deadline);
  ASSERT_TRUE(exit) << world.Log(1);
  EXPECT_THAT(world.Log(1), HasSubstr("connecting to the TCPStore on MASTER_PORT: TCPStore 127.0.0.1:" +
                                      std::to_string(nowhere) + " unreachable for"));
}

// --exit-code-at-step makes one rank exit with a chosen code (for failure-policy tests); the others
// fail for want of it, naming it, with either store.
class TrainerInjectedExitTest : public ::testing::TestWithParam<Store> {};

TEST_P(TrainerInjectedExitTest, TheChosenRankExitsWithTheChosenCodeAtTheChosenStep) {
  TrainerWorld world(3, {"--steps", "50", "--timeout-seconds", "10", "--exit-code-at-step", "5:42", "--fail-rank",
                         "1"}, {}, GetParam());
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  const auto exit = world.WaitUntil(1, deadline);
  ASSERT_TRUE(exit) << world.Log(1);
  EXPECT_TRUE(exit->exited() && exit->exit_code == 42) << world.Log(1);
  EXPECT_THAT(world.Log(1), HasSubstr("rank 1 of 3: exiting with code 42 at step 5 (--exit-code-at-step)"));
  EXPECT_THAT(world.Log(0), HasSubstr("step 4/50"));
  EXPECT_THAT(world.Log(0), ::testing::Not(HasSubstr("step 5/50")));
  for (const int r : {0, 2}) {
    const auto survivor = world.WaitUntil(r, deadline);
    ASSERT_TRUE(survivor) << world.Log(r);
    EXPECT_TRUE(survivor->exited() && survivor->exit_code == 1) << world.Log(r);
    EXPECT_THAT(world.Log(r), HasSubstr("rank 1 of 3")) << "names the rank that left";
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, TrainerInjectedExitTest,
                         ::testing::Values(Store::kRankZero, Store::kAgent),
                         [](const auto& param_info) { return StoreName(param_info.param); });

TEST(TrainerTest, AnInjectedExitForAnotherAttemptIsNotTaken) {
  TrainerWorld world(2, {"--steps", "5", "--exit-code-at-step", "2:42", "--fail-attempt", "0", "--attempt", "1"});
  for (int r = 0; r < 2; ++r) {
    const auto exit = world.WaitUntil(r, Clock::now() + std::chrono::seconds(20));
    ASSERT_TRUE(exit) << world.Log(r);
    EXPECT_TRUE(exit->exited() && exit->exit_code == 0) << world.Log(r);
  }
}

// ---- The NCCL profiler plugin stand-in (examples/trainer/profiler_stand_in.h) ----

// Each rank's gradient all-reduce (kParameters + 1 float32 per step) reaches the built plugin as
// one NCCL AllReduce, timed, and the plugin's snapshots reach a socket standing in for the
// sidecar's. --stand-in-slowdown makes rank 1's reported time the larger.
TEST(TrainerProfilerTest, ReportsEveryGradientAllReduceToTheBuiltPlugin) {
  constexpr int kWorld = 2;
  const profiler::testing::TempDir dir;
  const std::string socket = dir.path() + "/profiler.sock";
  profiler::testing::SnapshotServer server(socket);
  const std::string plugin = profiler::testing::BuiltPluginPath();
  std::vector<std::string> args = TrainingArgs();
  args.insert(args.end(), {"--stand-in-slowdown", "1:1000"});
  TrainerWorld world(kWorld, args, [&](int, std::map<std::string, std::string>& env) {
    env["NCCL_PROFILER_PLUGIN"] = plugin;
    env["RINGLEADER_PROFILER_SOCKET"] = socket;
    env["RINGLEADER_PROFILER_INTERVAL_MS"] = "50";
    env["LOCAL_RANK"] = "0";
  });
  ExpectEveryRankFinishes(world, Clock::now() + std::chrono::seconds(30));
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_THAT(world.Log(r), HasSubstr("profiler stand-in: driving " + plugin +
                                        " through ncclProfiler_v5 (this trainer uses Gloo, not "
                                        "NCCL)"));
  }
  EXPECT_THAT(world.Log(1), HasSubstr("taking 1000 times their real time"));

  // The finalized communicators' last records, one per rank.
  const auto finalized = [](const profiler::testing::Received& received) {
    std::vector<profiler::Communicator> comms;
    for (const auto& [key, comm] : received.latest) {
      if (comm.info.finalized) {
        comms.push_back(comm);
      }
    }
    return comms;
  };
  ASSERT_TRUE(server.WaitFor([&](const profiler::testing::Received& received) {
    return finalized(received).size() == kWorld;
  })) << "the plugin's last snapshots did not arrive:\n" << world.Log(0) << world.Log(1);
  const profiler::testing::Received received = server.Get();
  EXPECT_THAT(received.errors, ::testing::IsEmpty());
  for (const profiler::Snapshot& snapshot : received.snapshots) {
    EXPECT_EQ(snapshot.header.local_rank, 0);
  }
  std::map<std::uint32_t, profiler::Cell> by_rank;
  for (const profiler::Communicator& comm : finalized(received)) {
    EXPECT_EQ(comm.info.nranks, static_cast<std::uint32_t>(kWorld));
    EXPECT_EQ(comm.info.comm_hash, finalized(received)[0].info.comm_hash)
        << "the ranks of one run share the communicator";
    ASSERT_EQ(comm.cells.size(), 1u) << "only the all-reduces are reported";
    by_rank[comm.info.rank] = comm.cells[0];
  }
  ASSERT_EQ(by_rank.size(), static_cast<std::size_t>(kWorld));
  constexpr std::uint64_t kBytesPerCall = (kParameters + 1) * sizeof(float);
  for (const auto& [rank, cell] : by_rank) {
    EXPECT_EQ(cell.op, profiler::Op::kAllReduce) << "rank " << rank;
    EXPECT_EQ(cell.bucket, profiler::SizeBucket(kBytesPerCall)) << "rank " << rank;
    EXPECT_EQ(cell.calls, static_cast<std::uint64_t>(kSteps)) << "rank " << rank;
    EXPECT_EQ(cell.bytes, kSteps * kBytesPerCall) << "rank " << rank;
    EXPECT_EQ(cell.timed_calls, cell.calls) << "rank " << rank;
    EXPECT_GT(cell.gpu_ns, 0u) << "rank " << rank;
  }
  EXPECT_GT(by_rank[1].gpu_ns, by_rank[0].gpu_ns) << "--stand-in-slowdown 1:1000";
  EXPECT_LT(by_rank[1].busbw_gbps, by_rank[0].busbw_gbps);
}

// --stall-at-step: rank 1 never enters step 3's all-reduce and waits, alive, while ranks 0 and 2
// enter it and wait in it; the plugin's progress says so (ranks 0 and 2 started 3 collectives and
// completed 2, rank 1 started and completed 2), which is what the sidecars' stall detection reads.
TEST(TrainerProfilerTest, AStalledRankNeverEntersTheAllReduceItsPeersWaitIn) {
  const profiler::testing::TempDir dir;
  const std::string socket = dir.path() + "/profiler.sock";
  profiler::testing::SnapshotServer server(socket);
  const std::string plugin = profiler::testing::BuiltPluginPath();
  TrainerWorld world(3, {"--steps", "10", "--timeout-seconds", "60", "--stall-at-step", "3", "--stall-rank", "1"},
                     [&](int, std::map<std::string, std::string>& env) {
                       env["NCCL_PROFILER_PLUGIN"] = plugin;
                       env["RINGLEADER_PROFILER_SOCKET"] = socket;
                       env["RINGLEADER_PROFILER_INTERVAL_MS"] = "50";
                     });
  const auto progress_by_rank = [](const profiler::testing::Received& received) {
    std::map<std::uint32_t, profiler::CollectiveProgress> progress;
    for (const auto& [key, comm] : received.latest) {
      progress[comm.info.rank] = comm.info.progress;
    }
    return progress;
  };
  const auto stalled = [&](const profiler::testing::Received& received) {
    const auto progress = progress_by_rank(received);
    return progress.size() == 3 && progress.at(0).collectives_started == 3 &&
           progress.at(2).collectives_started == 3 && progress.at(1).collectives_started == 2;
  };
  ASSERT_TRUE(server.WaitFor(stalled, std::chrono::seconds(30)))
      << world.Log(0) << world.Log(1) << world.Log(2);
  EXPECT_TRUE(world.WaitForLog(1, "rank 1 of 3: stalling at step 3: not entering its all-reduce (--stall-at-step)",
                               Clock::now() + std::chrono::seconds(5)))
      << world.Log(1);
  // A second later nothing has moved: the waiting ranks are inside #3, rank 1 is past #2.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto progress = progress_by_rank(server.Get());
  ASSERT_EQ(progress.size(), 3u);
  for (const std::uint32_t waiting : {0u, 2u}) {
    EXPECT_EQ(progress.at(waiting).collectives_started, 3u) << "rank " << waiting;
    EXPECT_EQ(progress.at(waiting).collectives_completed, 2u) << "rank " << waiting;
  }
  EXPECT_EQ(progress.at(1).collectives_started, 2u);
  EXPECT_EQ(progress.at(1).collectives_completed, 2u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(world.rank(r).Running()) << "rank " << r << ":\n" << world.Log(r);
  }
  EXPECT_THAT(world.Log(0), ::testing::Not(HasSubstr("step 3/10")));
}

// NCCL_PROFILER_PLUGIN naming a file that is not there costs a log line, not the run.
TEST(TrainerProfilerTest, AMissingPluginFileDoesNotStopTraining) {
  const profiler::testing::TempDir dir;
  const std::string missing = dir.path() + "/libnccl-profiler-ringleader.so";
  TrainerWorld world(2, TrainingArgs(), [&](int, std::map<std::string, std::string>& env) {
    env["NCCL_PROFILER_PLUGIN"] = missing;
  });
  ExpectEveryRankFinishes(world, Clock::now() + std::chrono::seconds(30));
  for (int r = 0; r < world.size(); ++r) {
    const std::string log = world.Log(r);
    EXPECT_THAT(log, HasSubstr("profiler stand-in: cannot load NCCL_PROFILER_PLUGIN (" + missing));
    EXPECT_EQ(log.find("profiler stand-in"), log.rfind("profiler stand-in")) << "one line:\n" << log;
  }
}

}  // namespace
}  // namespace ringleader::examples
