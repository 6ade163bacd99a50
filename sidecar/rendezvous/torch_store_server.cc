// The TCPStore-protocol server's connections on the shared event loop. Everything but Stats()
// runs on the loop's single thread.
#include "sidecar/rendezvous/torch_store_server.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <list>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "sidecar/rendezvous/accept_loop.h"
#include "sidecar/rendezvous/reply_buffer.h"
#include "sidecar/rendezvous/torch_store_state.h"

namespace ringleader::rendezvous {
namespace {

namespace asio = boost::asio;
namespace ts = torch_store;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// Bytes read per readiness event, and reads per event, before other connections get a turn.
constexpr std::size_t kTorchReadChunk = 64 * 1024;
constexpr int kTorchReadsPerEvent = 4;
// Log lines about closed connections, at most this many a second (a flood must not flood stderr).
constexpr int kLogLinesPerSecond = 20;

std::string EndpointText(const asio::ip::address& address, std::uint16_t port) {
  if (address.is_v6()) {
    const asio::ip::address_v6 v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
      return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string() + ":" +
             std::to_string(port);
    }
    return "[" + v6.to_string() + "]:" + std::to_string(port);
  }
  return address.to_string() + ":" + std::to_string(port);
}

std::string BindText(const std::string& address, std::uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

}  // namespace

class TorchStoreServer::Core {
 public:
  Core(asio::io_context& loop, TorchStoreOptions options)
      : loop_(loop),
        options_(std::move(options)),
        acceptor_(loop),
        accept_retry_(loop),
        read_buffer_(kTorchReadChunk) {
    if (!options_.log) {
      options_.log = [](const std::string& line) { std::cerr << line + "\n" << std::flush; };
    }
    Listen();
    AcceptUntilStopped(acceptor_, accept_retry_, stopping_,
                       [this](tcp::socket socket) { OnAccepted(std::move(socket)); });
  }

  std::uint16_t port() const { return port_; }

  TorchStoreStats Stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void Shutdown();

 private:
  class Connection;
  friend class Connection;

  // Binds as TorchStoreOptions::bind_address says; throws naming the address.
  void Listen() {
    if (options_.bind_address.empty() || options_.bind_address == "::") {
      error_code ec;
      if (TryListen("::", ec)) {
        return;
      }
      // A host without IPv6 (the family, or the wildcard address, unavailable) still serves IPv4.
      const bool no_ipv6 = ec == asio::error::address_family_not_supported ||
                           ec.value() == EADDRNOTAVAIL;
      if (!options_.bind_address.empty() || !no_ipv6) {
        Fail("::", ec);
      }
      if (!TryListen("0.0.0.0", ec)) {
        Fail("0.0.0.0", ec);
      }
      return;
    }
    error_code ec;
    if (!TryListen(options_.bind_address, ec)) {
      Fail(options_.bind_address, ec);
    }
  }

  bool TryListen(const std::string& address, error_code& ec) {
    error_code ignored;
    acceptor_.close(ignored);
    const asio::ip::address ip = asio::ip::make_address(address, ec);
    if (ec) {
      return false;
    }
    const tcp::endpoint endpoint(ip, options_.port);
    if (acceptor_.open(endpoint.protocol(), ec); ec) {
      return false;
    }
    KeepFromChildren(acceptor_.native_handle());
    if (ip.is_v6()) {
      acceptor_.set_option(asio::ip::v6_only(false), ignored);  // IPv4 clients too
    }
    if (acceptor_.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
      return false;
    }
    if (acceptor_.bind(endpoint, ec); ec) {
      return false;
    }
    // The kernel caps the backlog at net.core.somaxconn.
    if (acceptor_.listen(65535, ec); ec) {
      return false;
    }
    port_ = acceptor_.local_endpoint().port();
    return true;
  }

  [[noreturn]] void Fail(const std::string& address, const error_code& ec) const {
    throw std::runtime_error("trainer store (PyTorch TCPStore protocol): cannot listen on " +
                             BindText(address, options_.port) + ": " + ec.message());
  }

  void OnAccepted(tcp::socket socket);

