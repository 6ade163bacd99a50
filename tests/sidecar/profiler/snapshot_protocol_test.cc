// The profiler's snapshot protocol: round trips, the exact bounds, and a named error for every
// kind of bad input.
#include "sidecar/profiler/snapshot_protocol.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ringleader::profiler {
namespace {

Snapshot SampleSnapshot() {
  Snapshot snapshot;
  snapshot.header.pid = 4242;
  snapshot.header.process_start_ns = 1'700'000'000'123'456'789ULL;
  snapshot.header.local_rank = 3;
  snapshot.header.sequence = 17;
  snapshot.header.unix_time_ns = 1'700'000'100'000'000'000ULL;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    snapshot.header.counters[i] = 100 + i;
  }
  Communicator world;
  world.info = {0xDEADBEEFCAFEF00DULL, 3, 8, 2, false, "world",
                {18342, 18341, Op::kReduceScatter, 10 << 20, 1'700'000'099'000'000'000ULL}};
  world.cells.push_back({Op::kAllReduce, 20, 10, 10 << 20, 9, 9 << 20, 900'000, 10.5, 18.375});
  world.cells.push_back({Op::kRecv, 0, 1, 1, 0, 0, 0, 0, 0});
  Communicator finished;
  finished.info = {7, 0, 1, 1, true, "", {}};
  snapshot.communicators = {world, finished};
  return snapshot;
}

std::string Payload(const Snapshot& snapshot) {
  return EncodeSnapshotFrame(snapshot).value().substr(kHeaderBytes);
}

// Offsets in the payload of SampleSnapshot's first communicator (name "world") and first cell.
constexpr std::size_t kFirstCommunicator = kSnapshotFixedBytes;
constexpr std::size_t kNranksAt = kFirstCommunicator + 12;
constexpr std::size_t kFlagsAt = kFirstCommunicator + 20;
constexpr std::size_t kNameAt = kFirstCommunicator + 21;
constexpr std::size_t kProgressAt = kNameAt + 1 + 5;
constexpr std::size_t kCellCountAt = kProgressAt + kProgressBytes;
constexpr std::size_t kFirstCell = kCellCountAt + 1;

void Put(std::string* payload, std::size_t at, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    (*payload)[at + static_cast<std::size_t>(i)] = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
}

TEST(SnapshotProtocolTest, RoundTripsThroughTheFrameDecoder) {
  const Snapshot snapshot = SampleSnapshot();
  const std::string frame = EncodeSnapshotFrame(snapshot).value();
  SnapshotFrameDecoder decoder;
  ASSERT_TRUE(decoder.Feed(frame));
  const auto payload = decoder.Next();
  ASSERT_TRUE(payload.has_value());
  const Decoded<Snapshot> decoded = DecodeSnapshot(*payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(*decoded.value, snapshot);
  EXPECT_FALSE(decoder.Next().has_value());
}

TEST(SnapshotProtocolTest, FrameHeaderIsMagicVersionTypeAndLengthBigEndian) {
  const std::string frame = EncodeSnapshotFrame(SampleSnapshot()).value();
  const std::string payload = frame.substr(kHeaderBytes);
  EXPECT_EQ(frame.substr(0, 4), "RLPS");
  EXPECT_EQ(frame.substr(4, 4), std::string("\0\2\0\1", 4));
  const std::size_t length = (static_cast<std::uint8_t>(frame[8]) << 24) |
                             (static_cast<std::uint8_t>(frame[9]) << 16) |
                             (static_cast<std::uint8_t>(frame[10]) << 8) |
                             static_cast<std::uint8_t>(frame[11]);
  EXPECT_EQ(length, payload.size());
  EXPECT_EQ(payload.size(), kSnapshotFixedBytes + 2 * kCommunicatorFixedBytes + 5 + 2 * kCellBytes);
}

// The bytes of version 2's progress, written out by hand: they follow the name, in the order of
// the spec, big-endian; a communicator that started no collective sends 33 zero bytes.
TEST(SnapshotProtocolTest, ProgressIsItsFiveFieldsAfterTheNameInSpecOrder) {
  Snapshot snapshot = SampleSnapshot();
  snapshot.communicators[0].info.progress = {0x0102030405060708ULL, 0x0102030405060707ULL,
                                             Op::kReduceScatter, 0x1122334455667788ULL,
                                             0x18A0B0C0D0E0F001ULL};
  const std::string payload = Payload(snapshot);
  const std::string golden(
      "\x01\x02\x03\x04\x05\x06\x07\x08"   // collectives_started
      "\x01\x02\x03\x04\x05\x06\x07\x07"   // collectives_completed
      "\x02"                               // last_started_op: reduce_scatter
      "\x11\x22\x33\x44\x55\x66\x77\x88"   // last_started_bytes
      "\x18\xA0\xB0\xC0\xD0\xE0\xF0\x01",  // last_started_unix_ns
      kProgressBytes);
  EXPECT_EQ(payload.substr(kProgressAt, kProgressBytes), golden);
  EXPECT_EQ(payload[kCellCountAt], 2);  // the cells follow
  // The second communicator ("", finalized) started none; its cell count is the last byte.
  EXPECT_EQ(payload.substr(payload.size() - 1 - kProgressBytes, kProgressBytes),
            std::string(kProgressBytes, '\0'));
  const Decoded<Snapshot> decoded = DecodeSnapshot(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  const CollectiveProgress& progress = decoded.value->communicators[0].info.progress;
  EXPECT_EQ(progress.collectives_started, 0x0102030405060708ULL);
  EXPECT_EQ(progress.collectives_completed, 0x0102030405060707ULL);
  EXPECT_EQ(progress.last_started_op, Op::kReduceScatter);
  EXPECT_EQ(progress.last_started_bytes, 0x1122334455667788ULL);
  EXPECT_EQ(progress.last_started_unix_ns, 0x18A0B0C0D0E0F001ULL);
}

TEST(SnapshotProtocolTest, WriterRefusesProgressTheDecoderWouldRefuse) {
  const CollectiveProgress bad[] = {
      {3, 4, Op::kAllReduce, 1, 1},  // more completed than started
      {3, 3, Op::kSend, 1, 1},       // a p2p op as the last collective
      {0, 0, Op::kAllReduce, 1, 0},  // details with no collective started
      {0, 0, Op::kAllReduce, 0, 1},
      {0, 0, Op::kBroadcast, 0, 0},
  };
  for (const CollectiveProgress& progress : bad) {
    Snapshot snapshot = SampleSnapshot();
    snapshot.communicators[0].info.progress = progress;
    EXPECT_FALSE(EncodeSnapshotFrame(snapshot).has_value()) << progress.collectives_started;
  }
}

TEST(SnapshotProtocolTest, NoCollectiveStartedMeansNoLastOne) {
  std::string payload = Payload(SampleSnapshot());
  Put(&payload, kProgressAt, 0, 8);      // collectives_started
  Put(&payload, kProgressAt + 8, 0, 8);  // collectives_completed
  EXPECT_EQ(DecodeSnapshot(payload).error,
            "communicators[0].last_started_op: 2 with no collective started");
  Put(&payload, kProgressAt + 16, 0, 1);
  EXPECT_EQ(DecodeSnapshot(payload).error,
            "communicators[0].last_started_bytes: 10485760 with no collective started");
  Put(&payload, kProgressAt + 17, 0, 8);
  EXPECT_EQ(DecodeSnapshot(payload).error,
            "communicators[0].last_started_unix_ns: 1700000099000000000 with no collective "
            "started");
  Put(&payload, kProgressAt + 25, 0, 8);
  EXPECT_TRUE(DecodeSnapshot(payload).ok());
}

TEST(SnapshotProtocolTest, TheLargestLegalSnapshotIsExactlyTheBound) {
  Snapshot snapshot;
  Communicator comm;
  comm.info.name = std::string(kMaxNameBytes, 'n');
  for (std::size_t i = 0; i < kMaxCellsPerCommunicator; ++i) {
    comm.cells.push_back({static_cast<Op>(i % kOpCount), static_cast<std::uint8_t>(i), 1, 1, 1, 1,
                          1, 1, 1});
  }
  snapshot.communicators.assign(kMaxCommunicators, comm);
  const auto frame = EncodeSnapshotFrame(snapshot);
  ASSERT_TRUE(frame.has_value());
  // kMaxPayloadBytes leaves room for kMaxCounters; this writer sends kCounterCount of them.
  EXPECT_EQ(frame->size(), kMaxFrameBytes - 8 * (kMaxCounters - kCounterCount));
  const Decoded<Snapshot> decoded = DecodeSnapshot(std::string_view(*frame).substr(kHeaderBytes));
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(decoded.value->communicators.size(), kMaxCommunicators);
}

TEST(SnapshotProtocolTest, WriterRefusesWhatBreaksABoundOrOverrunsItsBuffer) {
  Snapshot too_many_cells = SampleSnapshot();
  too_many_cells.communicators[0].cells.resize(kMaxCellsPerCommunicator + 1);
  EXPECT_FALSE(EncodeSnapshotFrame(too_many_cells).has_value());

  Snapshot too_many_communicators;
  too_many_communicators.communicators.resize(kMaxCommunicators + 1);
  EXPECT_FALSE(EncodeSnapshotFrame(too_many_communicators).has_value());

  std::vector<std::uint8_t> small(kHeaderBytes + kSnapshotFixedBytes + 3);
  SnapshotWriter writer(small);
  EXPECT_TRUE(writer.Begin(SnapshotHeader{}));
  EXPECT_FALSE(writer.AddCommunicator(CommunicatorHeader{}));
  EXPECT_FALSE(writer.Finish().has_value());

  SnapshotWriter no_communicator(small);
  ASSERT_TRUE(no_communicator.Begin(SnapshotHeader{}));
  EXPECT_FALSE(no_communicator.AddCell(Cell{}));  // a cell belongs to a communicator
}

TEST(SnapshotProtocolTest, WriterCutsNamesAtTheBound) {
  Snapshot snapshot;
  snapshot.communicators.resize(1);
  snapshot.communicators[0].info.name = std::string(kMaxNameBytes + 50, 'x');
  const Decoded<Snapshot> decoded = DecodeSnapshot(Payload(snapshot));
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(decoded.value->communicators[0].info.name, std::string(kMaxNameBytes, 'x'));
}

TEST(SnapshotProtocolTest, ReadsTheCountersItKnowsAndIgnoresAppendedOnes) {
  const std::string payload = Payload(SampleSnapshot());
  const std::size_t counters_at = 32;
  // Two more counters than this reader knows.
  const std::string rest = payload.substr(counters_at + 1 + 8 * kCounterCount);
  std::string longer = payload.substr(0, counters_at) + static_cast<char>(kCounterCount + 2) +
                       payload.substr(counters_at + 1, 8 * kCounterCount) +
                       std::string(16, '\x7F') + rest;
  Decoded<Snapshot> decoded = DecodeSnapshot(longer);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(*decoded.value, SampleSnapshot());
  // An older writer's three: the rest read as zero.
  std::string shorter = payload.substr(0, counters_at) + static_cast<char>(3) +
                        payload.substr(counters_at + 1, 24) + rest;
  decoded = DecodeSnapshot(shorter);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(decoded.value->header.counter(Counter::kOpsUnrecognized), 102);
  EXPECT_EQ(decoded.value->header.counter(Counter::kOpsIncomplete), 0);
}

struct BadPayload {
  const char* what;
  std::size_t at;
  std::uint64_t value;
  int bytes;
  const char* error;
};

class SnapshotBadInputTest : public ::testing::TestWithParam<BadPayload> {};

TEST_P(SnapshotBadInputTest, NamesTheField) {
  const BadPayload& bad = GetParam();
  std::string payload = Payload(SampleSnapshot());
  Put(&payload, bad.at, bad.value, bad.bytes);
  const Decoded<Snapshot> decoded = DecodeSnapshot(payload);
  ASSERT_FALSE(decoded.ok()) << bad.what;
  EXPECT_EQ(decoded.error, bad.error) << bad.what;
}

INSTANTIATE_TEST_SUITE_P(
    EveryCheck, SnapshotBadInputTest,
    ::testing::Values(
        BadPayload{"too many counters", 32, 33, 1, "counters: 33 exceeds 32"},
        BadPayload{"too many communicators", kSnapshotFixedBytes - 2, 4097, 2,
                   "communicators: 4097 exceeds 4096"},
        BadPayload{"more communicators than bytes", kSnapshotFixedBytes - 2, 40, 2,
                   "communicators: 40 need at least 2240 bytes, 233 left"},
        BadPayload{"no ranks", kNranksAt, 0, 4, "communicators[0].nranks: must be at least 1"},
        BadPayload{"rank not below nranks", kNranksAt, 3, 4,
                   "communicators[0].rank: 3 is not below nranks 3"},
        BadPayload{"unknown flag", kFlagsAt, 6, 1, "communicators[0].flags: unknown bits 6"},
        BadPayload{"name too long", kNameAt, 129, 1, "communicators[0].name: 129 exceeds 128"},
        BadPayload{"more collectives completed than started", kProgressAt + 8, 18343, 8,
                   "communicators[0].collectives_completed: 18343 exceeds collectives_started "
                   "18342"},
        BadPayload{"last op not an operation", kProgressAt + 16, 10, 1,
                   "communicators[0].last_started_op: 10 is not an operation"},
        BadPayload{"last op a p2p one", kProgressAt + 16, 9, 1,
                   "communicators[0].last_started_op: recv is not a collective"},
        BadPayload{"too many cells", kCellCountAt, 65, 1, "communicators[0].cells: 65 exceeds 64"},
        BadPayload{"more cells than bytes", kCellCountAt, 9, 1,
                   "communicators[0].cells: 9 cells need 522 bytes, 172 left"},
        BadPayload{"unknown op", kFirstCell, 10, 1,
                   "communicators[0].cells[0].op: 10 is not an operation"},
        BadPayload{"bucket too large", kFirstCell + 1, 64, 1,
                   "communicators[0].cells[0].bucket: 64 exceeds 63"},
        BadPayload{"more timed calls than calls", kFirstCell + 18, 11, 8,
                   "communicators[0].cells[0].timed_calls: 11 exceeds calls 10"},
        BadPayload{"more timed bytes than bytes", kFirstCell + 26, (10 << 20) + 1, 8,
                   "communicators[0].cells[0].timed_bytes: 10485761 exceeds bytes 10485760"},
        BadPayload{"algbw not a number", kFirstCell + 42,
                   std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN()), 8,
                   "communicators[0].cells[0].algbw_gbps: not a finite non-negative number"},
        BadPayload{"negative busbw", kFirstCell + 50, std::bit_cast<std::uint64_t>(-1.0), 8,
                   "communicators[0].cells[0].busbw_gbps: not a finite non-negative number"},
        BadPayload{"a second cell for the same op and bucket", kFirstCell + kCellBytes, 20, 2,
                   "communicators[0].cells[1]: a second cell for all_reduce bucket 20"}));

TEST(SnapshotProtocolTest, DuplicateCellIsRefused) {
  Snapshot snapshot = SampleSnapshot();
  snapshot.communicators[0].cells.push_back(snapshot.communicators[0].cells[0]);
  const Decoded<Snapshot> decoded = DecodeSnapshot(Payload(snapshot));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error, "communicators[0].cells[2]: a second cell for all_reduce bucket 20");
}

TEST(SnapshotProtocolTest, TruncatedAndOverlongPayloadsAreRefused) {
  const std::string payload = Payload(SampleSnapshot());
  EXPECT_EQ(DecodeSnapshot(payload + "x").error, "snapshot: 1 bytes after the last field");
  EXPECT_EQ(DecodeSnapshot(payload.substr(0, payload.size() - 3)).error,
            "communicators[1].last_started_unix_ns: needs 8 bytes, 6 left");
  EXPECT_EQ(DecodeSnapshot("").error, "pid: needs 4 bytes, 0 left");
  // Every prefix fails cleanly.
  for (std::size_t n = 0; n < payload.size(); ++n) {
    EXPECT_FALSE(DecodeSnapshot(payload.substr(0, n)).ok()) << n;
  }
}

TEST(SnapshotProtocolTest, FrameDecoderRefusesABadHeaderBeforeBufferingItsPayload) {
  const std::string frame = EncodeSnapshotFrame(SampleSnapshot()).value();
  struct Case {
    std::size_t at;
    char value;
    const char* error;
  };
  const Case cases[] = {
      {0, 'X', "header.magic: 1481396307 is not 1380733011"},
      {5, 1, "header.version: 1 is not supported"},  // no progress: refused, not misread
      {7, 2, "header.type: 2 is not a snapshot"},
      {8, 1, "header.length: 16777548 exceeds 15958307"},
  };
  for (const Case& c : cases) {
    std::string bad = frame;
    bad[c.at] = c.value;
    SnapshotFrameDecoder decoder;
    EXPECT_FALSE(decoder.Feed(bad.substr(0, kHeaderBytes)));
    EXPECT_EQ(decoder.error(), c.error);
    EXPECT_LT(decoder.BufferCapacityForTest(), 64U);  // at most a string's inline buffer
    EXPECT_FALSE(decoder.Feed(frame));  // stays failed
    EXPECT_FALSE(decoder.Next().has_value());
  }
}

TEST(SnapshotProtocolTest, FrameDecoderReservesNothingForAHugeAnnouncedPayload) {
  std::string header = EncodeSnapshotFrame(SampleSnapshot()).value().substr(0, kHeaderBytes);
  header[8] = 0x00;
  header[9] = static_cast<char>(0xF0);  // 15.7 MB announced, within the bound
  SnapshotFrameDecoder decoder;
  EXPECT_TRUE(decoder.Feed(header));
  EXPECT_TRUE(decoder.Feed("abc"));
  EXPECT_LT(decoder.BufferCapacityForTest(), 1024U);
}

TEST(SnapshotProtocolTest, FrameDecoderGivesTheSameFramesHoweverTheStreamIsSplit) {
  const std::string one = EncodeSnapshotFrame(SampleSnapshot()).value();
  Snapshot empty;
  const std::string stream = one + EncodeSnapshotFrame(empty).value() + one;
  for (std::size_t piece : {1, 5, 12, 13, 100, 1000}) {
    SnapshotFrameDecoder decoder;
    std::vector<std::string> payloads;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(at, piece)));
      while (auto payload = decoder.Next()) {
        payloads.push_back(*payload);
      }
    }
    ASSERT_EQ(payloads.size(), 3U) << piece;
    EXPECT_EQ(payloads[0], one.substr(kHeaderBytes));
    EXPECT_EQ(*DecodeSnapshot(payloads[1]).value, empty);
    EXPECT_EQ(payloads[2], payloads[0]);
  }
}

