// The probe runner: its arithmetic against a scripted communicator, and real sweeps, corrupted
// inputs and pairwise patterns over Gloo ranks on loopback.
#include "sidecar/collectives/probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

#include "sidecar/collectives/bus_bandwidth.h"
#include "tests/sidecar/collectives/gloo_ranks.h"
#include "tests/sidecar/collectives/scripted_communicator.h"

namespace ringleader::collectives {
namespace {

using ::testing::HasSubstr;
using testing::Failures;
using testing::RunGlooRanks;
using testing::ScriptedCommunicator;

TEST(ProbeArithmeticTest, TheSlowestRankSetsTheTimeAndIsNamed) {
  // Answers: the barrier, then each rank's seconds per iteration (no check).
  ScriptedCommunicator comm(0, 4, {{0, 0, 0, 0}, {1e-3, 2e-3, 4e-3, 3e-3}});
  ProbeOptions options;
  options.warmup_iters = 2;
  options.iters = 3;
  options.check = false;
  const ProbeRow row = RunProbe(comm, Collective::kAllReduce, 262144, options);
  EXPECT_EQ(comm.runs(), 5);
  EXPECT_EQ(comm.synchronizes(), 2);  // after warm-up, after the timed iterations
  EXPECT_EQ(row.slowest_rank, 2);
  EXPECT_DOUBLE_EQ(row.time_us, 4000.0);
  EXPECT_EQ(row.count, 262144u);
  EXPECT_EQ(row.bytes, 1048576u);
  EXPECT_NEAR(row.algbw_gbps, 0.262144, 1e-9);
  EXPECT_NEAR(row.busbw_gbps, 0.262144 * 1.5, 1e-9);
  EXPECT_EQ(row.wrong, 0u);
  // This rank offered its own mean time: positive, and far below the scripted ones.
  ASSERT_EQ(comm.gathered().size(), 2u);
  EXPECT_GT(comm.gathered()[1], 0.0);
}

TEST(ProbeArithmeticTest, WrongCountsAreSummedOverRanks) {
  // Barrier, times, then each rank's wrong count.
  ScriptedCommunicator comm(1, 3, {{0, 0, 0}, {1e-6, 1e-6, 1e-6}, {0, 5, 2}});
  const ProbeRow row = RunProbe(comm, Collective::kBroadcast, 16);
  EXPECT_EQ(row.wrong, 7u);
  // The scripted communicator moves no data, so this rank's own output (NaN) was all wrong.
  EXPECT_EQ(comm.gathered().back(), 16.0);
}

TEST(ProbeArithmeticTest, PairwiseTimesAnEdgeAtItsReceivingEnd) {
  ScriptedCommunicator comm(0, 4, {{0, 0, 0, 0}, {1e-3, 1e-3, 8e-3, 2e-3}});
  ProbeOptions options;
  options.check = false;
  const PairwiseResult result = Pairwise(comm, PairPattern::kHalves, 4000, options);
  ASSERT_EQ(result.edges.size(), 4u);
  EXPECT_EQ(result.edges[2].name(), "0->2");
  EXPECT_EQ(result.edges[1].name(), "3->1");
  EXPECT_DOUBLE_EQ(result.edges[2].time_us, 8000.0);
  EXPECT_NEAR(result.edges[2].bandwidth_gbps, 4000 / 8e-3 / 1e9, 1e-12);
  EXPECT_EQ(result.slowest_rank, 2);
  EXPECT_EQ(result.slowest_edge, "0->2");
  EXPECT_EQ(result.bytes, 4000u);
}

TEST(ProbeArithmeticTest, PeersForRingAndHalves) {
  EXPECT_EQ(PeersFor(PairPattern::kRingNeighbour, 0, 4).send_to, 1);
  EXPECT_EQ(PeersFor(PairPattern::kRingNeighbour, 0, 4).recv_from, 3);
  EXPECT_EQ(PeersFor(PairPattern::kHalves, 1, 8).send_to, 5);
  EXPECT_EQ(PeersFor(PairPattern::kHalves, 5, 8).send_to, 1);
  EXPECT_EQ(PeersFor(PairPattern::kHalves, 5, 8).recv_from, 1);
  // Odd n: a ring with stride n/2, so every rank still sends once and receives once.
  EXPECT_EQ(PeersFor(PairPattern::kHalves, 2, 3).send_to, 0);
  EXPECT_EQ(PeersFor(PairPattern::kHalves, 2, 3).recv_from, 1);
}

TEST(ProbeArithmeticTest, RejectsEmptyProbes) {
  ScriptedCommunicator comm(0, 2, {});
  EXPECT_THROW(RunProbe(comm, Collective::kAllReduce, 0), std::invalid_argument);
  ProbeOptions no_iters;
  no_iters.iters = 0;
  EXPECT_THROW(RunProbe(comm, Collective::kAllReduce, 4, no_iters), std::invalid_argument);
  EXPECT_THROW(Pairwise(comm, PairPattern::kHalves, 3), std::invalid_argument);
  EXPECT_THROW(Sweep(comm, kAllCollectives, {.min_bytes = 8, .max_bytes = 64, .factor = 1}),
               std::invalid_argument);
}

TEST(ProbeArithmeticTest, SweepStepsByTheFactorAndSkipsSizesTooSmallForEveryRank) {
  ScriptedCommunicator comm(0, 8, {});
  ProbeOptions options;
  options.check = false;
  const Collective collectives[] = {Collective::kAllReduce, Collective::kAllGather};
  const std::vector<ProbeRow> rows =
      Sweep(comm, collectives, {.min_bytes = 4, .max_bytes = 256, .factor = 4}, options);
  // all_reduce: 4, 16, 64, 256 bytes. all_gather on 8 ranks: 4 and 16 bytes hold fewer than 8
  // floats, then 64 bytes -> 2 per rank, 256 -> 8 per rank.
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].bytes, 4u);
  EXPECT_EQ(rows[3].bytes, 256u);
  EXPECT_EQ(rows[4].collective, Collective::kAllGather);
  EXPECT_EQ(rows[4].count, 2u);
  EXPECT_EQ(rows[4].bytes, 64u);
  EXPECT_EQ(rows[5].count, 8u);
}

