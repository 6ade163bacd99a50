// The JSON the sidecar serves at /summary and the operator reads from rank 0 (one definition
// for both sides):
//   {"backend": "gloo"|"nccl",
//    "preflight": ""|"Passed"|"Failed",
//    "lastProbeTime": "2026-11-29T18:00:00Z" (RFC 3339 UTC, optional),
//    "allReduceBusBandwidthBytesPerSecond": 1.18e10 (finite number >= 0, optional),
//    "preflightAllReduceBusBandwidthBytesPerSecond": 1.2e10 (the preflight's at its largest
//                                         size, kept when the monitor's probes follow; optional),
//    "slowestRank": 3 (integer >= 0, optional),
//    "transport": "NET/IB (mlx5_0:1, GDRDMA)" (the preflight's, as NCCL named it; optional),
//    "training": {                       (optional: the trainers' own collectives, as the NCCL
//                                         profiler plugin timed them on the GPUs)
//      "collective": "all_reduce",       (the op that moved the most bytes, job-wide)
//      "size": "64MiB",                  (its busiest size bucket, SizeBucket's label)
//      "busBandwidthBytesPerSecond": 1.1e11,  (the median of the reporting ranks' busbw there)
//      "ranksReporting": 4,              (Pod ranks whose trainers reported that cell)
//      "slowestRank": 3,                 (optional: the Pod rank with the lowest busbw there)
//      "slowestRankBusBandwidthBytesPerSecond": 9.0e10},  (optional, with slowestRank)
//    "stall": {                          (optional: present while some ranks of a communicator
//                                         have entered a collective that others have not, for
//                                         the job's stallSeconds; sidecar/service/training_stall.h)
//      "collective": "all_reduce",       (optional: the op numbered `sequence`, when a waiting
//      "bytes": 67108864,                 rank's last started collective is that one; with bytes,
//                                         nccl-tests' size S)
//      "sequence": 18342,                (the collective's 1-based number on its communicator)
//      "communicator": "0x9f3c...",      (its NCCL comm hash: "0x" and 16 lower-case hex digits)
//      "missingRanks": [2],              (communicator ranks that never entered it, ascending,
//                                         at most kMaxStallRanksListed)
//      "missingRankCount": 1,            (all of them, >= the list's length)
//      "missingPods": [2],               (the Pod ranks they run in, ascending, at most
//                                         kMaxStallRanksListed)
//      "waitingRanks": 3,                (communicator ranks that entered it and wait)
//      "waitedSeconds": 95,              (since the last of them entered it)
//      "attempt": 0}}                    (the gang attempt the sidecar serves, so a reader can
//                                         tell an old attempt's stall from the current one's)
// "backend" and the bandwidth are the last probe's: in an operator-made Pod that is the
// preflight's until the native sidecar's own monitor (Gloo unless it shares the trainers'
// devices) reports.
// Unknown members are ignored so either side can add some.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringleader::contract {

// The longest transport description sent (the CRD's status.communication.transport maxLength).
inline constexpr std::size_t kMaxTransportBytes = 256;
// Bounds of training.collective and training.size (the CRD's maxLength for each).
inline constexpr std::size_t kMaxTrainingCollectiveBytes = 32;
inline constexpr std::size_t kMaxTrainingSizeBytes = 16;

// The Pod ranks' training collectives compared at one (collective, size) cell; rank 0's sidecar
// fills it from every rank's report.
struct TrainingSummary {
  std::string collective;  // CollectiveName() or the profiler's op name, at most 32 bytes
  std::string size;        // the `size` label, at most 16 bytes
  double bus_bandwidth = 0;  // bytes per second, finite, >= 0
  int ranks_reporting = 0;   // >= 1
  std::optional<int> slowest_rank;
  std::optional<double> slowest_rank_bus_bandwidth;  // set exactly when slowest_rank is
  bool operator==(const TrainingSummary&) const = default;
};

// The ranks named in a stall's missingRanks and missingPods at most (the counts say how many).
inline constexpr std::size_t kMaxStallRanksListed = 32;

// A collective that some ranks of a communicator entered and others did not, for at least the
// job's stallSeconds; rank 0's sidecar finds it in every rank's report (training_stall.h).
struct StallSummary {
  std::optional<std::string> collective;  // the profiler's op name, at most 32 bytes
  std::optional<std::uint64_t> bytes;     // set exactly when collective is
  std::uint64_t sequence = 0;             // >= 1
  std::string communicator;               // "0x" and 16 lower-case hex digits
  std::vector<int> missing_ranks;         // ascending, 1 to kMaxStallRanksListed
  int missing_rank_count = 0;             // >= missing_ranks.size()
  std::vector<int> missing_pods;          // ascending, 1 to kMaxStallRanksListed
  int waiting_ranks = 0;                  // >= 1
  std::int64_t waited_seconds = 0;        // >= 0
  int attempt = 0;                        // >= 0
  bool operator==(const StallSummary&) const = default;
};

// "0x" and the hash in 16 lower-case hex digits: a stall's `communicator`.
std::string CommunicatorHex(std::uint64_t comm_hash);

struct Summary {
  std::string backend;
  std::string preflight;
  std::string last_probe_time;  // "" when no probe ran yet
  std::optional<double> all_reduce_bus_bandwidth;  // bytes per second
  std::optional<double> preflight_all_reduce_bus_bandwidth;  // bytes per second
  std::optional<int> slowest_rank;
  std::string transport;  // "" when not reported
  std::optional<TrainingSummary> training;
  std::optional<StallSummary> stall;
  bool operator==(const Summary&) const = default;
};

nlohmann::json SummaryToJson(const Summary& summary);

// Parses and checks the JSON above; nullopt with the offending member named in *error
// (e.g. "slowestRank: must be an integer >= 0"). Never throws.
std::optional<Summary> SummaryFromJson(std::string_view text, std::string* error = nullptr);

}  // namespace ringleader::contract
