// Unit tests for the port ledger: allocation order, reservations read back from status (aligned,
// misaligned or outside the range), exhaustion, rebuild, and port range parsing.
#include "operator/ports/port_ledger.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::ports {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::optional<PortBlock> Block(std::int32_t base) { return PortBlock{base}; }

TEST(PortLedgerRangeTest, DefaultLiesAboveTheLinuxEphemeralRange) {
  const PortRange range;
  EXPECT_EQ(range.first, 61000);
  EXPECT_EQ(range.last, 65535);
  EXPECT_EQ(range.size(), 4536);
  EXPECT_FALSE(range.Contains(60999));
}

TEST(PortLedgerRangeTest, ContainsBothEnds) {
  const PortRange range{100, 110};
  EXPECT_FALSE(range.Contains(99));
  EXPECT_TRUE(range.Contains(100));
  EXPECT_TRUE(range.Contains(110));
  EXPECT_FALSE(range.Contains(111));
}

TEST(PortLedgerRangeTest, InvertedRangeHasSizeZero) { EXPECT_EQ((PortRange{200, 100}).size(), 0); }

TEST(PortLedgerRangeTest, ToStringRoundTripsThroughParse) {
  const PortRange range{61000, 65535};
  EXPECT_EQ(range.ToString(), "61000-65535");
  std::string error;
  EXPECT_EQ(ParsePortRange(range.ToString(), &error), range);
}

TEST(PortLedgerParseRangeTest, ParsesFirstDashLast) {
  std::string error;
  const auto range = ParsePortRange("1024-2047", &error);
  ASSERT_TRUE(range.has_value()) << error;
  EXPECT_EQ(range->first, 1024);
  EXPECT_EQ(range->last, 2047);
}

TEST(PortLedgerParseRangeTest, AcceptsExactlyFourPortsAndTheWholePortSpace) {
  std::string error;
  EXPECT_EQ(ParsePortRange("100-103", &error), (PortRange{100, 103}));
  EXPECT_EQ(ParsePortRange("1-65535", &error), (PortRange{1, 65535}));
}

TEST(PortLedgerParseRangeTest, RejectsTextThatIsNotFirstDashLast) {
  for (const char* text : {"", "61000", "61000-", "-65535", "a-b", "61000 - 65535", " 61000-65535",
                           "61000-65535-1", "+1-10", "61000:65535", "1-2x", "-5-10"}) {
    std::string error;
    EXPECT_EQ(ParsePortRange(text, &error), std::nullopt) << text;
    EXPECT_EQ(error, "port range must look like FIRST-LAST") << text;
  }
}

TEST(PortLedgerParseRangeTest, RejectsPortsOutsideOneTo65535) {
  for (const char* text : {"0-100", "1-65536", "70000-70010", "99999999999999999999999-1"}) {
    std::string error;
    EXPECT_EQ(ParsePortRange(text, &error), std::nullopt) << text;
    EXPECT_EQ(error, "port range must lie within 1-65535") << text;
  }
}

TEST(PortLedgerParseRangeTest, RejectsRangesOfFewerThanFourPorts) {
  for (const char* text : {"100-102", "100-100", "200-100"}) {
    std::string error;
    EXPECT_EQ(ParsePortRange(text, &error), std::nullopt) << text;
    EXPECT_EQ(error, "port range must hold at least 4 ports") << text;
  }
}

TEST(PortLedgerParseRangeTest, AcceptsANullErrorPointer) {
  EXPECT_EQ(ParsePortRange("nonsense", nullptr), std::nullopt);
}

TEST(PortLedgerBlockTest, PortsFollowTheContractRoleOrder) {
  const PortBlock block{61000};
  EXPECT_EQ(block.Port(contract::PortRole::kMaster), 61000);
  EXPECT_EQ(block.Port(contract::PortRole::kRendezvous), 61001);
  EXPECT_EQ(block.Port(contract::PortRole::kMetrics), 61002);
  EXPECT_EQ(block.Port(contract::PortRole::kSpare), 61003);
}