  // Connections with no WAIT or BARRIER pending, least recently active first.
  using IdleEntry = std::list<Connection*>::iterator;
  void MarkIdle(Connection* connection, std::optional<IdleEntry>& entry) {
    if (entry) {
      idle_.splice(idle_.end(), idle_, *entry);
    } else {
      entry = idle_.insert(idle_.end(), connection);
    }
  }
  void MarkBusy(std::optional<IdleEntry>& entry) {
    if (entry) {
      idle_.erase(*entry);
      entry.reset();
    }
  }
  void Touch(const std::optional<IdleEntry>& entry) {
    if (entry) {
      idle_.splice(idle_.end(), idle_, *entry);
    }
  }

  void CountRequest(ts::Query query) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.requests[static_cast<std::size_t>(query)];
      stats_.pending = state_.PendingTotal();
      stats_.keys = state_.KeyCount();
    }
    if (options_.observer != nullptr) {
      options_.observer->OnRequest(query);
    }
  }

  void CountPending() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.pending = state_.PendingTotal();
  }

  void CountClosedForCause(std::string_view reason) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.closed_by_reason[std::string(reason)];
    }
    if (options_.observer != nullptr) {
      options_.observer->OnClosedForCause(reason);
    }
  }

  void CountUnknownQuery(ts::Dialect dialect, std::uint8_t type) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.unknown_queries[std::string(ts::DialectName(dialect)) + "/" + std::to_string(type)];
    }
    if (options_.observer != nullptr) {
      options_.observer->OnUnknownQuery(dialect, type);
    }
  }

  void OnBufferedChanged(std::size_t before, std::size_t now) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.buffered_bytes = stats_.buffered_bytes - before + now;
    stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, stats_.buffered_bytes);
  }

  void OnClosed(Connection* connection);

  // One line for a person, rate-limited.
  void Log(const std::string& line) {
    const auto now = std::chrono::steady_clock::now();
    if (now - log_window_ >= std::chrono::seconds(1)) {
      if (log_suppressed_ > 0) {
        options_.log("trainer store: " + std::to_string(log_suppressed_) +
                     " more lines like the last were not logged");
      }
      log_window_ = now;
      log_lines_ = 0;
      log_suppressed_ = 0;
    }
    if (log_lines_ < kLogLinesPerSecond) {
      ++log_lines_;
      options_.log(line);
    } else {
      ++log_suppressed_;
    }
  }

  asio::io_context& loop_;
  TorchStoreOptions options_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::uint16_t port_ = 0;
  bool stopping_ = false;
  ts::TorchStoreState state_;
  std::vector<char> read_buffer_;  // shared: a read is consumed before the next one starts
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  std::list<Connection*> idle_;
  std::chrono::steady_clock::time_point log_window_{};
  int log_lines_ = 0;
  std::uint64_t log_suppressed_ = 0;

  mutable std::mutex mutex_;  // guards stats_, read from other threads
  TorchStoreStats stats_;
};

