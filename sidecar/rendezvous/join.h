// The join protocol on top of the store client: every rank publishes a small record (its
// address), all meet at a barrier, then each reads the records it needs (rank 0's at least).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/protocol.h"
#include "sidecar/rendezvous/store_client.h"

namespace ringleader::rendezvous {

struct JoinRequest {
  std::string record;  // this rank's record, e.g. its pod IP or "ip:port"
  // For the barrier, from the call; also the figure the timeout error names.
  std::chrono::milliseconds timeout{300'000};
  // Whose records to read after the barrier; with fetch_all, everyone's (pipelined, but still
  // world_size reads).
  std::vector<std::uint32_t> fetch_ranks{0};
  bool fetch_all = false;
  std::string key_prefix = "ranks/";  // a record lives at key_prefix + decimal rank
  std::string barrier_name = "join";
};

struct JoinResult {
  std::map<std::uint32_t, std::string> records;  // rank -> record, for the ranks fetched
};

// The store key of a rank's record.
std::string RankRecordKey(std::string_view prefix, std::uint32_t rank);

// "rank 3 of 8 did not join within 300 s" / "ranks 3, 7 of 8 did not join within 300 s"; long
// lists name the first few and count the rest ("ranks 0, 1, ... and 4090 more of 4096 ...").
std::string FormatMissingRanks(std::vector<std::uint32_t> missing, std::uint32_t world_size,
                               std::chrono::seconds within);

// Publishes request.record under this client's rank, waits at the barrier for all world_size
// ranks, then reads the requested records. A barrier timeout fails with FormatMissingRanks.
Result<JoinResult> Join(StoreClient& client, const JoinRequest& request);

struct ConnectedJoin {
  std::unique_ptr<StoreClient> client;  // null when connecting failed
  std::string error;  // why connecting or joining failed (as Connect and Join say); empty if not
  bool timed_out = false;  // the join failed at the barrier's timeout, naming the missing ranks
  JoinResult joined;  // when error is empty
};

// StoreClient::Connect and Join in one write (StoreClient::ConnectSendingSetBarrierMultiGet):
// the way a rank meets its peers.
ConnectedJoin ConnectAndJoin(const ClientOptions& options, const JoinRequest& request);

}  // namespace ringleader::rendezvous
