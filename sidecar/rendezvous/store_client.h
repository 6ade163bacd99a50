// A synchronous client of the rendezvous store: one TCP connection, poll-based timeouts, used
// from plain threads (and behind Gloo's store interface). Failures are values naming the server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/blocking_socket.h"
#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous {

// How often a blocked Connect or op looks at ClientOptions::stop.
inline constexpr std::chrono::milliseconds kStopCheckInterval = blocking::kStopCheckInterval;

struct ClientOptions {
  std::string host;  // a name or an address
  std::uint16_t port = 0;
  std::string token;
  std::uint32_t rank = 0;
  // The ranks of this client's world: the store's barriers wait for them, and diagnostics
  // (join.h, peer_diagnosis.h) read their records.
  std::uint32_t world_size = 1;
  // The store's rank bound, sent in the Hello (ServerOptions::max_ranks); 0 means world_size.
  // An elastic job's Pods all send its maxReplicas, whatever their world.
  std::uint32_t max_ranks = 0;
  // The gang attempt this rank belongs to, sent in the Hello. When set, a store that serves
  // another attempt refuses the rank and Connect retries, as it would a busy server: during a
  // gang restart the old rank 0 can still answer under the job's DNS name with the same token.
  std::optional<std::uint32_t> attempt = std::nullopt;
  // Connect retries until here (refused, reset, unresolvable, handshake failed).
  std::chrono::steady_clock::time_point deadline;
  // Exponential backoff with full jitter between attempts.
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // For one connect + handshake attempt, and for each op; Wait and Barrier add their own timeout.
  std::chrono::milliseconds io_timeout{30'000};
  std::size_t max_frame_payload = kDefaultMaxPayload;
  // Called after each failed attempt that will be retried, with why it failed (logs, tests).
  std::function<void(std::string_view error)> on_attempt_failed;
  // The owner's stop request (SIGTERM), or null. Once it is true, Connect (dialing, handshake,
  // backoff) and every op of the client give up within kStopCheckInterval with an error ending
  // in "stopped" instead of waiting for their deadline; the connection is then broken. Must
  // outlive the client.
  const std::atomic<bool>* stop = nullptr;
};

// A Wait's or a Barrier's outcome: done, or timed out with what was missing.
struct WaitOutcome {
  bool timed_out = false;
  std::vector<std::string> missing_keys;
};
struct BarrierOutcome {
  bool timed_out = false;
  std::vector<std::uint32_t> missing_ranks;  // ascending
};
struct SetBarrierGetOutcome {
  BarrierOutcome barrier;
  std::vector<std::optional<std::string>> values;  // one per key; empty when the barrier timed out
};
// A rank's join: publish key = value, meet at barrier (waiting at most timeout), read keys.
struct SetBarrierGet {
  std::string key;
  std::string value;
  std::string barrier;
  std::chrono::milliseconds timeout{0};
  std::vector<std::string> keys;
};

// The missing list a TimedOut carries ("3,7", possibly ending in "...") as ranks; anything that
// is not a rank is skipped.
std::vector<std::uint32_t> ParseMissingRanks(std::string_view text);

class StoreClient {
 public:
  // Connects and authenticates, retrying until options.deadline (or options.stop). A Refused
  // (wrong token, bad rank) is returned at once. Errors read like "rendezvous server 10.0.0.1:29500 (rank 0)
  // unreachable for 300 s: connection refused".
  static Result<std::unique_ptr<StoreClient>> Connect(const ClientOptions& options);
  // Connect, with SetBarrierMultiGet's requests riding in the Hello's write, behind its early
  // proof (protocol.h): a rank joins with one write and one round trip besides the barrier's wait.
  // The barrier waits at most request.timeout from this call, however long connecting takes.
  // Fails as Connect does; once connected, AwaitSetBarrierMultiGet(request) reads the replies.
  static Result<std::unique_ptr<StoreClient>> ConnectSendingSetBarrierMultiGet(
      const ClientOptions& options, const SetBarrierGet& request);
  // The replies to what ConnectSendingSetBarrierMultiGet sent, as SetBarrierMultiGet returns them.
  Result<SetBarrierGetOutcome> AwaitSetBarrierMultiGet(const SetBarrierGet& request);

  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  // Each op is one request and its reply; calls from several threads are serialised. After an
  // I/O failure (server gone, timeout) every later call fails at once with the same error.
  Result<Ok> Set(std::string_view key, std::string_view value);
  // nullopt when the key does not exist.
  Result<std::optional<std::string>> Get(std::string_view key);
  // Many Gets pipelined on the connection; one entry per key, in order.
  Result<std::vector<std::optional<std::string>>> MultiGet(const std::vector<std::string>& keys);
  Result<WaitOutcome> Wait(const std::vector<std::string>& keys,
                           std::chrono::milliseconds timeout);
  // The new value.
  Result<std::int64_t> Add(std::string_view key, std::int64_t delta);
  // The value stored after the op (see store_server.h for the semantics).
  Result<std::string> CompareSet(std::string_view key, std::string_view expected,
                                 std::string_view desired);
  Result<BarrierOutcome> Barrier(std::string_view name, std::chrono::milliseconds timeout);
  // Set, Barrier and a MultiGet in one write. The server answers a connection's requests in
  // order, so the Gets are answered once the barrier completes: a join costs one round trip
  // besides the wait, where three calls would cost three.
  Result<SetBarrierGetOutcome> SetBarrierMultiGet(std::string_view key, std::string_view value,
                                                  std::string_view barrier,
                                                  std::chrono::milliseconds timeout,
                                                  const std::vector<std::string>& keys);

