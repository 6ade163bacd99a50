// StoreClient against a real StoreServer on 127.0.0.1: connecting with backoff, refusals that
// must not be retried, and a server that goes away mid-call.
#include "sidecar/rendezvous/store_client.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/store_server.h"
#include "tests/sidecar/rendezvous/local_store.h"
#include "tests/support/test_environment.h"

namespace ringleader::rendezvous {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "client-test-token";

ServerOptions Options(std::uint32_t world_size, std::uint16_t port = 0) {
  return testing::LocalServerOptions(kToken, world_size, port);
}

ClientOptions ClientFor(std::uint16_t port, std::uint32_t rank, std::uint32_t world_size) {
  return testing::LocalClientOptions(kToken, port, rank, world_size, seconds(10), seconds(5));
}

// A loopback port that nothing listens on.
std::uint16_t FreePort() { return static_cast<std::uint16_t>(ringleader::testing::FreePort()); }

// The reasons Connect gives for its failed tries, as they come (Connect runs on another thread).
class FailedTries {
 public:
  // Makes `options` report its failed tries here.
  void Watch(ClientOptions& options) {
    options.on_attempt_failed = [this](std::string_view error) {
      std::lock_guard<std::mutex> lock(mutex_);
      failures_.emplace_back(error);
      changed_.notify_all();
    };
  }
  // The first failure once at least `count` have come, or nullopt after five seconds.
  std::optional<std::string> FirstOnceThereAre(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, seconds(5), [&] { return failures_.size() >= count; })) {
      return std::nullopt;
    }
    return failures_.front();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> failures_;
};

TEST(StoreClientTest, BacksOffAndConnectsWhenTheServerStartsLate) {
  const std::uint16_t port = FreePort();
  FailedTries tries;
  ClientOptions options = ClientFor(port, 0, 1);
  options.initial_backoff = milliseconds(10);
  options.max_backoff = milliseconds(100);
  tries.Watch(options);
  std::optional<Result<std::unique_ptr<StoreClient>>> connected;
  std::thread client([&] { connected = StoreClient::Connect(options); });
  EXPECT_EQ(tries.FirstOnceThereAre(2), "connection refused");
  StoreServer server(Options(1, port));
  client.join();
  ASSERT_TRUE(connected->ok()) << connected->error();
  EXPECT_TRUE(connected->value()->Set("k", "v").ok());
}

TEST(StoreClientTest, WrongTokenFailsAtOnceWithoutRetrying) {
  StoreServer server(Options(2));
  ClientOptions options = ClientFor(server.port(), 1, 2);
  options.token = "wrong";
  options.deadline = Clock::now() + seconds(60);
  int retries = 0;
  options.on_attempt_failed = [&](std::string_view) { ++retries; };
  const auto started = Clock::now();
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_LT(Clock::now() - started, seconds(5));
  EXPECT_EQ(retries, 0);
  EXPECT_EQ(client.error(), "rendezvous server 127.0.0.1:" + std::to_string(server.port()) +
                                " (rank 0) refused: authentication failed (rank 1 of 2)");
  EXPECT_EQ(server.RefusedByReasonForTest().at("authentication_failed"), 1U);
}

// A gang restart: the old attempt's rank 0 still answers on the port with the same token. A rank
// of the new attempt leaves it and keeps trying until the new rank 0 serves there.
TEST(StoreClientTest, AStoreOfAnotherGangAttemptIsLeftUntilTheRightOneServes) {
  const std::uint16_t port = FreePort();
  ServerOptions old_options = Options(2, port);
  old_options.attempt = 0;
  auto old_store = std::make_unique<StoreServer>(old_options);
  FailedTries tries;
  ClientOptions options = ClientFor(port, 1, 2);
  options.attempt = 1;
  options.initial_backoff = milliseconds(10);
  options.max_backoff = milliseconds(100);
  tries.Watch(options);
  std::optional<Result<std::unique_ptr<StoreClient>>> connected;
  std::thread client([&] { connected = StoreClient::Connect(options); });
  EXPECT_EQ(tries.FirstOnceThereAre(2),
            "refused: attempt mismatch: this store serves gang attempt 0, not 1");
  old_store.reset();
  ServerOptions new_options = Options(2, port);
  new_options.attempt = 1;
  StoreServer new_store(new_options);
  client.join();
  ASSERT_TRUE(connected->ok()) << connected->error();
  EXPECT_EQ(connected->value()->Get(std::string(kAttemptKey)).value(), "1");
  EXPECT_EQ(new_store.Stats().authenticated, 1U);
}

