// Join over a real StoreServer: N ranks as threads on 127.0.0.1, the timeout message, and a
// thousand clients at once.
#include "sidecar/rendezvous/join.h"

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/store_server.h"
#include "tests/sidecar/rendezvous/local_store.h"

namespace ringleader::rendezvous {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "join-test-token";

ServerOptions Options(std::uint32_t world_size) { return testing::LocalServerOptions(kToken, world_size); }

ClientOptions ClientFor(const StoreServer& server, std::uint32_t rank, std::uint32_t world_size) {
  return testing::LocalClientOptions(kToken, server.port(), rank, world_size, seconds(20), seconds(20));
}

std::string AddressOf(std::uint32_t rank) { return "10.0.0." + std::to_string(rank + 1); }

TEST(FormatMissingRanksTest, NamesOneRankInTheSingular) {
  EXPECT_EQ(FormatMissingRanks({3}, 8, seconds(300)), "rank 3 of 8 did not join within 300 s");
}

TEST(FormatMissingRanksTest, NamesSeveralRanksAscending) {
  EXPECT_EQ(FormatMissingRanks({7, 3}, 8, seconds(300)),
            "ranks 3, 7 of 8 did not join within 300 s");
}

TEST(FormatMissingRanksTest, CountsTheRestOfALongList) {
  std::vector<std::uint32_t> missing;
  for (std::uint32_t r = 0; r < 4000; ++r) {
    missing.push_back(r);
  }
  EXPECT_EQ(FormatMissingRanks(missing, 4096, seconds(60)),
            "ranks 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... and 3984 more of "
            "4096 did not join within 60 s");
}

class JoinTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(JoinTest, EveryRankLearnsEveryRecord) {
  const std::uint32_t world = GetParam();
  StoreServer server(Options(world));
  std::vector<std::optional<Result<JoinResult>>> results(world);
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(ClientFor(server, r, world));
      ASSERT_TRUE(client.ok()) << client.error();
      JoinRequest request;
      request.record = AddressOf(r);
      request.timeout = seconds(20);
      request.fetch_all = true;
      results[r] = Join(*client.value(), request);
    });
  }
  for (auto& t : ranks) {
    t.join();
  }
  std::map<std::uint32_t, std::string> expected;
  for (std::uint32_t r = 0; r < world; ++r) {
    expected[r] = AddressOf(r);
  }
  for (std::uint32_t r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].has_value()) << "rank " << r;
    ASSERT_TRUE(results[r]->ok()) << results[r]->error();
    EXPECT_EQ(results[r]->value().records, expected) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, JoinTest, ::testing::Values(1U, 2U, 3U, 5U, 8U));

TEST(JoinTimeoutTest, NamesTheRanksThatDidNotJoin) {
  constexpr std::uint32_t kWorld = 8;
  StoreServer server(Options(kWorld));
  const std::vector<std::uint32_t> joining = {0, 1, 2, 4, 5, 6};
  std::vector<std::optional<Result<JoinResult>>> results(joining.size());
  std::vector<std::thread> ranks;
  for (std::size_t i = 0; i < joining.size(); ++i) {
    ranks.emplace_back([&, i] {
      Result<std::unique_ptr<StoreClient>> client =
          StoreClient::Connect(ClientFor(server, joining[i], kWorld));
      ASSERT_TRUE(client.ok()) << client.error();
      JoinRequest request;
      request.record = AddressOf(joining[i]);
      request.timeout = milliseconds(300);
      results[i] = Join(*client.value(), request);
    });
  }
  for (auto& t : ranks) {
    t.join();
  }
  for (const auto& result : results) {
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(result->ok());
    EXPECT_EQ(result->error(), "ranks 3, 7 of 8 did not join within 1 s");
  }
}

TEST(JoinTimeoutTest, ServerGoneFailsNamingTheServer) {
  auto server = std::make_unique<StoreServer>(Options(2));
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(ClientFor(*server, 0, 2));
  ASSERT_TRUE(client.ok()) << client.error();
  server.reset();
  JoinRequest request;
  request.record = "10.0.0.1";
  Result<JoinResult> joined = Join(*client.value(), request);
  ASSERT_FALSE(joined.ok());
  EXPECT_THAT(joined.error(), HasSubstr("rendezvous server 127.0.0.1:"));
}

