// StoreServer over real sockets on 127.0.0.1: store ops, waits and barriers, and what it does
// with clients that misbehave (wrong token, garbage, slow handshakes, requests before auth).
#include "sidecar/rendezvous/store_server.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/store_client.h"
#include "tests/sidecar/rendezvous/local_store.h"

namespace ringleader::rendezvous {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "s3cret-job-token";

using testing::Eventually;

ServerOptions Options(std::uint32_t world_size) { return testing::LocalServerOptions(kToken, world_size); }

ClientOptions ClientFor(const StoreServer& server, std::uint32_t rank, std::uint32_t world_size) {
  return testing::LocalClientOptions(kToken, server.port(), rank, world_size);
}

std::unique_ptr<StoreClient> MustConnect(const StoreServer& server, std::uint32_t rank,
                                         std::uint32_t world_size) {
  Result<std::unique_ptr<StoreClient>> client =
      StoreClient::Connect(ClientFor(server, rank, world_size));
  EXPECT_TRUE(client.ok()) << client.error();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A rank of a world of world_size finds no value under key: what a refused connection sent
// was never applied.
void ExpectNothingStoredAt(const StoreServer& server, std::uint32_t world_size,
                           const std::string& key) {
  auto client = MustConnect(server, 0, world_size);
  ASSERT_NE(client, nullptr);
  Result<std::optional<std::string>> value = client->Get(key);
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ(value.value(), std::nullopt) << key;
}

std::string U32(std::uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
  }
  return out;
}

std::string Header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                   std::uint32_t length) {
  return U32(magic) + std::string{static_cast<char>(version >> 8), static_cast<char>(version)} +
         std::string{static_cast<char>(type >> 8), static_cast<char>(type)} + U32(length);
}

// A hand-driven connection for speaking the protocol wrongly on purpose.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  // False once the server has closed (EPIPE, reset).
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // The next message, or nullopt once the server closed or within passed (see closed()).
  std::optional<Message> Read(milliseconds within = seconds(5)) {
    const auto deadline = Clock::now() + within;
    while (true) {
      if (std::optional<Frame> frame = decoder_.Next()) {
        Result<Message> message = DecodeMessage(*frame);
        EXPECT_TRUE(message.ok()) << message.error();
        if (!message.ok()) {
          return std::nullopt;
        }
        return std::move(message).value();
      }
      if (closed_ || !Fill(deadline)) {
        return std::nullopt;
      }
    }
  }

  // Reads (and drops) until the server closes; false if it has not within.
  bool WaitClosed(milliseconds within = seconds(5)) {
    const auto deadline = Clock::now() + within;
    while (!closed_) {
      if (!Fill(deadline)) {
        return closed_;
      }
    }
    return true;
  }

  // The messages the server sent before closing.
  std::vector<Message> ReadUntilClosed(milliseconds within = seconds(5)) {
    std::vector<Message> messages;
    while (std::optional<Message> message = Read(within)) {
      messages.push_back(std::move(*message));
    }
    return messages;
  }

  bool closed() const { return closed_; }

  void ShutdownSending() { ::shutdown(fd_, SHUT_WR); }

  // Hello and Proof with the given token, `pipelined` in the Proof's write (as the client sends
  // its attempt Get); the server's reply to the Proof.
  std::optional<Message> Handshake(std::string_view token, std::uint32_t rank,
                                   std::uint32_t world_size, std::string_view pipelined = {}) {
    Send(EncodeMessage(Hello{rank, world_size}));
    std::optional<Message> challenge = Read();
    if (!challenge || !std::holds_alternative<Challenge>(*challenge)) {
      return challenge;
    }
    Proof proof;
    proof.hmac = ComputeProof(token, std::get<Challenge>(*challenge).nonce, rank);
    Send(EncodeMessage(proof) + std::string(pipelined));
    return Read();
  }

 private:
  // One recv; false at the deadline.
  bool Fill(Clock::time_point deadline) {
    pollfd p{fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
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

std::optional<std::string> RefusalOf(const std::vector<Message>& messages) {
  for (const Message& m : messages) {
    if (const auto* refused = std::get_if<Refused>(&m)) {
      return refused->reason;
    }
  }
  return std::nullopt;
}

// The server still serves a well-behaved client after whatever the test did.
void ExpectStillServing(const StoreServer& server, std::uint32_t world_size) {
  auto client = MustConnect(server, 0, world_size);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Set("alive", "yes").ok());
}

std::uint64_t RefusedFor(const StoreServer& server, std::string_view reason) {
  const auto refused = server.RefusedByReasonForTest();
  const auto it = refused.find(std::string(reason));
  return it == refused.end() ? 0 : it->second;
}

TEST(StoreServerTest, SetThenGetReturnsTheValueAndAMissingKeyIsNotFound) {
  StoreServer server(Options(1));
  auto client = MustConnect(server, 0, 1);
  ASSERT_NE(client, nullptr);
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(client->Set("k", binary).ok());
  Result<std::optional<std::string>> got = client->Get("k");
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got.value(), binary);
  Result<std::optional<std::string>> missing = client->Get("nope");
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_EQ(missing.value(), std::nullopt);
  ASSERT_TRUE(client->Set("k", "overwritten").ok());
  EXPECT_EQ(client->Get("k").value(), "overwritten");
}

