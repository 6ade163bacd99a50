// Several local ranks per process: two "Pods" (threads here) of two Gloo local ranks each form
// one group of four, and the probes verify and time every global rank through LocalRanks.
#include "sidecar/collectives/local_ranks.h"

#include <gloo/rendezvous/hash_store.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/collectives/probe.h"
#include "tests/sidecar/collectives/scripted_communicator.h"

namespace ringleader::collectives {
namespace {

using ::testing::HasSubstr;
using testing::ScriptedCommunicator;

constexpr int kPods = 2;
constexpr int kLocal = 2;
constexpr int kWorld = kPods * kLocal;

// Pod `pod`'s local ranks: global ranks pod x kLocal + l of kWorld, over `store`.
LocalRanks ConnectPod(gloo::rendezvous::Store& store, int pod, std::chrono::milliseconds timeout) {
  return LocalRanks::Connect(kLocal, [&store, pod, timeout](int local) {
    GlooOptions options;
    options.rank = pod * kLocal + local;
    options.size = kWorld;
    options.prefix = "local-ranks-test";
    options.hostname = "127.0.0.1";
    options.timeout = timeout;
    return std::make_unique<GlooCommunicator>(store, options);
  });
}

// Runs `body` on every Pod at once (each Pod a thread driving its local ranks); returns each
// Pod's error, empty when it returned.
template <typename Body>
std::vector<std::string> RunPods(Body body,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  gloo::rendezvous::HashStore store;
  std::vector<std::string> errors(kPods);
  std::vector<std::thread> pods;
  for (int pod = 0; pod < kPods; ++pod) {
    pods.emplace_back([&, pod] {
      try {
        LocalRanks ranks = ConnectPod(store, pod, timeout);
        body(ranks, pod);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(pod)] = e.what();
      }
    });
  }
  for (std::thread& pod : pods) {
    pod.join();
  }
  return errors;
}

TEST(LocalRanksTest, LocalRanksHoldConsecutiveGlobalRanks) {
  const auto errors = RunPods([](LocalRanks& ranks, int pod) {
    ASSERT_EQ(ranks.count(), kLocal);
    EXPECT_EQ(ranks.first().rank(), pod * kLocal);
    EXPECT_EQ(ranks.at(1).rank(), pod * kLocal + 1);
    EXPECT_EQ(ranks.first().size(), kWorld);
  });
  EXPECT_THAT(errors, ::testing::Each(""));
}

TEST(LocalRanksTest, EveryCollectiveIsExactAndTimedOverEveryGlobalRank) {
  std::vector<std::vector<ProbeRow>> rows(kPods);
  const auto errors = RunPods([&](LocalRanks& ranks, int pod) {
    ProbeOptions options;
    options.iters = 2;
    rows[static_cast<std::size_t>(pod)] = ranks.OnEach([&](Communicator& comm, int) {
      return Sweep(comm, kAllCollectives, {.min_bytes = 64, .max_bytes = 4096, .factor = 64},
                   options);
    });
  });
  ASSERT_THAT(errors, ::testing::Each(""));
  ASSERT_FALSE(rows[0].empty());
  ASSERT_EQ(rows[0].size(), rows[1].size());
  for (std::size_t i = 0; i < rows[0].size(); ++i) {
    SCOPED_TRACE(std::string(CollectiveName(rows[0][i].collective)) + " " +
                 std::to_string(rows[0][i].bytes));
    EXPECT_EQ(rows[0][i].wrong, 0u);
    EXPECT_GT(rows[0][i].busbw_gbps, 0.0);
    EXPECT_LT(rows[0][i].slowest_rank, kWorld);
    // Every global rank's time was gathered, so both Pods report the same row.
    EXPECT_EQ(rows[0][i].time_us, rows[1][i].time_us);
  }
}

// Global rank 3 (Pod 1, local rank 1) corrupts its input: all_reduce is then wrong on all four
// ranks, which only a check of every local rank's output can see.
TEST(LocalRanksTest, AWrongElementOnASecondLocalRankIsCounted) {
  std::vector<std::uint64_t> wrong(kPods);
  const auto errors = RunPods([&](LocalRanks& ranks, int pod) {
    ProbeOptions options;
    options.warmup_iters = 0;
    options.corrupt_rank_for_test = 3;
    wrong[static_cast<std::size_t>(pod)] = ranks.OnEach([&](Communicator& comm, int) {
      return RunProbe(comm, Collective::kAllReduce, 100, options).wrong;
    });
  });
  ASSERT_THAT(errors, ::testing::Each(""));
  EXPECT_EQ(wrong[0], static_cast<std::uint64_t>(kWorld));
  EXPECT_EQ(wrong[1], static_cast<std::uint64_t>(kWorld));
}

// Local rank 1 of Pod 0 fails before its collective: its siblings' all_reduce cannot complete,
// and they return at their timeout; the failure rethrown is the first one, not the timeouts.
TEST(LocalRanksTest, TheFirstFailureIsRethrownOnceEverySiblingReturned) {
  const auto started = std::chrono::steady_clock::now();
  const auto errors = RunPods(
      [](LocalRanks& ranks, int pod) {
        ranks.OnEach([pod](Communicator& comm, int local) {
          if (pod == 0 && local == 1) {
            throw std::runtime_error("local rank 1 of pod 0 broke");
          }
          RunProbe(comm, Collective::kAllReduce, 100);
        });
      },
      std::chrono::milliseconds(1500));
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(errors[0], "local rank 1 of pod 0 broke");
  EXPECT_THAT(errors[1], HasSubstr("all_reduce"));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(LocalRanksTest, OneLocalRankRunsOnTheCallingThread) {
  std::vector<std::unique_ptr<Communicator>> comms;
  comms.push_back(std::make_unique<ScriptedCommunicator>(0, 1, std::deque<std::vector<double>>{}));
  LocalRanks ranks(std::move(comms));
  const auto caller = std::this_thread::get_id();
  EXPECT_EQ(ranks.OnEach([](Communicator&, int) { return std::this_thread::get_id(); }), caller);
}

TEST(LocalRanksTest, RejectsRanksThatAreNotConsecutiveOrDisagreeOnTheSize) {
  const auto make = [](std::initializer_list<std::pair<int, int>> ranks_and_sizes) {
    std::vector<std::unique_ptr<Communicator>> comms;
    for (const auto& [rank, size] : ranks_and_sizes) {
      comms.push_back(
          std::make_unique<ScriptedCommunicator>(rank, size, std::deque<std::vector<double>>{}));
    }
    return comms;
  };
  EXPECT_NO_THROW(LocalRanks(make({{4, 8}, {5, 8}})));
  EXPECT_THROW(LocalRanks(make({{4, 8}, {6, 8}})), std::invalid_argument);
  EXPECT_THROW(LocalRanks(make({{4, 8}, {5, 6}})), std::invalid_argument);
  EXPECT_THROW(LocalRanks(make({})), std::invalid_argument);
  EXPECT_THROW(LocalRanks::Connect(0, [](int) { return std::unique_ptr<Communicator>(); }),
               std::invalid_argument);
}

TEST(LocalRanksTest, ConnectRethrowsAFailedConstructorAfterTheOthersReturn) {
  std::atomic<int> built{0};
  try {
    LocalRanks::Connect(3, [&](int local) -> std::unique_ptr<Communicator> {
      if (local == 2) {
        throw CommunicatorError("device 2 is missing");
      }
      ++built;
      return std::make_unique<ScriptedCommunicator>(local, 3, std::deque<std::vector<double>>{});
    });
    FAIL() << "Connect returned";
  } catch (const CommunicatorError& e) {
    EXPECT_STREQ(e.what(), "device 2 is missing");
  }
  EXPECT_EQ(built.load(), 2);
}

}  // namespace
}  // namespace ringleader::collectives
