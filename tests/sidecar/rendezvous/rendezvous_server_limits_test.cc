// StoreServer against unauthenticated peers that try to make it hold memory or sockets (issue
// 20): handshake frames bounded by their header, a flood of large claims trickled slowly, and
// the caps on handshakes in progress and on refused connections kept open.
#include "sidecar/rendezvous/store_server.h"

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/store_client.h"
#include "tests/sidecar/rendezvous/local_store.h"

namespace ringleader::rendezvous {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Eventually;

constexpr char kToken[] = "s3cret-job-token";

// What one connection still in its handshake may hold: a partial header (in the decoder's own
// array), at most a Hello's or a Proof's payload reserved whole, and the Challenge or Refused it
// is sent. protocol.h's bound is 12 + 84 bytes of frame and a 44-byte Challenge; this leaves
// room for allocator rounding of those few strings.
constexpr std::size_t kMostHeldPerHandshake = 256;

std::string U32(std::uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
  }
  return out;
}

// A frame header announcing `length` payload bytes that the test may never send.
std::string HeaderClaiming(MessageType type, std::uint32_t length) {
  const auto t = static_cast<std::uint16_t>(type);
  return U32(kMagic) +
         std::string{static_cast<char>(kVersion >> 8), static_cast<char>(kVersion & 0xFF)} +
         std::string{static_cast<char>(t >> 8), static_cast<char>(t & 0xFF)} + U32(length);
}