TEST(StoreServerTest, AddCountsFromZeroAndStoresDecimalTextThatGetReads) {
  StoreServer server(Options(1));
  auto client = MustConnect(server, 0, 1);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Add("n", 5).value(), 5);
  EXPECT_EQ(client->Add("n", -7).value(), -2);
  EXPECT_EQ(client->Get("n").value(), "-2");
}

TEST(StoreServerTest, AddToANonIntegerIsAnErrorAndTheConnectionGoesOn) {
  StoreServer server(Options(1));
  auto client = MustConnect(server, 0, 1);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Set("text", "hello").ok());
  Result<std::int64_t> added = client->Add("text", 1);
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(added.error(), HasSubstr("not a decimal integer"));
  ASSERT_TRUE(client->Set("max", std::to_string(INT64_MAX)).ok());
  EXPECT_THAT(client->Add("max", 1).error(), HasSubstr("overflows"));
  EXPECT_EQ(client->Get("text").value(), "hello");
}

TEST(StoreServerTest, CompareSetFollowsTcpStoreSemantics) {
  StoreServer server(Options(1));
  auto client = MustConnect(server, 0, 1);
  ASSERT_NE(client, nullptr);
  // Missing key, expected not empty: nothing stored, expected echoed back.
  EXPECT_EQ(client->CompareSet("k", "x", "y").value(), "x");
  EXPECT_EQ(client->Get("k").value(), std::nullopt);
  // Missing key, expected empty: desired stored.
  EXPECT_EQ(client->CompareSet("k", "", "first").value(), "first");
  // Current differs from expected: unchanged, current returned.
  EXPECT_EQ(client->CompareSet("k", "wrong", "second").value(), "first");
  // Current equals expected: swapped.
  EXPECT_EQ(client->CompareSet("k", "first", "second").value(), "second");
  EXPECT_EQ(client->Get("k").value(), "second");
}

TEST(StoreServerTest, WaitAnswersOnceEveryKeyExists) {
  StoreServer server(Options(2));
  auto waiter = MustConnect(server, 0, 2);
  auto setter = MustConnect(server, 1, 2);
  ASSERT_NE(waiter, nullptr);
  ASSERT_NE(setter, nullptr);
  ASSERT_TRUE(setter->Set("a", "1").ok());
  std::optional<Result<WaitOutcome>> outcome;
  std::thread waiting([&] { outcome = waiter->Wait({"a", "b", "c"}, seconds(10)); });
  ASSERT_TRUE(Eventually([&] { return server.Stats().pending == 1; }));
  ASSERT_TRUE(setter->Set("b", "2").ok());
  ASSERT_TRUE(setter->Add("c", 1).ok());
  waiting.join();
  ASSERT_TRUE(outcome->ok()) << outcome->error();
  EXPECT_FALSE(outcome->value().timed_out);
  EXPECT_EQ(server.Stats().pending, 0U);
}

TEST(StoreServerTest, WaitTimesOutNamingTheKeysStillMissing) {
  StoreServer server(Options(1));
  auto client = MustConnect(server, 0, 1);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Set("here", "1").ok());
  Result<WaitOutcome> outcome = client->Wait({"gone", "here", "absent"}, milliseconds(50));
  ASSERT_TRUE(outcome.ok()) << outcome.error();
  EXPECT_TRUE(outcome.value().timed_out);
  EXPECT_THAT(outcome.value().missing_keys, ElementsAre("gone", "absent"));
  // A zero timeout checks once.
  EXPECT_TRUE(client->Wait({"gone"}, milliseconds(0)).value().timed_out);
  EXPECT_FALSE(client->Wait({"here"}, milliseconds(0)).value().timed_out);
}

TEST(StoreServerTest, BarrierReleasesEveryRankOnceAllHaveEntered) {
  constexpr std::uint32_t kWorld = 3;
  StoreServer server(Options(kWorld));
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    clients.push_back(MustConnect(server, r, kWorld));
    ASSERT_NE(clients.back(), nullptr);
  }
  std::vector<std::optional<Result<BarrierOutcome>>> outcomes(kWorld);
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r + 1 < kWorld; ++r) {
    threads.emplace_back([&, r] { outcomes[r] = clients[r]->Barrier("b", seconds(10)); });
  }
  ASSERT_TRUE(Eventually([&] { return server.Stats().pending == kWorld - 1; }));
  outcomes[kWorld - 1] = clients[kWorld - 1]->Barrier("b", seconds(10));
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& outcome : outcomes) {
    ASSERT_TRUE(outcome->ok()) << outcome->error();
    EXPECT_FALSE(outcome->value().timed_out);
  }
  // A completed barrier stays completed.
  EXPECT_FALSE(clients[0]->Barrier("b", milliseconds(0)).value().timed_out);
}

