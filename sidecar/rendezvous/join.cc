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

namespace {

// The ranks whose records a join reads, ascending.
std::vector<std::uint32_t> RanksToFetch(const JoinRequest& request, std::uint32_t world_size) {
  std::vector<std::uint32_t> ranks;
  if (request.fetch_all) {
    ranks.resize(world_size);
    for (std::uint32_t r = 0; r < world_size; ++r) {
      ranks[r] = r;
    }
    return ranks;
  }
  for (std::uint32_t r : request.fetch_ranks) {
    if (r < world_size) {
      ranks.push_back(r);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// Publish, meet and read in one round trip: the server holds the reads behind the barrier.
SetBarrierGet JoinRequests(const JoinRequest& request, std::uint32_t rank,
                           const std::vector<std::uint32_t>& ranks) {
  SetBarrierGet requests{RankRecordKey(request.key_prefix, rank), request.record,
                         request.barrier_name, request.timeout, {}};
  requests.keys.reserve(ranks.size());
  for (std::uint32_t r : ranks) {
    requests.keys.push_back(RankRecordKey(request.key_prefix, r));
  }
  return requests;
}

// The join's result from the replies; sets *timed_out for a barrier timeout.
Result<JoinResult> JoinOutcome(const Result<SetBarrierGetOutcome>& joined,
                               const JoinRequest& request, const SetBarrierGet& requests,
                               const std::vector<std::uint32_t>& ranks, std::uint32_t world_size,
                               const std::string& server_name, bool* timed_out) {
  using R = Result<JoinResult>;
  if (!joined) {
    return R::Failure(joined.error());
  }
  const BarrierOutcome& met = joined.value().barrier;
  if (met.timed_out) {
    *timed_out = true;
    const auto within =
        std::max(std::chrono::ceil<std::chrono::seconds>(request.timeout), std::chrono::seconds(1));
    return R::Failure(FormatMissingRanks(met.missing_ranks, world_size, within));
  }
  const std::vector<std::optional<std::string>>& values = joined.value().values;
  JoinResult result;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (!values[i]) {
      // Every rank publishes before it enters the barrier, so this is a different job's store.
      return R::Failure(server_name + ": rank " + std::to_string(ranks[i]) +
                        " passed the join barrier without a record at " + requests.keys[i]);
    }
    result.records.emplace(ranks[i], *values[i]);
  }
  return result;
}

}  // namespace

Result<JoinResult> Join(StoreClient& client, const JoinRequest& request) {
  const std::vector<std::uint32_t> ranks = RanksToFetch(request, client.world_size());
  const SetBarrierGet requests = JoinRequests(request, client.rank(), ranks);
  const Result<SetBarrierGetOutcome> joined = client.SetBarrierMultiGet(
      requests.key, requests.value, requests.barrier, requests.timeout, requests.keys);
  bool timed_out = false;
  return JoinOutcome(joined, request, requests, ranks, client.world_size(), client.server_name(),
                     &timed_out);
}

ConnectedJoin ConnectAndJoin(const ClientOptions& options, const JoinRequest& request) {
  const std::vector<std::uint32_t> ranks = RanksToFetch(request, options.world_size);
  const SetBarrierGet requests = JoinRequests(request, options.rank, ranks);
  ConnectedJoin outcome;
  Result<std::unique_ptr<StoreClient>> connected =
      StoreClient::ConnectSendingSetBarrierMultiGet(options, requests);
  if (!connected) {
    outcome.error = connected.error();
    return outcome;
  }
  outcome.client = std::move(connected).value();
  Result<JoinResult> joined =
      JoinOutcome(outcome.client->AwaitSetBarrierMultiGet(requests), request, requests, ranks,
                  options.world_size, outcome.client->server_name(), &outcome.timed_out);
  if (joined) {
    outcome.joined = std::move(joined).value();
  } else {
    outcome.error = joined.error();
  }
  return outcome;
}

}  // namespace ringleader::rendezvous
