// Rank 0's stall verdict from the ranks' collective progress: who is missing from which
// collective, when it counts as a stall (the missing rank's own snapshot stallSeconds after the
// others entered), and what never does (idle ranks, a late report, a silent rank).
#include "sidecar/service/training_stall.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace ringleader::sidecar {
namespace {

using std::chrono::seconds;

constexpr std::uint64_t kComm = 0x9f3c5a0000000001ULL;
constexpr std::uint64_t kT0 = 1'767'225'600'000;  // ms: when the waiting ranks entered
constexpr std::uint64_t kSecond = 1000;

// A communicator rank that started `started` collectives, the last at `entered`, as of `as_of`.
ReportProgress Rank(std::uint32_t rank, std::uint64_t started, std::uint64_t entered,
                    std::uint64_t as_of, std::uint64_t communicator = kComm) {
  ReportProgress progress;
  progress.communicator = communicator;
  progress.rank = rank;
  progress.ranks = 4;
  progress.started = started;
  progress.completed = started;
  progress.last_collective = "all_reduce";
  progress.last_bytes = 64 << 20;
  progress.last_started_unix_ms = entered;
  progress.as_of_unix_ms = as_of;
  return progress;
}

// One Pod per communicator rank, Pod rank = communicator rank.
std::map<int, TrainingReport> OnePodEach(const std::vector<ReportProgress>& ranks) {
  std::map<int, TrainingReport> reports;
  for (const ReportProgress& progress : ranks) {
    reports[static_cast<int>(progress.rank)].progress.push_back(progress);
  }
  return reports;
}

StallOptions After(seconds stall_after, int attempt = 0) {
  return StallOptions{.stall_after = stall_after, .attempt = attempt};
}

// Ranks 0, 1 and 3 entered collective 18342 at kT0; rank 2 stays at 18341, its own snapshot
// `behind` after that.
std::map<int, TrainingReport> RankTwoBehind(std::uint64_t behind) {
  return OnePodEach({Rank(0, 18342, kT0, kT0 + behind), Rank(1, 18342, kT0 - 50, kT0 + behind),
                     Rank(2, 18341, kT0 - 7000, kT0 + behind), Rank(3, 18342, kT0 - 20, kT0 + behind)});
}

TEST(TrainingStallTest, NamesTheRankThatNeverEnteredTheCollectiveOnceStallSecondsPassed) {
  const auto stall = FindStall(RankTwoBehind(120 * kSecond), kT0 + 125 * kSecond, After(seconds(120), 3));
  ASSERT_TRUE(stall.has_value());
  contract::StallSummary expected;
  expected.collective = "all_reduce";
  expected.bytes = 64 << 20;
  expected.sequence = 18342;
  expected.communicator = "0x9f3c5a0000000001";
  expected.missing_ranks = {2};
  expected.missing_rank_count = 1;
  expected.missing_pods = {2};
  expected.waiting_ranks = 3;
  expected.waited_seconds = 125;
  expected.attempt = 3;
  EXPECT_EQ(*stall, expected);
}

TEST(TrainingStallTest, NothingBeforeTheMissingRanksOwnSnapshotIsStallSecondsPastTheOthersEntry) {
  EXPECT_FALSE(FindStall(RankTwoBehind(119 * kSecond), kT0 + 200 * kSecond, After(seconds(120))));
  // Rank 0's clock alone never makes a verdict: only the missing rank's own snapshot does, so a
  // report held up on its way cannot turn a rank that has caught up into a stalled one.
  EXPECT_FALSE(FindStall(RankTwoBehind(5 * kSecond), kT0 + 3600 * kSecond, After(seconds(10))));
  EXPECT_TRUE(FindStall(RankTwoBehind(10 * kSecond), kT0 + 10 * kSecond, After(seconds(10))));
}

TEST(TrainingStallTest, IdleRanksBetweenCollectivesAreNeverStalledHoweverLong) {
  const std::uint64_t hour_later = kT0 + 3600 * kSecond;
  // Every rank started and completed 18342, and has been idle an hour (a checkpoint, data loading).
  EXPECT_FALSE(FindStall(OnePodEach({Rank(0, 18342, kT0, hour_later), Rank(1, 18342, kT0, hour_later),
                                     Rank(2, 18342, kT0, hour_later), Rank(3, 18342, kT0, hour_later)}),
                         hour_later, After(seconds(10))));
  // Every rank inside the same collective for an hour (a hung fabric, not a missing rank).
  std::vector<ReportProgress> inside;
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    ReportProgress progress = Rank(rank, 18342, kT0, hour_later);
    progress.completed = 18341;
    inside.push_back(progress);
  }
  EXPECT_FALSE(FindStall(OnePodEach(inside), hour_later, After(seconds(10))));
}

