#include "sidecar/app/preflight_verdict.h"

#include <cstdio>

#include "sidecar/collectives/communicator.h"

namespace ringleader::sidecar {
namespace {

std::string FormatBytes(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024;
  if (bytes >= kKiB * kKiB && bytes % (kKiB * kKiB) == 0) {
    return std::to_string(bytes / (kKiB * kKiB)) + " MiB";
  }
  if (bytes >= kKiB && bytes % kKiB == 0) {
    return std::to_string(bytes / kKiB) + " KiB";
  }
  return std::to_string(bytes) + " B";
}

}  // namespace

std::string FormatBandwidth(double bytes_per_second) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2f GB/s", bytes_per_second / 1e9);
  return text;
}

std::string DescribeRank(int rank, int local_ranks) {
  std::string text = "rank " + std::to_string(rank);
  if (local_ranks > 1) {
    text += " (Pod rank " + std::to_string(rank / local_ranks) + ", local rank " +
            std::to_string(rank % local_ranks) + ")";
  }
  return text;
}

PreflightVerdict JudgePreflight(std::span<const collectives::ProbeRow> rows,
                                std::int64_t min_bus_bandwidth, int local_ranks) {
  PreflightVerdict verdict;
  const collectives::ProbeRow* largest = nullptr;
  std::size_t largest_index = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const collectives::ProbeRow& row = rows[i];
    if (row.wrong > 0 && verdict.reason.empty()) {
      verdict.reason = std::to_string(row.wrong) + " wrong elements in " +
                       std::string(collectives::CollectiveName(row.collective)) + " at " +
                       FormatBytes(row.bytes) + " (data corrupted on the fabric or a GPU)";
    }
    if (row.collective == collectives::Collective::kAllReduce &&
        (largest == nullptr || row.bytes >= largest->bytes)) {
      largest = &row;
      largest_index = i;
    }
  }
  if (largest != nullptr) {
    verdict.all_reduce_bus_bandwidth = largest->busbw_gbps * 1e9;
    verdict.slowest_rank = largest->slowest_rank;
  }
  if (!verdict.reason.empty()) {
    return verdict;
  }
  if (largest == nullptr) {
    verdict.reason = "the sweep measured no all_reduce size (is the maximum below one element per rank?)";
    return verdict;
  }
  const double busbw = *verdict.all_reduce_bus_bandwidth;
  if (min_bus_bandwidth > 0 && busbw < static_cast<double>(min_bus_bandwidth)) {
    verdict.reason = "all_reduce bus bandwidth " + FormatBandwidth(busbw) + " at " +
                     FormatBytes(largest->bytes) + " is below the floor " +
                     FormatBandwidth(static_cast<double>(min_bus_bandwidth)) + "; slowest " +
                     DescribeRank(largest->slowest_rank, local_ranks);
    verdict.below_floor_row = largest_index;
    return verdict;
  }
  verdict.passed = true;
  return verdict;
}

}  // namespace ringleader::sidecar
