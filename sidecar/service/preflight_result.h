// What the preflight init container hands the native sidecar of its Pod
// (contract::path::kPreflightResultFile): the verdict, every row of the table, and the transport
// NCCL really used, so the sidecar's metrics, /summary and readiness say what the preflight found
// although the sidecar ran none of it. JSON, written atomically (WriteFileAtomically):
//   {"version": 1, "enabled": true, "passed": false,
//    "reason": "all_reduce bus bandwidth 8.12 GB/s at 64 MiB is below the floor 40.00 GB/s; ...",
//    "backend": "nccl", "transport": "NET/Socket (eth0)", "rdmaRequested": true,
//    "rdmaFallback": "asked for RDMA ... but NCCL used NET/Socket (eth0)",
//    "ranks": 16, "localRanks": 8, "rendezvousSeconds": 0.8, "seconds": 12.5,
//    "allReduceBusBandwidthBytesPerSecond": 8.12e9, "slowestRank": 3, "belowFloorRow": 6,
//    "devices": "GPU-0c1e...,GPU-77aa...",
//    "rows": [{"collective": "all_reduce", "bytes": 1048576, "count": 262144, "timeUs": 85.1,
//              "algbwGbps": 12.3, "busbwGbps": 23.1, "wrong": 0, "slowestRank": 3}, ...]}
// Members whose value is unknown are left out. The reader checks every member and names the
// offending one; a file from a newer writer (higher version) is refused, not half-read.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sidecar/collectives/probe.h"

namespace ringleader::sidecar {

class PreflightResultError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kPreflightResultVersion = 1;
// A sweep has a few dozen rows; anything larger is not a result.
inline constexpr std::size_t kMaxPreflightRows = 512;
inline constexpr std::size_t kMaxPreflightResultBytes = std::size_t{1} << 20;

struct PreflightResult {
  bool enabled = true;  // false: the job disabled the preflight; only the rendezvous ran
  bool passed = false;
  std::string reason;     // why it failed (rendezvous, verdict, a peer); empty when passed
  std::string backend;    // "gloo" or "nccl"; empty when it failed before the communicator
  std::string transport;  // "NET/IB (mlx5_0:1, GDRDMA) + P2P/CUMEM", "NET/Socket (eth0)", "tcp"
  bool rdma_requested = false;  // RDMA devices or NCCL_IB_* settings were given to the preflight
  std::optional<std::string> rdma_fallback;  // why RDMA was asked for yet NCCL used sockets
  int ranks = 0;        // communicator ranks (Pods x local ranks)
  int local_ranks = 1;  // per Pod
  std::optional<double> rendezvous_seconds;
  double seconds = 0;  // the sweep's duration
  std::optional<double> all_reduce_bus_bandwidth;  // bytes per second, at the largest size
  std::optional<int> slowest_rank;
  std::optional<std::size_t> below_floor_row;  // index into rows
  std::string devices;  // the devices the container was given, as the runtime named them
  std::vector<collectives::ProbeRow> rows;
  bool operator==(const PreflightResult&) const = default;
};

nlohmann::json PreflightResultToJson(const PreflightResult& result);

// Checks and reads a document written by PreflightResultToJson; throws PreflightResultError
// naming `source` and the member, e.g. "preflight.json: rows[2].bytes: must be an integer >= 0".
PreflightResult PreflightResultFromJson(const nlohmann::json& document, const std::string& source);

void WritePreflightResult(const std::string& path, const PreflightResult& result);

// The file's result, or nullopt when the file does not exist (yet). Throws PreflightResultError
// for a file that cannot be read, is larger than kMaxPreflightResultBytes, or does not parse.
std::optional<PreflightResult> ReadPreflightResult(const std::string& path);

}  // namespace ringleader::sidecar
