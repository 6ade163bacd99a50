// The trainers' store on MASTER_PORT: PyTorch's TCPStore protocol (torch_store_protocol.h),
// served by rank 0's sidecar as a guest on the native store's event loop (store_server.h's
// LoopGuest), so the port is bound once, before any trainer starts, and outlives their crashes.
// Trainers only connect (TORCHELASTIC_USE_AGENT_STORE=True, torchrun's c10d is_host=false).
//
// Like PyTorch's own server it has no authentication: the job's NetworkPolicy is the fence.
// Memory is bounded as in the native store: a small request bound until a connection's first
// request has decoded, a request bound after it, a connection cap at which the least recently
// active idle connection (no WAIT or BARRIER pending) is evicted, and reading paused while a
// connection's unsent replies exceed max_buffered_bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_protocol.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace ringleader::rendezvous {

// Why the server closed a connection; the metrics label by these, so the set is fixed.
namespace torch_close {
inline constexpr std::string_view kUnknownQuery = "unknown_query";    // a type byte it lacks
inline constexpr std::string_view kTooLarge = "too_large";            // past the request bound
inline constexpr std::string_view kProtocolViolation = "protocol_violation";  // a late VALIDATE
inline constexpr std::string_view kBadRequest = "bad_request";  // e.g. ADD to a non-integer
inline constexpr std::string_view kEvicted = "evicted";  // idle, at the connection cap
inline constexpr std::string_view kTooManyConnections = "too_many_connections";  // none idle
}  // namespace torch_close

// What the server reports as it goes, on the loop's thread; must not block (the metrics).
class TorchStoreObserver {
 public:
  virtual ~TorchStoreObserver() = default;
  virtual void OnAccepted() {}
  virtual void OnClosed() {}  // any connection that was counted by OnAccepted
  virtual void OnRequest(torch_store::Query /*query*/) {}
  virtual void OnUnknownQuery(torch_store::Dialect /*dialect*/, std::uint8_t /*type_byte*/) {}
  // A torch_close:: reason; kTooManyConnections comes without OnAccepted/OnClosed.
  virtual void OnClosedForCause(std::string_view /*reason*/) {}
};

struct TorchStoreOptions {
  // "" or "::": every address, IPv6 and IPv4 (IPv4 only where the host has no IPv6);
  // "0.0.0.0": every IPv4 address.
  std::string bind_address;
  std::uint16_t port = 0;  // 0: an ephemeral port, see port()
  // Connections open at once. A new one beyond evicts the least recently active idle one, or is
  // closed at once when every connection has a WAIT or BARRIER pending.
  std::size_t max_connections = 4096;
  // The largest request (all its fields) once a connection's first request has decoded, and
  // before that. A 2.x client's first request is its 5-byte VALIDATE.
  std::size_t max_frame_bytes = 64 * 1024 * 1024;
  std::size_t max_first_frame_bytes = 64 * 1024;
  // Per connection: reading pauses while more than this many reply bytes wait to be sent.
  std::size_t max_buffered_bytes = 4 * 1024 * 1024;
  TorchStoreObserver* observer = nullptr;  // must outlive the server
  // Where lines for a person go (a closed connection, with its peer and why); default stderr.
  std::function<void(const std::string& line)> log;
};

struct TorchStoreStats {
  std::uint64_t open = 0;      // client connections open now
  std::uint64_t accepted = 0;  // ever
  std::array<std::uint64_t, torch_store::kQueryCount> requests{};  // by torch_store::Query
  // Unknown query type bytes, "torch2/19" (dialect/decimal byte) -> count.
  std::map<std::string, std::uint64_t> unknown_queries;
  std::map<std::string, std::uint64_t> closed_by_reason;  // torch_close:: reasons
  std::uint64_t pending = 0;  // WAITs and BARRIERs pending now
  std::uint64_t keys = 0;     // stored keys
  // Heap bytes held for connections now (requests arriving, replies unsent), and the peak.
  std::uint64_t buffered_bytes = 0;
  std::uint64_t peak_buffered_bytes = 0;

  std::uint64_t Requests(torch_store::Query query) const {
    return requests[static_cast<std::size_t>(query)];
  }
};

class TorchStoreServer final : public LoopGuest {
 public:
  // Binds (SO_REUSEADDR) and listens on the calling thread, then accepts on `loop` once it runs.
  // Throws std::runtime_error naming the address and port if it cannot bind or listen.
  TorchStoreServer(boost::asio::io_context& loop, TorchStoreOptions options);
  ~TorchStoreServer() override;
  TorchStoreServer(const TorchStoreServer&) = delete;
  TorchStoreServer& operator=(const TorchStoreServer&) = delete;

  // For ServerOptions::make_guest.
  static std::function<std::unique_ptr<LoopGuest>(boost::asio::io_context&)> GuestFactory(
      TorchStoreOptions options);

  // The bound port (the ephemeral one when options.port was 0).
  std::uint16_t port() const;
  // Safe from any thread.
  TorchStoreStats Stats() const;
  // On the loop's thread: stops accepting and closes every connection.
  void Shutdown() override;

 private:
  class Core;
  std::shared_ptr<Core> core_;
};

}  // namespace ringleader::rendezvous