TEST(StoreClientTest, OnlyAStoreOfAnotherAttemptFailsAtTheDeadlineNamingBothAttempts) {
  ServerOptions server_options = Options(2);
  server_options.attempt = 3;
  StoreServer server(server_options);
  ClientOptions options = ClientFor(server.port(), 1, 2);
  options.attempt = 4;
  options.deadline = Clock::now() + milliseconds(300);
  options.initial_backoff = milliseconds(10);
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error(), "rendezvous server 127.0.0.1:" + std::to_string(server.port()) +
                                " (rank 0) unreachable for 0 s: refused: attempt mismatch: this store "
                                "serves gang attempt 3, not 4");
}

TEST(StoreClientTest, UnreachableServerErrorNamesItAndTheCause) {
  const std::uint16_t port = FreePort();
  ClientOptions options = ClientFor(port, 3, 4);
  options.deadline = Clock::now() + milliseconds(300);
  options.initial_backoff = milliseconds(10);
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error(), "rendezvous server 127.0.0.1:" + std::to_string(port) +
                                " (rank 0) unreachable for 0 s: connection refused");
}

TEST(StoreClientTest, ServerStoppedDuringABarrierFailsTheCallQuicklyNamingTheServer) {
  auto server = std::make_unique<StoreServer>(Options(2));
  const std::uint16_t port = server->port();
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(ClientFor(port, 0, 2));
  ASSERT_TRUE(client.ok()) << client.error();
  std::optional<Result<BarrierOutcome>> outcome;
  Clock::time_point failed_at;
  std::thread waiting([&] {
    outcome = client.value()->Barrier("join", seconds(120));
    failed_at = Clock::now();
  });
  const auto deadline = Clock::now() + seconds(5);
  while (server->Stats().pending == 0 && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(server->Stats().pending, 1U);
  const auto stopped_at = Clock::now();
  server->Stop();
  waiting.join();
  ASSERT_FALSE(outcome->ok());
  EXPECT_LT(failed_at - stopped_at, seconds(2));
  EXPECT_THAT(outcome->error(), HasSubstr("rendezvous server 127.0.0.1:" + std::to_string(port)));
  EXPECT_THAT(outcome->error(), HasSubstr("Barrier failed: connection closed by the server"));
  // Later calls fail at once with the same error.
  EXPECT_EQ(client.value()->Get("k").error(), outcome->error());
}

// A SIGTERM must not wait for a rendezvous deadline (minutes): the owner's stop flag ends a
// pending Barrier within a stop check.
TEST(StoreClientTest, AStopEndsAPendingBarrierWithinAStopCheck) {
  StoreServer server(Options(2));
  std::atomic<bool> stop{false};
  ClientOptions options = ClientFor(server.port(), 0, 2);
  options.stop = &stop;
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.error();
  std::optional<Result<BarrierOutcome>> outcome;
  Clock::time_point failed_at;
  std::thread waiting([&] {
    outcome = client.value()->Barrier("join", seconds(120));
    failed_at = Clock::now();
  });
  ASSERT_TRUE(testing::Eventually([&] { return server.Stats().pending == 1; }));
  const auto stopped_at = Clock::now();
  stop = true;
  waiting.join();
  ASSERT_FALSE(outcome->ok());
  EXPECT_LT(failed_at - stopped_at, kStopCheckInterval + milliseconds(400));
  EXPECT_EQ(outcome->error(),
            "rendezvous server 127.0.0.1:" + std::to_string(server.port()) + " (rank 0): Barrier failed: stopped");
}

// As above for a rank whose rank 0 is not there: the stop ends its retries and backoff.
TEST(StoreClientTest, AStopEndsConnectingToAnAbsentServerWithinAStopCheck) {
  const std::uint16_t port = FreePort();
  std::atomic<bool> stop{false};
  FailedTries tries;
  ClientOptions options = ClientFor(port, 1, 2);
  options.deadline = Clock::now() + seconds(120);
  options.initial_backoff = seconds(5);  // a try then sleeps, as a late one does
  options.max_backoff = seconds(5);
  options.stop = &stop;
  tries.Watch(options);
  std::optional<Result<std::unique_ptr<StoreClient>>> connected;
  Clock::time_point failed_at;
  std::thread connecting([&] {
    connected = StoreClient::Connect(options);
    failed_at = Clock::now();
  });
  ASSERT_TRUE(tries.FirstOnceThereAre(1).has_value());
  const auto stopped_at = Clock::now();
  stop = true;
  connecting.join();
  ASSERT_FALSE(connected->ok());
  EXPECT_LT(failed_at - stopped_at, kStopCheckInterval + milliseconds(400));
  EXPECT_EQ(connected->error(),
            "rendezvous server 127.0.0.1:" + std::to_string(port) + " (rank 0): connecting stopped");
}

TEST(StoreClientTest, MultiGetPipelinesThousandsOfKeysInOrder) {
  StoreServer server(Options(1));
  Result<std::unique_ptr<StoreClient>> client =
      StoreClient::Connect(ClientFor(server.port(), 0, 1));
  ASSERT_TRUE(client.ok()) << client.error();
  std::vector<std::string> keys;
  for (int i = 0; i < 5000; ++i) {
    keys.push_back("key/" + std::to_string(i));
    if (i % 2 == 0) {
      ASSERT_TRUE(client.value()->Set(keys.back(), std::string(200, 'v') + std::to_string(i)).ok());
    }
  }
  Result<std::vector<std::optional<std::string>>> values = client.value()->MultiGet(keys);
  ASSERT_TRUE(values.ok()) << values.error();
  ASSERT_EQ(values.value().size(), keys.size());
  for (int i = 0; i < 5000; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(values.value()[i], std::string(200, 'v') + std::to_string(i));
    } else {
      EXPECT_EQ(values.value()[i], std::nullopt);
    }
  }
}