// A thousand ranks, each its own client and thread, join and then meet at a second barrier.
TEST(JoinScaleTest, AThousandClientsJoinAndMeetAtABarrier) {
  constexpr std::uint32_t kWorld = 1000;
  StoreServer server(Options(kWorld));
  std::atomic<std::uint32_t> joined = 0;
  std::atomic<std::uint32_t> met = 0;
  std::vector<std::string> errors(kWorld);
  const auto started = Clock::now();
  std::vector<std::thread> ranks;
  ranks.reserve(kWorld);
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(ClientFor(server, r, kWorld));
      if (!client.ok()) {
        errors[r] = client.error();
        return;
      }
      JoinRequest request;
      request.record = AddressOf(r % 250);
      request.timeout = seconds(20);
      Result<JoinResult> result = Join(*client.value(), request);
      if (!result.ok()) {
        errors[r] = result.error();
        return;
      }
      if (result.value().records.at(0) == AddressOf(0)) {
        ++joined;
      }
      Result<BarrierOutcome> after = client.value()->Barrier("after-join", seconds(20));
      if (after.ok() && !after.value().timed_out) {
        ++met;
      }
    });
  }
  for (auto& t : ranks) {
    t.join();
  }
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
  }
  EXPECT_EQ(joined, kWorld);
  EXPECT_EQ(met, kWorld);
  EXPECT_LT(Clock::now() - started, seconds(10));
  EXPECT_EQ(server.Stats().authenticated, kWorld);
}

// How a sidecar joins: one write with the Hello, then the records, the barrier's timeout naming
// who is missing, and a failure to connect, each told apart.
TEST(ConnectAndJoinTest, JoinsInOneWriteAndTellsTimeoutsFromFailuresToConnect) {
  StoreServer server(Options(3));
  JoinRequest request;
  request.fetch_all = true;
  std::vector<ConnectedJoin> joins(2);
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      JoinRequest mine = request;
      mine.record = AddressOf(r);
      joins[r] = ConnectAndJoin(ClientFor(server, r, 3), mine);
    });
  }
  JoinRequest last = request;
  last.record = AddressOf(2);
  ConnectedJoin third = ConnectAndJoin(ClientFor(server, 2, 3), last);
  for (auto& rank : ranks) {
    rank.join();
  }
  joins.push_back(std::move(third));
  for (const ConnectedJoin& joined : joins) {
    ASSERT_NE(joined.client, nullptr) << joined.error;
    EXPECT_EQ(joined.error, "");
    EXPECT_EQ(joined.joined.records,
              (std::map<std::uint32_t, std::string>{{0, AddressOf(0)}, {1, AddressOf(1)},
                                                    {2, AddressOf(2)}}));
  }
  EXPECT_EQ(server.Stats().accepted, 3U);  // one connection each, welcomed at its first try

  StoreServer lonely(Options(2));
  JoinRequest waiting;
  waiting.record = AddressOf(0);
  waiting.timeout = milliseconds(200);
  ConnectedJoin timed_out = ConnectAndJoin(ClientFor(lonely, 0, 2), waiting);
  ASSERT_NE(timed_out.client, nullptr) << timed_out.error;
  EXPECT_TRUE(timed_out.timed_out);
  EXPECT_EQ(timed_out.error, "rank 1 of 2 did not join within 1 s");

  ClientOptions wrong = ClientFor(lonely, 1, 2);
  wrong.token = "not-the-token";
  ConnectedJoin refused = ConnectAndJoin(wrong, waiting);
  EXPECT_EQ(refused.client, nullptr);
  EXPECT_FALSE(refused.timed_out);
  EXPECT_THAT(refused.error, HasSubstr("refused: authentication failed (rank 1 of 2)"));
}

}  // namespace
}  // namespace ringleader::rendezvous