// One trainer's connection: requests answered as they arrive, in order.
class TorchStoreServer::Core::Connection final : public ts::Waiter,
                                                  public std::enable_shared_from_this<Connection> {
 public:
  Connection(Core& core, tcp::socket socket)
      : core_(core),
        socket_(std::move(socket)),
        decoder_(core.options_.max_frame_bytes, core.options_.max_first_frame_bytes) {}

  void Start() {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);
    const tcp::endpoint remote = socket_.remote_endpoint(ec);
    peer_ = ec ? "an unknown peer" : EndpointText(remote.address(), remote.port());
    core_.MarkIdle(this, idle_entry_);
    ArmRead();
  }

  // Logs why, counts it under `reason`, and closes.
  void CloseForCause(std::string_view reason, const std::string& why) {
    if (closed_) {
      return;
    }
    core_.Log("trainer store: closing the connection from " + peer_ + ": " + why);
    core_.CountClosedForCause(reason);
    Close();
  }

  // Immediate; the Core forgets this connection.
  void Close() {
    if (closed_) {
      return;
    }
    closed_ = true;
    core_.state_.Forget(*this);
    core_.CountPending();
    core_.MarkBusy(idle_entry_);
    error_code ignored;
    socket_.close(ignored);
    decoder_ = ts::RequestDecoder(0, 0);
    replies_.DropPending();
    Account();
    core_.OnClosed(this);
  }

  void OnWaitDone() override {
    ts::AppendByte(replies_.pending(), ts::kStopWaiting);
    // Sent by Pump, after the store has finished the write that completed this wait (it may be
    // another connection's), in one write with whatever else completed meanwhile.
    if (!pump_posted_) {
      pump_posted_ = true;
      asio::post(core_.loop_, [self = shared_from_this()] {
        self->pump_posted_ = false;
        self->Pump();
      });
    }
  }

 private:
  std::size_t OutputBytes() const { return replies_.size(); }
  bool OverBudget() const { return OutputBytes() > core_.options_.max_buffered_bytes; }

  // Heap bytes this connection holds (TorchStoreStats::buffered_bytes).
  std::size_t HeldBytes() const { return decoder_.BufferedBytes() + replies_.HeapBytes(); }

  void Account() {
    const std::size_t held = closed_ ? 0 : HeldBytes();
    if (held != accounted_bytes_) {
      core_.OnBufferedChanged(accounted_bytes_, held);
      accounted_bytes_ = held;
    }
  }

  // Answers what has decoded, sends it, and reads on if there is room.
  void Pump() {
    if (closed_) {
      return;
    }
    ProcessRequests();
    if (closed_) {
      return;
    }
    UpdateIdle();
    if (peer_closed_) {
      // Nobody will read what a pending wait would answer; otherwise the owed replies go first.
      if (core_.state_.PendingFor(*this) > 0 || replies_.drained()) {
        Close();
        return;
      }
    }
    Flush();
    ArmRead();
    Account();
  }

  void ProcessRequests() {
    while (!closed_ && !OverBudget()) {
      std::optional<ts::Request> request = decoder_.Next();
      if (!request) {
        break;
      }
      Handle(std::move(*request));
    }
    if (!closed_ && decoder_.failed()) {
      const ts::DecodeError& error = *decoder_.error();
      switch (error.code) {
        case ts::DecodeErrorCode::kUnknownQuery:
          core_.CountUnknownQuery(error.dialect, error.type_byte);
          CloseForCause(torch_close::kUnknownQuery, error.message);
          return;
        case ts::DecodeErrorCode::kTooLarge:
          CloseForCause(torch_close::kTooLarge, error.message);
          return;
        case ts::DecodeErrorCode::kProtocolViolation:
          CloseForCause(torch_close::kProtocolViolation, error.message);
          return;
      }
    }
  }

  void Handle(ts::Request request) {
    const ts::Query query = request.query;
    std::optional<ts::TorchStoreState::Refusal> refused =
        core_.state_.Apply(std::move(request), *this, replies_.pending());
    core_.CountRequest(query);
    if (refused) {
      CloseForCause(torch_close::kBadRequest,
                    std::string(ts::QueryName(query)) + ": " + refused->message);
      return;
    }
    core_.Touch(idle_entry_);
    UpdateIdle();
  }

  // Evictable (and least recently active) exactly while no WAIT or BARRIER is pending.
  void UpdateIdle() {
    if (core_.state_.PendingFor(*this) > 0) {
      core_.MarkBusy(idle_entry_);
    } else if (!idle_entry_) {
      core_.MarkIdle(this, idle_entry_);
    }
  }

  void ArmRead() {
    if (read_armed_ || closed_ || peer_closed_) {
      return;
    }
    if (OverBudget()) {
      unread_may_remain_ = true;  // what arrives meanwhile signals readiness to no wait
      return;
    }
    read_armed_ = true;
    if (unread_may_remain_) {
      // Asio's epoll reactor is edge-triggered and async_wait does not look at readiness first:
      // bytes (or the FIN) whose edge came and went would never wake it. Read now instead.
      asio::post(core_.loop_, [self = shared_from_this()] { self->OnReadable(error_code()); });
      return;
    }
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](const error_code& ec) { self->OnReadable(ec); });
  }

  void OnReadable(const error_code& ec) {
    read_armed_ = false;
    if (closed_) {
      return;
    }
    if (ec) {
      Close();
      return;
    }
    unread_may_remain_ = true;
    std::vector<char>& buffer = core_.read_buffer_;
    for (int i = 0; i < kTorchReadsPerEvent && !OverBudget(); ++i) {
      error_code read_ec;
      const std::size_t n = socket_.read_some(asio::buffer(buffer.data(), buffer.size()), read_ec);
      if (read_ec == asio::error::would_block || read_ec == asio::error::try_again) {
        unread_may_remain_ = false;
        break;
      }
      if (read_ec == asio::error::eof) {
        peer_closed_ = true;  // answer what it sent, then close (see Pump)
        break;
      }
      if (read_ec) {
        Close();  // reset
        return;
      }
      core_.Touch(idle_entry_);
      decoder_.Feed(std::string_view(buffer.data(), n));
      ProcessRequests();
      if (closed_) {
        return;
      }
      if (n < buffer.size()) {
        // Drained for now: later bytes raise a new edge, seen by the wait ArmRead arms next.
        unread_may_remain_ = false;
        break;
      }
    }
    Pump();
  }

  void Flush() {
    if (closed_) {
      return;
    }
    if (const std::string* bytes = replies_.TakeForWrite()) {
      asio::async_write(socket_, asio::buffer(*bytes),
                        [self = shared_from_this()](const error_code& ec, std::size_t) {
                          self->OnWritten(ec);
                        });
    }
  }

  void OnWritten(const error_code& ec) {
    replies_.Written();
    if (closed_) {
      return;
    }
    if (ec) {
      Close();
      return;
    }
    core_.Touch(idle_entry_);
    Pump();  // the output may have been what paused reading
  }

  Core& core_;
  tcp::socket socket_;
  std::string peer_;
  ts::RequestDecoder decoder_;
  ReplyBuffer replies_;
  bool read_armed_ = false;
  // The socket may hold bytes no readiness edge will announce again: the next ArmRead reads at
  // once rather than waiting. True at first, as the first request can come before the wait.
  bool unread_may_remain_ = true;
  bool peer_closed_ = false;  // the client has shut down its sending side
  bool pump_posted_ = false;
  bool closed_ = false;
  std::optional<IdleEntry> idle_entry_;  // while no WAIT or BARRIER is pending
  std::size_t accounted_bytes_ = 0;     // this connection's share of Stats().buffered_bytes
};

