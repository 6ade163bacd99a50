// The snapshot protocol between the NCCL profiler plugin (libnccl-profiler-ringleader.so, inside
// every trainer process) and the sidecar, version 2. This comment is the single spec.
//
// Transport. The plugin connects to a Unix stream socket (contract.h: env::kProfilerSocket, by
// default path::kProfilerSocket in the run dir) and writes one frame per snapshot, every few
// seconds; the sidecar never writes back. A snapshot the plugin cannot deliver at once (no
// sidecar, or one that stopped reading) is dropped and counted, never queued.
//
// Framing. A 12-byte header, then the payload. All integers are big-endian.
//   magic    u32  0x524C5053 ("RLPS")
//   version  u16  2 (the plugin and the sidecar ship together, in one image and one release, so a
//                   reader accepts its own version only; version 1 had no collective progress)
//   type     u16  1 (Snapshot; the only type)
//   length   u32  payload bytes that follow, at most kMaxPayloadBytes
// A reader checks the header alone before it buffers any payload; any failure is fatal to the
// connection (SnapshotFrameDecoder stays failed).
//
// Snapshot payload. f64 is an IEEE 754 double sent as its u64 bit pattern.
//   pid u32, process_start_ns u64 (when the plugin was loaded, Unix ns: with pid it names one
//   process), local_rank i32 (LOCAL_RANK, -1 when unset), sequence u64 (1, 2, ... per attempt,
//   so a gap counts snapshots that never arrived), unix_time_ns u64
//   counters: count u8 (<= kMaxCounters), then count u64 in Counter order; a reader keeps the
//     ones it knows and ignores the rest, so a newer plugin may append counters
//   communicators: count u16 (<= kMaxCommunicators), then each:
//     comm_hash u64, rank u32, nranks u32 (>= 1, rank < nranks), nnodes u32,
//     flags u8 (bit 0: finalized, this is its last snapshot; other bits 0),
//     name: length u8 (<= kMaxNameBytes) then the bytes,
//     progress (version 2): collectives_started u64, collectives_completed u64 (<=
//       collectives_started), last_started_op u8 (< kOpCount, not send or recv),
//       last_started_bytes u64, last_started_unix_ns u64; the last three are 0 while
//       collectives_started is 0,
//     cells: count u8 (<= kMaxCellsPerCommunicator), then each:
//       op u8 (< kOpCount), bucket u8 (<= kMaxBucket),
//       calls u64, bytes u64, timed_calls u64 (<= calls), timed_bytes u64 (<= bytes),
//       gpu_ns u64, algbw_gbps f64, busbw_gbps f64 (finite, >= 0)
//     no two cells of one communicator share (op, bucket).
// Nothing may follow the last field. Every count is checked against its bound and against the
// bytes left before anything is allocated.
//
// Meaning. Every counter and cell is cumulative since the plugin loaded (cells: since the
// communicator's init), so a lost snapshot loses nothing but time resolution. `bytes` sums
// nccl-tests' "size" S of each call (sidecar/collectives/bus_bandwidth.h: count x element size,
// x nranks for all_gather, reduce_scatter, alltoall, gather and scatter); `bucket` b holds the
// calls with S in (2^(b-1), 2^b] (bucket 0: S <= 1). A call is "timed" when NCCL reported the GPU
// start and stop of every kernel channel it ran on; its GPU time is the last channel's stop less
// the first channel's start (the GPU's globaltimer, ns). algbw = timed_bytes / gpu time, in 1e9
// bytes per second; busbw = algbw x nccl-tests' factor for the op and nranks.
//
// Progress, for telling a stalled rank from the others. Collectives only: p2p sends and receives
// are left out, because how many a rank makes depends on its place in the job (a pipeline stage
// sends to its neighbours only), so their counts differ between healthy ranks (an all-to-all made
// of sends and receives, as before NCCL 2.28, is left out with them); every rank of a
// communicator makes the same collectives in the same order (NCCL's own rule). Counted from the
// communicator's init, over all collective ops the plugin recognises (Op, with a known datatype):
// - collectives_started: collectives whose start event NCCL sent, i.e. that this rank entered
//   (NCCL starts the event when it launches the collective's kernel, on the calling thread); it is
//   also the 1-based sequence number of the last one. Counted even when the plugin has no slot
//   left to time it (ops_dropped).
// - collectives_completed: those of them whose end the plugin saw: every kernel channel NCCL
//   announced stopped (or, with no channel announced, the op's stop). A kernel that started and
//   never stops keeps its collective uncompleted; one whose channels never all report (counted in
//   ops_incomplete) or that the plugin did not track (ops_dropped) is never counted completed.
// - last_started_op, last_started_bytes (nccl-tests' S, as in cells), last_started_unix_ns: the
//   collective numbered collectives_started. The time is the plugin's CLOCK_REALTIME_COARSE: the
//   realtime clock that unix_time_ns is read from, as of the OS's last tick (4 ms where
//   measured), so unix_time_ns - last_started_unix_ns is how long ago the rank entered it, by one
//   clock.
// So, among the ranks of one communicator (one comm_hash), a rank whose collectives_started is
// below its peers' never entered the next collective; ranks with equal collectives_started, all
// completed, are between collectives (idle, however long). NCCL does
// not promise these events for collectives replayed from a CUDA graph (it leaves graph-captured
// collectives out of its own sequence numbers for that reason), so such counts may differ across
// ranks.
//
// The writer checks the bounds (a snapshot that does not fit is refused); decoders never throw
// on bad bytes, they return an error naming the field, e.g.
// "communicators[2].cells[5].timed_calls: 7 exceeds calls 6".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::profiler {