TEST(StoreServerTest, BarrierTimesOutNamingTheRanksThatNeverEntered) {
  constexpr std::uint32_t kWorld = 8;
  StoreServer server(Options(kWorld));
  const std::vector<std::uint32_t> entering = {0, 1, 2, 4, 5, 6};
  std::vector<std::optional<Result<BarrierOutcome>>> outcomes(entering.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < entering.size(); ++i) {
    threads.emplace_back([&, i] {
      auto client = MustConnect(server, entering[i], kWorld);
      ASSERT_NE(client, nullptr);
      // Entering twice is idempotent.
      ASSERT_TRUE(client->Barrier("b", milliseconds(0)).ok());
      outcomes[i] = client->Barrier("b", milliseconds(300));
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& outcome : outcomes) {
    ASSERT_TRUE(outcome.has_value());
    ASSERT_TRUE(outcome->ok()) << outcome->error();
    EXPECT_TRUE(outcome->value().timed_out);
    EXPECT_THAT(outcome->value().missing_ranks, ElementsAre(3U, 7U));
  }
}

TEST(StoreServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  ASSERT_TRUE(raw.connected());
  std::optional<Message> welcome = raw.Handshake(kToken, 0, 1);
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  std::string batch = EncodeMessage(Set{"a", "1"}) + EncodeMessage(Get{"a"}) +
                      EncodeMessage(Add{"c", 5}) + EncodeMessage(Get{"c"}) +
                      EncodeMessage(Wait{{"a", "c"}, 1000}) +
                      EncodeMessage(CompareSet{"a", "1", "2"}) + EncodeMessage(Get{"missing"}) +
                      EncodeMessage(Barrier{"solo", 1000});
  ASSERT_TRUE(raw.Send(batch));
  std::vector<Message> replies;
  for (int i = 0; i < 8; ++i) {
    std::optional<Message> reply = raw.Read();
    ASSERT_TRUE(reply.has_value()) << "reply " << i;
    replies.push_back(std::move(*reply));
  }
  EXPECT_EQ(replies, (std::vector<Message>{Ok{}, Value{"1"}, Counter{5}, Value{"5"}, Ok{},
                                           Value{"2"}, NotFound{}, Ok{}}));
}

TEST(StoreServerTest, RequestsBehindAPendingWaitAreAnsweredAfterIt) {
  StoreServer server(Options(2));
  RawConnection raw(server.port());
  std::optional<Message> welcome = raw.Handshake(kToken, 0, 2);
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  ASSERT_TRUE(raw.Send(EncodeMessage(Wait{{"later"}, 10'000}) + EncodeMessage(Get{"later"})));
  ASSERT_TRUE(Eventually([&] { return server.Stats().pending == 1; }));
  auto setter = MustConnect(server, 1, 2);
  ASSERT_NE(setter, nullptr);
  ASSERT_TRUE(setter->Set("later", "now").ok());
  EXPECT_EQ(raw.Read(), Message(Ok{}));
  EXPECT_EQ(raw.Read(), Message(Value{"now"}));
}

TEST(StoreServerTest, MalformedRequestPayloadGetsAnErrorAndTheConnectionGoesOn) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  std::optional<Message> welcome = raw.Handshake(kToken, 0, 1);
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  // A Set whose key length runs past the payload.
  ASSERT_TRUE(raw.Send(EncodeFrame(MessageType::kSet, U32(100) + "ab")));
  std::optional<Message> reply = raw.Read();
  ASSERT_TRUE(reply && std::holds_alternative<Error>(*reply));
  EXPECT_THAT(std::get<Error>(*reply).message, HasSubstr("Set.key"));
  ASSERT_TRUE(raw.Send(EncodeMessage(Get{"x"})));
  EXPECT_EQ(raw.Read(), Message(NotFound{}));
}

TEST(StoreServerTest, WrongTokenIsRefusedCountedAndLearnsNothing) {
  ServerOptions options = Options(4);
  std::mutex mutex;
  std::vector<std::string> reported;
  options.on_refused = [&](std::string_view reason) {
    std::lock_guard<std::mutex> lock(mutex);
    reported.emplace_back(reason);
  };
  StoreServer server(options);
  RawConnection raw(server.port());
  std::optional<Message> reply = raw.Handshake("not-the-token", 2, 4);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(std::holds_alternative<Refused>(*reply));
  EXPECT_EQ(std::get<Refused>(*reply).reason, "authentication failed");
  EXPECT_THAT(std::get<Refused>(*reply).reason, Not(HasSubstr(kToken)));
  // Nothing follows the refusal but the close.
  EXPECT_TRUE(raw.ReadUntilClosed().empty());
  EXPECT_TRUE(raw.closed());
  EXPECT_EQ(RefusedFor(server, refusal::kAuthenticationFailed), 1U);
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_THAT(reported, ElementsAre("authentication_failed"));
  }
  EXPECT_TRUE(server.ConnectedRanks().empty());
  ExpectStillServing(server, 4);
}

TEST(StoreServerTest, RequestsPipelinedWithTheProofAreAnsweredAfterTheWelcome) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  std::optional<Message> welcome =
      raw.Handshake(kToken, 0, 1, EncodeMessage(Set{"k", "v"}) + EncodeMessage(Get{"k"}));
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  EXPECT_EQ(raw.Read(), Message(Ok{}));
  EXPECT_EQ(raw.Read(), Message(Value{"v"}));
}

TEST(StoreServerTest, RequestsPipelinedWithAWrongProofAreNeverApplied) {
  StoreServer server(Options(2));
  RawConnection raw(server.port());
  std::optional<Message> reply = raw.Handshake(
      "not-the-token", 1, 2, EncodeMessage(Set{"k", "forged"}) + EncodeMessage(Get{"k"}));
  ASSERT_TRUE(reply && std::holds_alternative<Refused>(*reply));
  EXPECT_TRUE(raw.ReadUntilClosed().empty());
  ExpectNothingStoredAt(server, 2, "k");
}

// A Hello with an early proof (auth.h), sent at `sent_at_ms` (now, by default) for `attempt`.
Hello EarlyHello(std::string_view token, std::uint32_t rank, std::uint32_t world_size,
                 std::uint32_t attempt = kAnyAttempt, std::optional<std::int64_t> sent_at_ms = {}) {
  Hello hello{rank, world_size, attempt};
  hello.sent_at_ms = sent_at_ms.value_or(std::chrono::duration_cast<milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  hello.nonce = MakeNonce().value();
  hello.early_proof = ComputeEarlyProof(token, hello);
  return hello;
}

// A rank's whole join in one write: the requests behind the Hello run once it is welcomed.
TEST(StoreServerTest, RequestsBehindAHelloWithAnEarlyProofAreAnsweredAfterTheWelcome) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  raw.Send(EncodeMessage(EarlyHello(kToken, 0, 1)) + EncodeMessage(Set{"k", "v"}) +
           EncodeMessage(Barrier{"join", 1000}) + EncodeMessage(Get{"k"}));
  EXPECT_EQ(raw.Read(), Message(Welcome{}));
  EXPECT_EQ(raw.Read(), Message(Ok{}));
  EXPECT_EQ(raw.Read(), Message(Ok{}));
  EXPECT_EQ(raw.Read(), Message(Value{"v"}));
  EXPECT_EQ(server.Stats().authenticated, 1U);
}

TEST(StoreServerTest, AnEarlyProofUnderAnotherTokenIsRefusedAndItsRequestsNeverApplied) {
  StoreServer server(Options(2));
  RawConnection raw(server.port());
  raw.Send(EncodeMessage(EarlyHello("not-the-token", 1, 2)) + EncodeMessage(Set{"k", "forged"}));
  EXPECT_EQ(RefusalOf(raw.ReadUntilClosed()), "authentication failed");
  EXPECT_EQ(RefusedFor(server, refusal::kAuthenticationFailed), 1U);
  ExpectNothingStoredAt(server, 2, "k");
}

// A recorded Hello cannot be welcomed twice; one outside the window is told to ask for a
// Challenge, and a client can then still get in.
TEST(StoreServerTest, AReplayedOrStaleEarlyProofIsRefusedNamingTheChallenge) {
  StoreServer server(Options(2));
  const Hello hello = EarlyHello(kToken, 1, 2);
  {
    RawConnection first(server.port());
    first.Send(EncodeMessage(hello));
    EXPECT_EQ(first.Read(), Message(Welcome{}));
  }
  RawConnection replay(server.port());
  replay.Send(EncodeMessage(hello) + EncodeMessage(Set{"k", "replayed"}));
  EXPECT_EQ(RefusalOf(replay.ReadUntilClosed()),
            "stale early proof: its nonce was used before; retry with a challenge");
  const std::int64_t an_hour_ago = hello.sent_at_ms - 3'600'000;
  RawConnection stale(server.port());
  stale.Send(EncodeMessage(EarlyHello(kToken, 1, 2, kAnyAttempt, an_hour_ago)));
  EXPECT_THAT(RefusalOf(stale.ReadUntilClosed()).value_or(""),
              ::testing::MatchesRegex("stale early proof: sent -36000[0-9][0-9] ms from the "
                                      "server's clock, outside \\+-30000 ms; retry with a "
                                      "challenge"));
  EXPECT_EQ(RefusedFor(server, refusal::kStaleProof), 2U);
  RawConnection challenged(server.port());
  std::optional<Message> welcome = challenged.Handshake(kToken, 1, 2);
  EXPECT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  ExpectNothingStoredAt(server, 2, "k");
}

TEST(StoreServerTest, BytesBehindAHelloThatAsksForAChallengeAreAProtocolViolation) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  raw.Send(EncodeMessage(Hello{0, 1}) + EncodeMessage(Set{"k", "v"}));
  EXPECT_EQ(RefusalOf(raw.ReadUntilClosed()),
            "protocol violation: bytes sent behind a Hello before its Challenge");
  EXPECT_EQ(RefusedFor(server, refusal::kProtocolViolation), 1U);
}

// During a gang restart the old rank 0 refuses the new attempt's ranks, after their proof.
TEST(StoreServerTest, AHelloForAnotherGangAttemptIsRefusedNamingBoth) {
  ServerOptions options = Options(2);
  options.attempt = 3;
  StoreServer server(options);
  RawConnection wrong(server.port());
  wrong.Send(EncodeMessage(EarlyHello(kToken, 1, 2, 4)));
  EXPECT_EQ(RefusalOf(wrong.ReadUntilClosed()),
            "attempt mismatch: this store serves gang attempt 3, not 4");
  EXPECT_EQ(RefusedFor(server, refusal::kAttemptMismatch), 1U);
  RawConnection right(server.port());
  right.Send(EncodeMessage(EarlyHello(kToken, 1, 2, 3)));
  EXPECT_EQ(right.Read(), Message(Welcome{}));
}

TEST(StoreServerTest, RankOutOfRangeAndWorldSizeMismatchAreRefused) {
  StoreServer server(Options(4));
  {
    RawConnection raw(server.port());
    EXPECT_EQ(raw.Handshake(kToken, 4, 4), Message(Refused{"rank out of range"}));
  }
  {
    RawConnection raw(server.port());
    EXPECT_EQ(raw.Handshake(kToken, 0, 5), Message(Refused{"world size mismatch"}));
  }
  EXPECT_EQ(RefusedFor(server, refusal::kBadRank), 1U);
  EXPECT_EQ(RefusedFor(server, refusal::kWorldSizeMismatch), 1U);
}

// An elastic job's store: ranks below max_ranks are admitted (they send max_ranks as the Hello's
// world size), while a barrier waits for the world_size ranks it started with only.
TEST(StoreServerTest, MaxRanksAdmitsRanksBeyondTheBarriersWorld) {
  ServerOptions options = Options(2);
  options.max_ranks = 4;
  StoreServer server(std::move(options));
  const auto connect = [&](std::uint32_t rank, std::uint32_t world) {
    ClientOptions client = ClientFor(server, rank, world);
    client.max_ranks = 4;
    Result<std::unique_ptr<StoreClient>> connected = StoreClient::Connect(client);
    EXPECT_TRUE(connected.ok()) << connected.error();
    return connected.ok() ? std::move(connected).value() : nullptr;
  };
  auto rank0 = connect(0, 2);
  auto rank1 = connect(1, 2);
  ASSERT_NE(rank0, nullptr);
  ASSERT_NE(rank1, nullptr);
  std::optional<Result<BarrierOutcome>> first;
  std::thread waiter([&] { first = rank0->Barrier("join", seconds(10)); });
  ASSERT_TRUE(rank1->Barrier("join", seconds(10)).ok());
  waiter.join();
  ASSERT_TRUE(first->ok()) << first->error();
  EXPECT_FALSE(first->value().timed_out);

  // Rank 3 of a world grown to 4 reaches the store and its keys; a barrier is not its to enter.
  auto rank3 = connect(3, 4);
  ASSERT_NE(rank3, nullptr);
  ASSERT_TRUE(rank3->Set("pod/3/reach", "here").ok());
  EXPECT_EQ(rank0->Get("pod/3/reach").value(), std::optional<std::string>("here"));
  EXPECT_EQ(rank0->Get(kConnectedRanksKey).value(), std::optional<std::string>("0,1,3"));
  const Result<BarrierOutcome> outside = rank3->Barrier("join", milliseconds(0));
  ASSERT_FALSE(outside.ok());
  EXPECT_THAT(outside.error(), HasSubstr("rank 3 is not one of the 2 ranks"));

  // The bound holds: rank 4, or a Hello without the bound, is refused.
  {
    RawConnection raw(server.port());
    EXPECT_EQ(raw.Handshake(kToken, 4, 5), Message(Refused{"world size mismatch"}));
  }
  {
    RawConnection raw(server.port());
    EXPECT_EQ(raw.Handshake(kToken, 1, 2), Message(Refused{"world size mismatch"}));
  }
}

TEST(StoreServerTest, GarbageBytesCloseOnlyThatConnection) {
  StoreServer server(Options(1));
  auto bystander = MustConnect(server, 0, 1);
  ASSERT_NE(bystander, nullptr);
  RawConnection raw(server.port());
  raw.Send(std::string(64, '\x5a') + "GET / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), 1U);
  EXPECT_TRUE(bystander->Set("still", "here").ok());
}

TEST(StoreServerTest, BadMagicIsRefusedAsABadFrame) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  raw.Send(Header(0x12345678, kVersion, 1, 8) + std::string(8, '\0'));
  const std::vector<Message> got = raw.ReadUntilClosed();
  EXPECT_TRUE(raw.closed());
  const std::optional<std::string> reason = RefusalOf(got);
  ASSERT_TRUE(reason.has_value()) << "closed without a Refused naming the bad magic";
  EXPECT_THAT(*reason, HasSubstr("magic"));
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), 1U);
  ExpectStillServing(server, 1);
}

