// The rendezvous store server: an in-memory Store (keys, waits, barriers) behind one Asio event
// loop. Everything below Core's public methods runs on the server's single thread.
#include "sidecar/rendezvous/store_server.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <openssl/crypto.h>

#include "sidecar/rendezvous/accept_loop.h"
#include "sidecar/rendezvous/reply_buffer.h"
#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/early_proof_nonces.h"

namespace ringleader::rendezvous {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// Bytes read per readiness event, past a connection's first buffer, before others get a turn.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 4;
// How long a refused connection may take to receive its Refused frame before it is cut off.
constexpr std::chrono::milliseconds kCloseLinger{1000};

std::string Truncated(std::string text) {
  if (text.size() > kMaxTextBytes) {
    text.resize(kMaxTextBytes);
  }
  return text;
}

// Comma-separated items, cut with "..." where the whole would exceed the Text bound.
class TextList {
 public:
  void Append(std::string_view item) {
    if (full_) {
      return;
    }
    const std::size_t extra = (text_.empty() ? 0 : 1) + item.size();
    if (text_.size() + extra > kMaxTextBytes - 4) {
      text_ += text_.empty() ? "..." : ",...";
      full_ = true;
      return;
    }
    if (!text_.empty()) {
      text_ += ',';
    }
    text_.append(item);
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
  bool full_ = false;
};

std::string ErrorReply(std::string message) {
  return EncodeMessage(Error{Truncated(std::move(message))});
}

// Keys the server answers itself (protocol.h); clients cannot write them.
bool IsServerKey(std::string_view key) { return key == kConnectedRanksKey || key == kAttemptKey; }

std::string ServerKeyWriteReply(std::string_view op, std::string_view key) {
  return ErrorReply(std::string(op) + ": " + std::string(key) + " is maintained by the server");
}

// What a pending Wait or Barrier is answered through. Resolve must not call back into the Store.
class Waiter {
 public:
  virtual void Resolve(std::string reply_frame) = 0;

 protected:
  ~Waiter() = default;
};

// The keys, values, waits and barriers; single-threaded, no I/O. Replies are encoded frames.
class Store {
 public:
  explicit Store(std::uint32_t world_size) : world_size_(world_size) {}

  std::string Apply(rendezvous::Set request) {
    Put(std::move(request.key), std::move(request.value));
    return EncodeMessage(Ok{});
  }

  std::string Apply(const rendezvous::Get& request) const {
    const auto it = data_.find(request.key);
    if (it == data_.end()) {
      return EncodeMessage(NotFound{});
    }
    return EncodeMessage(Value{it->second});
  }

  std::string Apply(rendezvous::Add request) {
    std::int64_t current = 0;
    if (const auto it = data_.find(request.key); it != data_.end()) {
      const std::string& text = it->second;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), current);
      if (ec != std::errc() || end != text.data() + text.size()) {
        return ErrorReply("Add: the value of the key is not a decimal integer");
      }
    }
    std::int64_t sum = 0;
    if (__builtin_add_overflow(current, request.delta, &sum)) {
      return ErrorReply("Add: the sum overflows a signed 64-bit integer");
    }
    Put(std::move(request.key), std::to_string(sum));
    return EncodeMessage(Counter{sum});
  }

  std::string Apply(rendezvous::CompareSet request) {
    const auto it = data_.find(request.key);
    if (it == data_.end()) {
      if (!request.expected.empty()) {
        return EncodeMessage(Value{std::move(request.expected)});
      }
      std::string stored = request.desired;
      Put(std::move(request.key), std::move(request.desired));
      return EncodeMessage(Value{std::move(stored)});
    }
    if (it->second == request.expected) {
      it->second = std::move(request.desired);
    }
    return EncodeMessage(Value{it->second});
  }

  // The reply now, or nullopt with waiter registered until Resolve, Expire or Cancel.
  std::optional<std::string> StartWait(Waiter* waiter, const rendezvous::Wait& request) {
    std::vector<std::string> missing;
    std::unordered_set<std::string_view> seen;
    for (const std::string& key : request.keys) {
      if (!data_.contains(key) && !IsServerKey(key) && seen.insert(key).second) {
        missing.push_back(key);
      }
    }
    if (missing.empty()) {
      return EncodeMessage(Ok{});
    }
    if (request.timeout_ms == 0) {
      return TimedOutKeys(missing);
    }
    for (const std::string& key : missing) {
      key_waiters_[key].insert(waiter);
    }
    Registration& registration = registrations_[waiter];
    registration.remaining = missing.size();
    registration.keys = std::move(missing);
    return std::nullopt;
  }