TEST(PortLedgerTest, CapacityCountsAlignedBlocksInTheDefaultRange) {
  const PortLedger ledger(PortRange{});
  EXPECT_EQ(ledger.capacity(), 1134u);
  EXPECT_EQ(ledger.free_blocks(), 1134u);
  EXPECT_EQ(ledger.jobs(), 0u);
}

TEST(PortLedgerTest, AllocatesAlignedBlocksLowestFirst) {
  PortLedger ledger(PortRange{100, 115});
  EXPECT_EQ(ledger.Allocate("a"), Block(100));
  EXPECT_EQ(ledger.Allocate("b"), Block(104));
  EXPECT_EQ(ledger.Allocate("c"), Block(108));
  EXPECT_EQ(ledger.Find("b"), Block(104));
  EXPECT_EQ(ledger.jobs(), 3u);
  EXPECT_EQ(ledger.free_blocks(), 1u);
}

TEST(PortLedgerTest, AllocateGivesAJobTheBlockItAlreadyHolds) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_EQ(ledger.Allocate("a"), Block(100));
  EXPECT_EQ(ledger.Allocate("a"), Block(100));
  EXPECT_EQ(ledger.jobs(), 1u);
  EXPECT_EQ(ledger.free_blocks(), 3u);
}

TEST(PortLedgerTest, PeekProposesWhatAllocateWouldGiveWithoutChangingAnything) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_EQ(ledger.Allocate("a"), Block(100));
  const PortLedger before = ledger;
  EXPECT_EQ(ledger.Peek(), Block(104));
  EXPECT_EQ(ledger, before);
  EXPECT_EQ(ledger.Allocate("b"), Block(104));
}

TEST(PortLedgerTest, ReturnsNulloptWhenExhaustedAndRecoversAfterRelease) {
  PortLedger ledger(PortRange{100, 107});
  ASSERT_EQ(ledger.Allocate("a"), Block(100));
  ASSERT_EQ(ledger.Allocate("b"), Block(104));
  EXPECT_EQ(ledger.Allocate("c"), std::nullopt);
  EXPECT_EQ(ledger.Peek(), std::nullopt);
  EXPECT_EQ(ledger.Find("c"), std::nullopt);
  EXPECT_EQ(ledger.free_blocks(), 0u);

  ledger.Release("a");
  EXPECT_EQ(ledger.Find("a"), std::nullopt);
  EXPECT_EQ(ledger.Allocate("c"), Block(100));
}

TEST(PortLedgerTest, ReusesTheLowestReleasedBlockFirst) {
  PortLedger ledger(PortRange{100, 119});
  for (const char* job : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(ledger.Allocate(job).has_value());
  }
  ledger.Release("c");
  ledger.Release("b");
  EXPECT_EQ(ledger.Allocate("e"), Block(104));
  EXPECT_EQ(ledger.Allocate("f"), Block(108));
  EXPECT_EQ(ledger.Allocate("g"), Block(116));
}

TEST(PortLedgerTest, NeverReassignsAPortHeldByALiveJob) {
  PortLedger ledger(PortRange{100, 131});
  ASSERT_TRUE(ledger.Reserve("old", PortBlock{102}));
  std::vector<std::int32_t> ports;
  while (const auto block = ledger.Allocate("job-" + std::to_string(ports.size()))) {
    for (const contract::PortRole role : contract::kPortRoles) {
      ports.push_back(block->Port(role));
    }
  }
  for (const std::int32_t port : ports) {
    EXPECT_TRUE(port < 102 || port > 105) << port;
  }
  EXPECT_EQ(ports.size(), 6u * contract::kPortsPerJob);
}

TEST(PortLedgerTest, ReleaseOfAnUnknownJobChangesNothing) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_TRUE(ledger.Allocate("a").has_value());
  const PortLedger before = ledger;
  ledger.Release("nobody");
  EXPECT_EQ(ledger, before);
}