inline constexpr std::uint32_t kMagic = 0x524C5053;  // "RLPS"
inline constexpr std::uint16_t kVersion = 2;
inline constexpr std::uint16_t kSnapshotType = 1;
inline constexpr std::size_t kHeaderBytes = 12;

inline constexpr std::size_t kMaxCommunicators = 4096;
inline constexpr std::size_t kMaxCellsPerCommunicator = 64;
inline constexpr std::size_t kMaxNameBytes = 128;
inline constexpr std::size_t kMaxCounters = 32;
inline constexpr std::uint8_t kMaxBucket = 63;

// The operations NCCL reports (its func names in brackets); the values are on the wire.
enum class Op : std::uint8_t {
  kAllReduce = 0,      // AllReduce
  kAllGather = 1,      // AllGather
  kReduceScatter = 2,  // ReduceScatter
  kBroadcast = 3,      // Broadcast
  kReduce = 4,         // Reduce
  kAllToAll = 5,       // AlltoAll (NCCL 2.28)
  kGather = 6,         // Gather (NCCL 2.28)
  kScatter = 7,        // Scatter (NCCL 2.28)
  kSend = 8,           // Send (point-to-point)
  kRecv = 9,           // Recv (point-to-point)
};
inline constexpr std::size_t kOpCount = 10;

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "gather",
// "scatter", "send", "recv": the sidecar's collective names where it has them.
std::string_view OpName(Op op);
// Every op but send and recv (the p2p ones).
bool IsCollective(Op op);

// The process-wide drop and error counters; the values are their positions on the wire.
enum class Counter : std::uint8_t {
  kCommunicatorsDropped = 0,  // inits beyond the plugin's communicator table
  kOpsDropped = 1,            // collectives and p2p ops not recorded (no free slot, or on a
                              // dropped communicator)
  kOpsUnrecognized = 2,       // an operation or datatype name the plugin does not know
  kOpsIncomplete = 3,         // kernel-channel events that never all arrived (counted untimed)
  kChannelsDropped = 4,       // kernel-channel events for an unknown, finished or repeated parent
  kCellsDropped = 5,          // completed ops whose communicator had no free (op, bucket) cell
  kEventsIgnored = 6,         // unsupported event types, null descriptors and handles
  kSnapshotsDropped = 7,      // snapshots not delivered (no sidecar, or it stopped reading)
};
inline constexpr std::size_t kCounterCount = 8;
static_assert(kCounterCount <= kMaxCounters);

// "communicators_dropped", "ops_dropped", ...: the enumerator's name in snake case.
std::string_view CounterName(Counter counter);

// The size bucket of nccl-tests' size S: the smallest b with S <= 2^b, at most kMaxBucket.
std::uint8_t SizeBucket(std::uint64_t bytes);
// 2^bucket: the largest S the bucket holds.
std::uint64_t BucketUpperBytes(std::uint8_t bucket);

struct SnapshotHeader {
  std::uint32_t pid = 0;
  std::uint64_t process_start_ns = 0;
  std::int32_t local_rank = -1;
  std::uint64_t sequence = 0;
  std::uint64_t unix_time_ns = 0;
  std::array<std::uint64_t, kCounterCount> counters{};
  std::uint64_t counter(Counter c) const { return counters[static_cast<std::size_t>(c)]; }
  bool operator==(const SnapshotHeader&) const = default;
};

// A communicator's collective progress (the spec above: "Progress").
struct CollectiveProgress {
  std::uint64_t collectives_started = 0;  // also the sequence number of the last one started
  std::uint64_t collectives_completed = 0;
  // The collective numbered collectives_started; all 0 while collectives_started is 0.
  Op last_started_op = Op::kAllReduce;
  std::uint64_t last_started_bytes = 0;
  std::uint64_t last_started_unix_ns = 0;
  bool operator==(const CollectiveProgress&) const = default;
};

struct CommunicatorInfo {
  std::uint64_t comm_hash = 0;
  std::uint32_t rank = 0;
  std::uint32_t nranks = 1;
  std::uint32_t nnodes = 1;
  bool finalized = false;
  std::string name;
  CollectiveProgress progress;
  bool operator==(const CommunicatorInfo&) const = default;
};