// The host side of a probe stays within piece_elems per copy, whatever the message: a large
// preflight must not need host memory in proportion to it.
TEST(ProbeArithmeticTest, HostCopiesNeverExceedOnePiece) {
  ScriptedCommunicator comm(0, 4, {});
  ProbeOptions options;
  options.piece_elems = 1000;
  RunProbe(comm, Collective::kAllToAll, 100'000, options);  // 400,000 elements each way
  EXPECT_EQ(comm.largest_copy(), 1000u);
  options.piece_elems = 0;
  EXPECT_THROW(RunProbe(comm, Collective::kAllReduce, 10, options), std::invalid_argument);
}

TEST(ProbeBuffersTest, GrowOnlyWhenAProbeNeedsMoreAndKeepTheLargerSideOfEach) {
  ScriptedCommunicator comm(0, 2, {});
  ProbeBuffers buffers(comm);
  Buffers& first = buffers.AtLeast(100, 10);
  EXPECT_EQ(comm.allocations(), 1);
  EXPECT_EQ(&buffers.AtLeast(50, 10), &first);  // smaller: the same buffers again
  EXPECT_EQ(comm.allocations(), 1);
  Buffers& grown = buffers.AtLeast(10, 400);
  EXPECT_EQ(comm.allocations(), 2);
  EXPECT_EQ(grown.send_elems(), 100u);  // the send side keeps what it had
  EXPECT_EQ(grown.recv_elems(), 400u);
}

TEST(ProbeBuffersTest, ASweepAllocatesOnlyWhenTheSizeGrows) {
  ScriptedCommunicator comm(0, 2, {});
  ProbeOptions options;
  options.check = false;
  const Collective all_reduce[] = {Collective::kAllReduce};
  const std::vector<ProbeRow> rows =
      Sweep(comm, all_reduce, {.min_bytes = 64, .max_bytes = 1024, .factor = 2}, options);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(comm.allocations(), 5);  // each size is larger than the last
  const Collective again[] = {Collective::kAllReduce, Collective::kBroadcast};
  ScriptedCommunicator shrinking(0, 2, {});
  Sweep(shrinking, again, {.min_bytes = 1024, .max_bytes = 1024, .factor = 2}, options);
  EXPECT_EQ(shrinking.allocations(), 1);  // broadcast reuses all_reduce's buffers
}

TEST(ProbeFormatTest, TableHasNcclTestsColumns) {
  ProbeRow row;
  row.collective = Collective::kAllReduce;
  row.bytes = 1048576;
  row.count = 262144;
  row.time_us = 1234.5;
  row.algbw_gbps = 0.849;
  row.busbw_gbps = 1.486;
  row.wrong = 3;
  row.slowest_rank = 5;
  ProbeRow broadcast = row;
  broadcast.collective = Collective::kBroadcast;
  broadcast.wrong = 0;
  const std::vector<ProbeRow> rows = {row, broadcast};
  const std::string table = FormatTable(rows);
  EXPECT_THAT(table, HasSubstr("size"));
  EXPECT_THAT(table, HasSubstr("time"));
  EXPECT_THAT(table, HasSubstr("algbw"));
  EXPECT_THAT(table, HasSubstr("busbw"));
  EXPECT_THAT(table, HasSubstr("#wrong"));
  EXPECT_THAT(table, HasSubstr("(GB/s)"));
  // The time is the slowest rank's, which nccl-tests reports only with -a 3: the table says so.
  EXPECT_THAT(table, HasSubstr("the slowest rank's mean per call (nccl-tests -a 3)"));
  EXPECT_THAT(table,
              HasSubstr("     all_reduce      1048576       262144     float     sum      -1"
                        "    1234.50    0.849    1.486       3        5\n"));
  EXPECT_THAT(table,
              HasSubstr("      broadcast      1048576       262144     float    none       0"
                        "    1234.50    0.849    1.486       0        5\n"));
}

class ProbeTest : public ::testing::TestWithParam<int> {};

TEST_P(ProbeTest, SweepRowsAreCorrectAndAgreeOnEveryRank) {
  const int n = GetParam();
  std::mutex mutex;
  std::vector<std::vector<ProbeRow>> rows_by_rank(static_cast<std::size_t>(n));
  const auto outcomes = RunGlooRanks(n, [&](std::unique_ptr<GlooCommunicator>& comm) {
    ProbeOptions options;
    options.iters = 3;
    std::vector<ProbeRow> rows =
        Sweep(*comm, kAllCollectives, {.min_bytes = 64, .max_bytes = 4096, .factor = 8}, options);
    const std::lock_guard<std::mutex> lock(mutex);
    rows_by_rank[static_cast<std::size_t>(comm->rank())] = std::move(rows);
  });
  ASSERT_EQ(Failures(outcomes), "");
  const std::vector<ProbeRow>& rows = rows_by_rank[0];
  ASSERT_FALSE(rows.empty());
  for (const ProbeRow& row : rows) {
    SCOPED_TRACE(std::string(CollectiveName(row.collective)) + " " + std::to_string(row.bytes));
    EXPECT_EQ(row.wrong, 0u);
    EXPECT_GT(row.time_us, 0.0);
    EXPECT_GT(row.algbw_gbps, 0.0);
    EXPECT_NEAR(row.busbw_gbps, row.algbw_gbps * BusBandwidthFactor(row.collective, n), 1e-12);
    EXPECT_EQ(row.bytes, ReportedBytes(row.collective, row.count, n));
    EXPECT_GE(row.slowest_rank, 0);
    EXPECT_LT(row.slowest_rank, n);
  }
  // Times were gathered, so every rank reports the same rows.
  for (int rank = 1; rank < n; ++rank) {
    const std::vector<ProbeRow>& other = rows_by_rank[static_cast<std::size_t>(rank)];
    ASSERT_EQ(other.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(other[i].time_us, rows[i].time_us);
      EXPECT_EQ(other[i].slowest_rank, rows[i].slowest_rank);
    }
  }
  const std::string table = FormatTable(rows);
  EXPECT_THAT(table, HasSubstr("reduce_scatter"));
}

// Rank 0 adds 1000 to its first input element. The outputs that depend on it: every rank's first
// element for all_reduce, broadcast (root 0) and all_gather (rank 0's chunk); only rank 0's for
// reduce_scatter and alltoall (element 0 belongs to chunk 0); rank 1's for sendrecv (the ring).
TEST_P(ProbeTest, ACorruptedInputIsCountedWhereverItLands) {
  const int n = GetParam();
  const std::uint64_t everywhere = static_cast<std::uint64_t>(n);
  const std::pair<Collective, std::uint64_t> cases[] = {
      {Collective::kAllReduce, everywhere}, {Collective::kAllGather, everywhere},
      {Collective::kReduceScatter, 1},      {Collective::kBroadcast, everywhere},
      {Collective::kAllToAll, 1},           {Collective::kSendRecv, 1},
  };
  const auto outcomes = RunGlooRanks(n, [&](std::unique_ptr<GlooCommunicator>& comm) {
    ProbeOptions options;
    options.warmup_iters = 0;
    options.iters = 1;
    options.corrupt_rank_for_test = 0;
    for (const auto& [collective, wrong] : cases) {
      const ProbeRow row = RunProbe(*comm, collective, 33, options);
      EXPECT_EQ(row.wrong, wrong) << CollectiveName(collective);
    }
    // Again in buffers a larger, clean probe left behind: what lies past the probe's elements
    // must neither hide nor add a wrong one.
    ProbeBuffers buffers(*comm);
    ProbeOptions clean = options;
    clean.corrupt_rank_for_test = -1;
    for (const auto& [collective, wrong] : cases) {
      EXPECT_EQ(RunProbe(*comm, collective, 1000, clean, &buffers).wrong, 0u)
          << CollectiveName(collective);
      EXPECT_EQ(RunProbe(*comm, collective, 33, options, &buffers).wrong, wrong)
          << CollectiveName(collective) << " in reused buffers";
    }
    // Again in pieces of 7 elements, so inputs are written and outputs checked across many
    // pieces, the last one short.
    ProbeOptions pieces = options;
    pieces.piece_elems = 7;
    for (const auto& [collective, wrong] : cases) {
      EXPECT_EQ(RunProbe(*comm, collective, 33, pieces).wrong, wrong)
          << CollectiveName(collective) << " in pieces";
      EXPECT_EQ(RunProbe(*comm, collective, 33, clean).wrong, 0u) << CollectiveName(collective);
    }
  });
  EXPECT_EQ(Failures(outcomes), "");
}

TEST_P(ProbeTest, PairwisePatternsVerifyAndNameEveryEdge) {
  const int n = GetParam();
  std::mutex mutex;
  std::vector<PairwiseResult> results;
  const auto outcomes = RunGlooRanks(n, [&](std::unique_ptr<GlooCommunicator>& comm) {
    ProbeOptions options;
    options.iters = 3;
    for (const PairPattern pattern : {PairPattern::kRingNeighbour, PairPattern::kHalves}) {
      PairwiseResult result = Pairwise(*comm, pattern, 4096, options);
      if (comm->rank() == 0) {
        const std::lock_guard<std::mutex> lock(mutex);
        results.push_back(std::move(result));
      }
    }
  });
  ASSERT_EQ(Failures(outcomes), "");
  ASSERT_EQ(results.size(), 2u);
  for (const PairwiseResult& result : results) {
    EXPECT_EQ(result.wrong, 0u);
    ASSERT_EQ(result.edges.size(), static_cast<std::size_t>(n));
    for (const Edge& edge : result.edges) {
      EXPECT_EQ(PeersFor(result.pattern, edge.from, n).send_to, edge.to);
      EXPECT_GT(edge.bandwidth_gbps, 0.0);
    }
    EXPECT_EQ(result.slowest_edge,
              result.edges[static_cast<std::size_t>(result.slowest_rank)].name());
  }
  EXPECT_EQ(results[0].edges[0].name(), std::to_string(n - 1) + "->0");
  EXPECT_EQ(results[1].edges[0].name(), std::to_string((n - n / 2) % n) + "->0");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ProbeTest, ::testing::Values(2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<int>& world) {
                           return "n" + std::to_string(world.param);
                         });

}  // namespace
}  // namespace ringleader::collectives