TEST(PortLedgerTest, IgnoresTheTailOfARangeWhoseSizeIsNotAMultipleOfFour) {
  PortLedger ledger(PortRange{100, 110});
  EXPECT_EQ(ledger.capacity(), 2u);
  EXPECT_EQ(ledger.Allocate("a"), Block(100));
  EXPECT_EQ(ledger.Allocate("b"), Block(104));
  EXPECT_EQ(ledger.Allocate("c"), std::nullopt);
  // A block over the tail (108-111) holds its ports but takes no aligned block.
  EXPECT_TRUE(ledger.Reserve("tail", PortBlock{108}));
  EXPECT_FALSE(ledger.Reserve("other", PortBlock{110}));
  ledger.Release("a");
  EXPECT_EQ(ledger.free_blocks(), 1u);
}

TEST(PortLedgerTest, RangeTooSmallForABlockHasNoCapacity) {
  PortLedger ledger(PortRange{100, 102});
  EXPECT_EQ(ledger.capacity(), 0u);
  EXPECT_EQ(ledger.Peek(), std::nullopt);
  EXPECT_EQ(ledger.Allocate("a"), std::nullopt);
}

TEST(PortLedgerTest, ReserveRecordsABlockProposedByPeek) {
  PortLedger ledger(PortRange{100, 115});
  const auto proposed = ledger.Peek();
  ASSERT_EQ(proposed, Block(100));
  EXPECT_TRUE(ledger.Reserve("a", *proposed));
  EXPECT_EQ(ledger.Find("a"), proposed);
  EXPECT_EQ(ledger.free_blocks(), 3u);
  EXPECT_EQ(ledger.Peek(), Block(104));
}

TEST(PortLedgerTest, ReserveRefusesABlockSharingAPortWithAnotherJob) {
  PortLedger ledger(PortRange{100, 131});
  ASSERT_TRUE(ledger.Reserve("a", PortBlock{104}));
  const PortLedger before = ledger;
  for (std::int32_t base = 101; base <= 107; ++base) {
    EXPECT_FALSE(ledger.Reserve("b", PortBlock{base})) << base;
  }
  EXPECT_EQ(ledger, before);
  EXPECT_EQ(ledger.Find("b"), std::nullopt);
  EXPECT_TRUE(ledger.Reserve("b", PortBlock{100}));
  EXPECT_TRUE(ledger.Reserve("c", PortBlock{108}));
}

TEST(PortLedgerTest, ReserveOfTheBlockAJobAlreadyHoldsSucceedsWithoutChange) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_TRUE(ledger.Reserve("a", PortBlock{102}));
  const PortLedger before = ledger;
  EXPECT_TRUE(ledger.Reserve("a", PortBlock{102}));
  EXPECT_EQ(ledger, before);
}

TEST(PortLedgerTest, ReserveRefusesADifferentBlockForAJobThatAlreadyHoldsOne) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_EQ(ledger.Allocate("a"), Block(100));
  const PortLedger before = ledger;
  EXPECT_FALSE(ledger.Reserve("a", PortBlock{108}));
  EXPECT_EQ(ledger, before);
  EXPECT_EQ(ledger.Find("a"), Block(100));
}

TEST(PortLedgerTest, MisalignedBlockBlocksBothAlignedBlocksItOverlapsUntilReleased) {
  PortLedger ledger(PortRange{100, 119});
  ASSERT_TRUE(ledger.Reserve("old", PortBlock{102}));  // ports 102-105
  EXPECT_EQ(ledger.free_blocks(), 3u);
  EXPECT_EQ(ledger.Peek(), Block(108));
  EXPECT_EQ(ledger.Allocate("a"), Block(108));

  ledger.Release("old");
  EXPECT_EQ(ledger.free_blocks(), 4u);
  EXPECT_EQ(ledger.Allocate("b"), Block(100));
  EXPECT_EQ(ledger.Allocate("c"), Block(104));
}

