// The plugin's recording core: fixed tables of communicators and of operations in flight, which
// NCCL's threads update with atomics only (no lock, no allocation), and from which the sender
// thread writes snapshots.
//
// An operation (a collective or a p2p op) lives in an OpSlot from its start until it completes.
// Its handle is the slot's address; a kernel channel's handle is the address of the channel's
// state byte inside its operation's slot, so every handle NCCL hands back is checked by address
// range alone, and anything else is ignored. NCCL stops a collective when it is enqueued, before
// its kernel runs, so the slot is reference counted: one reference for the operation's own
// start-stop, one for "channels still to come" (dropped when all nChannels kernel channels have
// stopped, or after incomplete_after_ms past the stop), and one per channel running. The last
// release adds the operation to its communicator's (op, size bucket) cell and frees the slot.
//
// Each communicator also keeps its collective progress (snapshot_protocol.h, "Progress"): the
// thread that starts a collective counts it and notes what it is under a sequence lock (one
// writer per communicator, as NCCL allows one thread at a time to use a communicator; a second
// writer could mix two collectives' details, never the counts); the thread that completes it
// counts it on the communicator's other cache line; the sender reads both without a lock.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "sidecar/profiler/snapshot_protocol.h"

namespace ringleader::profiler {

inline constexpr std::size_t kOpSlots = 4096;
// How many snapshots may fail to deliver a finalized communicator's last record before its slot
// is freed anyway (a sidecar that is gone must not fill the table).
inline constexpr int kFinalSnapshotAttempts = 5;
inline constexpr std::size_t kChannelsPerOp = 256;  // channelId is one byte

// What the plugin reads from a coll or p2p descriptor, and when the collective started.
struct OpStart {
  const char* func = nullptr;
  const char* datatype = nullptr;
  std::size_t count = 0;
  std::uint8_t n_channels = 0;
  std::uint64_t unix_ns = 0;  // CLOCK_REALTIME_COARSE at the start; read for collectives only
};

// How many times the sender tries to read a communicator's progress between two writes before
// it sends the last consistent read instead (a starting thread descheduled mid-write).
inline constexpr int kProgressReadAttempts = 64;

class Recorder {
 public:
  // ---- Communicators (init and finalize; they take the caller's lock, not NCCL's hot path) ----

  // The context for a new communicator, or OverflowContext() when the table is full (counted).
  void* AddCommunicator(std::uint64_t comm_hash, const char* name, int nnodes, int nranks,
                        int rank);
  // The communicator's last snapshot is still to be sent; the sender frees it after that. False
  // when `context` is not a live communicator.
  bool FinalizeCommunicator(void* context);
  void* OverflowContext() { return &overflow_; }
  // The handle of every Group event. NCCL 2.27 starts a plan's collective and p2p events only
  // under a non-NULL Group handle; Stop and RecordChannelStop ignore this one without counting.
  void* GroupHandle() { return &group_; }

  // ---- Events (any NCCL thread; lock-free, allocation-free) ----

  // A collective or p2p op; nullptr when it is not recorded (counted).
  void* StartOp(void* context, const OpStart& start);
  // A kernel channel of the op whose handle is `parent`; nullptr when not recorded (counted).
  void* StartChannel(void* parent, std::uint8_t channel, std::uint64_t gpu_start);
  // The GPU's stop time of a kernel channel (0: none).
  void RecordChannelStop(void* handle, std::uint64_t gpu_stop);
  // Stops an op or a kernel channel; nullptr and stopped handles are ignored.
  void Stop(void* handle);
  // Counts an event the plugin does not record.
  void Count(Counter counter) {
    counters_[static_cast<std::size_t>(counter)].fetch_add(1, kRelaxed);
  }

  // ---- The sender thread ----

  // Milliseconds on the sender's clock; ops stamp their stop with it.
  void SetNow(std::uint64_t now_ms) { now_ms_.store(now_ms, kRelaxed); }
  // Gives up on the kernel channels of ops stopped more than incomplete_after_ms ago.
  void Sweep(std::uint64_t incomplete_after_ms);
  // Writes every live and finalized communicator; remembers the finalized ones written.
  std::optional<std::size_t> WriteSnapshot(const SnapshotHeader& header,
                                           std::span<std::uint8_t> buffer);
  // After a send: frees the finalized communicators the snapshot carried, once no op refers to
  // them, if it was delivered or they have been in kFinalSnapshotAttempts undelivered ones.
  void ReleaseWrittenFinalized(bool delivered);
  std::uint64_t counter(Counter counter) const {
    return counters_[static_cast<std::size_t>(counter)].load(kRelaxed);
  }

 private:
  static constexpr auto kRelaxed = std::memory_order_relaxed;

  // Timed and untimed calls are counted apart, so an op costs three atomic adds (two when
  // untimed) and the totals are sums a snapshot makes: it can never show more timed calls than
  // calls. A snapshot taken while an op completes may hold part of it; the next one holds all.
  struct CellSlot {
    std::atomic<std::uint16_t> key{0};  // 0: free; else 1 + op * 64 + bucket
    std::atomic<std::uint64_t> timed_calls{0};
    std::atomic<std::uint64_t> timed_bytes{0};
    std::atomic<std::uint64_t> gpu_ns{0};
    std::atomic<std::uint64_t> untimed_calls{0};
    std::atomic<std::uint64_t> untimed_bytes{0};
  };