  std::optional<std::string> StartBarrier(Waiter* waiter, std::uint32_t rank,
                                          const rendezvous::Barrier& request) {
    BarrierState& barrier = barriers_[request.name];
    if (rank >= world_size_) {
      return ErrorReply("Barrier: rank " + std::to_string(rank) + " is not one of the " +
                        std::to_string(world_size_) + " ranks the store's barriers wait for");
    }
    if (barrier.complete) {
      return EncodeMessage(Ok{});
    }
    if (barrier.entered.empty()) {
      barrier.entered.assign(world_size_, false);
    }
    if (!barrier.entered[rank]) {
      barrier.entered[rank] = true;
      ++barrier.entered_count;
    }
    if (barrier.entered_count == world_size_) {
      barrier.complete = true;
      const std::unordered_set<Waiter*> waiters = std::move(barrier.waiters);
      barrier.waiters.clear();
      barrier.entered = std::vector<bool>();
      for (Waiter* other : waiters) {
        registrations_.erase(other);
        other->Resolve(EncodeMessage(Ok{}));
      }
      return EncodeMessage(Ok{});
    }
    if (request.timeout_ms == 0) {
      return MissingRanks(barrier);
    }
    barrier.waiters.insert(waiter);
    Registration& registration = registrations_[waiter];
    registration.barrier = request.name;
    registration.is_barrier = true;
    return std::nullopt;
  }

  // The waiter's deadline passed: deregisters it and returns its TimedOut reply.
  std::string Expire(Waiter* waiter) {
    const auto it = registrations_.find(waiter);
    if (it == registrations_.end()) {
      return ErrorReply("internal error: no pending wait");
    }
    std::string reply;
    if (it->second.is_barrier) {
      BarrierState& barrier = barriers_[it->second.barrier];
      barrier.waiters.erase(waiter);
      reply = MissingRanks(barrier);
    } else {
      std::vector<std::string> missing;
      for (const std::string& key : it->second.keys) {
        if (!data_.contains(key)) {
          missing.push_back(key);
        }
      }
      Forget(waiter, it->second);
      reply = TimedOutKeys(missing);
    }
    registrations_.erase(it);
    return reply;
  }

  // The waiter's connection is gone; a rank's entry into a barrier stays.
  void Cancel(Waiter* waiter) {
    const auto it = registrations_.find(waiter);
    if (it == registrations_.end()) {
      return;
    }
    if (it->second.is_barrier) {
      barriers_[it->second.barrier].waiters.erase(waiter);
    } else {
      Forget(waiter, it->second);
    }
    registrations_.erase(it);
  }

 private:
  struct Registration {
    bool is_barrier = false;
    std::string barrier;
    std::vector<std::string> keys;  // a Wait's keys that were missing when it started
    std::size_t remaining = 0;      // of those, how many are still missing
  };
  struct BarrierState {
    std::vector<bool> entered;  // by rank; released once complete
    std::uint32_t entered_count = 0;
    bool complete = false;
    std::unordered_set<Waiter*> waiters;
  };

  void Put(std::string key, std::string value) {
    const auto [it, inserted] = data_.insert_or_assign(std::move(key), std::move(value));
    if (!inserted) {
      return;  // waiters only wait for keys that did not exist
    }
    auto node = key_waiters_.extract(it->first);
    if (node.empty()) {
      return;
    }
    for (Waiter* waiter : node.mapped()) {
      const auto registration = registrations_.find(waiter);
      if (registration != registrations_.end() && --registration->second.remaining == 0) {
        registrations_.erase(registration);
        waiter->Resolve(EncodeMessage(Ok{}));
      }
    }
  }

  void Forget(Waiter* waiter, const Registration& registration) {
    for (const std::string& key : registration.keys) {
      const auto it = key_waiters_.find(key);
      if (it != key_waiters_.end()) {
        it->second.erase(waiter);
        if (it->second.empty()) {
          key_waiters_.erase(it);
        }
      }
    }
  }

  static std::string TimedOutKeys(const std::vector<std::string>& keys) {
    TextList list;
    for (const std::string& key : keys) {
      list.Append(key);
    }
    return EncodeMessage(TimedOut{list.Take()});
  }

  static std::string MissingRanks(const BarrierState& barrier) {
    TextList list;
    for (std::size_t rank = 0; rank < barrier.entered.size(); ++rank) {
      if (!barrier.entered[rank]) {
        list.Append(std::to_string(rank));
      }
    }
    return EncodeMessage(TimedOut{list.Take()});
  }

  std::uint32_t world_size_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::unordered_set<Waiter*>> key_waiters_;
  std::unordered_map<std::string, BarrierState> barriers_;
  std::unordered_map<Waiter*, Registration> registrations_;
};

std::string EndpointText(const std::string& address, std::uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// A Hello's rank and world size, unchecked, when the payload has a Hello's size.
std::optional<std::pair<std::uint32_t, std::uint32_t>> HelloRankAndWorld(std::string_view payload) {
  if (payload.size() != kHelloPayloadBytes) {
    return std::nullopt;
  }
  const auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      v = (v << 8) | static_cast<std::uint8_t>(payload[at + i]);
    }
    return v;
  };
  return std::pair(u32(0), u32(4));
}

std::int64_t WallClockMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

class StoreServer::Core {
 public:
  // The rank bound a Hello must carry (ServerOptions::max_ranks).
  std::uint32_t max_ranks() const {
    return options_.max_ranks != 0 ? options_.max_ranks : options_.world_size;
  }