// The Gets ride behind the Barrier in one write; they must see the record of a rank that
// published only after this rank had entered the barrier.
// One rank's join with its requests in the Hello's write: the client, then the join's outcome.
struct OneWriteJoin {
  std::unique_ptr<StoreClient> client;
  std::optional<Result<SetBarrierGetOutcome>> outcome;
  std::string error;  // connecting's
};
OneWriteJoin JoinInOneWrite(const ClientOptions& options, const SetBarrierGet& request) {
  OneWriteJoin join;
  Result<std::unique_ptr<StoreClient>> connected =
      StoreClient::ConnectSendingSetBarrierMultiGet(options, request);
  if (!connected) {
    join.error = connected.error();
    return join;
  }
  join.client = std::move(connected).value();
  join.outcome = join.client->AwaitSetBarrierMultiGet(request);
  return join;
}

// The join's requests ride in the Hello's write; the client is usable afterwards.
TEST(StoreClientTest, ConnectSendingSetBarrierMultiGetJoinsInTheHellosWrite) {
  StoreServer server(Options(2));
  const SetBarrierGet join{"", "", "join", seconds(10), {"ranks/0", "ranks/1"}};
  OneWriteJoin first;
  std::thread rank0([&] {
    SetBarrierGet mine = join;
    mine.key = "ranks/0";
    mine.value = "a";
    first = JoinInOneWrite(ClientFor(server.port(), 0, 2), mine);
  });
  SetBarrierGet mine = join;
  mine.key = "ranks/1";
  mine.value = "b";
  OneWriteJoin second = JoinInOneWrite(ClientFor(server.port(), 1, 2), mine);
  rank0.join();
  for (const OneWriteJoin* joined : {&first, &second}) {
    ASSERT_NE(joined->client, nullptr) << joined->error;
    const Result<SetBarrierGetOutcome>& outcome = *joined->outcome;
    ASSERT_TRUE(outcome.ok()) << outcome.error();
    EXPECT_FALSE(outcome.value().barrier.timed_out);
    EXPECT_EQ(outcome.value().values,
              (std::vector<std::optional<std::string>>{std::string("a"), std::string("b")}));
  }
  EXPECT_EQ(second.client->Get("ranks/0").value(), "a");
  // Each rank was welcomed at its first try, on its early proof.
  EXPECT_EQ(server.Stats().accepted, 2U);
  EXPECT_TRUE(server.RefusedByReasonForTest().empty());
}