TEST(StoreServerTest, UnsupportedVersionIsRefusedAsSuch) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  // A version 1 Hello: a sidecar of an older release.
  raw.Send(Header(kMagic, 1, 1, 8) + std::string(8, '\0'));
  EXPECT_EQ(RefusalOf(raw.ReadUntilClosed()), "unsupported protocol version");
  EXPECT_EQ(RefusedFor(server, refusal::kUnsupportedVersion), 1U);
}

TEST(StoreServerTest, HugeLengthFieldIsRefusedWithoutWaitingForThePayload) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  raw.Send(Header(kMagic, kVersion, 1, 0xFFFFFFFF));
  // Closed at once: the server neither waits for 4 GiB nor for the handshake timeout.
  EXPECT_TRUE(raw.WaitClosed(seconds(2)));
  EXPECT_EQ(RefusedFor(server, refusal::kBadFrame), 1U);
  ExpectStillServing(server, 1);
}

TEST(StoreServerTest, TruncatedFrameThenCloseIsForgotten) {
  StoreServer server(Options(1));
  {
    RawConnection raw(server.port());
    const std::string hello = EncodeMessage(Hello{0, 1});
    raw.Send(hello.substr(0, hello.size() - 3));
    ASSERT_TRUE(Eventually([&] { return server.Stats().accepted == 1; }));
  }
  EXPECT_TRUE(Eventually([&] { return server.Stats().open == 0; }));
  ExpectStillServing(server, 1);
}

