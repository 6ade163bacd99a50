// Stall detection: rank 0's sidecar compares every Pod rank's collective progress (the progress
// entries of training_report.h, from the profiler plugin) into /summary's `stall`. Pure: the
// reports and the time in, the verdict out; no store, no clock.
//
// The rule, per communicator (one NCCL comm hash; its ranks make the same collectives in the
// same order). Among the communicator ranks some report, let m be the fewest collectives any of
// them started. When others started more, collective N = m + 1 is one that some ranks entered
// (the waiting ranks, started >= N) and the others (missing, started = m) did not. Let T be the
// latest time a waiting rank entered its last collective (each rank's own clock; a rank that
// went on past N entered N before that, so T is when every waiting rank had entered N at the
// latest). A missing rank is named when its own latest snapshot, taken at or after
// T + stall_after, still says it had not entered N: the rank's own word, not the report's age,
// so a report that is late on its way (the plugin's interval, the sidecar's, rank 0's) can only
// delay a verdict, never make one. Clocks of different hosts are compared here (NTP keeps them
// within milliseconds of each other; stall_after is at least seconds).
//
// Idle is no stall: ranks that all started the same number of collectives (and completed them,
// or not) are between collectives, or all inside one, however long that lasts; nothing is
// reported. A rank whose reports stop (its sidecar is gone or cut off) keeps its last report,
// whose snapshot time stops moving, so it is never named: its Pod's failure is the failure
// policy's to handle.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

#include "sidecar/contract/summary.h"
#include "sidecar/service/training_report.h"

namespace ringleader::sidecar {

struct StallOptions {
  // How long the missing ranks' own snapshots must show them behind after the others entered
  // the collective (the job's spec.communication.telemetry.stallSeconds).
  std::chrono::milliseconds stall_after{std::chrono::seconds(120)};
  int attempt = 0;  // the gang attempt, copied into the verdict
};

// The stall of the communicator that has waited longest (ties: the lower comm hash), or nullopt.
// `reports` maps Pod rank to its decoded report; `now_unix_ms` is rank 0's realtime clock, for
// waitedSeconds only. A (communicator, rank) reported by two Pods counts once, from the report
// with the later snapshot (ties: the lower Pod rank). The op and size are those of a waiting
// rank whose last started collective is N (the lowest such rank), absent when every waiting rank
// has gone past N.
std::optional<contract::StallSummary> FindStall(const std::map<int, TrainingReport>& reports,
                                                std::uint64_t now_unix_ms,
                                                const StallOptions& options);

}  // namespace ringleader::sidecar
