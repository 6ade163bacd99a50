// The trainer store's limits and failure handling, with raw sockets (about bytes and caps, not a
// client; real PyTorch clients are torch_store_server_test's): the connection cap evicts the
// least recently active idle connection and never one with a wait pending, an unknown query
// closes with a log line naming the type and the peer, a slow reader is paused not buffered,
// a port in use fails the start naming it, and a stop with waits pending returns.
#include "sidecar/rendezvous/torch_store_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/store_server.h"

namespace ringleader::rendezvous {
namespace {

namespace ts = torch_store;
using ::testing::HasSubstr;
using std::chrono::milliseconds;

// Polls `done` until it holds or 10 s have passed.
template <typename Done>
bool Eventually(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

class CountingObserver final : public TorchStoreObserver {
 public:
  void OnAccepted() override { ++accepted; }
  void OnClosed() override { ++closed; }
  void OnRequest(ts::Query query) override {
    ++requests[static_cast<std::size_t>(query)];
  }
  void OnUnknownQuery(ts::Dialect dialect, std::uint8_t type) override {
    std::lock_guard<std::mutex> lock(mutex);
    unknown.push_back(std::string(ts::DialectName(dialect)) + "/" + std::to_string(type));
  }
  void OnClosedForCause(std::string_view reason) override {
    std::lock_guard<std::mutex> lock(mutex);
    causes.emplace_back(reason);
  }
  std::atomic<int> accepted{0};
  std::atomic<int> closed{0};
  std::array<std::atomic<int>, ts::kQueryCount> requests{};
  std::mutex mutex;
  std::vector<std::string> unknown;
  std::vector<std::string> causes;
};

class TrainerStore {
 public:
  explicit TrainerStore(TorchStoreOptions torch) {
    torch.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(line);
    };
    ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = "job-token";
    options.make_guest = TorchStoreServer::GuestFactory(std::move(torch));
    server_ = std::make_unique<StoreServer>(std::move(options));
  }
  TorchStoreServer& torch() const { return *static_cast<TorchStoreServer*>(server_->guest()); }
  std::uint16_t port() const { return torch().port(); }
  TorchStoreStats Stats() const { return torch().Stats(); }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return log_;
  }
  void Stop() { server_->Stop(); }

