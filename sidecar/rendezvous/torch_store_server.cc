// The TCPStore-protocol server's connections on the shared event loop. Everything but Stats()
// runs on the loop's single thread.
//
// Its sockets sit in an epoll set of their own (edge-triggered, registered once), which the loop
// watches as one descriptor: a request costs its recv and its reply's send, where Asio's
// per-socket operations add an epoll_ctl or a failed speculative recv to each (Asio 1.74 re-arms
// a wait with EPOLL_CTL_MOD, and its recv is speculative), and a connection costs accept4 (its
// address, close-on-exec and non-blocking in one call), one EPOLL_CTL_ADD and its close.
#include "sidecar/rendezvous/torch_store_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
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
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

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
// Events taken from the connections' epoll set at once.
constexpr int kEventsPerWait = 256;
// The epoll key of the listening socket; a connection's is its id, from 1.
constexpr std::uint64_t kListenerKey = 0;
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

std::string EndpointText(const std::optional<tcp::endpoint>& peer) {
  return peer ? EndpointText(peer->address(), peer->port()) : std::string("an unknown peer");
}

std::string BindText(const std::string& address, std::uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// The address accept4 wrote, if it is one a tcp::endpoint holds.
std::optional<tcp::endpoint> PeerOf(const sockaddr_storage& address, socklen_t length) {
  tcp::endpoint endpoint;
  if ((address.ss_family != AF_INET && address.ss_family != AF_INET6) ||
      length > endpoint.capacity()) {
    return std::nullopt;
  }
  std::memcpy(endpoint.data(), &address, length);
  endpoint.resize(length);
  return endpoint;
}

bool WouldBlock(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

}  // namespace

class TorchStoreServer::Core {
 public:
  Core(asio::io_context& loop, TorchStoreOptions options)
      : loop_(loop),
        options_(std::move(options)),
        acceptor_(loop),
        accept_retry_(loop),
        poller_(loop),
        read_buffer_(kTorchReadChunk) {
    if (!options_.log) {
      options_.log = [](const std::string& line) { std::cerr << line + "\n" << std::flush; };
    }
    const int poller = ::epoll_create1(EPOLL_CLOEXEC);
    if (poller < 0) {
      throw std::runtime_error(std::string("trainer store (PyTorch TCPStore protocol): epoll: ") +
                               std::strerror(errno));
    }
    poller_.assign(poller);
    Listen();
    error_code ec;
    acceptor_.non_blocking(true, ec);
    if (ec || !WatchListener(EPOLL_CTL_ADD, EPOLLIN)) {
      Fail(options_.bind_address, ec ? ec : error_code(errno, boost::system::system_category()));
    }
    WaitForEvents();
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
    // Linux hands it on to the accepted sockets; OnAccepted checks the first one.
    acceptor_.set_option(tcp::no_delay(true), ignored);
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

  // The listening socket in the connections' epoll set, level-triggered: each turn accepts one
  // connection, as each connection gets one turn, and the rest of the backlog is reported again.
  // A connection waiting in the backlog costs nothing; one accepted joins the work already in
  // hand. Accepting the whole backlog at once (64 a turn) made the requests of accepted clients
  // wait about 9 ms for their turn rather than 0.1 ms, and their tail-loss probes fire (about
  // 800 spurious retransmissions per 1,024 ranks instead of 12), for no shorter rendezvous.
  // `events` 0 pauses accepting.
  bool WatchListener(int op, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = kListenerKey;
    return ::epoll_ctl(poller_.native_handle(), op, acceptor_.native_handle(), &event) == 0;
  }

  // The loop wakes this server when its epoll set has events.
  void WaitForEvents() {
    poller_.async_wait(asio::posix::descriptor_base::wait_read, [this](const error_code& ec) {
      if (!ec && !stopping_) {
        Dispatch();
      }
    });
  }

  void Dispatch();
  void AcceptOne();
  void OnAccepted(int fd, std::optional<tcp::endpoint> peer);

  // Connections whose waits completed, to be sent their STOP_WAITING once the request that
  // completed them has been handled (TorchStoreState's waiters must not call back into it).
  void QueuePump(std::shared_ptr<Connection> connection) {
    to_pump_.push_back(std::move(connection));
    if (!dispatching_ && !pumps_posted_) {  // Dispatch runs them after each event
      pumps_posted_ = true;
      asio::post(loop_, [this] {
        pumps_posted_ = false;
        RunPumps();
      });
    }
  }
  void RunPumps();

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

  void OnClosed(std::uint64_t id);

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
  asio::posix::stream_descriptor poller_;  // the connections' epoll set
  std::uint16_t port_ = 0;
  bool stopping_ = false;
  // Whether accepted sockets come with the listener's TCP_NODELAY (known after the first).
  std::optional<bool> no_delay_inherited_;
  ts::TorchStoreState state_;
  std::vector<char> read_buffer_;  // shared: a read is consumed before the next one starts
  std::uint64_t next_id_ = kListenerKey + 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> connections_;
  std::list<Connection*> idle_;
  std::vector<std::shared_ptr<Connection>> to_pump_;
  bool pumps_posted_ = false;
  bool dispatching_ = false;
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
  Connection(Core& core, std::uint64_t id, int fd, std::optional<tcp::endpoint> peer)
      : core_(core),
        id_(id),
        fd_(fd),
        peer_(std::move(peer)),
        decoder_(core.options_.max_frame_bytes, core.options_.max_first_frame_bytes) {}
  ~Connection() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Registers the socket, edge-triggered and once for its life: bytes already received count as
  // an edge, so the first request is seen even if it came before.
  void Start(bool set_no_delay) {
    if (set_no_delay) {
      const int on = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    }
    core_.MarkIdle(this, idle_entry_);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    event.data.u64 = id_;
    if (::epoll_ctl(core_.poller_.native_handle(), EPOLL_CTL_ADD, fd_, &event) != 0) {
      core_.Log("trainer store: closing the connection from " + EndpointText(peer_) +
                ": cannot watch its socket: " + std::strerror(errno));
      Close();
    }
  }

  // Logs why, counts it under `reason`, and closes.
  void CloseForCause(std::string_view reason, const std::string& why) {
    if (closed_) {
      return;
    }
    core_.Log("trainer store: closing the connection from " + EndpointText(peer_) + ": " + why);
    core_.CountClosedForCause(reason);
    Close();
  }

  // Immediate; the Core forgets this connection. Closing the socket takes it out of the epoll
  // set (a child between fork and exec may hold it a moment longer: its key then finds nothing).
  void Close() {
    if (closed_) {
      return;
    }
    closed_ = true;
    core_.state_.Forget(*this);
    core_.CountPending();
    core_.MarkBusy(idle_entry_);
    ::close(fd_);
    fd_ = -1;
    decoder_ = ts::RequestDecoder(0, 0);
    replies_.DropPending();
    if (replies_.write_in_flight()) {
      replies_.Written();
    }
    Account();
    core_.OnClosed(id_);
  }

  void OnWaitDone() override {
    ts::AppendByte(replies_.pending(), ts::kStopWaiting);
    // Sent by Pump, after the store has finished the write that completed this wait (it may be
    // another connection's), in one write with whatever else completed meanwhile.
    if (!pump_queued_) {
      pump_queued_ = true;
      core_.QueuePump(shared_from_this());
    }
  }

  void OnQueuedPump() {
    pump_queued_ = false;
    Pump();
  }

  // What the connections' epoll set reported for this socket.
  void OnEvents(std::uint32_t events) {
    if (closed_) {
      return;
    }
    if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
      peer_shut_seen_ = true;
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
      unread_may_remain_ = true;  // a reset shows as the recv's error
    }
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) {
      write_blocked_ = false;  // room to send, or the send's error to see
    }
    Pump();
  }

 private:
  std::size_t OutputBytes() const { return replies_.size() - write_offset_; }
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

  // Reads what has come, answers it, sends the replies, and goes on while sending made room.
  void Pump() {
    bool more = true;
    while (more) {
      if (closed_ || !ReadAvailable()) {
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
      const bool was_over_budget = OverBudget();
      if (!Flush()) {
        return;
      }
      // Everything sent: reading (paused over budget) resumes, or a half-closed peer is done.
      more = replies_.drained() && (was_over_budget || peer_closed_);
    }
    Account();
  }

  // Reads while bytes may remain unread, up to kTorchReadsPerEvent reads; false if it closed.
  bool ReadAvailable() {
    if (!unread_may_remain_ || peer_closed_) {
      return true;
    }
    std::vector<char>& buffer = core_.read_buffer_;
    for (int i = 0; i < kTorchReadsPerEvent; ++i) {
      if (OverBudget()) {
        return true;  // resumed by Pump once the replies are sent; no edge will say so
      }
      const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
      if (n > 0) {
        core_.Touch(idle_entry_);
        decoder_.Feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        ProcessRequests();
        if (closed_) {
          return false;
        }
        // Drained for now: later bytes, or a FIN, raise a new edge. A FIN that came before the
        // event was taken may have been consumed with the bytes (no edge, no EOF from this
        // recv): the event said EPOLLRDHUP then, so read on to the end.
        if (static_cast<std::size_t>(n) < buffer.size() && !peer_shut_seen_) {
          unread_may_remain_ = false;
          return true;
        }
        continue;
      }
      if (n == 0) {
        peer_closed_ = true;  // answer what it sent, then close (see Pump)
        unread_may_remain_ = false;
        return true;
      }
      if (WouldBlock(errno)) {
        unread_may_remain_ = false;
        return true;
      }
      if (errno == EINTR) {
        continue;
      }
      Close();  // reset
      return false;
    }
    // More may remain: read on after the other connections' turn.
    if (!read_posted_) {
      read_posted_ = true;
      asio::post(core_.loop_, [self = shared_from_this()] {
        self->read_posted_ = false;
        self->Pump();
      });
    }
    return true;
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

  // Sends the replies until they are all out or the socket's buffer is full (then EPOLLOUT
  // resumes it); false if it closed.
  bool Flush() {
    while (!write_blocked_) {
      if (!replies_.write_in_flight()) {
        writing_ = replies_.TakeForWrite();
        write_offset_ = 0;
        if (writing_ == nullptr) {
          return true;
        }
      }
      const ssize_t n = ::send(fd_, writing_->data() + write_offset_,
                               writing_->size() - write_offset_, MSG_NOSIGNAL);
      if (n >= 0) {
        write_offset_ += static_cast<std::size_t>(n);
        if (write_offset_ == writing_->size()) {
          replies_.Written();
          writing_ = nullptr;
          write_offset_ = 0;
          core_.Touch(idle_entry_);
        }
        continue;  // a short send: the next one says whether the buffer is full
      }
      if (WouldBlock(errno)) {
        write_blocked_ = true;
        return true;
      }
      if (errno == EINTR) {
        continue;
      }
      Close();  // reset
      return false;
    }
    return true;
  }

  Core& core_;
  const std::uint64_t id_;  // its epoll key
  int fd_;
  std::optional<tcp::endpoint> peer_;
  ts::RequestDecoder decoder_;
  ReplyBuffer replies_;
  const std::string* writing_ = nullptr;  // replies_'s write in flight, sent up to write_offset_
  std::size_t write_offset_ = 0;
  // The socket may hold bytes no edge will announce again: read before waiting for one.
  bool unread_may_remain_ = false;
  // An event said EPOLLRDHUP (or HUP, ERR): read to the end, not to a short read.
  bool peer_shut_seen_ = false;
  bool write_blocked_ = false;   // the socket's send buffer was full: wait for EPOLLOUT
  bool peer_closed_ = false;     // the client has shut down its sending side (EOF read)
  bool pump_queued_ = false;
  bool read_posted_ = false;
  bool closed_ = false;
  std::optional<IdleEntry> idle_entry_;  // while no WAIT or BARRIER is pending
  std::size_t accounted_bytes_ = 0;     // this connection's share of Stats().buffered_bytes
};

void TorchStoreServer::Core::Dispatch() {
  epoll_event events[kEventsPerWait];
  const int n = ::epoll_wait(poller_.native_handle(), events, kEventsPerWait, 0);
  dispatching_ = true;
  for (int i = 0; i < n && !stopping_; ++i) {
    const std::uint64_t key = events[i].data.u64;
    if (key == kListenerKey) {
      AcceptOne();
    } else if (const auto it = connections_.find(key); it != connections_.end()) {
      const std::shared_ptr<Connection> connection = it->second;  // may close itself
      connection->OnEvents(events[i].events);
    }
    // (A closed connection's key finds nothing: its events are dropped.)
    RunPumps();
  }
  dispatching_ = false;
  if (stopping_) {
    return;
  }
  if (n > 0) {
    // Under load more will have come by the loop's next turn: look again then, rather than
    // re-arm the wait (an epoll_ctl) every time.
    asio::post(loop_, [this] {
      if (!stopping_) {
        Dispatch();
      }
    });
  } else {
    WaitForEvents();
  }
}

void TorchStoreServer::Core::AcceptOne() {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int fd = ::accept4(acceptor_.native_handle(), reinterpret_cast<sockaddr*>(&address),
                           &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) {
    OnAccepted(fd, PeerOf(address, length));
    return;
  }
  const int error = errno;
  if (IsResourceExhaustion(error_code(error, boost::system::system_category()))) {
    // Closing connections will free some: pause rather than be told again at once.
    WatchListener(EPOLL_CTL_MOD, 0);
    accept_retry_.expires_after(kAcceptRetryDelay);
    accept_retry_.async_wait([this](const error_code& ec) {
      if (!ec && !stopping_) {
        WatchListener(EPOLL_CTL_MOD, EPOLLIN);
      }
    });
  }
  // Anything else (nothing left, a connection reset while queued, EINTR): the next turn.
}

void TorchStoreServer::Core::OnAccepted(int fd, std::optional<tcp::endpoint> peer) {
  if (connections_.size() >= options_.max_connections) {
    if (idle_.empty()) {
      Log("trainer store: refusing the connection from " + EndpointText(peer) + ": " +
          std::to_string(connections_.size()) +
          " connections are open (the cap) and every one has a wait pending");
      CountClosedForCause(torch_close::kTooManyConnections);
      ::close(fd);
      return;
    }
    // Keep a reference: closing makes the Core drop its own.
    const std::shared_ptr<Connection> oldest = idle_.front()->shared_from_this();
    oldest->CloseForCause(torch_close::kEvicted,
                          "evicted, the least recently active idle connection, at the cap of " +
                              std::to_string(options_.max_connections) + " connections");
  }
  if (!no_delay_inherited_) {
    int on = 0;
    socklen_t size = sizeof(on);
    no_delay_inherited_ =
        ::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &size) == 0 && on != 0;
  }
  const std::uint64_t id = next_id_++;
  auto connection = std::make_shared<Connection>(*this, id, fd, std::move(peer));
  connections_.emplace(id, connection);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.accepted;
    stats_.open = connections_.size();
  }
  if (options_.observer != nullptr) {
    options_.observer->OnAccepted();
  }
  connection->Start(!*no_delay_inherited_);
}

void TorchStoreServer::Core::RunPumps() {
  // A pump can complete more waits, which queue behind.
  for (std::size_t i = 0; i < to_pump_.size(); ++i) {
    const std::shared_ptr<Connection> connection = to_pump_[i];
    connection->OnQueuedPump();
  }
  to_pump_.clear();
}

void TorchStoreServer::Core::OnClosed(std::uint64_t id) {
  std::shared_ptr<Connection> keep;  // destroyed after the bookkeeping
  const auto it = connections_.find(id);
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
  poller_.close(ignored);
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(connections_.size());
  for (const auto& [id, connection] : connections_) {
    all.push_back(connection);
  }
  for (const auto& connection : all) {
    connection->Close();
  }
  to_pump_.clear();
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