  explicit Core(ServerOptions options)
      : options_(std::move(options)),
        acceptor_(io_),
        accept_retry_(io_),
        store_(options_.world_size),
        read_buffer_(kReadChunk) {
    const std::string address = options_.bind_address.empty() ? "0.0.0.0" : options_.bind_address;
    const auto fail = [&](const std::string& what, const error_code& ec) {
      throw std::runtime_error("rendezvous server: cannot " + what + " " +
                               EndpointText(address, options_.port) + ": " + ec.message());
    };
    error_code ec;
    const asio::ip::address ip = asio::ip::make_address(address, ec);
    if (ec) {
      fail("parse bind address", ec);
    }
    const tcp::endpoint endpoint(ip, options_.port);
    protocol_ = endpoint.protocol();
    if (acceptor_.open(endpoint.protocol(), ec); ec) {
      fail("open a socket for", ec);
    }
    KeepFromChildren(acceptor_.native_handle());
    if (acceptor_.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
      fail("set SO_REUSEADDR on", ec);
    }
    // Linux hands TCP_NODELAY on to the sockets accepted; OnAccepted checks the first one.
    acceptor_.set_option(tcp::no_delay(true), ec);
    if (acceptor_.bind(endpoint, ec); ec) {
      fail("bind", ec);
    }
    // The kernel caps the backlog at net.core.somaxconn.
    if (acceptor_.listen(65535, ec); ec) {
      fail("listen on", ec);
    }
    if (acceptor_.non_blocking(true, ec); ec) {  // for accept4 until EAGAIN
      fail("make non-blocking the socket of", ec);
    }
    port_ = acceptor_.local_endpoint().port();
    if (options_.make_guest) {
      guest_ = options_.make_guest(io_);
    }
    Accept();
    thread_ = std::thread([this] {
      // Named, so that top -H and perf tell the store's thread from the sidecar's others.
      ::pthread_setname_np(::pthread_self(), "rl-store");
      io_.run();
      // Nonces come from OpenSSL's per-thread generator; free it with the thread.
      OPENSSL_thread_stop();
    });
  }

  ~Core() { Stop(); }

  std::uint16_t port() const { return port_; }
  LoopGuest* guest() const { return guest_.get(); }

  void Stop() {
    std::lock_guard<std::mutex> stop_lock(stop_mutex_);
    if (!thread_.joinable()) {
      return;
    }
    asio::post(io_, [this] { Shutdown(); });
    thread_.join();
  }

