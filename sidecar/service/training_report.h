// The trainers' collectives compared across Pod ranks. Every sidecar publishes a small report of
// its Pod's collectives (per collective and size: the bytes its trainers' timed calls moved, and
// their latest bus bandwidth) into rank 0's store; rank 0 compares the ranks' reports into
// /summary's `training` member. Pure: no store, no clock.
//
// What "slowest" means with GPU-side timing. The profiler plugin times a collective from its
// first kernel channel's start to its last channel's stop on the GPU. A collective cannot finish
// on any rank before every rank has joined it, so a rank that arrives late (a slow data loader,
// a straggling host) makes the others wait inside their kernels: their kernels take longer, and
// the late rank's own kernel, started last, is the shortest. The rank with the lowest bus
// bandwidth here is therefore the rank whose kernels took longest, which is where the fabric or
// the GPU is slow (a slow link, a throttled GPU, a congested NIC) or where the others waited. A
// rank that is late to every collective shows as the fastest, not the slowest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/contract/summary.h"

namespace ringleader::sidecar {

// The store key of Pod rank `rank`'s report: "training/report/<rank>".
std::string TrainingReportKey(int rank);

// A report holds at most this many cells (the ones with the most timed bytes) and progress
// entries (the lowest (communicator, rank) pairs: a Pod of 8 GPUs in a handful of data-,
// tensor- and pipeline-parallel groups has a few dozen); encoded, at most kMaxReportBytes.
inline constexpr std::size_t kMaxReportCells = 32;
inline constexpr std::size_t kMaxReportProgress = 128;
inline constexpr std::size_t kMaxReportBytes = 48 * 1024;

struct ReportCell {
  std::string collective;  // profiler::OpName: "all_reduce", ..., "send", "recv"
  std::string size;        // sidecar_metrics' SizeBucket label: "1B" ... "16GiB"
  // Bytes (nccl-tests' size S, summed) of the Pod's timed calls since the sidecar started.
  double timed_bytes = 0;
  // The Pod's bus bandwidth over its trainers' latest interval with a timed call, bytes/s.
  double bus_bandwidth = 0;
  bool operator==(const ReportCell&) const = default;
};

// One communicator rank's collective progress, from a trainer process of this Pod that is still
// connected (profiler::CollectiveProgress; the stall comparison, training_stall.h, reads it).
struct ReportProgress {
  std::uint64_t communicator = 0;  // NCCL's comm hash, shared by the communicator's ranks
  std::uint32_t rank = 0;          // the communicator rank, below `ranks`
  std::uint32_t ranks = 1;         // the communicator's size
  std::uint64_t started = 0;       // collectives entered: the last one's sequence number
  std::uint64_t completed = 0;     // <= started
  // The collective numbered `started` (profiler::OpName of a collective op), its nccl-tests size
  // S and when the rank entered it (the trainer host's realtime clock, ms); "" and 0 while
  // started is 0.
  std::string last_collective;
  std::uint64_t last_bytes = 0;
  std::uint64_t last_started_unix_ms = 0;
  // When the plugin took the snapshot this came from (the same clock): the progress held then.
  std::uint64_t as_of_unix_ms = 0;
  bool operator==(const ReportProgress&) const = default;
};

struct TrainingReport {
  std::vector<ReportCell> cells;
  std::vector<ReportProgress> progress;
  bool operator==(const TrainingReport&) const = default;
};

// {"cells":[{"collective":"all_reduce","size":"64MiB","timedBytes":1.2e12,
//            "busBandwidthBytesPerSecond":1.1e11}, ...],
//  "progress":[{"communicator":"0x9f3c...","rank":2,"ranks":4,"started":18341,
//               "completed":18341,"lastCollective":"all_reduce","lastBytes":67108864,
//               "lastStartedUnixMs":1767225600000,"asOfUnixMs":1767225604000}, ...]}
// The kMaxReportCells cells with the most timed bytes, and only cells with timed bytes > 0; the
// kMaxReportProgress entries lowest by (communicator, rank). lastCollective and lastBytes are
// left out while started is 0.
std::string EncodeTrainingReport(const TrainingReport& report);

// nullopt for anything that is not such a report: not JSON, larger than kMaxReportBytes, more
// than kMaxReportCells cells or kMaxReportProgress entries, a collective or size that is not one
// of the labels, a number that is not finite and >= 0, a (collective, size) or (communicator,
// rank) twice, a rank not below ranks, completed above started, or a last collective that is
// missing while started > 0, present while it is 0, or not a collective op. "progress" may be
// absent (none). Never throws.
std::optional<TrainingReport> DecodeTrainingReport(std::string_view text);

// Each rank's report decoded; reports that do not decode and negative ranks are left out.
std::map<int, TrainingReport> DecodeTrainingReports(const std::map<int, std::string>& reports);

// Compares the Pod ranks' reports (rank -> the stored text; a rank without a report is simply
// absent; a report that does not decode is skipped). Picks the (collective, size) cell with the
// most timed bytes summed over the ranks (ties: the lower collective, then size, by name) and
// gives the median bus bandwidth of the ranks reporting it (the mean of the middle two for an
// even count), how many report it, and, when at least 2 do, the rank with the lowest bus
// bandwidth there (ties: the lower rank). nullopt when no report has a cell.
std::optional<contract::TrainingSummary> CompareTrainingReports(
    const std::map<int, std::string>& reports);
// The same over reports decoded already.
std::optional<contract::TrainingSummary> CompareTrainingReports(
    const std::map<int, TrainingReport>& reports);

}  // namespace ringleader::sidecar
