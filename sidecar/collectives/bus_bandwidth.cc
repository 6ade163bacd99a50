// nccl-tests' bandwidth arithmetic.
#include "sidecar/collectives/bus_bandwidth.h"

namespace ringleader::collectives {
namespace {

// The collectives whose nccl-tests size column is the whole count x n buffer.
bool SizeIsWholeBuffer(Collective collective) {
  return collective == Collective::kAllGather || collective == Collective::kReduceScatter ||
         collective == Collective::kAllToAll;
}

}  // namespace

std::size_t CountPerRank(Collective collective, std::size_t requested_bytes, int n,
                         std::size_t elem_bytes) {
  const std::size_t count = requested_bytes / elem_bytes;
  return SizeIsWholeBuffer(collective) ? count / static_cast<std::size_t>(n) : count;
}

std::size_t ReportedBytes(Collective collective, std::size_t count, int n, std::size_t elem_bytes) {
  const std::size_t bytes = count * elem_bytes;
  return SizeIsWholeBuffer(collective) ? bytes * static_cast<std::size_t>(n) : bytes;
}

double BusBandwidthFactor(Collective collective, int n) {
  const double ranks = n;
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (ranks - 1) / ranks;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (ranks - 1) / ranks;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      break;
  }
  return 1.0;
}

Bandwidth ComputeBandwidth(Collective collective, std::size_t reported_bytes, double seconds,
                           int n) {
  if (seconds <= 0) {
    return {};
  }
  const double algbw = static_cast<double>(reported_bytes) / 1.0e9 / seconds;
  return {algbw, algbw * BusBandwidthFactor(collective, n)};
}

}  // namespace ringleader::collectives
