// Rank 0's stall verdict from the ranks' collective progress (training_stall.h).
#include "sidecar/service/training_stall.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace ringleader::sidecar {
namespace {

// One communicator rank's progress and the Pod rank that reported it.
struct Reported {
  const ReportProgress* progress = nullptr;
  int pod = 0;
};

// A communicator's stall before the choice between communicators.
struct Candidate {
  std::uint64_t lead_unix_ms = 0;  // T: the last waiting rank's entry
  contract::StallSummary stall;
};

std::optional<Candidate> Judge(std::uint64_t communicator, const std::map<std::uint32_t, Reported>& ranks,
                               std::uint64_t now_unix_ms, const StallOptions& options) {
  std::uint64_t fewest = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t most = 0;
  for (const auto& [rank, reported] : ranks) {
    fewest = std::min(fewest, reported.progress->started);
    most = std::max(most, reported.progress->started);
  }
  if (ranks.size() < 2 || fewest == most) {
    return std::nullopt;  // every rank between collectives, or in the same one: idle
  }
  const std::uint64_t sequence = fewest + 1;
  std::uint64_t lead = 0;
  int waiting = 0;
  const ReportProgress* at_sequence = nullptr;  // a waiting rank whose last started is N
  for (const auto& [rank, reported] : ranks) {
    const ReportProgress& progress = *reported.progress;
    if (progress.started >= sequence) {
      ++waiting;
      lead = std::max(lead, progress.last_started_unix_ms);
      if (progress.started == sequence && at_sequence == nullptr) {
        at_sequence = &progress;
      }
    }
  }
  const auto stall_after = static_cast<std::uint64_t>(std::max<std::int64_t>(0, options.stall_after.count()));
  std::vector<int> missing;
  std::set<int> pods;
  for (const auto& [rank, reported] : ranks) {
    const ReportProgress& progress = *reported.progress;
    if (progress.started < sequence && progress.as_of_unix_ms >= lead &&
        progress.as_of_unix_ms - lead >= stall_after) {
      missing.push_back(static_cast<int>(rank));
      pods.insert(reported.pod);
    }
  }
  if (missing.empty()) {
    return std::nullopt;
  }
  Candidate candidate;
  candidate.lead_unix_ms = lead;
  contract::StallSummary& stall = candidate.stall;
  if (at_sequence != nullptr) {
    stall.collective = at_sequence->last_collective;
    stall.bytes = at_sequence->last_bytes;
  }
  stall.sequence = sequence;
  stall.communicator = contract::CommunicatorHex(communicator);
  stall.missing_rank_count = static_cast<int>(missing.size());
  missing.resize(std::min(missing.size(), contract::kMaxStallRanksListed));
  stall.missing_ranks = std::move(missing);
  for (const int pod : pods) {
    if (stall.missing_pods.size() == contract::kMaxStallRanksListed) {
      break;
    }
    stall.missing_pods.push_back(pod);
  }
  stall.waiting_ranks = waiting;
  stall.waited_seconds = now_unix_ms > lead ? static_cast<std::int64_t>((now_unix_ms - lead) / 1000) : 0;
  stall.attempt = options.attempt;
  return candidate;
}

}  // namespace

std::optional<contract::StallSummary> FindStall(const std::map<int, TrainingReport>& reports,
                                                std::uint64_t now_unix_ms,
                                                const StallOptions& options) {
  // communicator -> communicator rank -> the report with the latest snapshot of it.
  std::map<std::uint64_t, std::map<std::uint32_t, Reported>> communicators;
  for (const auto& [pod, report] : reports) {
    for (const ReportProgress& progress : report.progress) {
      Reported& seen = communicators[progress.communicator][progress.rank];
      // Pods arrive in ascending order, so a tie keeps the lower Pod rank.
      if (seen.progress == nullptr || progress.as_of_unix_ms > seen.progress->as_of_unix_ms) {
        seen = Reported{&progress, pod};
      }
    }
  }
  std::optional<Candidate> longest;
  for (const auto& [communicator, ranks] : communicators) {
    std::optional<Candidate> candidate = Judge(communicator, ranks, now_unix_ms, options);
    // Communicators arrive in ascending order, so a tie keeps the lower hash.
    if (candidate && (!longest || candidate->lead_unix_ms < longest->lead_unix_ms)) {
      longest = std::move(candidate);
    }
  }
  if (!longest) {
    return std::nullopt;
  }
  return std::move(longest->stall);
}

}  // namespace ringleader::sidecar
