// Peer diagnosis over a real StoreServer on 127.0.0.1: a rank whose connection closed is named,
// survivors that marked themselves are not, and a stopped store is reported as rank 0 gone.
#include "sidecar/rendezvous/peer_diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "sidecar/rendezvous/store_server.h"
#include "tests/sidecar/rendezvous/local_store.h"

namespace ringleader::rendezvous {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kToken[] = "diagnosis-test-token";

std::vector<std::unique_ptr<StoreClient>> ConnectAll(const StoreServer& server, std::uint32_t world) {
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    auto client = StoreClient::Connect(testing::LocalClientOptions(kToken, server.port(), rank, world));
    if (!client) {
      ADD_FAILURE() << "rank " << rank << ": " << client.error();
      return {};
    }
    clients.push_back(std::move(client).value());
  }
  return clients;
}

TEST(DescribePeerDiagnosisTest, NamesOneGoneRank) {
  PeerDiagnosis diagnosis;
  diagnosis.gone = {2};
  EXPECT_EQ(DescribePeerDiagnosis(diagnosis, 4), "rank 2 of 4 is gone (lost the store connection)");
}

TEST(DescribePeerDiagnosisTest, NamesSeveralGoneRanks) {
  PeerDiagnosis diagnosis;
  diagnosis.gone = {1, 3};
  EXPECT_EQ(DescribePeerDiagnosis(diagnosis, 4), "ranks 1, 3 of 4 are gone (lost the store connection)");
}

TEST(DescribePeerDiagnosisTest, BlamesRankZeroWhenTheStoreIsGone) {
  PeerDiagnosis diagnosis;
  diagnosis.store_gone = true;
  diagnosis.store_error = "connection reset";
  EXPECT_EQ(DescribePeerDiagnosis(diagnosis, 8), "rank 0 of 8 is gone (it served the store: connection reset)");
}

// A local failure (NCCL refusing two ranks on one GPU, say) must not read as a network fault.
TEST(DescribePeerDiagnosisTest, BlamesNoPeerWhenEveryRankIsConnected) {
  EXPECT_EQ(DescribePeerDiagnosis(PeerDiagnosis{}, 2), "no rank is gone (all 2 still hold their store connection)");
}

TEST(DiagnosePeersTest, NamesTheRankWhoseConnectionClosed) {
  StoreServer server(testing::LocalServerOptions(kToken, 4));
  auto clients = ConnectAll(server, 4);
  ASSERT_EQ(clients.size(), 4u);
  clients[2].reset();  // rank 2's process died: its socket closes
  const PeerDiagnosis diagnosis = DiagnosePeers(*clients[1], "attempt-1/");
  EXPECT_FALSE(diagnosis.store_gone);
  EXPECT_THAT(diagnosis.gone, ElementsAre(2u));
}

TEST(DiagnosePeersTest, DoesNotBlameASurvivorThatAlreadyExited) {
  StoreServer server(testing::LocalServerOptions(kToken, 3));
  auto clients = ConnectAll(server, 3);
  ASSERT_EQ(clients.size(), 3u);
  EXPECT_THAT(DiagnosePeers(*clients[2], "attempt-1/", milliseconds(0)).gone, IsEmpty());
  clients[2].reset();  // it marked itself a survivor, then exited after its own failure
  EXPECT_THAT(DiagnosePeers(*clients[1], "attempt-1/").gone, IsEmpty());
  // A later attempt's keys are separate: there rank 2 has not marked itself.
  EXPECT_THAT(DiagnosePeers(*clients[1], "attempt-2/").gone, ElementsAre(2u));
}

TEST(DiagnosePeersTest, ReportsTheStoreGoneWhenRankZeroStopped) {
  StoreServer server(testing::LocalServerOptions(kToken, 2));
  auto clients = ConnectAll(server, 2);
  ASSERT_EQ(clients.size(), 2u);
  server.Stop();
  const PeerDiagnosis diagnosis = DiagnosePeers(*clients[1], "");
  EXPECT_TRUE(diagnosis.store_gone);
  EXPECT_THAT(DescribePeerDiagnosis(diagnosis, 2), HasSubstr("rank 0 of 2 is gone"));
}

}  // namespace
}  // namespace ringleader::rendezvous