TEST(TrainingStallTest, ClearsOnceTheMissingRankCatchesUp) {
  const std::uint64_t later = kT0 + 300 * kSecond;
  ASSERT_TRUE(FindStall(RankTwoBehind(200 * kSecond), later, After(seconds(120))));
  // Rank 2 entered 18342 at last: the communicator is even again.
  EXPECT_FALSE(FindStall(OnePodEach({Rank(0, 18342, kT0, later), Rank(1, 18342, kT0, later),
                                     Rank(2, 18342, later - 1000, later), Rank(3, 18342, kT0, later)}),
                         later, After(seconds(120))));
}

TEST(TrainingStallTest, AStragglerThatKeepsAdvancingIsNotStalled) {
  // Rank 2 runs one collective behind, but entered its last one recently: the others' newest
  // entry (18343) is what it has to reach, and its snapshot is only 1 s past that.
  const std::uint64_t now = kT0 + 600 * kSecond;
  EXPECT_FALSE(FindStall(OnePodEach({Rank(0, 18343, now - 1000, now), Rank(1, 18343, now - 1000, now),
                                     Rank(2, 18342, now - 1100, now)}),
                         now, After(seconds(10))));
}

TEST(TrainingStallTest, WaitingRanksThatWentOnPastTheCollectiveLeaveItsOpUnknown) {
  // The others queued two more collectives after 18342 (NCCL launches asynchronously); their
  // last entry is the one the wait is measured from, and nobody's last op is #18342.
  const auto stall = FindStall(
      OnePodEach({Rank(0, 18344, kT0, kT0 + 60 * kSecond), Rank(1, 18344, kT0 - 5, kT0 + 60 * kSecond),
                  Rank(2, 18341, kT0 - 9000, kT0 + 60 * kSecond)}),
      kT0 + 61 * kSecond, After(seconds(30)));
  ASSERT_TRUE(stall.has_value());
  EXPECT_EQ(stall->sequence, 18342u);
  EXPECT_FALSE(stall->collective.has_value());
  EXPECT_FALSE(stall->bytes.has_value());
  EXPECT_EQ(stall->waited_seconds, 61);
  // One waiting rank whose last op is #N names it, even beside ranks that went further.
  const auto named = FindStall(
      OnePodEach({Rank(0, 18342, kT0 - 10, kT0 + 60 * kSecond), Rank(1, 18344, kT0, kT0 + 60 * kSecond),
                  Rank(2, 18341, kT0 - 9000, kT0 + 60 * kSecond)}),
      kT0 + 61 * kSecond, After(seconds(30)));
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->collective, "all_reduce");
}