// One client socket driven by hand. Sends never block, so a server that stops reading cannot
// stall the test; reads take whole messages against a deadline.
class Peer {
 public:
  explicit Peer(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~Peer() { ::close(fd_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  bool connected() const { return connected_; }

  // Sends what the socket takes now; false once the server has closed or reset the connection.
  bool SendSome(std::string_view bytes) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    return n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK;
  }

  // Sends all of bytes within a second; false if the server closed or stopped reading.
  bool SendAll(std::string_view bytes) {
    const auto deadline = Clock::now() + seconds(1);
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if ((n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || !Await(POLLOUT, deadline)) {
        return false;
      }
    }
    return true;
  }

  // The next message, or nullopt if the server closed first or `within` passed.
  std::optional<Message> Read(milliseconds within = seconds(5)) {
    const auto deadline = Clock::now() + within;
    while (true) {
      if (std::optional<Frame> frame = decoder_.Next()) {
        Result<Message> message = DecodeMessage(*frame);
        EXPECT_TRUE(message.ok()) << message.error();
        return message.ok() ? std::optional<Message>(std::move(message).value()) : std::nullopt;
      }
      if (closed_ || !Fill(deadline)) {
        return std::nullopt;
      }
    }
  }

  // The reason of the Refused the server sends next, or "" if something else or nothing came.
  std::string RefusalReason(milliseconds within = seconds(5)) {
    const std::optional<Message> message = Read(within);
    const auto* refused = message ? std::get_if<Refused>(&*message) : nullptr;
    return refused != nullptr ? refused->reason : "";
  }

  // Sends a Hello and returns the Challenge's nonce, if one came.
  std::optional<Nonce> Hello(std::uint32_t rank, std::uint32_t world_size) {
    if (!SendAll(EncodeMessage(rendezvous::Hello{rank, world_size}))) {
      return std::nullopt;
    }
    const std::optional<Message> reply = Read();
    const auto* challenge = reply ? std::get_if<Challenge>(&*reply) : nullptr;
    return challenge != nullptr ? std::optional<Nonce>(challenge->nonce) : std::nullopt;
  }

  // The whole handshake with the right token; true once welcomed.
  bool Authenticate(std::uint32_t rank, std::uint32_t world_size) {
    const std::optional<Nonce> nonce = Hello(rank, world_size);
    return nonce && SendAll(EncodeMessage(Proof{ComputeProof(kToken, *nonce, rank)})) &&
           Read() == Message(Welcome{});
  }

 private:
  bool Await(short events, Clock::time_point deadline) {
    pollfd p{fd_, events, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    return left > 0 && ::poll(&p, 1, static_cast<int>(left)) > 0;
  }

  // One recv; false at the deadline.
  bool Fill(Clock::time_point deadline) {
    if (!Await(POLLIN, deadline)) {
      return false;
    }
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      closed_ = true;  // end of stream or reset
      return true;
    }
    decoder_.Feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    return true;
  }

  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  FrameDecoder decoder_;
};

std::uint64_t RefusedFor(const StoreServer& server, std::string_view reason) {
  const auto refused = server.RefusedByReasonForTest();
  const auto it = refused.find(std::string(reason));
  return it == refused.end() ? 0 : it->second;
}

std::uint64_t TotalRefused(const StoreServer& server) {
  std::uint64_t total = 0;
  for (const auto& [reason, count] : server.RefusedByReasonForTest()) {
    total += count;
  }
  return total;
}

ServerOptions Options(std::uint32_t world_size) {
  ServerOptions options = testing::LocalServerOptions(kToken, world_size);
  // Far beyond each test's deadlines: a refusal seen in time came from the header, not the clock.
  options.handshake_timeout = seconds(60);
  return options;
}

TEST(StoreServerLimitsTest, OversizedHandshakeFramesAreRefusedByTheirHeaderAlone) {
  StoreServer server(Options(2));
  {
    // One byte more than a Hello can be, and no payload at all.
    Peer peer(server.port());
    ASSERT_TRUE(peer.SendAll(HeaderClaiming(MessageType::kHello, kHelloPayloadBytes + 1)));
    EXPECT_EQ(peer.RefusalReason(seconds(2)), "bad frame: header.length: 85 exceeds 84 (a Hello)");
  }
  {
    Peer peer(server.port());
    ASSERT_TRUE(peer.SendAll(HeaderClaiming(MessageType::kHello, 2 * 1024 * 1024)));
    EXPECT_THAT(peer.RefusalReason(seconds(2)), HasSubstr("header.length: 2097152 exceeds 84"));
  }
  {
    Peer peer(server.port());
    ASSERT_TRUE(peer.Hello(1, 2).has_value());
    ASSERT_TRUE(peer.SendAll(HeaderClaiming(MessageType::kProof, kProofBytes + 1)));
    EXPECT_EQ(peer.RefusalReason(seconds(2)), "bad frame: header.length: 33 exceeds 32 (a Proof)");
  }
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), 3U);
  {
    // A request where the Proof belongs, announcing a large value.
    Peer peer(server.port());
    ASSERT_TRUE(peer.Hello(1, 2).has_value());
    ASSERT_TRUE(peer.SendAll(HeaderClaiming(MessageType::kSet, 1024 * 1024)));
    EXPECT_EQ(peer.RefusalReason(seconds(2)),
              "protocol violation: header.type: expected Proof, got Set");
  }
  EXPECT_EQ(RefusedFor(server, refusal::kProtocolViolation), 1U);
  EXPECT_LE(server.Stats().peak_buffered_bytes, 4 * kMostHeldPerHandshake);
}

