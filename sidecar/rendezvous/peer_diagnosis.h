// After a collective failed: which peers are gone (their process died), told apart from peers
// that are stuck or failed too. The store server knows who still holds a connection
// (kConnectedRanksKey); each survivor first marks itself, so one that already exited after its
// own failure is not taken for dead.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/store_client.h"

namespace ringleader::rendezvous {

struct PeerDiagnosis {
  bool store_gone = false;  // the store (rank 0, which serves it) is unreachable
  std::string store_error;  // why, when store_gone
  std::vector<std::uint32_t> gone;  // ranks neither connected nor marked as survivors, ascending
};

// Marks this client's rank as a survivor under key_prefix + "failed/<rank>", waits `settle` for
// the server to notice dead peers' sockets closing, then reads who is connected and who marked.
PeerDiagnosis DiagnosePeers(StoreClient& client, std::string_view key_prefix,
                            std::chrono::milliseconds settle = std::chrono::milliseconds(200));

// "rank 2 of 4 is gone (lost the store connection)", "ranks 1, 3 of 4 are gone (...)",
// "rank 0 of 4 is gone (it served the store: <error>)" or "no rank is gone (all 4 still hold
// their store connection)".
std::string DescribePeerDiagnosis(const PeerDiagnosis& diagnosis, std::uint32_t world_size);

}  // namespace ringleader::rendezvous