TEST(TrainingStallTest, NamesEveryMissingRankAndEachPodOnce) {
  // Two Pods of four local ranks each (communicator ranks 0-7); ranks 5 and 6 of Pod 1 and rank 1
  // of Pod 0 never entered #10; rank 7's snapshot is too old to say.
  const std::uint64_t as_of = kT0 + 40 * kSecond;
  std::map<int, TrainingReport> reports;
  for (std::uint32_t rank = 0; rank < 8; ++rank) {
    const bool missing = rank == 1 || rank == 5 || rank == 6 || rank == 7;
    ReportProgress progress = Rank(rank, missing ? 9 : 10, missing ? kT0 - 5000 : kT0,
                                   rank == 7 ? kT0 + 2 * kSecond : as_of);
    progress.ranks = 8;
    reports[rank < 4 ? 0 : 1].progress.push_back(progress);
  }
  const auto stall = FindStall(reports, as_of, After(seconds(30)));
  ASSERT_TRUE(stall.has_value());
  EXPECT_EQ(stall->missing_ranks, (std::vector<int>{1, 5, 6}));
  EXPECT_EQ(stall->missing_rank_count, 3);
  EXPECT_EQ(stall->missing_pods, (std::vector<int>{0, 1}));
  EXPECT_EQ(stall->waiting_ranks, 4);
}

TEST(TrainingStallTest, ListsAtMostTheBoundButCountsEveryMissingRank) {
  std::map<int, TrainingReport> reports;
  const std::uint64_t as_of = kT0 + 60 * kSecond;
  for (std::uint32_t rank = 0; rank < 100; ++rank) {
    ReportProgress progress = Rank(rank, rank == 0 ? 2 : 1, kT0, as_of);
    progress.ranks = 100;
    reports[static_cast<int>(rank)].progress.push_back(progress);
  }
  const auto stall = FindStall(reports, as_of, After(seconds(10)));
  ASSERT_TRUE(stall.has_value());
  EXPECT_EQ(stall->missing_rank_count, 99);
  ASSERT_EQ(stall->missing_ranks.size(), contract::kMaxStallRanksListed);
  EXPECT_EQ(stall->missing_ranks.front(), 1);
  EXPECT_EQ(stall->missing_ranks.back(), static_cast<int>(contract::kMaxStallRanksListed));
  EXPECT_EQ(stall->missing_pods.size(), contract::kMaxStallRanksListed);
  // It still passes the operator's checks.
  contract::Summary whole;
  whole.backend = "nccl";
  whole.stall = stall;
  std::string error;
  const auto parsed = contract::SummaryFromJson(contract::SummaryToJson(whole).dump(), &error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(parsed->stall, stall);
}

TEST(TrainingStallTest, OfSeveralStalledCommunicatorsTheOneWaitingLongestIsReported) {
  const std::uint64_t as_of = kT0 + 300 * kSecond;
  constexpr std::uint64_t kOther = 0x0000000000000002ULL;
  // kComm's ranks entered at kT0; kOther's (a lower hash) entered 100 s later, waiting less.
  const auto reports = OnePodEach(
      {Rank(0, 7, kT0, as_of), Rank(1, 6, kT0 - 1, as_of), Rank(2, 3, kT0 + 100 * kSecond, as_of, kOther),
       Rank(3, 2, kT0, as_of, kOther)});
  const auto stall = FindStall(reports, as_of, After(seconds(60)));
  ASSERT_TRUE(stall.has_value());
  EXPECT_EQ(stall->communicator, "0x9f3c5a0000000001");
  EXPECT_EQ(stall->missing_ranks, (std::vector<int>{1}));
}

TEST(TrainingStallTest, ARankReportedTwiceCountsFromTheLaterSnapshot) {
  // Pod 2's old report says rank 2 is behind; Pod 3 (where it moved) says it caught up.
  std::map<int, TrainingReport> reports = RankTwoBehind(100 * kSecond);
  reports[3].progress.push_back(Rank(2, 18342, kT0 + 90 * kSecond, kT0 + 101 * kSecond));
  EXPECT_FALSE(FindStall(reports, kT0 + 101 * kSecond, After(seconds(60))));
}

TEST(TrainingStallTest, NothingFromNoReportsOrALoneRank) {
  EXPECT_FALSE(FindStall({}, kT0, After(seconds(10))));
  EXPECT_FALSE(FindStall(OnePodEach({Rank(0, 5, kT0, kT0 + 3600 * kSecond)}), kT0 + 3600 * kSecond,
                         After(seconds(10))));
}

}  // namespace
}  // namespace ringleader::sidecar