TEST(SnapshotProtocolTest, SizeBucketsArePowersOfTwoRoundedUp) {
  const std::pair<std::uint64_t, std::uint8_t> table[] = {
      {0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1024, 10}, {1025, 11},
      {std::uint64_t{1} << 40, 40}, {(std::uint64_t{1} << 40) + 1, 41},
      {std::numeric_limits<std::uint64_t>::max(), 63}};
  for (const auto& [bytes, bucket] : table) {
    EXPECT_EQ(SizeBucket(bytes), bucket) << bytes;
  }
  EXPECT_EQ(BucketUpperBytes(10), 1024U);
  EXPECT_EQ(BucketUpperBytes(0), 1U);
}

TEST(SnapshotProtocolTest, NamesMatchTheSidecarsCollectiveNames) {
  EXPECT_EQ(OpName(Op::kAllReduce), "all_reduce");
  EXPECT_EQ(OpName(Op::kAllToAll), "alltoall");
  EXPECT_EQ(OpName(Op::kRecv), "recv");
  EXPECT_EQ(CounterName(Counter::kSnapshotsDropped), "snapshots_dropped");
  EXPECT_EQ(CounterName(Counter::kCommunicatorsDropped), "communicators_dropped");
}

}  // namespace
}  // namespace ringleader::profiler