// Regression for issue 20: 400 connections that each announced a 2 MiB Hello or Set and
// trickled most of it took rank 0 from 16 MB to 322 MB. Four kinds of such peers here: a huge
// Hello; a Hello, then a huge Set where the Proof belongs; a Proof that never completes; and a
// wrong Proof with a huge Set pipelined behind it. A world forms meanwhile, and what the server
// holds stays within what the handshakes in progress may hold.
TEST(StoreServerLimitsTest, AFloodOfLargeClaimsTrickledSlowlyHoldsLittleWhileAWorldForms) {
  constexpr std::uint32_t kWorld = 4;
  constexpr int kPerKind = 64;
  constexpr int kRounds = 16;
  constexpr std::size_t kChunk = 4096;  // 64 KiB per peer in all: 16 MiB held before the fix
  StoreServer server(Options(kWorld));

  std::vector<std::unique_ptr<Peer>> huge_hellos, sets_for_proofs, partial_proofs, wrong_proofs;
  for (int i = 0; i < kPerKind; ++i) {
    const auto rank = static_cast<std::uint32_t>(i) % kWorld;
    auto& hello = huge_hellos.emplace_back(std::make_unique<Peer>(server.port()));
    ASSERT_TRUE(hello->SendAll(HeaderClaiming(MessageType::kHello, 2 * 1024 * 1024)));

    auto& set = sets_for_proofs.emplace_back(std::make_unique<Peer>(server.port()));
    ASSERT_TRUE(set->Hello(rank, kWorld).has_value());
    ASSERT_TRUE(set->SendAll(HeaderClaiming(MessageType::kSet, 1024 * 1024)));

    auto& partial = partial_proofs.emplace_back(std::make_unique<Peer>(server.port()));
    ASSERT_TRUE(partial->Hello(rank, kWorld).has_value());
    ASSERT_TRUE(partial->SendAll(HeaderClaiming(MessageType::kProof, kProofBytes) + "p"));

    auto& wrong = wrong_proofs.emplace_back(std::make_unique<Peer>(server.port()));
    const std::optional<Nonce> nonce = wrong->Hello(rank, kWorld);
    ASSERT_TRUE(nonce.has_value());
    ASSERT_TRUE(wrong->SendAll(EncodeMessage(Proof{ComputeProof("not-the-token", *nonce, rank)}) +
                               HeaderClaiming(MessageType::kSet, 1024 * 1024)));
  }

  std::vector<std::optional<Result<BarrierOutcome>>> joined(kWorld);
  std::vector<std::thread> world;
  for (std::uint32_t rank = 0; rank < kWorld; ++rank) {
    world.emplace_back([&, rank] {
      auto client = StoreClient::Connect(
          testing::LocalClientOptions(kToken, server.port(), rank, kWorld, seconds(20)));
      if (!client.ok()) {
        joined[rank] = Result<BarrierOutcome>::Failure(client.error());
        return;
      }
      joined[rank] = client.value()->Barrier("formed", seconds(20));
    });
  }
  const std::string chunk(kChunk, 'x');
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerKind; ++i) {
      huge_hellos[i]->SendSome(chunk);
      sets_for_proofs[i]->SendSome(chunk);
      partial_proofs[i]->SendSome("p");  // still short of the Proof's 32 bytes
      wrong_proofs[i]->SendSome(chunk);
    }
  }
  for (std::thread& rank : world) {
    rank.join();
  }
  for (std::uint32_t rank = 0; rank < kWorld; ++rank) {
    ASSERT_TRUE(joined[rank].has_value());
    ASSERT_TRUE(joined[rank]->ok()) << "rank " << rank << ": " << joined[rank]->error();
    EXPECT_FALSE(joined[rank]->value().timed_out) << "rank " << rank;
  }

  // Only the partial Proofs are still in their handshake; every other kind was refused as soon
  // as its header arrived, or its Proof did.
  EXPECT_TRUE(Eventually([&] { return server.Stats().unauthenticated == kPerKind; }))
      << server.Stats().unauthenticated;
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), static_cast<std::uint64_t>(kPerKind));
  EXPECT_EQ(RefusedFor(server, refusal::kProtocolViolation), static_cast<std::uint64_t>(kPerKind));
  EXPECT_EQ(RefusedFor(server, refusal::kAuthenticationFailed),
            static_cast<std::uint64_t>(kPerKind));
  // Every peer at once in its handshake, plus the world's small requests and replies.
  const std::size_t bound = 4 * kPerKind * kMostHeldPerHandshake + 64 * 1024;
  EXPECT_LE(server.Stats().peak_buffered_bytes, bound)
      << "the server held " << server.Stats().peak_buffered_bytes << " bytes at its peak";

  // Once everyone has gone, nothing is held.
  huge_hellos.clear();
  sets_for_proofs.clear();
  partial_proofs.clear();
  wrong_proofs.clear();
  EXPECT_TRUE(Eventually(
      [&] { return server.Stats().open == 0 && server.Stats().buffered_bytes == 0; }, seconds(5)))
      << "open " << server.Stats().open << ", buffered " << server.Stats().buffered_bytes;
}

