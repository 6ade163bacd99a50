// nccl-tests' size, algbw and busbw semantics (src/*.cu *GetBw, doc/PERFORMANCE.md). The time the
// sidecar gives them is the slowest rank's mean per call, as nccl-tests reports with `-a 3`; its
// default (`-a 1`) averages the ranks' times, which reads higher when one rank lags.
#pragma once

#include <cstddef>

#include "sidecar/collectives/communicator.h"

namespace ringleader::collectives {

// Elements per rank for a requested size, as nccl-tests derives its "count" column: bytes /
// elem_bytes, rounded down to a multiple of n and divided by n for all_gather, reduce_scatter and
// alltoall (where the requested size is the whole buffer). 0 when the size is too small.
std::size_t CountPerRank(Collective collective, std::size_t requested_bytes, int n,
                         std::size_t elem_bytes = sizeof(float));

// nccl-tests' "size" column S for `count` elements per rank: count x elem_bytes for all_reduce,
// broadcast and sendrecv; count x elem_bytes x n for all_gather, reduce_scatter and alltoall.
std::size_t ReportedBytes(Collective collective, std::size_t count, int n,
                          std::size_t elem_bytes = sizeof(float));

// busbw / algbw: 2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall; 1 for
// broadcast and sendrecv.
double BusBandwidthFactor(Collective collective, int n);

struct Bandwidth {
  double algbw_gbps = 0;  // S / t, in 1e9 bytes per second
  double busbw_gbps = 0;  // algbw x BusBandwidthFactor
};

// Bandwidth for S = reported_bytes moved in `seconds`; zeros when seconds is not positive.
Bandwidth ComputeBandwidth(Collective collective, std::size_t reported_bytes, double seconds,
                           int n);

}  // namespace ringleader::collectives