void TorchStoreServer::Core::OnAccepted(tcp::socket socket) {
  if (connections_.size() >= options_.max_connections) {
    if (idle_.empty()) {
      error_code ec;
      const tcp::endpoint remote = socket.remote_endpoint(ec);
      Log("trainer store: refusing the connection from " +
          (ec ? std::string("an unknown peer") : EndpointText(remote.address(), remote.port())) +
          ": " + std::to_string(connections_.size()) +
          " connections are open (the cap) and every one has a wait pending");
      CountClosedForCause(torch_close::kTooManyConnections);
      socket.close(ec);
      return;
    }
    // Keep a reference: closing makes the Core drop its own.
    const std::shared_ptr<Connection> oldest = connections_.at(idle_.front());
    oldest->CloseForCause(torch_close::kEvicted,
                          "evicted, the least recently active idle connection, at the cap of " +
                              std::to_string(options_.max_connections) + " connections");
  }
  auto connection = std::make_shared<Connection>(*this, std::move(socket));
  connections_.emplace(connection.get(), connection);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.accepted;
    stats_.open = connections_.size();
  }
  if (options_.observer != nullptr) {
    options_.observer->OnAccepted();
  }
  connection->Start();
}

void TorchStoreServer::Core::OnClosed(Connection* connection) {
  std::shared_ptr<Connection> keep;  // destroyed after the bookkeeping
  const auto it = connections_.find(connection);
  if (it == connections_.end()) {
    return;
  }
  keep = std::move(it->second);
  connections_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.open = connections_.size();
  }
  if (options_.observer != nullptr) {
    options_.observer->OnClosed();
  }
}

void TorchStoreServer::Core::Shutdown() {
  stopping_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(connections_.size());
  for (const auto& [raw, connection] : connections_) {
    all.push_back(connection);
  }
  for (const auto& connection : all) {
    connection->Close();
  }
}

TorchStoreServer::TorchStoreServer(asio::io_context& loop, TorchStoreOptions options)
    : core_(std::make_shared<Core>(loop, std::move(options))) {}

TorchStoreServer::~TorchStoreServer() = default;

std::function<std::unique_ptr<LoopGuest>(asio::io_context&)> TorchStoreServer::GuestFactory(
    TorchStoreOptions options) {
  return [options = std::move(options)](asio::io_context& loop) -> std::unique_ptr<LoopGuest> {
    return std::make_unique<TorchStoreServer>(loop, options);
  };
}

std::uint16_t TorchStoreServer::port() const { return core_->port(); }

TorchStoreStats TorchStoreServer::Stats() const { return core_->Stats(); }

void TorchStoreServer::Shutdown() { core_->Shutdown(); }

}  // namespace ringleader::rendezvous
