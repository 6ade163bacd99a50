// The join protocol: publish, barrier, read.
#include "sidecar/rendezvous/join.h"

#include <algorithm>

namespace ringleader::rendezvous {
namespace {

// How many missing ranks an error lists by number before it only counts the rest.
constexpr std::size_t kListedRanks = 16;

}  // namespace

std::string RankRecordKey(std::string_view prefix, std::uint32_t rank) {
  return std::string(prefix) + std::to_string(rank);
}

std::string FormatMissingRanks(std::vector<std::uint32_t> missing, std::uint32_t world_size,
                               std::chrono::seconds within) {
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  std::string text = missing.size() == 1 ? "rank " : "ranks ";
  const std::size_t listed = std::min(missing.size(), kListedRanks);
  for (std::size_t i = 0; i < listed; ++i) {
    if (i > 0) {
      text += ", ";
    }
    text += std::to_string(missing[i]);
  }
  if (missing.size() > listed) {
    text += ", ... and " + std::to_string(missing.size() - listed) + " more";
  }
  return text + " of " + std::to_string(world_size) + " did not join within " +
         std::to_string(within.count()) + " s";
}

Result<JoinResult> Join(StoreClient& client, const JoinRequest& request) {
  using R = Result<JoinResult>;
  std::vector<std::uint32_t> ranks;
  if (request.fetch_all) {
    ranks.resize(client.world_size());
    for (std::uint32_t r = 0; r < client.world_size(); ++r) {
      ranks[r] = r;
    }
  } else {
    for (std::uint32_t r : request.fetch_ranks) {
      if (r < client.world_size()) {
        ranks.push_back(r);
      }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  }
  std::vector<std::string> keys;
  keys.reserve(ranks.size());
  for (std::uint32_t r : ranks) {
    keys.push_back(RankRecordKey(request.key_prefix, r));
  }
  // Publish, meet and read in one round trip: the server holds the reads behind the barrier.
  Result<SetBarrierGetOutcome> joined =
      client.SetBarrierMultiGet(RankRecordKey(request.key_prefix, client.rank()), request.record,
                                request.barrier_name, request.timeout, keys);
  if (!joined) {
    return R::Failure(joined.error());
  }
  const BarrierOutcome& met = joined.value().barrier;
  if (met.timed_out) {
    const auto within =
        std::max(std::chrono::ceil<std::chrono::seconds>(request.timeout), std::chrono::seconds(1));
    return R::Failure(FormatMissingRanks(met.missing_ranks, client.world_size(), within));
  }
  const std::vector<std::optional<std::string>>& values = joined.value().values;
  JoinResult result;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (!values[i]) {
      // Every rank publishes before it enters the barrier, so this is a different job's store.
      return R::Failure(client.server_name() + ": rank " + std::to_string(ranks[i]) +
                        " passed the join barrier without a record at " + keys[i]);
    }
    result.records.emplace(ranks[i], *values[i]);
  }
  return result;
}

}  // namespace ringleader::rendezvous