  ServerStats Stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  // The value of kConnectedRanksKey: "0,1,3".
  std::string ConnectedRanksText() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const auto& [rank, count] : connected_ranks_) {
      text += (text.empty() ? "" : ",") + std::to_string(rank);
    }
    return text;
  }

  bool WaitUntilEveryRankLeft(std::chrono::milliseconds within) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return rank_left_.wait_for(lock, within, [this] { return connected_ranks_.empty(); });
  }

  std::vector<std::uint32_t> ConnectedRanks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::uint32_t> ranks;
    ranks.reserve(connected_ranks_.size());
    for (const auto& [rank, count] : connected_ranks_) {
      ranks.push_back(rank);
    }
    return ranks;
  }

 private:
  class Connection;

  // Waits for connections, then takes them one by one with accept4: close-on-exec and
  // non-blocking in the one call (Asio's accept adds an fcntl pair). After each, what is queued
  // runs first (the new connection's first read among it), as it did with Asio's accept, and the
  // listener is waited on again only once accept4 finds the backlog empty.
  void Accept() {
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](const error_code& ec) {
      if (!stopping_ && ec != asio::error::operation_aborted) {
        AcceptOne();
      }
    });
  }

  void AcceptOne() {
    const int fd =
        ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const error_code ec(errno, boost::system::system_category());
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        Accept();
      } else if (IsResourceExhaustion(ec)) {
        // Closing connections will free some; retrying at once would fail again.
        accept_retry_.expires_after(kAcceptRetryDelay);
        accept_retry_.async_wait([this](const error_code& wait_ec) {
          if (!wait_ec && !stopping_) {
            AcceptOne();
          }
        });
      } else if (errno == ECONNABORTED || errno == EINTR || errno == EPROTO) {
        PostAcceptOne();  // that connection was reset before it was taken; take the next
      } else {
        Accept();
      }
      return;
    }
    tcp::socket socket(io_);
    if (error_code ec; socket.assign(protocol_, fd, ec)) {
      ::close(fd);
    } else {
      OnAccepted(std::move(socket));
    }
    PostAcceptOne();
  }

  void PostAcceptOne() {
    asio::post(io_, [this] {
      if (!stopping_) {
        AcceptOne();
      }
    });
  }

  void OnAccepted(tcp::socket socket);

  // On the server's thread: stop accepting, close everything; io_.run() then runs dry.
  void Shutdown();

  void CountRefusal(std::string_view reason) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.refused_by_reason[std::string(reason)];
    }
    if (options_.on_refused) {
      options_.on_refused(reason);
    }
  }

  void OnAuthenticated(std::uint32_t rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.authenticated;
    ++connected_ranks_[rank];
  }

  // Connections in their handshake, oldest first; the position lets one leave in O(1).
  struct Handshaking {
    Connection* connection;
    std::chrono::steady_clock::time_point deadline;
  };
  using HandshakeEntry = std::list<Handshaking>::iterator;
  HandshakeEntry OnHandshakeStarted(Connection* connection) {
    handshaking_.push_back(
        {connection, std::chrono::steady_clock::now() + options_.handshake_timeout});
    ArmHandshakeTimer();
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.unauthenticated = handshaking_.size();
    return std::prev(handshaking_.end());
  }

  // One timer for every handshake's deadline, set for the oldest: the list is in accept order,
  // so deadlines ascend along it. A timer per connection would, once the ranks' barrier timers
  // fill the queue, be the earliest each time and cost a timerfd_settime per connection.
  void ArmHandshakeTimer() {
    if (handshake_timer_armed_ || handshaking_.empty() || stopping_) {
      return;
    }
    handshake_timer_armed_ = true;
    handshake_timer_.expires_at(handshaking_.front().deadline);
    handshake_timer_.async_wait([this](const error_code& ec) {
      handshake_timer_armed_ = false;
      if (!ec) {
        ExpireHandshakes();
      }
    });
  }

  void ExpireHandshakes();
  void OnHandshakeEnded(HandshakeEntry entry) {
    handshaking_.erase(entry);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.unauthenticated = handshaking_.size();
  }

  void OnBufferedChanged(std::size_t before, std::size_t now) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.buffered_bytes = stats_.buffered_bytes - before + now;
    stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, stats_.buffered_bytes);
  }

  void OnPendingChanged(bool started) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started) {
      ++stats_.pending;
    } else {
      --stats_.pending;
    }
  }

  void OnClosed(Connection* connection, std::optional<std::uint32_t> authenticated_rank) {
    std::shared_ptr<Connection> keep;  // destroyed after the lock is released
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --stats_.open;
      if (authenticated_rank) {
        const auto it = connected_ranks_.find(*authenticated_rank);
        if (it != connected_ranks_.end() && --it->second == 0) {
          connected_ranks_.erase(it);
          rank_left_.notify_all();
        }
      }
    }
    const auto it = connections_.find(connection);
    if (it != connections_.end()) {
      keep = std::move(it->second);
      connections_.erase(it);
    }
  }

  const ServerOptions options_;
  asio::io_context io_;
  std::unique_ptr<LoopGuest> guest_;  // after io_: destroyed before the loop it was built on
  tcp::acceptor acceptor_;
  tcp protocol_ = tcp::v4();  // the listener's, for the sockets it accepts
  // Whether accepted sockets come with the listener's TCP_NODELAY; found on the first one.
  std::optional<bool> nodelay_inherited_;
  asio::steady_timer accept_retry_;
  std::uint16_t port_ = 0;
  bool stopping_ = false;
  Store store_;
  EarlyProofNonces early_proof_nonces_{options_.early_proof_window.count()};
  std::vector<char> read_buffer_;  // shared: a read is consumed before the next one starts
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  std::list<Handshaking> handshaking_;  // not yet welcomed nor refused, in accept order
  asio::steady_timer handshake_timer_{io_};  // for the front of handshaking_
  bool handshake_timer_armed_ = false;
  std::size_t closing_ = 0;  // refused or finishing, kept open to deliver their last bytes

  mutable std::mutex mutex_;  // guards stats_ and connected_ranks_, read from other threads
  mutable std::condition_variable rank_left_;  // a rank's last connection closed
  ServerStats stats_;
  std::map<std::uint32_t, std::uint32_t> connected_ranks_;  // rank -> open connections

  std::mutex stop_mutex_;
  std::thread thread_;
};

