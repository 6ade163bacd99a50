// The rendezvous store's TCP server: one Boost.Asio event loop on one thread it owns serves every
// connection (tens of thousands), authenticates each by the job token, then answers store ops.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/protocol.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace ringleader::rendezvous {

// Another server that shares the store's event loop and thread (the TCPStore-protocol server on
// MASTER_PORT), so one thread serves every rendezvous connection of the Pod.
class LoopGuest {
 public:
  virtual ~LoopGuest() = default;
  // On the loop's thread when the store stops: close the listener and every connection, so the
  // loop runs dry. The guest is destroyed after the loop's thread has ended.
  virtual void Shutdown() = 0;
};

// Why the server closed a connection; the metrics layer labels by these, so the set is fixed.
namespace refusal {
inline constexpr std::string_view kBadFrame = "bad_frame";  // bad header or undecodable handshake
inline constexpr std::string_view kUnsupportedVersion = "unsupported_version";
inline constexpr std::string_view kAuthenticationFailed = "authentication_failed";
inline constexpr std::string_view kBadRank = "bad_rank";  // rank >= the store's rank bound
inline constexpr std::string_view kWorldSizeMismatch = "world_size_mismatch";
inline constexpr std::string_view kHandshakeTimeout = "handshake_timeout";
inline constexpr std::string_view kProtocolViolation = "protocol_violation";  // e.g. Set before auth
inline constexpr std::string_view kTooManyConnections = "too_many_connections";
inline constexpr std::string_view kInternalError = "internal_error";  // the CSPRNG failed
// A valid early proof outside the server's window, or one it has welcomed before (auth.h).
inline constexpr std::string_view kStaleProof = "stale_proof";
// A Hello for another gang attempt than the one the store serves.
inline constexpr std::string_view kAttemptMismatch = "attempt_mismatch";
}  // namespace refusal