struct Cell {
  Op op = Op::kAllReduce;
  std::uint8_t bucket = 0;
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0;
  std::uint64_t timed_calls = 0;
  std::uint64_t timed_bytes = 0;
  std::uint64_t gpu_ns = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  bool operator==(const Cell&) const = default;
};

// A communicator as the writer takes it: the name is borrowed, so the plugin writes from its
// tables without allocating.
struct CommunicatorHeader {
  std::uint64_t comm_hash = 0;
  std::uint32_t rank = 0;
  std::uint32_t nranks = 1;
  std::uint32_t nnodes = 1;
  bool finalized = false;
  std::string_view name;
  CollectiveProgress progress;
};

struct Communicator {
  CommunicatorInfo info;
  std::vector<Cell> cells;
  bool operator==(const Communicator&) const = default;
};

struct Snapshot {
  SnapshotHeader header;
  std::vector<Communicator> communicators;
  bool operator==(const Snapshot&) const = default;
};

// Bytes on the wire, fixed parts: the payload's start, a communicator's progress, a communicator
// without its name and cells, and a cell.
inline constexpr std::size_t kSnapshotFixedBytes = 4 + 8 + 4 + 8 + 8 + 1 + 8 * kCounterCount + 2;
inline constexpr std::size_t kProgressBytes = 8 + 8 + 1 + 8 + 8;
inline constexpr std::size_t kCommunicatorFixedBytes = 8 + 4 + 4 + 4 + 1 + 1 + kProgressBytes + 1;
inline constexpr std::size_t kCellBytes = 1 + 1 + 8 * 5 + 8 * 2;
// The largest legal payload (15,958,307 bytes; a real process sends a few KiB).
inline constexpr std::size_t kMaxPayloadBytes =
    4 + 8 + 4 + 8 + 8 + 1 + 8 * kMaxCounters + 2 +
    kMaxCommunicators *
        (kCommunicatorFixedBytes + kMaxNameBytes + kMaxCellsPerCommunicator * kCellBytes);
inline constexpr std::size_t kMaxFrameBytes = kHeaderBytes + kMaxPayloadBytes;

// Writes one snapshot frame into a buffer it does not own, without allocating: the plugin
// encodes from its live tables into memory it reserved at init. Call Begin, then for each
// communicator AddCommunicator and its cells, then Finish. A call that would break a bound or a
// progress rule, or overrun the buffer, returns false and fails the frame; a name longer than
// kMaxNameBytes is cut.
class SnapshotWriter {
 public:
  explicit SnapshotWriter(std::span<std::uint8_t> buffer) : buffer_(buffer) {}

  bool Begin(const SnapshotHeader& header);
  bool AddCommunicator(const CommunicatorHeader& comm);
  bool AddCell(const Cell& cell);
  // The frame's size in bytes, or nullopt once any call failed.
  std::optional<std::size_t> Finish();

 private:
  bool Put(std::uint64_t value, int bytes);
  void PatchCellCount();
  bool Fail();

  std::span<std::uint8_t> buffer_;
  std::size_t size_ = 0;
  bool failed_ = false;
  bool begun_ = false;
  std::size_t communicators_ = 0;
  std::size_t communicators_at_ = 0;  // offset of the communicator count
  std::size_t cells_ = 0;
  std::size_t cells_at_ = 0;  // offset of the current communicator's cell count, 0 when none
};

// The frame for `snapshot`, or nullopt when a count exceeds its bound.
std::optional<std::string> EncodeSnapshotFrame(const Snapshot& snapshot);

// A decoded value, or an error naming the offending field.
template <typename T>
struct Decoded {
  std::optional<T> value;
  std::string error;
  bool ok() const { return value.has_value(); }
};

// Decodes one payload (the bytes after the header). Never throws on bad bytes.
Decoded<Snapshot> DecodeSnapshot(std::string_view payload);

// Incremental frame decoder for one connection: feed it byte chunks as they arrive, take
// complete payloads with Next(). After the first error it stays failed and ignores input.
class SnapshotFrameDecoder {
 public:
  explicit SnapshotFrameDecoder(std::size_t max_payload = kMaxPayloadBytes)
      : max_payload_(max_payload) {}

  // Consumes all of data. Returns false once the decoder has failed.
  bool Feed(std::string_view data);
  // The oldest complete payload not yet taken (payloads before an error remain).
  std::optional<std::string> Next();

  bool failed() const { return !error_.empty(); }
  // Names the header field, e.g. "header.length: 20000000 exceeds 15958307"; empty until failed.
  const std::string& error() const { return error_; }

  // Bytes reserved for the payload in progress: a header announcing a huge payload reserves
  // nothing until the bytes arrive.
  std::size_t BufferCapacityForTest() const { return payload_.capacity(); }

 private:
  void ParseHeader();

  std::size_t max_payload_;
  std::array<char, kHeaderBytes> header_{};
  std::size_t header_filled_ = 0;
  bool in_payload_ = false;
  std::size_t payload_length_ = 0;
  std::string payload_;
  std::deque<std::string> ready_;
  std::string error_;
};

}  // namespace ringleader::profiler