TEST(StoreServerTest, RequestBeforeAuthenticationIsAProtocolViolation) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  raw.Send(EncodeMessage(Set{"sneaky", "value"}));
  const std::optional<std::string> reason = RefusalOf(raw.ReadUntilClosed());
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("protocol violation"));
  EXPECT_EQ(RefusedFor(server, refusal::kProtocolViolation), 1U);
  ExpectNothingStoredAt(server, 1, "sneaky");
}

TEST(StoreServerTest, HelloAfterWelcomeIsAProtocolViolation) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 1), Message(Welcome{}));
  raw.Send(EncodeMessage(Hello{0, 1}));
  EXPECT_THAT(RefusalOf(raw.ReadUntilClosed()), ::testing::Optional(HasSubstr("not a request")));
  EXPECT_EQ(RefusedFor(server, refusal::kProtocolViolation), 1U);
}

// Guards against a slow-loris client holding the server: it is cut off at the handshake
// timeout, and meanwhile others are served without delay.
TEST(StoreServerTest, SlowHandshakeIsClosedAtTheTimeoutWhileOthersAreServed) {
  ServerOptions options = Options(2);
  options.handshake_timeout = milliseconds(800);
  StoreServer server(options);
  auto fast = MustConnect(server, 1, 2);
  ASSERT_NE(fast, nullptr);

  std::atomic<bool> slow_closed = false;
  const auto started = Clock::now();
  std::thread slow([&] {
    RawConnection raw(server.port());
    const std::string hello = EncodeMessage(Hello{0, 2});
    for (char byte : hello) {
      if (!raw.Send(std::string(1, byte)) || raw.WaitClosed(milliseconds(250))) {
        break;
      }
    }
    slow_closed = raw.WaitClosed(seconds(5));
  });
  milliseconds slowest{0};
  for (int i = 0; !slow_closed && Clock::now() - started < seconds(5); ++i) {
    const auto before = Clock::now();
    ASSERT_TRUE(fast->Set("k" + std::to_string(i % 10), "v").ok());
    slowest = std::max(slowest, std::chrono::duration_cast<milliseconds>(Clock::now() - before));
  }
  slow.join();
  EXPECT_TRUE(slow_closed);
  EXPECT_LT(slowest, milliseconds(250));
  EXPECT_EQ(RefusedFor(server, refusal::kHandshakeTimeout), 1U);
}

