// Whether a preflight sweep passed: pure judgement of the measured rows against the floor, so
// the rule is tested table-style without a communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "sidecar/collectives/probe.h"

namespace ringleader::sidecar {

struct PreflightVerdict {
  bool passed = false;
  // Empty when passed; else what failed, naming the collective, size and slowest rank.
  std::string reason;
  // all_reduce's bus bandwidth at its largest measured size (bytes/s): the figure judged
  // against the floor and reported in /summary, as nccl-tests users read the peak, not the mean.
  std::optional<double> all_reduce_bus_bandwidth;
  std::optional<int> slowest_rank;  // of that all_reduce row
  // The index in `rows` of the row that fell below the floor, when that is why the preflight
  // failed: only that row counts as below_floor in the metrics, the others by their own data.
  std::optional<std::size_t> below_floor_row;
};

// Fails on any wrong element (data corruption beats slowness), on a sweep without an all_reduce
// row, or when the largest all_reduce row's busbw is below `min_bus_bandwidth` (bytes/s; 0 means
// no floor). Rows' ranks are communicator ranks, `local_ranks` to a Pod (DescribeRank).
PreflightVerdict JudgePreflight(std::span<const collectives::ProbeRow> rows,
                                std::int64_t min_bus_bandwidth, int local_ranks = 1);

// "rank 5", or with several ranks to a Pod "rank 5 (Pod rank 2, local rank 1)": communicator
// rank r is local rank r % local_ranks of Pod rank r / local_ranks.
std::string DescribeRank(int rank, int local_ranks);

// "12.3 GB/s" (decimal, as nccl-tests prints).
std::string FormatBandwidth(double bytes_per_second);

}  // namespace ringleader::sidecar