TEST(StoreServerLimitsTest, AFullHandshakeCapEvictsTheOldestHandshakeAndARankStillJoins) {
  ServerOptions options = Options(1);
  options.max_unauthenticated_connections = 3;
  StoreServer server(options);
  const std::string partial_hello = EncodeMessage(Hello{0, 1}).substr(0, 5);
  std::vector<std::unique_ptr<Peer>> idle;
  for (std::uint64_t i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<Peer>(server.port()));
    ASSERT_TRUE(idle.back()->SendAll(partial_hello));
    // One at a time, so the server's accept order is the order here.
    ASSERT_TRUE(Eventually([&] { return server.Stats().unauthenticated == i + 1; }));
  }
  Peer newcomer(server.port());
  ASSERT_TRUE(newcomer.SendAll(partial_hello));
  EXPECT_EQ(idle[0]->RefusalReason(), "too many connections");
  EXPECT_TRUE(Eventually([&] { return server.Stats().unauthenticated == 3; }));

  // A rank's handshake evicts the next oldest and completes.
  Peer rank(server.port());
  EXPECT_TRUE(rank.Authenticate(0, 1));
  EXPECT_EQ(idle[1]->RefusalReason(), "too many connections");
  EXPECT_EQ(RefusedFor(server, refusal::kTooManyConnections), 2U);
  EXPECT_EQ(server.Stats().unauthenticated, 2U);  // idle[2] and the newcomer
}

// A refused peer is kept open for up to a second to receive its Refused. A stream of refused
// connections must not fill max_connections and lock the world's ranks out.
TEST(StoreServerLimitsTest, RefusedConnectionsStillClosingDoNotCountAgainstTheLimit) {
  ServerOptions options = Options(2);
  options.max_connections = 2;
  StoreServer server(options);
  std::vector<std::unique_ptr<Peer>> refused;
  for (int i = 0; i < 20; ++i) {
    refused.push_back(std::make_unique<Peer>(server.port()));
    ASSERT_TRUE(refused.back()->SendAll("GET / HTTP/1.1\r\n\r\n"));
  }
  // Each is refused at once, and stays open for its linger while the ranks come.
  ASSERT_TRUE(Eventually([&] { return TotalRefused(server) == 20; }));
  Peer rank0(server.port());
  Peer rank1(server.port());
  EXPECT_TRUE(rank0.Authenticate(0, 2));
  EXPECT_TRUE(rank1.Authenticate(1, 2));
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), 20U);
}

// Refused connections kept open to deliver their Refused are capped too: past
// max_unauthenticated_connections of them, a refusal closes the connection at once.
TEST(StoreServerLimitsTest, RefusalsPastTheLingerBudgetCloseAtOnce) {
  ServerOptions options = Options(1);
  options.max_unauthenticated_connections = 2;
  StoreServer server(options);
  std::vector<std::unique_ptr<Peer>> refused;
  for (int i = 0; i < 10; ++i) {
    refused.push_back(std::make_unique<Peer>(server.port()));
    // Neither read nor closed: each refusal would otherwise linger its full second.
    ASSERT_TRUE(refused.back()->SendAll("GET / HTTP/1.1\r\n\r\n"));
  }
  ASSERT_TRUE(Eventually([&] { return RefusedFor(server, refusal::kBadFrame) == 10; }));
  EXPECT_TRUE(Eventually([&] { return server.Stats().open <= 2; }, milliseconds(500)))
      << server.Stats().open << " connections open";
  Peer rank(server.port());
  EXPECT_TRUE(rank.Authenticate(0, 1));
}

}  // namespace
}  // namespace ringleader::rendezvous