TEST(PortLedgerTest, BlockPartlyBelowTheRangeBlocksOnlyTheAlignedBlockItOverlaps) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_TRUE(ledger.Reserve("old", PortBlock{98}));  // ports 98-101
  EXPECT_EQ(ledger.free_blocks(), 3u);
  EXPECT_EQ(ledger.Allocate("a"), Block(104));
  EXPECT_FALSE(ledger.Reserve("b", PortBlock{95}));
  ledger.Release("old");
  EXPECT_EQ(ledger.Allocate("b"), Block(100));
}

TEST(PortLedgerTest, BlockWhollyOutsideTheRangeIsHeldButBlocksNoAlignedBlock) {
  PortLedger ledger(PortRange{100, 115});
  ASSERT_TRUE(ledger.Reserve("old", PortBlock{5000}));
  EXPECT_EQ(ledger.Find("old"), Block(5000));
  EXPECT_EQ(ledger.jobs(), 1u);
  EXPECT_EQ(ledger.free_blocks(), 4u);
  EXPECT_FALSE(ledger.Reserve("other", PortBlock{5003}));
  EXPECT_EQ(ledger.Allocate("old"), Block(5000));
}

TEST(PortLedgerTest, AlignedBlockStaysBlockedWhileAnotherMisalignedBlockStillOverlapsIt) {
  PortLedger ledger(PortRange{100, 119});
  ASSERT_TRUE(ledger.Reserve("a", PortBlock{102}));  // ports 102-105
  ASSERT_TRUE(ledger.Reserve("b", PortBlock{106}));  // ports 106-109
  EXPECT_EQ(ledger.free_blocks(), 2u);

  ledger.Release("a");
  EXPECT_EQ(ledger.free_blocks(), 3u);
  EXPECT_EQ(ledger.Allocate("c"), Block(100));
  EXPECT_EQ(ledger.Allocate("d"), Block(112));

  ledger.Release("b");
  EXPECT_EQ(ledger.Allocate("e"), Block(104));
  EXPECT_EQ(ledger.Allocate("f"), Block(108));
}

TEST(PortLedgerTest, FindsTheLowestFreeBlockAnywhereInTheWholePortSpace) {
  PortLedger ledger(PortRange{1, 65535});
  ASSERT_EQ(ledger.capacity(), 16383u);
  for (std::size_t job = 0; job < ledger.capacity(); ++job) {
    ASSERT_TRUE(ledger.Allocate(std::to_string(job)).has_value()) << job;
  }
  EXPECT_EQ(ledger.Allocate("late"), std::nullopt);
  ledger.Release("16382");
  ledger.Release("5000");
  ledger.Release("70");
  EXPECT_EQ(ledger.free_blocks(), 3u);
  EXPECT_EQ(ledger.Allocate("a"), Block(1 + 4 * 70));
  EXPECT_EQ(ledger.Allocate("b"), Block(1 + 4 * 5000));
  EXPECT_EQ(ledger.Allocate("c"), Block(65529));
  EXPECT_EQ(ledger.Allocate("d"), std::nullopt);
}

