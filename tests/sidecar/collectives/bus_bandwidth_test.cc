// nccl-tests' size, count, algbw and busbw, checked against values worked out by hand.
#include "sidecar/collectives/bus_bandwidth.h"

#include <gtest/gtest.h>

namespace ringleader::collectives {
namespace {

constexpr Collective kAR = Collective::kAllReduce;
constexpr Collective kAG = Collective::kAllGather;
constexpr Collective kRS = Collective::kReduceScatter;
constexpr Collective kBC = Collective::kBroadcast;
constexpr Collective kA2A = Collective::kAllToAll;
constexpr Collective kSR = Collective::kSendRecv;

struct FactorCase {
  Collective collective;
  int n;
  double factor;
};

TEST(BusBandwidthTest, FactorsFollowNcclTests) {
  const FactorCase cases[] = {
      {kAR, 2, 1.0},  {kAR, 3, 4.0 / 3},  {kAR, 4, 1.5},   {kAR, 8, 1.75},
      {kAG, 2, 0.5},  {kAG, 3, 2.0 / 3},  {kAG, 4, 0.75},  {kAG, 8, 0.875},
      {kRS, 2, 0.5},  {kRS, 3, 2.0 / 3},  {kRS, 4, 0.75},  {kRS, 8, 0.875},
      {kA2A, 2, 0.5}, {kA2A, 3, 2.0 / 3}, {kA2A, 4, 0.75}, {kA2A, 8, 0.875},
      {kBC, 2, 1.0},  {kBC, 3, 1.0},      {kBC, 4, 1.0},   {kBC, 8, 1.0},
      {kSR, 2, 1.0},  {kSR, 3, 1.0},      {kSR, 4, 1.0},   {kSR, 8, 1.0},
  };
  for (const FactorCase& c : cases) {
    EXPECT_DOUBLE_EQ(BusBandwidthFactor(c.collective, c.n), c.factor)
        << CollectiveName(c.collective) << " n=" << c.n;
  }
}

struct BandwidthCase {
  Collective collective;
  int n;
  std::size_t count;           // per rank, from 1 MiB requested
  std::size_t reported_bytes;  // the size column
  double algbw_gbps;           // at 1 ms
  double busbw_gbps;
};

// 1 MiB requested and 1 ms per iteration. all_gather, reduce_scatter and alltoall round the count
// down to a multiple of n: at n=3, 262144 floats become 87381 per rank, 1048572 bytes in all.
TEST(BusBandwidthTest, OneMebibyteInOneMillisecond) {
  const BandwidthCase cases[] = {
      {kAR, 2, 262144, 1048576, 1.048576, 1.048576},
      {kAR, 3, 262144, 1048576, 1.048576, 1.398101333},
      {kAR, 4, 262144, 1048576, 1.048576, 1.572864},
      {kAR, 8, 262144, 1048576, 1.048576, 1.835008},
      {kAG, 2, 131072, 1048576, 1.048576, 0.524288},
      {kAG, 3, 87381, 1048572, 1.048572, 0.699048},
      {kAG, 4, 65536, 1048576, 1.048576, 0.786432},
      {kAG, 8, 32768, 1048576, 1.048576, 0.917504},
      {kRS, 2, 131072, 1048576, 1.048576, 0.524288},
      {kRS, 3, 87381, 1048572, 1.048572, 0.699048},
      {kRS, 4, 65536, 1048576, 1.048576, 0.786432},
      {kRS, 8, 32768, 1048576, 1.048576, 0.917504},
      {kA2A, 2, 131072, 1048576, 1.048576, 0.524288},
      {kA2A, 3, 87381, 1048572, 1.048572, 0.699048},
      {kA2A, 4, 65536, 1048576, 1.048576, 0.786432},
      {kA2A, 8, 32768, 1048576, 1.048576, 0.917504},
      {kBC, 2, 262144, 1048576, 1.048576, 1.048576},
      {kBC, 3, 262144, 1048576, 1.048576, 1.048576},
      {kBC, 4, 262144, 1048576, 1.048576, 1.048576},
      {kBC, 8, 262144, 1048576, 1.048576, 1.048576},
      {kSR, 2, 262144, 1048576, 1.048576, 1.048576},
      {kSR, 3, 262144, 1048576, 1.048576, 1.048576},
      {kSR, 4, 262144, 1048576, 1.048576, 1.048576},
      {kSR, 8, 262144, 1048576, 1.048576, 1.048576},
  };
  for (const BandwidthCase& c : cases) {
    SCOPED_TRACE(std::string(CollectiveName(c.collective)) + " n=" + std::to_string(c.n));
    const std::size_t count = CountPerRank(c.collective, 1 << 20, c.n);
    EXPECT_EQ(count, c.count);
    const std::size_t bytes = ReportedBytes(c.collective, count, c.n);
    EXPECT_EQ(bytes, c.reported_bytes);
    const Bandwidth bw = ComputeBandwidth(c.collective, bytes, 1e-3, c.n);
    EXPECT_NEAR(bw.algbw_gbps, c.algbw_gbps, 1e-6);
    EXPECT_NEAR(bw.busbw_gbps, c.busbw_gbps, 1e-6);
  }
}

struct SmallSizeCase {
  Collective collective;
  int n;
  std::size_t requested_bytes;
  std::size_t count;
  std::size_t reported_bytes;
};

TEST(BusBandwidthTest, SmallSizesRoundTheCountDownLikeNcclTests) {
  const SmallSizeCase cases[] = {
      {kAR, 3, 100, 25, 100},  // 25 floats; no rounding to n
      {kAR, 8, 6, 1, 4},       // partial floats are dropped
      {kAG, 8, 100, 3, 96},    // 25 floats -> 3 per rank
      {kRS, 3, 100, 8, 96},    // 25 -> 8 per rank
      {kA2A, 4, 100, 6, 96},   // 25 -> 6 per rank
      {kBC, 4, 100, 25, 100},
      {kSR, 2, 8, 2, 8},
      {kAG, 8, 16, 0, 0},  // 4 floats cannot give 8 ranks one each
      {kAR, 2, 3, 0, 0},   // less than one float
  };
  for (const SmallSizeCase& c : cases) {
    SCOPED_TRACE(std::string(CollectiveName(c.collective)) + " n=" + std::to_string(c.n) + " " +
                 std::to_string(c.requested_bytes) + " B");
    const std::size_t count = CountPerRank(c.collective, c.requested_bytes, c.n);
    EXPECT_EQ(count, c.count);
    EXPECT_EQ(ReportedBytes(c.collective, count, c.n), c.reported_bytes);
  }
}

TEST(BusBandwidthTest, GigabytesAreDecimal) {
  // 1e9 bytes in one second is 1 GB/s, not 0.93 (GiB).
  const Bandwidth bw = ComputeBandwidth(kBC, 1000000000, 1.0, 4);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 1.0);
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 1.0);
}

TEST(BusBandwidthTest, NoTimeMeansNoBandwidthRatherThanInfinity) {
  const Bandwidth bw = ComputeBandwidth(kAR, 1024, 0.0, 2);
  EXPECT_EQ(bw.algbw_gbps, 0.0);
  EXPECT_EQ(bw.busbw_gbps, 0.0);
}

TEST(BusBandwidthTest, ElementSizeScalesCountAndBytes) {
  // Doubles: 1 MiB all_gather on 4 ranks is 32768 per rank.
  EXPECT_EQ(CountPerRank(kAG, 1 << 20, 4, sizeof(double)), 32768u);
  EXPECT_EQ(ReportedBytes(kAG, 32768, 4, sizeof(double)), 1u << 20);
}

}  // namespace
}  // namespace ringleader::collectives
