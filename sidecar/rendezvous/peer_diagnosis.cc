#include "sidecar/rendezvous/peer_diagnosis.h"

#include <algorithm>
#include <thread>

namespace ringleader::rendezvous {
namespace {

std::string SurvivorKey(std::string_view prefix, std::uint32_t rank) {
  return std::string(prefix) + "failed/" + std::to_string(rank);
}

PeerDiagnosis StoreGone(std::string error) {
  PeerDiagnosis diagnosis;
  diagnosis.store_gone = true;
  diagnosis.store_error = std::move(error);
  return diagnosis;
}

}  // namespace

PeerDiagnosis DiagnosePeers(StoreClient& client, std::string_view key_prefix,
                            std::chrono::milliseconds settle) {
  const auto marked = client.Set(SurvivorKey(key_prefix, client.rank()), "1");
  if (!marked) {
    return StoreGone(marked.error());
  }
  std::this_thread::sleep_for(settle);
  const auto connected = client.Get(kConnectedRanksKey);
  if (!connected) {
    return StoreGone(connected.error());
  }
  std::vector<std::string> survivor_keys;
  for (std::uint32_t rank = 0; rank < client.world_size(); ++rank) {
    survivor_keys.push_back(SurvivorKey(key_prefix, rank));
  }
  const auto survivors = client.MultiGet(survivor_keys);
  if (!survivors) {
    return StoreGone(survivors.error());
  }
  const std::vector<std::uint32_t> alive = ParseMissingRanks(connected.value().value_or(""));
  PeerDiagnosis diagnosis;
  for (std::uint32_t rank = 0; rank < client.world_size(); ++rank) {
    const bool is_connected = std::find(alive.begin(), alive.end(), rank) != alive.end();
    if (!is_connected && !survivors.value()[rank].has_value()) {
      diagnosis.gone.push_back(rank);
    }
  }
  return diagnosis;
}

std::string DescribePeerDiagnosis(const PeerDiagnosis& diagnosis, std::uint32_t world_size) {
  const std::string world = std::to_string(world_size);
  if (diagnosis.store_gone) {
    return "rank 0 of " + world + " is gone (it served the store: " + diagnosis.store_error + ")";
  }
  if (diagnosis.gone.empty()) {
    // No peer died: the error that follows is this rank's own, or a peer is stuck.
    return "no rank is gone (all " + world + " still hold their store connection)";
  }
  std::string names;
  for (const auto rank : diagnosis.gone) {
    names += (names.empty() ? "" : ", ") + std::to_string(rank);
  }
  const bool one = diagnosis.gone.size() == 1;
  return (one ? "rank " : "ranks ") + names + " of " + world + (one ? " is" : " are") +
         " gone (lost the store connection)";
}

}  // namespace ringleader::rendezvous