 private:
  std::mutex log_mutex_;
  std::vector<std::string> log_;
  std::unique_ptr<StoreServer> server_;
};

class Socket {
 public:
  explicit Socket(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      throw std::runtime_error("cannot connect to the trainer store");
    }
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  void Send(const std::string& bytes) const {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Exactly n bytes, or fewer if the server closes or nothing comes within 10 s.
  std::string Receive(std::size_t n) const {
    std::string bytes;
    while (bytes.size() < n) {
      pollfd readable{fd_, POLLIN, 0};
      if (::poll(&readable, 1, 10'000) != 1) {
        break;
      }
      char buffer[65536];
      const ssize_t got = ::recv(fd_, buffer, std::min(sizeof(buffer), n - bytes.size()), 0);
      if (got <= 0) {
        break;
      }
      bytes.append(buffer, static_cast<std::size_t>(got));
    }
    return bytes;
  }
  // True once the server has closed the connection (EOF or reset within 10 s).
  bool Closed() const {
    pollfd readable{fd_, POLLIN, 0};
    if (::poll(&readable, 1, 10'000) != 1) {
      return false;
    }
    char byte = 0;
    return ::recv(fd_, &byte, 1, MSG_PEEK) <= 0;
  }
  bool StillOpen() const {
    pollfd readable{fd_, POLLIN, 0};
    return ::poll(&readable, 1, 100) == 0;
  }
  void ShutdownSending() const { ::shutdown(fd_, SHUT_WR); }
  // The bytes and the FIN in one segment: corked, they wait for the shutdown to carry them.
  void SendAndShutdownInOneSegment(const std::string& bytes) const {
    const int on = 1;
    ASSERT_EQ(::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), 0);
    Send(bytes);
    ShutdownSending();
  }

 private:
  int fd_;
};

std::string Request(ts::Query query, std::vector<std::string> keys = {},
                    std::vector<std::string> values = {}, std::uint32_t nonce = 0) {
  return *ts::EncodeRequest(ts::Dialect::kTorch2,
                            ts::Request{query, std::move(keys), std::move(values), 0, nonce});
}

const std::string kOpening = Request(ts::Query::kValidate, {}, {}, ts::kValidationMagic);

std::string Pong(std::uint32_t nonce) {
  std::string out;
  ts::AppendUint32(out, nonce);
  return out;
}

// A 2.x client's opening and a PING answered: a connection the server has fully seen.
void Open(const Socket& socket, std::uint32_t nonce = 7) {
  socket.Send(kOpening + Request(ts::Query::kPing, {}, {}, nonce));
  ASSERT_EQ(socket.Receive(4), Pong(nonce));
}

// A request answered on an open connection: activity.
void Ping(const Socket& socket, std::uint32_t nonce) {
  socket.Send(Request(ts::Query::kPing, {}, {}, nonce));
  ASSERT_EQ(socket.Receive(4), Pong(nonce));
}

TEST(TorchStoreServerLimitsTest, AtTheCapTheLeastRecentlyActiveIdleConnectionIsEvicted) {
  CountingObserver observer;
  TorchStoreOptions store_options;
  store_options.max_connections = 3;
  store_options.observer = &observer;
  TrainerStore store(store_options);
  Socket first(store.port());
  Open(first, 1);
  Socket second(store.port());
  Open(second, 2);
  Socket third(store.port());
  Open(third, 3);
  Ping(first, 4);  // first is now the most recently active; second the least
  Socket fourth(store.port());
  Open(fourth, 5);
  EXPECT_TRUE(second.Closed());
  EXPECT_TRUE(first.StillOpen());
  EXPECT_TRUE(third.StillOpen());
  const TorchStoreStats stats = store.Stats();
  EXPECT_EQ(stats.closed_by_reason.at(std::string(torch_close::kEvicted)), 1u);
  EXPECT_EQ(stats.open, 3u);
  EXPECT_EQ(stats.accepted, 4u);
  EXPECT_THAT(store.Log(), ::testing::Contains(HasSubstr("evicted")));
  EXPECT_EQ(observer.accepted, 4);
  EXPECT_TRUE(Eventually([&] { return observer.closed == 1; }));
}

TEST(TorchStoreServerLimitsTest, AConnectionWithAWaitPendingIsNeverEvicted) {
  TorchStoreOptions store_options;
  store_options.max_connections = 2;
  TrainerStore store(store_options);
  Socket waiting(store.port());
  Open(waiting);
  waiting.Send(Request(ts::Query::kWait, {"/never"}));
  ASSERT_TRUE(Eventually([&] { return store.Stats().pending == 1; }));
  Socket idle(store.port());
  Open(idle);
  Socket newcomer(store.port());
  Open(newcomer);
  EXPECT_TRUE(idle.Closed());
  EXPECT_TRUE(waiting.StillOpen());

  // With every connection waiting, a new one is refused and the waiters stay.
  newcomer.Send(Request(ts::Query::kWait, {"/never"}));
  ASSERT_TRUE(Eventually([&] { return store.Stats().pending == 2; }));
  Socket refused(store.port());
  EXPECT_TRUE(refused.Closed());
  EXPECT_TRUE(waiting.StillOpen());
  EXPECT_TRUE(newcomer.StillOpen());
  EXPECT_EQ(store.Stats().closed_by_reason.at(std::string(torch_close::kTooManyConnections)), 1u);

  // Once a waiter cancels it is idle again, and evictable; the other wait still completes.
  newcomer.Send(Request(ts::Query::kCancelWait));
  EXPECT_EQ(newcomer.Receive(1), std::string(1, static_cast<char>(ts::kWaitCanceled)));
  Socket setter(store.port());  // evicts newcomer, idle again after its cancel
  Open(setter);
  setter.Send(Request(ts::Query::kSet, {"/never"}, {"now"}));
  EXPECT_EQ(waiting.Receive(1), std::string(1, static_cast<char>(ts::kStopWaiting)));
}

TEST(TorchStoreServerLimitsTest, AnUnknownQueryClosesWithALogLineNamingTheTypeAndThePeer) {
  CountingObserver observer;
  TorchStoreOptions store_options;
  store_options.observer = &observer;
  TrainerStore store(store_options);
  Socket socket(store.port());
  Open(socket);
  socket.Send(std::string(1, '\x42'));
  EXPECT_TRUE(socket.Closed());
  ASSERT_TRUE(Eventually([&] { return !store.Log().empty(); }));
  EXPECT_THAT(store.Log().front(),
              ::testing::MatchesRegex("trainer store: closing the connection from "
                                      "127\\.0\\.0\\.1:[0-9]+: unknown query type 66 \\(0x42\\) "
                                      "in the torch2 dialect"));
  const TorchStoreStats stats = store.Stats();
  EXPECT_EQ(stats.unknown_queries.at("torch2/66"), 1u);
  EXPECT_EQ(stats.closed_by_reason.at(std::string(torch_close::kUnknownQuery)), 1u);
  EXPECT_EQ(stats.Requests(ts::Query::kValidate), 1u);
  EXPECT_EQ(stats.Requests(ts::Query::kPing), 1u);
  std::lock_guard<std::mutex> lock(observer.mutex);
  EXPECT_THAT(observer.unknown, ::testing::ElementsAre("torch2/66"));
  EXPECT_THAT(observer.causes, ::testing::ElementsAre("unknown_query"));
}

TEST(TorchStoreServerLimitsTest, BeforeTheFirstRequestOnlyASmallRequestIsAccepted) {
  TorchStoreOptions store_options;
  store_options.max_frame_bytes = 1 << 20;
  store_options.max_first_frame_bytes = 1024;
  TrainerStore store(store_options);
  Socket early(store.port());
  // A 1.13 SET whose key alone is past the first-request bound: refused from its length.
  early.Send(*ts::EncodeRequest(ts::Dialect::kTorch1,
                                ts::Request{ts::Query::kSet, {std::string(2000, 'k')}, {"v"}}));
  EXPECT_TRUE(early.Closed());
  EXPECT_EQ(store.Stats().closed_by_reason.at(std::string(torch_close::kTooLarge)), 1u);

  Socket later(store.port());
  Open(later);
  later.Send(Request(ts::Query::kSet, {std::string(2000, 'k')}, {std::string(100000, 'v')}));
  later.Send(Request(ts::Query::kGet, {std::string(2000, 'k')}));
  EXPECT_EQ(later.Receive(8 + 100000).size(), 8u + 100000u);
}

// A client that sends requests and never reads its replies is paused once its unsent replies
// pass max_buffered_bytes: the server holds about that much, not everything asked for, and
// serves other connections meanwhile.
TEST(TorchStoreServerLimitsTest, ASlowReaderIsPausedNotBuffered) {
  constexpr std::size_t kBudget = 256 * 1024;
  TorchStoreOptions store_options;
  store_options.max_buffered_bytes = kBudget;
  TrainerStore store(store_options);
  Socket slow(store.port());
  Open(slow);
  const std::string value(64 * 1024, 'v');
  slow.Send(Request(ts::Query::kSet, {"/big"}, {value}));
  std::string gets;
  constexpr int kGets = 2000;  // 128 MiB of replies asked for
  for (int i = 0; i < kGets; ++i) {
    gets += Request(ts::Query::kGet, {"/big"});
  }
  std::thread sender([&] { slow.Send(gets); });
  Socket other(store.port());
  Open(other, 99);  // answered while the slow one is stuck
  other.Send(Request(ts::Query::kGet, {"/big"}));
  EXPECT_EQ(other.Receive(8 + value.size()).size(), 8 + value.size());
  std::this_thread::sleep_for(milliseconds(300));
  // The kernel's socket buffers hold some; the server itself a small multiple of its budget
  // (the unsent replies and the write in flight, each in a string that grew by doubling).
  EXPECT_LT(store.Stats().buffered_bytes, 8 * kBudget);
  std::size_t received = 0;
  while (received < kGets * (8 + value.size())) {
    const std::string chunk = slow.Receive(std::min<std::size_t>(1 << 20, kGets * (8 + value.size()) - received));
    if (chunk.empty()) {
      break;
    }
    received += chunk.size();
  }
  sender.join();
  EXPECT_EQ(received, kGets * (8 + value.size()));
  EXPECT_LT(store.Stats().peak_buffered_bytes, 8 * kBudget + 2 * value.size());
}

TEST(TorchStoreServerLimitsTest, AClientThatLeavesWithAWaitPendingIsForgotten) {
  TrainerStore store({});
  {
    Socket leaving(store.port());
    Open(leaving);
    leaving.Send(Request(ts::Query::kWait, {"/never"}));
    ASSERT_TRUE(Eventually([&] { return store.Stats().pending == 1; }));
    leaving.ShutdownSending();
    EXPECT_TRUE(leaving.Closed());
  }
  EXPECT_TRUE(Eventually([&] { return store.Stats().pending == 0 && store.Stats().open == 0; }));
}

// Regression guard for the edge-triggered reads: a FIN that arrives with the last request is
// consumed by the recv that reads the request and raises no edge of its own, yet the server must
// still answer, see the end and close.
TEST(TorchStoreServerLimitsTest, AFinArrivingWithTheLastRequestIsAnsweredThenClosed) {
  TrainerStore store({});
  for (std::uint32_t nonce = 1; nonce <= 5; ++nonce) {
    Socket leaving(store.port());
    leaving.SendAndShutdownInOneSegment(kOpening + Request(ts::Query::kPing, {}, {}, nonce));
    EXPECT_EQ(leaving.Receive(4), Pong(nonce));
    EXPECT_TRUE(leaving.Closed());
  }
  EXPECT_TRUE(Eventually([&] { return store.Stats().open == 0; }));
}

TEST(TorchStoreServerLimitsTest, APortInUseFailsTheStartNamingIt) {
  TrainerStore first({});
  const std::uint16_t port = first.port();
  try {
    TorchStoreOptions second_options;
    second_options.bind_address = "127.0.0.1";
    second_options.port = port;
    TrainerStore second(second_options);
    FAIL() << "a second server bound port " << port;
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port)));
  }
  // The default address (every address) is refused too while 127.0.0.1 holds the port.
  TorchStoreOptions every_address;
  every_address.port = port;
  EXPECT_THROW(TrainerStore{every_address}, std::runtime_error);
}

TEST(TorchStoreServerLimitsTest, StoppingWithWaitsPendingReturnsAndClosesThem) {
  TrainerStore store({});
  std::vector<std::unique_ptr<Socket>> waiting;
  for (int i = 0; i < 20; ++i) {
    waiting.push_back(std::make_unique<Socket>(store.port()));
    Open(*waiting.back());
    waiting.back()->Send(Request(ts::Query::kWait, {"/never"}));
  }
  ASSERT_TRUE(Eventually([&] { return store.Stats().pending == 20; }));
  store.Stop();
  for (const auto& socket : waiting) {
    EXPECT_TRUE(socket->Closed());
  }
}

}  // namespace
}  // namespace ringleader::rendezvous