// One client connection: the handshake, then requests answered in order.
class StoreServer::Core::Connection final : public Waiter,
                                            public std::enable_shared_from_this<Connection> {
 public:
  Connection(Core& core, tcp::socket socket)
      : core_(core),
        socket_(std::move(socket)),
        timer_(core.io_),
        decoder_(core.options_.max_frame_payload) {}

  void Start() {
    error_code ignored;
    if (!core_.nodelay_inherited_) {
      tcp::no_delay nodelay;
      socket_.get_option(nodelay, ignored);
      core_.nodelay_inherited_ = !ignored && nodelay.value();
    }
    if (!*core_.nodelay_inherited_) {
      socket_.set_option(tcp::no_delay(true), ignored);
    }
    // The socket is non-blocking already (accept4); this tells Asio, whose reads would otherwise
    // poll for readiness.
    socket_.non_blocking(true, ignored);
    handshake_entry_ = core_.OnHandshakeStarted(this);
    decoder_.ExpectOnly(MessageType::kHello, kHelloPayloadBytes);
    ArmRead();
  }

  // Sends Refused{text} and closes; counted under reason.
  void Refuse(std::string_view reason, std::string text) {
    if (state_ == State::kClosing || state_ == State::kClosed) {
      return;
    }
    core_.CountRefusal(reason);
    if (pending_) {
      core_.store_.Cancel(this);
      SetPending(false);
    }
    SetState(State::kClosing);
    // Nothing it sent will be read: give the memory back now rather than after the linger.
    queued_ = FrameQueue();
    queued_bytes_ = 0;
    decoder_ = FrameDecoder(0);
    replies_.pending() += EncodeMessage(Refused{Truncated(std::move(text))});
    if (core_.closing_ > core_.options_.max_unauthenticated_connections) {
      // Past the linger budget (a flood): the Refused goes out only if the socket takes it now.
      if (!replies_.write_in_flight()) {
        error_code ignored;
        socket_.write_some(asio::buffer(replies_.pending()), ignored);
      }
      Close();
      return;
    }
    ArmTimer(kCloseLinger, TimerPurpose::kLinger);
    Flush();
    Account();
  }

  // Immediate; the Core forgets this connection.
  void Close() {
    if (state_ == State::kClosed) {
      return;
    }
    if (pending_) {
      core_.store_.Cancel(this);
      SetPending(false);
    }
    SetState(State::kClosed);
    ++timer_generation_;
    timer_.cancel();
    error_code ignored;
    socket_.close(ignored);
    queued_.clear();
    Account();
    core_.OnClosed(this, authenticated_ ? std::optional<std::uint32_t>(rank_) : std::nullopt);
  }

  void Resolve(std::string reply_frame) override {
    SetPending(false);
    ++timer_generation_;
    timer_.cancel();
    replies_.pending() += reply_frame;
    // Sent by Pump, later rather than now (the Store is mid-operation for another connection),
    // in one write with the replies to requests queued behind this one (a join's Gets).
    if (!pump_posted_) {
      pump_posted_ = true;
      asio::post(core_.io_, [self = shared_from_this()] {
        self->pump_posted_ = false;
        self->Pump();
      });
    }
  }

 private:
  enum class State : std::uint8_t { kAwaitHello, kAwaitProof, kReady, kClosing, kClosed };
  enum class TimerPurpose : std::uint8_t { kRequest, kLinger };

  // Every state change goes through here: it keeps the Core's handshake list and closing count.
  void SetState(State next) {
    if (handshake_entry_ && next > State::kAwaitProof) {
      core_.OnHandshakeEnded(*handshake_entry_);
      handshake_entry_.reset();
    }
    if (next == State::kClosing && state_ != State::kClosing) {
      ++core_.closing_;
    } else if (state_ == State::kClosing && next != State::kClosing) {
      --core_.closing_;
    }
    state_ = next;
  }

  bool InHandshake() const { return state_ <= State::kAwaitProof; }

  // Heap bytes this connection holds (ServerStats::buffered_bytes).
  std::size_t HeldBytes() const {
    return decoder_.BufferedBytes() + queued_bytes_ + replies_.HeapBytes();
  }

  // Brings the Core's total of buffered bytes up to date with this connection's.
  void Account() {
    const std::size_t held = state_ == State::kClosed ? 0 : HeldBytes();
    if (held != accounted_bytes_) {
      core_.OnBufferedChanged(accounted_bytes_, held);
      accounted_bytes_ = held;
    }
  }

  void SetPending(bool pending) {
    if (pending != pending_) {
      pending_ = pending;
      core_.OnPendingChanged(pending);
    }
  }

  std::size_t OutputBytes() const { return replies_.size(); }
  bool OverBudget() const {
    return queued_bytes_ > core_.options_.max_buffered_bytes ||
           OutputBytes() > core_.options_.max_buffered_bytes;
  }

  // Handles what is queued, sends what is ready, reads more if there is room.
  void Pump() {
    if (state_ == State::kClosed) {
      return;
    }
    ProcessFrames();
    if (peer_closed_ && state_ <= State::kReady) {
      if (pending_) {
        Close();  // nobody will read what the Wait or Barrier would answer
        return;
      }
      if (queued_.empty()) {
        CloseAfterFlush();
        return;
      }
    }
    Flush();
    ArmRead();
    Account();
  }

  // A client that has closed its side gets the replies it is owed, then the close.
  void CloseAfterFlush() {
    SetState(State::kClosing);
    if (replies_.drained()) {
      Close();
      return;
    }
    ArmTimer(kCloseLinger, TimerPurpose::kLinger);
    Flush();
    Account();
  }

  void ArmRead() {
    if (read_armed_ || state_ == State::kClosed || (peer_closed_ && state_ != State::kClosing)) {
      return;
    }
    // A closing connection is drained (and its bytes dropped) only once its Refused is out.
    if (state_ == State::kClosing ? !draining_ : OverBudget()) {
      return;
    }
    read_armed_ = true;
    // async_read_some tries the read at once unless Asio saw the socket drained since its last
    // readiness edge, and otherwise waits on the registration the socket got when it was
    // accepted: no epoll_ctl per read, and no edge missed (an async_wait re-arms each time).
    socket_.async_read_some(asio::buffer(first_read_),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              self->OnRead(ec, n);
                            });
  }

  void OnRead(const error_code& ec, std::size_t n) {
    read_armed_ = false;
    if (state_ == State::kClosed) {
      return;
    }
    if (ec == asio::error::eof && state_ != State::kClosing) {
      peer_closed_ = true;  // answer what it sent, then close (see Pump)
    } else if (ec) {
      Close();  // reset, or the end of a refused client's stream
      return;
    } else if (!Take(std::string_view(first_read_.data(), n))) {
      return;
    }
    // A full first buffer may have left more in the socket: read on into the shared buffer.
    bool more = !ec && n == first_read_.size();
    for (int i = 0; more && i < kReadsPerEvent && !OverBudget(); ++i) {
      error_code read_ec;
      const std::size_t got = socket_.read_some(asio::buffer(core_.read_buffer_), read_ec);
      if (read_ec == asio::error::would_block || read_ec == asio::error::try_again) {
        break;
      }
      if (read_ec == asio::error::eof && state_ != State::kClosing) {
        peer_closed_ = true;
        break;
      }
      if (read_ec) {
        Close();
        return;
      }
      if (!Take(std::string_view(core_.read_buffer_.data(), got))) {
        return;
      }
      more = got == core_.read_buffer_.size();
    }
    Account();
    Pump();
  }

  // Decodes bytes read. In the handshake only the handshake frame is decoded, and handled at
  // once: the bytes behind it are decoded only if it got the connection welcomed (protocol.h),
  // so nothing an unauthenticated peer sends is kept past that frame. False once the connection
  // was refused or closed.
  bool Take(std::string_view data) {
    if (state_ == State::kClosing) {
      return true;  // draining a refused client
    }
    while (!data.empty()) {
      const bool handshaking = InHandshake();
      const std::size_t take =
          handshaking ? std::min(data.size(), decoder_.BytesToFrameEnd()) : data.size();
      if (!decoder_.Feed(data.substr(0, take))) {
        const FrameError& error = *decoder_.error();
        if (error.code == FrameErrorCode::kUnsupportedVersion) {
          Refuse(refusal::kUnsupportedVersion, "unsupported protocol version");
        } else if (error.code == FrameErrorCode::kUnexpectedType) {
          Refuse(refusal::kProtocolViolation, "protocol violation: " + error.message);
        } else {
          Refuse(refusal::kBadFrame, "bad frame: " + error.message);
        }
        return false;
      }
      data.remove_prefix(take);
      while (std::optional<Frame> frame = decoder_.Next()) {
        queued_bytes_ += kHeaderBytes + frame->payload.size();
        queued_.push_back(std::move(*frame));
      }
      if (!handshaking) {
        break;
      }
      ProcessFrames();  // the handshake frame, if it is complete
      if (state_ >= State::kClosing) {
        return false;
      }
      if (InHandshake() && !data.empty()) {
        // Only a welcomed Hello or Proof may have requests behind it; a Hello that asked for a
        // Challenge cannot have its Proof behind it.
        Refuse(refusal::kProtocolViolation,
               "protocol violation: bytes sent behind a Hello before its Challenge");
        return false;
      }
    }
    return true;
  }

  void ProcessFrames() {
    while (!queued_.empty() && !pending_ && state_ <= State::kReady &&
           OutputBytes() <= core_.options_.max_buffered_bytes) {
      Frame frame = std::move(queued_.front());
      queued_.pop_front();
      queued_bytes_ -= kHeaderBytes + frame.payload.size();
      if (state_ == State::kReady) {
        HandleRequest(std::move(frame));
      } else {
        HandleHandshake(frame);
      }
    }
  }

  void HandleHandshake(const Frame& frame) {
    if (state_ == State::kAwaitHello) {
      return HandleHello(frame);
    }
    if (frame.type != MessageType::kProof) {
      return Refuse(refusal::kProtocolViolation, "protocol violation: expected Proof, got " +
                                                     std::string(MessageTypeName(frame.type)));
    }
    Result<Proof> proof = Proof::Decode(frame.payload);
    if (!proof) {
      return Refuse(refusal::kBadFrame, "bad frame: " + proof.error());
    }
    if (!VerifyProof(core_.options_.token, nonce_, rank_, proof.value().hmac)) {
      return Refuse(refusal::kAuthenticationFailed, "authentication failed");
    }
    Welcome();
  }

  void HandleHello(const Frame& frame) {
    if (frame.type != MessageType::kHello) {
      return Refuse(refusal::kProtocolViolation, "protocol violation: expected Hello, got " +
                                                     std::string(MessageTypeName(frame.type)));
    }
    // The fields first: Hello::Decode also rejects rank >= world_size, which is a bad rank
    // rather than a bad frame.
    if (const auto fields = HelloRankAndWorld(frame.payload)) {
      if (fields->second != core_.max_ranks()) {
        return Refuse(refusal::kWorldSizeMismatch, "world size mismatch");
      }
      if (fields->first >= core_.max_ranks()) {
        return Refuse(refusal::kBadRank, "rank out of range");
      }
    }
    Result<Hello> decoded = Hello::Decode(frame.payload);
    if (!decoded) {
      return Refuse(refusal::kBadFrame, "bad frame: " + decoded.error());
    }
    const Hello& hello = decoded.value();
    rank_ = hello.rank;
    attempt_ = hello.attempt;
    if (hello.sent_at_ms == 0) {
      const std::optional<Nonce> nonce = MakeNonce();
      if (!nonce) {
        return Refuse(refusal::kInternalError, "internal error");
      }
      nonce_ = *nonce;
      SetState(State::kAwaitProof);
      decoder_.ExpectOnly(MessageType::kProof, kProofBytes);
      replies_.pending() += EncodeMessage(Challenge{nonce_});
      return;
    }
    if (!VerifyEarlyProof(core_.options_.token, hello)) {
      return Refuse(refusal::kAuthenticationFailed, "authentication failed");
    }
    const std::int64_t now = WallClockMillis();
    if (!core_.early_proof_nonces_.Admit(hello.nonce, hello.sent_at_ms, now)) {
      const std::int64_t off = hello.sent_at_ms - now;
      const std::int64_t window = core_.options_.early_proof_window.count();
      const bool in_window = off >= -window && off <= window;
      return Refuse(refusal::kStaleProof,
                    "stale early proof: " +
                        (in_window ? std::string("its nonce was used before")
                                   : "sent " + std::to_string(off) +
                                         " ms from the server's clock, outside +-" +
                                         std::to_string(std::max<std::int64_t>(window, 0)) +
                                         " ms") +
                        "; " + std::string(kRetryWithChallenge));
    }
    Welcome();
  }

  // The handshake is done: refuses a rank of another gang attempt, else welcomes it.
  void Welcome() {
    if (attempt_ != kAnyAttempt && attempt_ != core_.options_.attempt) {
      return Refuse(refusal::kAttemptMismatch,
                    "attempt mismatch: this store serves gang attempt " +
                        std::to_string(core_.options_.attempt) + ", not " +
                        std::to_string(attempt_));
    }
    SetState(State::kReady);
    decoder_.ExpectAny();
    authenticated_ = true;
    core_.OnAuthenticated(rank_);
    replies_.pending() += EncodeMessage(rendezvous::Welcome{});
  }

  void HandleRequest(Frame frame) {
    switch (frame.type) {
      case MessageType::kSet:
      case MessageType::kGet:
      case MessageType::kWait:
      case MessageType::kAdd:
      case MessageType::kCompareSet:
      case MessageType::kBarrier:
        break;
      default:
        return Refuse(refusal::kProtocolViolation, "protocol violation: " +
                                                       std::string(MessageTypeName(frame.type)) +
                                                       " is not a request");
    }
    Result<Message> decoded = DecodeMessage(frame);
    if (!decoded) {
      replies_.pending() += ErrorReply(decoded.error());  // framing is intact, so the connection can go on
      return;
    }
    Store& store = core_.store_;
    Message message = std::move(decoded).value();
    if (const std::optional<std::string> reply = ServerKeyReply(message)) {
      replies_.pending() += *reply;
    } else if (auto* set = std::get_if<rendezvous::Set>(&message)) {
      replies_.pending() += store.Apply(std::move(*set));
    } else if (const auto* get = std::get_if<rendezvous::Get>(&message)) {
      replies_.pending() += store.Apply(*get);
    } else if (auto* add = std::get_if<rendezvous::Add>(&message)) {
      replies_.pending() += store.Apply(std::move(*add));
    } else if (auto* compare_set = std::get_if<rendezvous::CompareSet>(&message)) {
      replies_.pending() += store.Apply(std::move(*compare_set));
    } else if (const auto* wait = std::get_if<rendezvous::Wait>(&message)) {
      StartPending(store.StartWait(this, *wait), wait->timeout_ms);
    } else if (const auto* barrier = std::get_if<rendezvous::Barrier>(&message)) {
      StartPending(store.StartBarrier(this, rank_, *barrier), barrier->timeout_ms);
    }
  }

  // The reply to a request on a key the server maintains, or nullopt for any other request.
  std::optional<std::string> ServerKeyReply(const Message& message) const {
    if (const auto* get = std::get_if<rendezvous::Get>(&message); get && IsServerKey(get->key)) {
      return EncodeMessage(Value{get->key == kAttemptKey ? std::to_string(core_.options_.attempt)
                                                         : core_.ConnectedRanksText()});
    }
    if (const auto* set = std::get_if<rendezvous::Set>(&message); set && IsServerKey(set->key)) {
      return ServerKeyWriteReply("Set", set->key);
    }
    if (const auto* add = std::get_if<rendezvous::Add>(&message); add && IsServerKey(add->key)) {
      return ServerKeyWriteReply("Add", add->key);
    }
    if (const auto* compare_set = std::get_if<rendezvous::CompareSet>(&message);
        compare_set && IsServerKey(compare_set->key)) {
      return ServerKeyWriteReply("CompareSet", compare_set->key);
    }
    return std::nullopt;
  }

  void StartPending(std::optional<std::string> reply_now, std::uint32_t timeout_ms) {
    if (reply_now) {
      replies_.pending() += *reply_now;
      return;
    }
    SetPending(true);
    ArmTimer(std::chrono::milliseconds(timeout_ms), TimerPurpose::kRequest);
  }

  void ArmTimer(std::chrono::milliseconds after, TimerPurpose purpose) {
    const std::uint64_t generation = ++timer_generation_;
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this(), generation, purpose](const error_code& ec) {
      if (!ec && self->timer_generation_ == generation && self->state_ != State::kClosed) {
        self->OnTimer(purpose);
      }
    });
  }

  void OnTimer(TimerPurpose purpose) {
    switch (purpose) {
      case TimerPurpose::kRequest:
        if (pending_) {
          SetPending(false);
          replies_.pending() += core_.store_.Expire(this);
          Pump();
        }
        return;
      case TimerPurpose::kLinger:
        Close();
        return;
    }
  }

  void Flush() {
    if (state_ == State::kClosed) {
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
    if (state_ == State::kClosed) {
      return;
    }
    if (ec) {
      Close();
      return;
    }
    if (!replies_.pending().empty()) {
      Flush();
      Account();
      return;
    }
    if (state_ == State::kClosing) {
      // The last reply (often a Refused) is out: half-close and drop whatever the client still
      // sends, so our close does not turn into a reset that could destroy that reply unread.
      error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      draining_ = true;
      ArmRead();
      Account();
      return;
    }
    Pump();  // the output may have been what paused us
  }

  Core& core_;
  tcp::socket socket_;
  asio::steady_timer timer_;  // a pending request's deadline, then the linger
  std::uint64_t timer_generation_ = 0;
  FrameDecoder decoder_;
  FrameQueue queued_;
  std::size_t queued_bytes_ = 0;
  ReplyBuffer replies_;
  // What one readiness event reads first: a rank's whole join (Hello, Set, Barrier, Get) fits.
  std::array<char, 256> first_read_{};
  bool read_armed_ = false;
  bool draining_ = false;
  bool peer_closed_ = false;  // the client has shut down its sending side
  bool pending_ = false;  // a Wait or Barrier is registered with the Store
  bool pump_posted_ = false;
  bool authenticated_ = false;
  State state_ = State::kAwaitHello;
  std::optional<HandshakeEntry> handshake_entry_;  // while in the Core's handshake list
  std::size_t accounted_bytes_ = 0;  // this connection's share of ServerStats::buffered_bytes
  std::uint32_t rank_ = 0;
  std::uint32_t attempt_ = kAnyAttempt;  // the Hello's
  Nonce nonce_{};  // the Challenge's
};

