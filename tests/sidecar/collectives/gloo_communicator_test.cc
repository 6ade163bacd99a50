// Gloo communicators on N threads over loopback TCP: exact outputs for every collective, and
// failures (a rank that leaves, a rank that goes silent, a peer that never joins) that surface as
// CommunicatorError within the timeout instead of a hang.
#include "sidecar/collectives/gloo_communicator.h"

#include <gloo/rendezvous/hash_store.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "sidecar/collectives/probe.h"
#include "sidecar/collectives/verify.h"
#include "tests/sidecar/collectives/gloo_ranks.h"

namespace ringleader::collectives {
namespace {

using ::testing::HasSubstr;
using testing::Failures;
using testing::RankOutcome;
using testing::RunGlooRanks;
using namespace std::chrono_literals;

// Runs `collective` once on fresh buffers poisoned with NaN; returns the wrong elements.
std::uint64_t RunAndCountWrong(Communicator& comm, Buffers& buffers, Collective collective,
                               std::size_t count, Peers peers, std::uint64_t seed) {
  const int n = comm.size();
  const BufferElems elems = ElemsFor(collective, count, n);
  buffers.WriteSend(MakeInput(collective, count, comm.rank(), n, seed));
  std::vector<float> got(elems.recv, std::numeric_limits<float>::quiet_NaN());
  buffers.WriteRecv(got);
  comm.Run(collective, buffers, count, peers);
  comm.Synchronize();
  buffers.ReadRecv(got);
  return CountWrong(got, ExpectedOutput(collective, count, comm.rank(), n, seed, peers));
}

class GlooCommunicatorTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCommunicatorTest, EveryCollectiveGivesExactlyTheExpectedOutput) {
  const int n = GetParam();
  const auto outcomes = RunGlooRanks(n, [n](std::unique_ptr<GlooCommunicator>& comm) {
    EXPECT_EQ(comm->size(), n);
    EXPECT_EQ(comm->backend(), "gloo");
    EXPECT_EQ(comm->transport(), "tcp");
    const Peers ring = PeersFor(PairPattern::kRingNeighbour, comm->rank(), n);
    for (const Collective collective : kAllCollectives) {
      // count 7 on 3 ranks guards against Gloo's ReduceScatterHalvingDoubling, which got elements
      // wrong there; reduce_scatter is now our own ring.
      for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1031}}) {
        const BufferElems elems = ElemsFor(collective, count, n);
        const std::unique_ptr<Buffers> buffers = comm->Allocate(elems.send, elems.recv);
        // Twice on the same buffers with different data: nothing may be cached stale.
        for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{2}}) {
          EXPECT_EQ(RunAndCountWrong(*comm, *buffers, collective, count, ring, seed), 0u)
              << CollectiveName(collective) << " count=" << count << " seed=" << seed
              << " on rank " << comm->rank();
        }
      }
    }
  });
  EXPECT_EQ(Failures(outcomes), "");
}

TEST_P(GlooCommunicatorTest, SendRecvPairsHalves) {
  const int n = GetParam();
  const auto outcomes = RunGlooRanks(n, [n](std::unique_ptr<GlooCommunicator>& comm) {
    const Peers halves = PeersFor(PairPattern::kHalves, comm->rank(), n);
    if (n % 2 == 0) {
      EXPECT_EQ(halves.send_to, halves.recv_from);  // a true pair
    }
    const std::unique_ptr<Buffers> buffers = comm->Allocate(64, 64);
    EXPECT_EQ(RunAndCountWrong(*comm, *buffers, Collective::kSendRecv, 64, halves, 9), 0u);
  });
  EXPECT_EQ(Failures(outcomes), "");
}

TEST_P(GlooCommunicatorTest, AllGatherDoubleGivesEveryRankEveryValue) {
  const int n = GetParam();
  const auto outcomes = RunGlooRanks(n, [n](std::unique_ptr<GlooCommunicator>& comm) {
    const std::vector<double> values = comm->AllGatherDouble(comm->rank() * 1.5 + 0.25);
    ASSERT_EQ(values.size(), static_cast<std::size_t>(n));
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(values[static_cast<std::size_t>(rank)], rank * 1.5 + 0.25);
    }
  });
  EXPECT_EQ(Failures(outcomes), "");
}

