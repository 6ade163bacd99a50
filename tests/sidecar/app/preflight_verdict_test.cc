// The preflight's pass/fail rule, table-style: data corruption first, then the floor judged on
// all_reduce's largest size.
#include "sidecar/app/preflight_verdict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace ringleader::sidecar {
namespace {

using collectives::Collective;
using collectives::ProbeRow;
using ::testing::HasSubstr;

ProbeRow Row(Collective collective, std::size_t bytes, double busbw_gbps, std::uint64_t wrong = 0,
             int slowest = 0) {
  ProbeRow row;
  row.collective = collective;
  row.bytes = bytes;
  row.busbw_gbps = busbw_gbps;
  row.wrong = wrong;
  row.slowest_rank = slowest;
  return row;
}

TEST(PreflightVerdictTest, PassesWhenTheLargestAllReduceMeetsTheFloor) {
  const std::vector<ProbeRow> rows = {Row(Collective::kAllReduce, 1 << 20, 1.0),
                                      Row(Collective::kAllReduce, 4 << 20, 12.5, 0, 3),
                                      Row(Collective::kAllGather, 4 << 20, 2.0)};
  const auto verdict = JudgePreflight(rows, 12'000'000'000);
  EXPECT_TRUE(verdict.passed) << verdict.reason;
  EXPECT_FALSE(verdict.below_floor_row.has_value());
  EXPECT_DOUBLE_EQ(*verdict.all_reduce_bus_bandwidth, 12.5e9);
  EXPECT_EQ(*verdict.slowest_rank, 3);
}

TEST(PreflightVerdictTest, FailsBelowTheFloorNamingSizeAndSlowestRank) {
  const std::vector<ProbeRow> rows = {Row(Collective::kAllReduce, 1 << 20, 20.0),
                                      Row(Collective::kAllReduce, 64 << 20, 9.0, 0, 5)};
  const auto verdict = JudgePreflight(rows, 10'000'000'000);
  EXPECT_FALSE(verdict.passed);
  EXPECT_EQ(verdict.reason,
            "all_reduce bus bandwidth 9.00 GB/s at 64 MiB is below the floor 10.00 GB/s; slowest rank 5");
  // Only the judged row fell below the floor; the 1 MiB row had no floor to miss.
  EXPECT_EQ(verdict.below_floor_row, 1u);
  // With two GPUs to a Pod, rank 5 is the second GPU of Pod rank 2.
  EXPECT_EQ(JudgePreflight(rows, 10'000'000'000, 2).reason,
            "all_reduce bus bandwidth 9.00 GB/s at 64 MiB is below the floor 10.00 GB/s; slowest "
            "rank 5 (Pod rank 2, local rank 1)");
}

TEST(PreflightVerdictTest, DescribeRankNamesThePodOnlyWhenPodsHoldSeveralRanks) {
  EXPECT_EQ(DescribeRank(5, 1), "rank 5");
  EXPECT_EQ(DescribeRank(0, 8), "rank 0 (Pod rank 0, local rank 0)");
  EXPECT_EQ(DescribeRank(15, 8), "rank 15 (Pod rank 1, local rank 7)");
}

TEST(PreflightVerdictTest, NoFloorPassesAnyBandwidth) {
  const std::vector<ProbeRow> rows = {Row(Collective::kAllReduce, 1024, 0.001)};
  EXPECT_TRUE(JudgePreflight(rows, 0).passed);
}

TEST(PreflightVerdictTest, WrongElementsFailEvenAboveTheFloor) {
  const std::vector<ProbeRow> rows = {Row(Collective::kAllReduce, 1 << 20, 50.0),
                                      Row(Collective::kAllToAll, 1 << 20, 50.0, 7)};
  const auto verdict = JudgePreflight(rows, 1);
  EXPECT_FALSE(verdict.passed);
  EXPECT_THAT(verdict.reason, HasSubstr("7 wrong elements in alltoall at 1 MiB"));
  // Wrong data, not the floor, failed it: no row counts as below the floor.
  EXPECT_FALSE(verdict.below_floor_row.has_value());
}

TEST(PreflightVerdictTest, ASweepWithoutAllReduceFails) {
  const std::vector<ProbeRow> rows = {Row(Collective::kBroadcast, 1 << 20, 50.0)};
  const auto verdict = JudgePreflight(rows, 0);
  EXPECT_FALSE(verdict.passed);
  EXPECT_THAT(verdict.reason, HasSubstr("no all_reduce"));
}

}  // namespace
}  // namespace ringleader::sidecar
