// NCCL communicators on real GPUs: one rank per device, as threads (the sidecar's LocalRanks
// among them). Every test skips cleanly where CUDA reports too few devices.
#include "sidecar/collectives/nccl_communicator.h"

#include <gloo/rendezvous/hash_store.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <thread>

#include "sidecar/collectives/local_ranks.h"
#include "sidecar/collectives/probe.h"

namespace ringleader::collectives {
namespace {

using namespace std::chrono_literals;

// Runs `body` on `n` ranks, rank r on device r; returns the first failure's message.
std::string RunNcclRanks(int n, const std::function<void(NcclCommunicator&)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        NcclOptions options;
        options.rank = rank;
        options.size = n;
        options.prefix = "nccl-test";
        options.device = rank;
        options.timeout = 60s;
        NcclCommunicator comm(store, options);
        body(comm);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(rank)] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::string failures;
  for (int rank = 0; rank < n; ++rank) {
    if (!errors[static_cast<std::size_t>(rank)].empty()) {
      failures += "rank " + std::to_string(rank) + ": " + errors[static_cast<std::size_t>(rank)];
    }
  }
  return failures;
}

void ProbeEveryCollective(NcclCommunicator& comm) {
  EXPECT_EQ(comm.backend(), "nccl");
  ProbeOptions options;
  options.iters = 5;
  for (const Collective collective : kAllCollectives) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{1031}, std::size_t{1} << 20}) {
      const ProbeRow row = RunProbe(comm, collective, count, options);
      EXPECT_EQ(row.wrong, 0u) << CollectiveName(collective) << " count=" << count;
      EXPECT_GT(row.time_us, 0.0);
    }
  }
  ProbeOptions corrupt = options;
  corrupt.corrupt_rank_for_test = 0;
  EXPECT_EQ(RunProbe(comm, Collective::kAllReduce, 64, corrupt).wrong,
            static_cast<std::uint64_t>(comm.size()));
}

TEST(NcclCommunicatorTest, OneRankRunsEveryCollectiveExactly) {
  if (VisibleCudaDevices() < 1) {
    GTEST_SKIP() << "no CUDA device here";
  }
  EXPECT_EQ(RunNcclRanks(1, ProbeEveryCollective), "");
}

TEST(NcclCommunicatorTest, TwoRanksOnTwoDevicesRunEveryCollectiveExactly) {
  if (VisibleCudaDevices() < 2) {
    GTEST_SKIP() << "needs two CUDA devices, found " << VisibleCudaDevices();
  }
  EXPECT_EQ(RunNcclRanks(2, ProbeEveryCollective), "");
}

// The sidecar's path for a Pod with several GPUs: LocalRanks builds one communicator rank per
// device at once, and a sweep of every collective runs on all of them through OnEach.
TEST(NcclCommunicatorTest, LocalRanksPutEveryDeviceInOneCommunicator) {
  const int devices = VisibleCudaDevices();
  if (devices < 2) {
    GTEST_SKIP() << "needs two CUDA devices, found " << devices;
  }
  gloo::rendezvous::HashStore store;
  LocalRanks ranks = LocalRanks::Connect(devices, [&](int local) {
    NcclOptions options;
    options.rank = local;
    options.size = devices;
    options.prefix = "nccl-local-ranks";
    options.device = local;
    options.timeout = 60s;
    return std::make_unique<NcclCommunicator>(store, options);
  });
  ASSERT_EQ(ranks.first().size(), devices);
  const std::vector<ProbeRow> rows = ranks.OnEach([](Communicator& comm, int) {
    return Sweep(comm, kAllCollectives, {.min_bytes = 1024, .max_bytes = 16 << 20, .factor = 128});
  });
  ASSERT_FALSE(rows.empty());
  for (const ProbeRow& row : rows) {
    EXPECT_EQ(row.wrong, 0u) << CollectiveName(row.collective) << " " << row.bytes;
    EXPECT_GT(row.busbw_gbps, 0.0);
  }
}

TEST(NcclCommunicatorTest, InitGivesUpWhenAPeerNeverPublishesTheId) {
  if (VisibleCudaDevices() < 1) {
    GTEST_SKIP() << "no CUDA device here";
  }
  gloo::rendezvous::HashStore store;
  NcclOptions options;
  options.rank = 1;  // waits for rank 0's id, which never comes
  options.size = 2;
  options.prefix = "lonely";
  options.timeout = 1s;
  try {
    NcclCommunicator comm(store, options);
    ADD_FAILURE() << "initialised without rank 0";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("ncclUniqueId"));
  }
}

}  // namespace
}  // namespace ringleader::collectives