TEST(PortLedgerBlockIndexSetTest, StartsFullAndYieldsTheLowestMemberAcrossWords) {
  BlockIndexSet set(10'000);
  EXPECT_EQ(set.size(), 10'000u);
  for (std::size_t index = 0; index < 10'000; ++index) {
    set.Erase(index);
  }
  EXPECT_EQ(set.Lowest(), std::nullopt);
  set.Insert(9'999);
  set.Insert(4'100);
  set.Insert(4'100);  // inserting twice counts once
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.Lowest(), 4'100u);
  set.Erase(4'100);
  set.Erase(4'100);
  EXPECT_EQ(set.Lowest(), 9'999u);
  EXPECT_EQ(set.size(), 1u);
  EXPECT_EQ(BlockIndexSet(0).Lowest(), std::nullopt);
}

TEST(PortLedgerTest, RebuildEqualsTheLiveLedgerWhateverTheOrder) {
  PortLedger live(PortRange{100, 131});
  ASSERT_TRUE(live.Allocate("a").has_value());
  ASSERT_TRUE(live.Reserve("b", PortBlock{110}));
  ASSERT_TRUE(live.Allocate("c").has_value());
  ASSERT_TRUE(live.Reserve("d", PortBlock{9000}));

  std::vector<std::pair<std::string, PortBlock>> held;
  for (const char* job : {"d", "c", "b", "a"}) {
    held.emplace_back(job, *live.Find(job));
  }
  std::vector<std::string> conflicts;
  const PortLedger rebuilt = PortLedger::Rebuild(live.range(), held, &conflicts);
  EXPECT_THAT(conflicts, IsEmpty());
  EXPECT_EQ(rebuilt, live);
}

TEST(PortLedgerTest, RebuildReportsConflictsAndKeepsTheEarlierHolder) {
  const std::vector<std::pair<std::string, PortBlock>> held = {
      {"a", PortBlock{100}}, {"b", PortBlock{102}}, {"c", PortBlock{104}},
      {"d", PortBlock{103}}, {"a", PortBlock{108}}, {"c", PortBlock{104}}};
  std::vector<std::string> conflicts;
  const PortLedger ledger = PortLedger::Rebuild(PortRange{100, 115}, held, &conflicts);
  EXPECT_THAT(conflicts, ElementsAre("b", "d", "a"));
  EXPECT_EQ(ledger.Find("a"), Block(100));
  EXPECT_EQ(ledger.Find("b"), std::nullopt);
  EXPECT_EQ(ledger.Find("c"), Block(104));
  EXPECT_EQ(ledger.Find("d"), std::nullopt);
  EXPECT_EQ(ledger.jobs(), 2u);
}

TEST(PortLedgerTest, RebuildAcceptsANullConflictList) {
  const std::vector<std::pair<std::string, PortBlock>> held = {{"a", PortBlock{100}},
                                                               {"b", PortBlock{100}}};
  const PortLedger ledger = PortLedger::Rebuild(PortRange{100, 115}, held, nullptr);
  EXPECT_EQ(ledger.jobs(), 1u);
}

TEST(PortLedgerTest, RebuildUnderANewRangeKeepsOldBlocksHeldAndAllocatesAroundThem) {
  // The range moved from 100-131 to 102-133: old aligned blocks are now misaligned.
  const std::vector<std::pair<std::string, PortBlock>> held = {{"a", PortBlock{100}},
                                                               {"b", PortBlock{108}}};
  std::vector<std::string> conflicts;
  PortLedger ledger = PortLedger::Rebuild(PortRange{102, 133}, held, &conflicts);
  EXPECT_THAT(conflicts, IsEmpty());
  EXPECT_EQ(ledger.capacity(), 8u);
  EXPECT_EQ(ledger.free_blocks(), 5u);  // 102 (by a), 106 and 110 (by b) are blocked
  std::vector<std::int32_t> bases;
  while (const auto block = ledger.Allocate("new-" + std::to_string(bases.size()))) {
    bases.push_back(block->base);
  }
  EXPECT_THAT(bases, ElementsAre(114, 118, 122, 126, 130));
}

TEST(PortLedgerTest, EqualityComparesRangeHoldersAndFreeBlocks) {
  PortLedger first(PortRange{100, 115});
  PortLedger second(PortRange{100, 115});
  EXPECT_EQ(first, second);
  EXPECT_NE(first, PortLedger(PortRange{100, 119}));

  ASSERT_TRUE(first.Allocate("a").has_value());
  EXPECT_NE(first, second);
  ASSERT_TRUE(second.Reserve("b", PortBlock{100}));
  EXPECT_NE(first, second);  // same ports taken, different holder
  second.Release("b");
  ASSERT_TRUE(second.Allocate("a").has_value());
  EXPECT_EQ(first, second);
}

}  // namespace
}  // namespace ringleader::ports