// The last rank destroys its communicator; every other rank's all_reduce must throw. Each rank
// that fails destroys its own communicator too, as the sidecar does, so the failure spreads at
// the speed of closed sockets rather than timeouts.
TEST_P(GlooCommunicatorTest, ARankThatLeavesMakesTheOthersThrowWithinTheTimeout) {
  const int n = GetParam();
  const int leaver = n - 1;
  const auto timeout = 2000ms;
  const auto outcomes = RunGlooRanks(
      n,
      [leaver](std::unique_ptr<GlooCommunicator>& comm) {
        if (comm->rank() == leaver) {
          comm.reset();
          return;
        }
        const std::unique_ptr<Buffers> buffers = comm->Allocate(4096, 4096);
        try {
          comm->Run(Collective::kAllReduce, *buffers, 4096);
        } catch (const CommunicatorError&) {
          // A broken communicator stays broken, and says so.
          try {
            comm->AllGatherDouble(1.0);
            ADD_FAILURE() << "a broken communicator ran a collective";
          } catch (const CommunicatorError& again) {
            EXPECT_THAT(again.what(), HasSubstr("broken by an earlier error"));
          }
          comm.reset();
          throw;
        }
      },
      {.timeout = timeout});
  for (int rank = 0; rank < n; ++rank) {
    const RankOutcome& outcome = outcomes[static_cast<std::size_t>(rank)];
    if (rank == leaver) {
      EXPECT_EQ(outcome.error, "");
      continue;
    }
    EXPECT_TRUE(outcome.communicator_error) << "rank " << rank << ": " << outcome.error;
    EXPECT_THAT(outcome.error, HasSubstr("gloo all_reduce failed on rank " + std::to_string(rank)));
    EXPECT_LT(outcome.elapsed, timeout + 1500ms) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCommunicatorTest, ::testing::Values(2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<int>& world) {
                           return "n" + std::to_string(world.param);
                         });

// Rank 2 keeps its communicator open but never calls: the others must give up at the timeout.
TEST(GlooCommunicatorFailureTest, ASilentRankMakesTheOthersTimeOut) {
  const auto timeout = 2000ms;
  const auto outcomes = RunGlooRanks(
      3,
      [](std::unique_ptr<GlooCommunicator>& comm) {
        if (comm->rank() == 2) {
          return;
        }
        const std::unique_ptr<Buffers> buffers = comm->Allocate(1024, 1024 * 3);
        comm->Run(Collective::kAllGather, *buffers, 1024);
      },
      {.timeout = timeout});
  EXPECT_EQ(outcomes[2].error, "");
  for (int rank = 0; rank < 2; ++rank) {
    const RankOutcome& outcome = outcomes[static_cast<std::size_t>(rank)];
    EXPECT_TRUE(outcome.communicator_error) << outcome.error;
    EXPECT_THAT(outcome.error, HasSubstr("all_gather"));
    EXPECT_THAT(outcome.error, HasSubstr("timeout 2000 ms"));
    EXPECT_LT(outcome.elapsed, timeout + 1500ms) << "rank " << rank;
  }
}

TEST(GlooCommunicatorFailureTest, ConnectGivesUpWhenAPeerNeverJoins) {
  gloo::rendezvous::HashStore store;
  GlooOptions options;
  options.rank = 0;
  options.size = 2;
  options.prefix = "lonely";
  options.hostname = "127.0.0.1";
  options.timeout = 1000ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    GlooCommunicator comm(store, options);
    ADD_FAILURE() << "connected without a peer";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gloo connect under prefix \"lonely\" failed on rank 0 of 2"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// Two attempts over one store: the second must not read the first attempt's (stale) addresses.
TEST(GlooCommunicatorFailureTest, EachAttemptConnectsUnderItsOwnPrefix) {
  gloo::rendezvous::HashStore store;
  for (const char* prefix : {"attempt-1", "attempt-2"}) {
    const auto outcomes = RunGlooRanks(
        3,
        [](std::unique_ptr<GlooCommunicator>& comm) {
          const std::vector<double> ranks = comm->AllGatherDouble(comm->rank());
          EXPECT_EQ(ranks, (std::vector<double>{0, 1, 2}));
        },
        {.prefix = prefix, .store = &store});
    EXPECT_EQ(Failures(outcomes), "") << prefix;
  }
}

// A caller's mistake is std::invalid_argument and leaves the communicator usable.
TEST(GlooCommunicatorFailureTest, BadArgumentsAreRejectedWithoutBreakingTheCommunicator) {
  class ForeignBuffers final : public Buffers {
   public:
    std::size_t send_elems() const override { return 16; }
    std::size_t recv_elems() const override { return 16; }

   protected:
    void DoWriteSend(std::size_t, std::span<const float>) override {}
    void DoWriteRecv(std::size_t, std::span<const float>) override {}
    void DoReadRecv(std::size_t, std::span<float>) override {}
  };
  const auto outcomes = RunGlooRanks(2, [](std::unique_ptr<GlooCommunicator>& comm) {
    const std::unique_ptr<Buffers> small = comm->Allocate(4, 4);
    EXPECT_THROW(comm->Run(Collective::kAllReduce, *small, 0), std::invalid_argument);
    EXPECT_THROW(comm->Run(Collective::kAllReduce, *small, 5), std::invalid_argument);
    EXPECT_THROW(comm->Run(Collective::kAllGather, *small, 4), std::invalid_argument);
    EXPECT_THROW(comm->Run(Collective::kSendRecv, *small, 4, Peers{2, 0}), std::invalid_argument);
    EXPECT_THROW(comm->Run(Collective::kSendRecv, *small, 4, Peers{comm->rank(), 1 - comm->rank()}),
                 std::invalid_argument);
    ForeignBuffers foreign;
    EXPECT_THROW(comm->Run(Collective::kAllReduce, foreign, 4), std::invalid_argument);
    EXPECT_THROW(small->WriteSend(std::vector<float>(5)), std::invalid_argument);
    EXPECT_THROW(small->WriteRecv(3, std::vector<float>(2)), std::invalid_argument);
    std::vector<float> two(2);
    EXPECT_THROW(small->ReadRecv(SIZE_MAX, two), std::invalid_argument);  // no wrap-around
    EXPECT_EQ(RunAndCountWrong(*comm, *small, Collective::kAllReduce, 4, Peers{}, 3), 0u);
  });
  EXPECT_EQ(Failures(outcomes), "");
}

TEST(GlooCommunicatorFailureTest, RejectsARankOutsideTheGroup) {
  gloo::rendezvous::HashStore store;
  GlooOptions options;
  options.rank = 2;
  options.size = 2;
  EXPECT_THROW(GlooCommunicator(store, options), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::collectives