TEST(StoreServerTest, ConnectedRanksTracksOpenAuthenticatedConnections) {
  StoreServer server(Options(8));
  auto r0 = MustConnect(server, 0, 8);
  auto r2 = MustConnect(server, 2, 8);
  auto r5 = MustConnect(server, 5, 8);
  RawConnection unauthenticated(server.port());
  unauthenticated.Send(EncodeMessage(Hello{6, 8}));
  ASSERT_TRUE(unauthenticated.Read().has_value());
  EXPECT_THAT(server.ConnectedRanks(), ElementsAre(0U, 2U, 5U));
  r2.reset();
  EXPECT_TRUE(Eventually([&] { return server.ConnectedRanks() == std::vector<std::uint32_t>{0, 5}; }));
  EXPECT_EQ(server.Stats().authenticated, 3U);
}

TEST(StoreServerTest, ConnectedRanksKeyIsAnsweredByTheServerAndCannotBeWritten) {
  StoreServer server(Options(8));
  auto r0 = MustConnect(server, 0, 8);
  auto r3 = MustConnect(server, 3, 8);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r3, nullptr);
  const std::string key(kConnectedRanksKey);
  EXPECT_EQ(r0->Get(key).value(), "0,3");
  Result<Ok> set = r0->Set(key, "0,1,2,3");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.error(), HasSubstr("maintained by the server"));
  EXPECT_FALSE(r0->Add(key, 1).ok());
  EXPECT_FALSE(r0->CompareSet(key, "", "x").ok());
  EXPECT_FALSE(r0->Wait({key}, milliseconds(0)).value().timed_out);
  r3.reset();
  EXPECT_TRUE(Eventually([&] { return r0->Get(key).value() == "0"; }));
}