  enum CommState : std::uint8_t { kCommFree = 0, kCommLive = 1, kCommFinalized = 2 };

  // Written by the thread that starts the communicator's collectives: a sequence lock (odd
  // while a start is being noted) over the count and the last one's details.
  struct alignas(64) StartedProgress {
    std::atomic<std::uint32_t> version{0};
    std::atomic<std::uint64_t> collectives{0};
    std::atomic<std::uint8_t> last_op{0};
    std::atomic<std::uint64_t> last_bytes{0};
    std::atomic<std::uint64_t> last_unix_ns{0};
  };

  struct CommSlot {
    std::atomic<std::uint8_t> state{kCommFree};
    bool written_finalized = false;  // sender thread only: in the last snapshot, finalized
    int final_attempts = 0;          // sender thread only: snapshots it was finalized in
    CollectiveProgress last_progress;  // sender thread only: the last consistent read
    StartedProgress started;
    // Set while free, before the state turns live. Every default is zero, so the tables sit in
    // .bss: they cost address space, not file size or memory until used.
    std::uint64_t comm_hash = 0;
    std::uint32_t rank = 0;
    std::uint32_t nranks = 0;
    std::uint32_t nnodes = 0;
    std::uint8_t name_bytes = 0;
    std::array<char, kMaxNameBytes> name{};
    // Written by whichever thread completes an op (often NCCL's proxy thread), on cache lines
    // apart from the ones the starting thread writes (started) or reads (nranks), so that the
    // two threads do not pass a line back and forth per collective.
    alignas(64) std::atomic<std::uint64_t> collectives_completed{0};
    std::array<CellSlot, kMaxCellsPerCommunicator> cells{};
  };

  enum ChannelState : std::uint8_t {
    kChannelIdle = 0,
    kChannelRunning = 1,         // started with a GPU start time
    kChannelRunningUntimed = 2,  // started without one, or its stop came without one
    kChannelStopped = 3,         // GPU start and stop both known
  };

  struct alignas(64) OpSlot {
    std::atomic<bool> in_use{false};
    std::atomic<bool> stopped{false};
    // The slot's generation (bumped by every claim) shifted left once, with bit 0 set while the
    // "channels still to come" reference is held: the sweeper drops that reference only for the
    // op it looked at, never for a later op in the same slot.
    std::atomic<std::uint32_t> awaiting{0};
    std::atomic<std::uint32_t> refs{0};
    std::atomic<std::uint32_t> channel_counts{0};  // stopped in bits 0-15, timed in 16-31
    std::atomic<std::uint64_t> first_start{0};      // 0: none yet
    std::atomic<std::uint64_t> last_stop{0};
    std::atomic<std::uint64_t> stopped_at_ms{0};
    std::atomic<CommSlot*> comm{nullptr};
    // Written by the starting thread before refs publish the slot.
    std::uint64_t bytes = 0;
    Op op = Op::kAllReduce;
    std::uint8_t bucket = 0;
    std::uint8_t n_channels = 0;
    std::array<std::atomic<std::uint8_t>, kChannelsPerOp> channels{};
  };

  CommSlot* AsComm(void* context);
  OpSlot* AsOp(void* handle);
  // The op slot and channel a channel handle points into, or nullptr.
  OpSlot* AsChannel(void* handle, std::atomic<std::uint8_t>** channel);
  OpSlot* ClaimOp();
  static bool Acquire(OpSlot* op);
  // Drops `count` references; the last completes the op.
  void Release(OpSlot* op, std::uint32_t count = 1);
  // Clears the "channels still to come" reference's bit if `seen` (a value of op->awaiting) is
  // current; the caller then owns that reference and must release it.
  static bool TakeAwaiting(OpSlot* op, std::uint32_t seen);
  void Complete(OpSlot* op);
  static void NoteCollectiveStart(CommSlot* comm, Op op, std::uint64_t bytes,
                                  std::uint64_t unix_ns);
  static CollectiveProgress ReadProgress(CommSlot* comm);
  void AddToCell(CommSlot* comm, const OpSlot& op, bool timed, std::uint64_t gpu_ns);
  static void ResetCommunicator(CommSlot* comm);

  std::array<CommSlot, kMaxCommunicators> comms_{};
  std::array<OpSlot, kOpSlots> ops_{};
  std::array<std::atomic<std::uint64_t>, kCounterCount> counters_{};
  // Own cache lines: every op start moves the cursor, every op stop reads the clock.
  alignas(64) std::atomic<std::uint64_t> next_op_{0};
  alignas(64) std::atomic<std::uint64_t> now_ms_{0};
  std::size_t next_comm_ = 0;  // under the caller's lock
  char overflow_ = 0;          // its address is the context of communicators not recorded
  char group_ = 0;             // its address is every Group event's handle
};

}  // namespace ringleader::profiler