void StoreServer::Core::OnAccepted(tcp::socket socket) {
  auto connection = std::make_shared<Connection>(*this, std::move(socket));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.accepted;
    ++stats_.open;
  }
  // A full handshake cap makes room by evicting the oldest handshake (see ServerOptions).
  if (!handshaking_.empty() && handshaking_.size() >= options_.max_unauthenticated_connections) {
    const std::shared_ptr<Connection> oldest = connections_.at(handshaking_.front().connection);
    oldest->Refuse(refusal::kTooManyConnections, "too many connections");
  }
  const bool too_many = connections_.size() - closing_ >= options_.max_connections ||
                        options_.max_unauthenticated_connections == 0;
  connections_.emplace(connection.get(), connection);
  connection->Start();
  if (too_many) {
    connection->Refuse(refusal::kTooManyConnections, "too many connections");
  }
}

void StoreServer::Core::ExpireHandshakes() {
  const auto now = std::chrono::steady_clock::now();
  while (!handshaking_.empty() && handshaking_.front().deadline <= now) {
    // Refusing takes the connection off the list.
    const std::shared_ptr<Connection> late = connections_.at(handshaking_.front().connection);
    late->Refuse(refusal::kHandshakeTimeout, "handshake timeout");
  }
  ArmHandshakeTimer();
}

void StoreServer::Core::Shutdown() {
  stopping_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  handshake_timer_.cancel();
  if (guest_) {
    guest_->Shutdown();
  }
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(connections_.size());
  for (const auto& [raw, connection] : connections_) {
    all.push_back(connection);
  }
  for (const auto& connection : all) {
    connection->Close();
  }
}

StoreServer::StoreServer(ServerOptions options) : core_(std::make_unique<Core>(std::move(options))) {}

StoreServer::~StoreServer() = default;

std::uint16_t StoreServer::port() const { return core_->port(); }

LoopGuest* StoreServer::guest() const { return core_->guest(); }

void StoreServer::Stop() { core_->Stop(); }

ServerStats StoreServer::Stats() const { return core_->Stats(); }

std::map<std::string, std::uint64_t> StoreServer::RefusedByReasonForTest() const {
  return core_->Stats().refused_by_reason;
}

std::vector<std::uint32_t> StoreServer::ConnectedRanks() const { return core_->ConnectedRanks(); }

bool StoreServer::WaitUntilEveryRankLeft(std::chrono::milliseconds within) const {
  return core_->WaitUntilEveryRankLeft(within);
}

}  // namespace ringleader::rendezvous