TEST(StoreServerTest, WaitUntilEveryRankLeftReturnsOnceTheLastRankDisconnects) {
  StoreServer server(Options(2));
  auto r0 = MustConnect(server, 0, 2);
  auto r1 = MustConnect(server, 1, 2);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r1, nullptr);
  EXPECT_FALSE(server.WaitUntilEveryRankLeft(milliseconds(50)));
  r0.reset();
  EXPECT_FALSE(server.WaitUntilEveryRankLeft(milliseconds(50)));  // rank 1 is still there
  std::thread leaving([&] {
    std::this_thread::sleep_for(milliseconds(100));
    r1.reset();
  });
  const auto started = Clock::now();
  EXPECT_TRUE(server.WaitUntilEveryRankLeft(seconds(10)));
  EXPECT_LT(Clock::now() - started, seconds(5));  // woken by the close, not the bound
  leaving.join();
}

TEST(StoreServerTest, AttemptKeyAnswersTheServedGangAttemptAndCannotBeWritten) {
  ServerOptions options = Options(2);
  options.attempt = 7;
  StoreServer server(options);
  auto r1 = MustConnect(server, 1, 2);
  ASSERT_NE(r1, nullptr);
  const std::string key(kAttemptKey);
  EXPECT_EQ(r1->Get(key).value(), "7");
  Result<Ok> set = r1->Set(key, "8");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.error(), HasSubstr("ringleader/attempt is maintained by the server"));
  EXPECT_FALSE(r1->Add(key, 1).ok());
  EXPECT_FALSE(r1->CompareSet(key, "", "x").ok());
  EXPECT_FALSE(r1->Wait({key}, milliseconds(0)).value().timed_out);
  EXPECT_EQ(r1->Get(key).value(), "7");
}

// Guards the fuzzer's contract: a client that sends and then shuts down its side is answered
// what it sent, and then closed.
TEST(StoreServerTest, HalfClosedClientIsAnsweredThenClosed) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 1), Message(Welcome{}));
  ASSERT_TRUE(raw.Send(EncodeMessage(Set{"a", "1"}) + EncodeMessage(Get{"a"})));
  raw.ShutdownSending();
  const std::vector<Message> replies = raw.ReadUntilClosed();
  EXPECT_TRUE(raw.closed());
  EXPECT_EQ(replies, (std::vector<Message>{Ok{}, Value{"1"}}));
  EXPECT_TRUE(Eventually([&] { return server.Stats().open == 0; }));
}