  std::uint32_t rank() const { return rank_; }
  std::uint32_t world_size() const { return world_size_; }
  // "rendezvous server host:port (rank 0)", as errors name it.
  const std::string& server_name() const { return server_name_; }

 private:
  // Lets Connect use make_unique while the constructor stays out of reach.
  class Passkey {
    friend class StoreClient;
    Passkey() = default;
  };

 public:
  StoreClient(Passkey, int fd, FrameDecoder decoder, std::string server_name,
              const ClientOptions& options);

 private:
  // Connect, with ahead()'s request frames (made anew for each try) sent in the write that
  // authenticates; their replies are left for the client to read.
  static Result<std::unique_ptr<StoreClient>> ConnectSending(
      const ClientOptions& options, const std::function<std::string()>& ahead);
  // Sends frames (empty: they were sent already) and reads the join's replies. The caller holds
  // mutex_.
  Result<SetBarrierGetOutcome> SetBarrierGetReplies(const SetBarrierGet& request,
                                                    const std::string& frames);

  // Sends the frames and reads one reply per frame, all before deadline.
  Result<std::vector<Message>> Exchange(std::string_view op, const std::string& frames,
                                        std::size_t replies,
                                        std::chrono::steady_clock::time_point deadline);
  Result<Message> Call(std::string_view op, const std::string& frame,
                       std::chrono::milliseconds extra_timeout = {});
  std::string Failure(std::string_view op, std::string_view what);
  // The replies to Gets from replies[first] on; an unexpected reply marks the connection broken.
  Result<std::vector<std::optional<std::string>>> GetValues(std::vector<Message>& replies,
                                                            std::size_t first);
  Result<BarrierOutcome> BarrierFrom(const Message& reply);

  std::mutex mutex_;
  int fd_ = -1;
  std::string server_name_;
  std::uint32_t rank_ = 0;
  std::uint32_t world_size_ = 1;
  std::chrono::milliseconds io_timeout_;
  const std::atomic<bool>* stop_;  // ClientOptions::stop
  FrameDecoder decoder_;
  std::optional<std::string> broken_;  // the first I/O failure, repeated thereafter
};

}  // namespace ringleader::rendezvous
