// The example trainer's rendezvous as a client of an agent store (TORCHELASTIC_USE_AGENT_STORE=
// True): rank 0's sidecar serves PyTorch's TCPStore protocol on MASTER_PORT and every rank, rank 0
// included, only connects. The native store's barrier and its list of connected ranks have no
// TCPStore counterpart, so PyTorch-style primitives stand in (keys relative to the client's
// prefix, under the given key prefix):
//   join       each rank sets ranks/<rank> (its address) and adds 1 to joined; the rank whose add
//              makes world_size sets all-joined, which every rank waits for. Past the deadline the
//              ranks without a ranks/<r> key are named, as the native join names them.
//   roll call  which peers are gone after a collective failed: every rank keeps a second
//              connection waiting on roll-call; a survivor sets roll-call and present/<rank>,
//              every live rank's responder answers with its present/<rank>, and those that did
//              not answer within the settle time are gone. A rank stuck in its own work still
//              answers, so only dead processes are named.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/rendezvous/protocol.h"
#include "sidecar/rendezvous/torch_store_client.h"

namespace ringleader::examples {

struct AgentStoreJoin {
  std::string key_prefix;  // e.g. "example-trainer/"
  int rank = 0;
  int world_size = 1;
  std::string record;  // this rank's address
  std::chrono::milliseconds timeout{60'000};
};

// Fails with "rank 3 of 4 did not join within 60 s" (join.h's FormatMissingRanks) or the
// store's own error.
rendezvous::Result<rendezvous::Ok> JoinAgentStore(rendezvous::TorchStoreClient& client,
                                                  const AgentStoreJoin& join);

// Answers one roll call for its rank, from a thread on a connection of its own (the trainer's
// first connection serves Gloo and may be busy).
class RollCallResponder {
 public:
  // Connects with `options` (its stop flag is the responder's) and starts waiting.
  static rendezvous::Result<std::unique_ptr<RollCallResponder>> Start(
      rendezvous::TorchStoreClientOptions options, std::string key_prefix, int rank);
  // Stops the thread within 100 ms.
  ~RollCallResponder();
  RollCallResponder(const RollCallResponder&) = delete;
  RollCallResponder& operator=(const RollCallResponder&) = delete;

 private:
  // Lets Start use make_unique while the constructor stays out of reach.
  class Passkey {
    friend class RollCallResponder;
    Passkey() = default;
  };

 public:
  explicit RollCallResponder(Passkey) {}

 private:
  void Answer(std::string key_prefix, int rank);

  std::atomic<bool> stop_{false};
  std::unique_ptr<rendezvous::TorchStoreClient> client_;
  std::thread thread_;
};

struct RollCall {
  bool store_gone = false;  // the store did not answer
  std::string store_error;  // why, when store_gone
  std::vector<std::uint32_t> absent;  // ranks that did not answer, ascending
};

// Calls the roll (marking this rank present) and waits up to `settle` for every rank's answer.
RollCall TakeRollCall(rendezvous::TorchStoreClient& client, const std::string& key_prefix, int rank,
                      int world_size, std::chrono::milliseconds settle = std::chrono::seconds(1));

// "rank 2 of 4 is gone (it did not answer the roll call within 1 s)", "ranks 1, 3 of 4 are gone
// (...)", "the trainers' store is gone (<error>)" or "no rank is gone (all 4 answered the roll
// call)".
std::string DescribeRollCall(const RollCall& roll_call, int world_size,
                             std::chrono::milliseconds settle = std::chrono::seconds(1));

}  // namespace ringleader::examples