// Replies over the output budget pause reading while the client's last requests and its FIN
// already sit in the socket. Their readiness edge may have come and gone by the time reading
// resumes (Asio's epoll is edge-triggered), so the server must read rather than wait for another.
TEST(StoreServerTest, RequestsAndFinThatArriveWhileRepliesAreOverBudgetAreStillServed) {
  ServerOptions options = Options(1);
  options.max_buffered_bytes = 64 * 1024;
  StoreServer server(options);
  RawConnection raw(server.port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 1), Message(Welcome{}));
  const std::string value(16 * 1024, 'v');
  std::string requests = EncodeMessage(Set{"big", value});
  constexpr int kGets = 64;  // 1 MiB of replies, 16 times the budget
  for (int i = 0; i < kGets; ++i) {
    requests += EncodeMessage(Get{"big"});
  }
  ASSERT_TRUE(raw.Send(requests));
  raw.ShutdownSending();
  const std::vector<Message> replies = raw.ReadUntilClosed();
  EXPECT_TRUE(raw.closed());
  ASSERT_EQ(replies.size(), 1U + kGets);
  EXPECT_EQ(replies.front(), Message(Ok{}));
  EXPECT_EQ(replies.back(), Message(Value{value}));
  EXPECT_TRUE(Eventually([&] { return server.Stats().open == 0; }));
}

// More requests in one burst than one readiness event reads (4 x 64 KiB): the rest is read
// without the client sending anything more.
TEST(StoreServerTest, ABurstLargerThanOneEventReadsIsServedWhole) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 1), Message(Welcome{}));
  ASSERT_TRUE(raw.Send(EncodeMessage(Set{"k", "v"})));
  ASSERT_EQ(raw.Read(), Message(Ok{}));
  std::string burst;
  constexpr int kGets = 40'000;  // 17 bytes each: 680 KB
  for (int i = 0; i < kGets; ++i) {
    burst += EncodeMessage(Get{"k"});
  }
  ASSERT_TRUE(raw.Send(burst));
  for (int i = 0; i < kGets; ++i) {
    ASSERT_EQ(raw.Read(), Message(Value{"v"})) << "reply " << i;
  }
}

TEST(StoreServerTest, HalfClosedClientWithAPendingWaitIsClosedAtOnce) {
  StoreServer server(Options(1));
  RawConnection raw(server.port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 1), Message(Welcome{}));
  ASSERT_TRUE(raw.Send(EncodeMessage(Wait{{"never"}, 60'000})));
  raw.ShutdownSending();
  EXPECT_TRUE(raw.WaitClosed(seconds(2)));
  EXPECT_TRUE(Eventually([&] { return server.Stats().pending == 0 && server.Stats().open == 0; }));
}

TEST(StoreServerTest, ConnectionsBeyondTheLimitAreRefused) {
  ServerOptions options = Options(2);
  options.max_connections = 1;
  StoreServer server(options);
  auto first = MustConnect(server, 0, 2);
  ASSERT_NE(first, nullptr);
  RawConnection second(server.port());
  EXPECT_EQ(RefusalOf(second.ReadUntilClosed()), "too many connections");
  EXPECT_EQ(RefusedFor(server, refusal::kTooManyConnections), 1U);
  EXPECT_TRUE(first->Set("k", "v").ok());
}

TEST(StoreServerTest, BindingAPortInUseThrowsNamingTheAddress) {
  StoreServer first(Options(1));
  ServerOptions options = Options(1);
  options.port = first.port();
  try {
    StoreServer second(options);
    FAIL() << "a second server bound the same port";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("127.0.0.1:" + std::to_string(first.port())));
  }
}

TEST(StoreServerTest, StopClosesEveryConnectionAndIsIdempotent) {
  auto server = std::make_unique<StoreServer>(Options(2));
  RawConnection raw(server->port());
  ASSERT_EQ(raw.Handshake(kToken, 0, 2), Message(Welcome{}));
  ASSERT_TRUE(raw.Send(EncodeMessage(Barrier{"never", 60'000})));
  ASSERT_TRUE(Eventually([&] { return server->Stats().pending == 1; }));
  server->Stop();
  EXPECT_TRUE(raw.WaitClosed(seconds(2)));
  server->Stop();
  server.reset();
}

// Regression: Asio opens and accepts sockets inheritable, so a process the store's host started
// (the example trainer's rank 0 hosts it) kept the port listening and the connections open after
// the store closed them.
TEST(StoreServerTest, AProcessStartedByItsHostHoldsNeitherThePortNorAConnection) {
  auto server = std::make_unique<StoreServer>(Options(1));
  const std::uint16_t port = server->port();
  RawConnection raw(port);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(Eventually([&] { return server->Stats().accepted == 1; }));
  // Started while the listener and the accepted socket are open; it outlives the server.
  pid_t child = 0;
  char sleep_name[] = "sleep";
  char seconds_arg[] = "30";
  char* argv[] = {sleep_name, seconds_arg, nullptr};
  ASSERT_EQ(::posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ), 0);
  server.reset();
  // Only the server held the connection, so its close reaches the client, and nothing accepts
  // on the port any more. Both within a deadline: posix_spawn returns once the child's exec has
  // begun, and the kernel closes its close-on-exec copies a moment later.
  EXPECT_TRUE(raw.WaitClosed(seconds(2)));
  EXPECT_TRUE(Eventually([&] { return !RawConnection(port).connected(); }, seconds(2)));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ringleader::rendezvous