struct ServerOptions {
  std::string bind_address;  // "" or "0.0.0.0": all IPv4 interfaces; "::" for IPv6
  std::uint16_t port = 0;    // 0: an ephemeral port, see StoreServer::port()
  std::string token;         // the job token; empty accepts nobody
  // The ranks a Barrier waits for (0 .. world_size-1).
  std::uint32_t world_size = 1;
  // The store's rank bound: a Hello must carry it as its world_size and a rank below it. 0 means
  // world_size. An elastic job's store accepts the ranks its world may grow to (maxReplicas)
  // while its first barrier waits for the Pods it started with; a rank at or above world_size
  // that enters a Barrier is answered Error.
  std::uint32_t max_ranks = 0;
  // The gang attempt this store serves: a Hello for another is refused, and kAttemptKey answers
  // it (see protocol.h).
  std::uint32_t attempt = 0;
  // How far a Hello's sent_at_ms may be from this server's clock for its early proof to be
  // welcomed (auth.h); negative welcomes none, so every client is challenged.
  std::chrono::milliseconds early_proof_window = kEarlyProofWindow;
  // From accept to Welcome; a client that has not finished the handshake by then is closed.
  std::chrono::milliseconds handshake_timeout{10'000};
  // Bounds requests from a welcomed client; before the Welcome a frame may be only the
  // handshake message its state allows (protocol.h).
  std::size_t max_frame_payload = kDefaultMaxPayload;
  // Connections open at once, in their handshake or welcomed; a new one beyond is refused
  // (too_many_connections). Refused connections still delivering their Refused do not count:
  // they hold no buffers and go within a second, and a flood of them must not lock ranks out.
  std::size_t max_connections = 65'536;
  // Connections open at once that have not been welcomed. At the cap a new connection evicts the
  // oldest one still in its handshake, refused as too_many_connections (a retryable refusal).
  // Refusing newcomers instead would let this many idle sockets lock every rank out; evicting
  // the oldest means a flood must open this many connections during one rank's handshake (a
  // round trip or two) to shut it out. Refused connections kept open to deliver their Refused are
  // capped by the same number; past it a refusal closes at once. Each handshake holds at most one
  // handshake frame and one reply (about 100 bytes of buffers, protocol.h).
  std::size_t max_unauthenticated_connections = 65'536;
  // Per connection: reading pauses while more than this many reply bytes wait to be sent, or
  // this many request bytes wait behind a pending Wait or Barrier.
  std::size_t max_buffered_bytes = 4 * 1024 * 1024;
  // Called on the server's thread with a refusal:: reason each time it closes a connection for
  // cause. Must not block and must not call Stop().
  std::function<void(std::string_view reason)> on_refused;
  // Builds a guest on the store's event loop before the loop starts (on the constructing thread,
  // so a guest that cannot bind throws from StoreServer's constructor). Unset: no guest.
  std::function<std::unique_ptr<LoopGuest>(boost::asio::io_context& loop)> make_guest;
};

struct ServerStats {
  std::uint64_t accepted = 0;         // connections accepted, ever
  std::uint64_t authenticated = 0;    // connections that got Welcome, ever
  std::uint64_t open = 0;             // connections open now
  std::uint64_t unauthenticated = 0;  // of those, the ones still in their handshake
  std::uint64_t pending = 0;          // Waits and Barriers waiting now
  // Heap bytes held for connections now: frames being received or queued, replies not yet sent.
  std::uint64_t buffered_bytes = 0;
  std::uint64_t peak_buffered_bytes = 0;  // the most buffered_bytes has been since the start
  std::map<std::string, std::uint64_t> refused_by_reason;  // keys are refusal:: reasons
};

// Store semantics (keys and values are byte strings):
//   Set/Get as usual; Get of a missing key is NotFound.
//   Wait{keys, timeout_ms}: Ok once every key exists; TimedOut{"k1,k2"} naming the keys still
//     missing at the deadline. timeout_ms 0 checks once.
//   Add: the value is kept as decimal text (so Get works); a missing key counts as 0; a value that
//     is not an integer, or an overflow, is an Error.
//   CompareSet (as PyTorch's TCPStore): a missing key with empty expected, or a current value
//     equal to expected, is set to desired; the reply is the value now stored, or expected when
//     the key is missing and expected is not empty.
//   Barrier{name, timeout_ms}: Ok to every waiter once all world_size ranks have entered `name`
//     (a rank at or above world_size, which only max_ranks admits, is answered Error);
//     re-entry by a rank is idempotent and a completed barrier stays completed (entering it
//     answers Ok at once). At its own deadline a waiter gets TimedOut{"3,7"}: the ranks that have
//     not entered, ascending. A rank that timed out or disconnected still counts as entered.
//   kConnectedRanksKey (protocol.h): Get answers the ranks with an authenticated connection open,
//     "0,1,3"; Wait treats it as present; Set, Add and CompareSet on it are an Error.
//   kAttemptKey: Get answers options.attempt in decimal; otherwise as kConnectedRanksKey.
// Each connection's requests are answered in order; requests behind a pending Wait or Barrier
// wait for it. A client that shuts down its sending side is answered what it sent, then closed;
// if that includes a Wait or Barrier still pending, it is closed at once instead.
class StoreServer {
 public:
  // Binds (SO_REUSEADDR), listens and starts the server's thread. Throws std::runtime_error
  // naming address:port if it cannot bind or listen.
  explicit StoreServer(ServerOptions options);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  std::uint16_t port() const;
  // What options.make_guest built, or nullptr; lives until the server is destroyed.
  LoopGuest* guest() const;
  // Closes the listener and every connection (pending waits get nothing) and joins the thread.
  // Idempotent; must not be called from on_refused.
  void Stop();

  // Safe from any thread.
  ServerStats Stats() const;
  std::map<std::string, std::uint64_t> RefusedByReasonForTest() const;
  // The ranks with at least one authenticated connection open, ascending (for diagnostics).
  std::vector<std::uint32_t> ConnectedRanks() const;
  // Blocks until no rank holds an authenticated connection, or `within` has passed; true if
  // none does. A failing rank 0 uses it to keep its store up until its peers, usually a moment
  // behind, have read who is gone.
  bool WaitUntilEveryRankLeft(std::chrono::milliseconds within) const;

 private:
  class Core;
  std::unique_ptr<Core> core_;
};

}  // namespace ringleader::rendezvous