// A server whose clock disagrees with the client's refuses the early proof: the client asks for
// a Challenge at once and still joins, its requests sent behind the Proof.
TEST(StoreClientTest, AnEarlyProofTheServerWillNotTakeFallsBackToTheChallenge) {
  ServerOptions server_options = Options(1);
  server_options.early_proof_window = milliseconds(-1);  // welcomes no early proof
  StoreServer server(server_options);
  FailedTries tries;
  ClientOptions options = ClientFor(server.port(), 0, 1);
  options.initial_backoff = seconds(30);  // a retry with a backoff would run past the test
  tries.Watch(options);
  const auto started = Clock::now();
  OneWriteJoin joined =
      JoinInOneWrite(options, SetBarrierGet{"ranks/0", "a", "join", seconds(10), {"ranks/0"}});
  ASSERT_NE(joined.client, nullptr) << joined.error;
  ASSERT_TRUE(joined.outcome->ok()) << joined.outcome->error();
  EXPECT_EQ(joined.outcome->value().values,
            (std::vector<std::optional<std::string>>{std::string("a")}));
  EXPECT_LT(Clock::now() - started, seconds(5));
  EXPECT_THAT(tries.FirstOnceThereAre(1).value_or(""),
              ::testing::StartsWith("refused: stale early proof: sent "));
  EXPECT_EQ(server.RefusedByReasonForTest().at("stale_proof"), 1U);
  EXPECT_EQ(server.Stats().authenticated, 1U);
}

TEST(StoreClientTest, SetBarrierMultiGetReadsRecordsPublishedWhileItWaited) {
  StoreServer server(Options(2));
  Result<std::unique_ptr<StoreClient>> first = StoreClient::Connect(ClientFor(server.port(), 0, 2));
  ASSERT_TRUE(first.ok()) << first.error();
  std::optional<Result<SetBarrierGetOutcome>> joined;
  std::thread waiting([&] {
    joined = first.value()->SetBarrierMultiGet("ranks/0", "a", "join", seconds(10),
                                               {"ranks/0", "ranks/1", "ranks/9"});
  });
  // Rank 1 publishes only once rank 0 is parked at the barrier.
  ASSERT_TRUE(testing::Eventually([&] { return server.Stats().pending == 1; }, seconds(10)));
  Result<std::unique_ptr<StoreClient>> second =
      StoreClient::Connect(ClientFor(server.port(), 1, 2));
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_TRUE(second.value()->Set("ranks/1", "b").ok());
  Result<BarrierOutcome> met = second.value()->Barrier("join", seconds(10));
  ASSERT_TRUE(met.ok()) << met.error();
  waiting.join();
  ASSERT_TRUE(joined->ok()) << joined->error();
  EXPECT_FALSE(joined->value().barrier.timed_out);
  EXPECT_THAT(joined->value().values, ElementsAre(std::optional<std::string>("a"),
                                                  std::optional<std::string>("b"), std::nullopt));
}

TEST(StoreClientTest, SetBarrierMultiGetTimesOutNamingTheMissingRanksAndStaysUsable) {
  StoreServer server(Options(3));
  Result<std::unique_ptr<StoreClient>> client =
      StoreClient::Connect(ClientFor(server.port(), 1, 3));
  ASSERT_TRUE(client.ok()) << client.error();
  Result<SetBarrierGetOutcome> joined =
      client.value()->SetBarrierMultiGet("ranks/1", "b", "join", milliseconds(200), {"ranks/0"});
  ASSERT_TRUE(joined.ok()) << joined.error();
  EXPECT_TRUE(joined.value().barrier.timed_out);
  EXPECT_THAT(joined.value().barrier.missing_ranks, ElementsAre(0U, 2U));
  EXPECT_TRUE(joined.value().values.empty());
  // Every reply was read, so the next call is matched to its own reply.
  Result<std::optional<std::string>> record = client.value()->Get("ranks/1");
  ASSERT_TRUE(record.ok()) << record.error();
  EXPECT_EQ(record.value(), "b");
}

TEST(StoreClientTest, ParseMissingRanksSortsAndSkipsWhatIsNotARank) {
  EXPECT_THAT(ParseMissingRanks("7,3"), ElementsAre(3U, 7U));
  EXPECT_THAT(ParseMissingRanks("1,2,..."), ElementsAre(1U, 2U));
  EXPECT_TRUE(ParseMissingRanks("").empty());
}

}  // namespace
}  // namespace ringleader::rendezvous
