// The plugin's lock-free recording core (recorder.h).
#include "sidecar/profiler/recorder.h"

#include <sched.h>

#include <algorithm>
#include <bitset>
#include <cstring>

#include "sidecar/profiler/op_names.h"

namespace ringleader::profiler {
namespace {

constexpr auto kAcquire = std::memory_order_acquire;
constexpr auto kRelease = std::memory_order_release;
constexpr auto kAcqRel = std::memory_order_acq_rel;
constexpr auto kRelaxedOrder = std::memory_order_relaxed;

// Ops that try this many slots without finding a free one are dropped.
constexpr int kClaimProbes = 64;
constexpr std::uint32_t kTimedChannel = 1U << 16;

std::uintptr_t Address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Lowers `target` to `value`; 0 in `target` means "none yet".
void StoreMin(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t current = target.load(kRelaxedOrder);
  while ((current == 0 || value < current) &&
         !target.compare_exchange_weak(current, value, kRelaxedOrder)) {
  }
}

void StoreMax(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t current = target.load(kRelaxedOrder);
  while (value > current && !target.compare_exchange_weak(current, value, kRelaxedOrder)) {
  }
}

std::uint16_t CellKey(Op op, std::uint8_t bucket) {
  return static_cast<std::uint16_t>(1 + static_cast<unsigned>(op) * (kMaxBucket + 1) + bucket);
}

}  // namespace

// ---- Communicators ----

void* Recorder::AddCommunicator(std::uint64_t comm_hash, const char* name, int nnodes, int nranks,
                                int rank) {
  for (std::size_t probe = 0; probe < kMaxCommunicators; ++probe) {
    const std::size_t index = (next_comm_ + probe) % kMaxCommunicators;
    CommSlot& comm = comms_[index];
    if (comm.state.load(kAcquire) != kCommFree) {
      continue;
    }
    next_comm_ = index + 1;
    comm.comm_hash = comm_hash;
    comm.nranks = static_cast<std::uint32_t>(std::max(nranks, 1));
    comm.rank = static_cast<std::uint32_t>(std::clamp(rank, 0, std::max(nranks, 1) - 1));
    comm.nnodes = static_cast<std::uint32_t>(std::max(nnodes, 0));
    comm.name_bytes = 0;
    if (name != nullptr) {
      comm.name_bytes = static_cast<std::uint8_t>(strnlen(name, kMaxNameBytes));
      std::memcpy(comm.name.data(), name, comm.name_bytes);
    }
    comm.state.store(kCommLive, kRelease);
    return &comm;
  }
  Count(Counter::kCommunicatorsDropped);
  return OverflowContext();
}

bool Recorder::FinalizeCommunicator(void* context) {
  CommSlot* comm = AsComm(context);
  std::uint8_t live = kCommLive;
  return comm != nullptr && comm->state.compare_exchange_strong(live, kCommFinalized, kAcqRel);
}

Recorder::CommSlot* Recorder::AsComm(void* context) {
  const std::uintptr_t base = Address(comms_.data());
  const std::uintptr_t at = Address(context);
  if (at < base || at >= base + sizeof(comms_) || (at - base) % sizeof(CommSlot) != 0) {
    return nullptr;
  }
  CommSlot* comm = &comms_[(at - base) / sizeof(CommSlot)];
  return comm->state.load(kAcquire) == kCommLive ? comm : nullptr;
}

void Recorder::ResetCommunicator(CommSlot* comm) {
  for (CellSlot& cell : comm->cells) {
    cell.timed_calls.store(0, kRelaxedOrder);
    cell.timed_bytes.store(0, kRelaxedOrder);
    cell.gpu_ns.store(0, kRelaxedOrder);
    cell.untimed_calls.store(0, kRelaxedOrder);
    cell.untimed_bytes.store(0, kRelaxedOrder);
    cell.key.store(0, kRelaxedOrder);
  }
  comm->started.version.store(0, kRelaxedOrder);
  comm->started.collectives.store(0, kRelaxedOrder);
  comm->started.last_op.store(0, kRelaxedOrder);
  comm->started.last_bytes.store(0, kRelaxedOrder);
  comm->started.last_unix_ns.store(0, kRelaxedOrder);
  comm->collectives_completed.store(0, kRelaxedOrder);
  comm->last_progress = {};
  comm->written_finalized = false;
  comm->final_attempts = 0;
  comm->state.store(kCommFree, kRelease);
}

// ---- Operations ----

Recorder::OpSlot* Recorder::AsOp(void* handle) {
  const std::uintptr_t base = Address(ops_.data());
  const std::uintptr_t at = Address(handle);
  if (at < base || at >= base + sizeof(ops_) || (at - base) % sizeof(OpSlot) != 0) {
    return nullptr;
  }
  return &ops_[(at - base) / sizeof(OpSlot)];
}

Recorder::OpSlot* Recorder::AsChannel(void* handle, std::atomic<std::uint8_t>** channel) {
  const std::uintptr_t base = Address(ops_.data());
  const std::uintptr_t at = Address(handle);
  if (at < base || at >= base + sizeof(ops_)) {
    return nullptr;
  }
  OpSlot* op = &ops_[(at - base) / sizeof(OpSlot)];
  const std::uintptr_t first = Address(op->channels.data());
  if (at < first || at >= first + sizeof(op->channels)) {
    return nullptr;
  }
  *channel = &op->channels[(at - first) / sizeof(op->channels[0])];
  return op;
}

Recorder::OpSlot* Recorder::ClaimOp() {
  // The cursor is a hint, not a ticket: threads that read the same value race for that slot's
  // in_use and the loser probes on. A load and a store cost less than an atomic add.
  std::uint64_t next = next_op_.load(kRelaxedOrder);
  for (int probe = 0; probe < kClaimProbes; ++probe, ++next) {
    OpSlot& op = ops_[next % kOpSlots];
    bool free = false;
    if (!op.in_use.load(kRelaxedOrder) && op.in_use.compare_exchange_strong(free, true, kAcquire)) {
      next_op_.store(next + 1, kRelaxedOrder);
      return &op;
    }
  }
  next_op_.store(next, kRelaxedOrder);
  return nullptr;
}

void* Recorder::StartOp(void* context, const OpStart& start) {
  CommSlot* comm = AsComm(context);
  if (comm == nullptr) {
    Count(context == OverflowContext() ? Counter::kOpsDropped : Counter::kEventsIgnored);
    return nullptr;
  }
  const std::optional<Op> op = ParseOp(start.func);
  const std::size_t elem_bytes = DatatypeBytes(start.datatype);
  if (!op || elem_bytes == 0) {
    Count(Counter::kOpsUnrecognized);
    return nullptr;
  }
  const std::uint64_t bytes =
      ReportedBytes(*op, start.count, elem_bytes, static_cast<int>(comm->nranks));
  if (IsCollective(*op)) {
    NoteCollectiveStart(comm, *op, bytes, start.unix_ns);  // counted whether or not it is timed
  }
  OpSlot* slot = ClaimOp();
  if (slot == nullptr) {
    Count(Counter::kOpsDropped);
    return nullptr;
  }
  slot->op = *op;
  slot->bytes = bytes;
  slot->bucket = SizeBucket(slot->bytes);
  slot->n_channels = start.n_channels;
  slot->comm.store(comm, kRelaxedOrder);
  const bool awaiting = start.n_channels > 0;
  const std::uint32_t generation = (slot->awaiting.load(kRelaxedOrder) >> 1) + 1;
  slot->awaiting.store((generation << 1) | (awaiting ? 1 : 0), kRelaxedOrder);
  slot->refs.store(awaiting ? 2 : 1, kRelease);
  return slot;
}

bool Recorder::Acquire(OpSlot* op) {
  std::uint32_t refs = op->refs.load(kRelaxedOrder);
  while (refs != 0) {
    if (op->refs.compare_exchange_weak(refs, refs + 1, kAcquire, kRelaxedOrder)) {
      return true;
    }
  }
  return false;
}

bool Recorder::TakeAwaiting(OpSlot* op, std::uint32_t seen) {
  return (seen & 1) != 0 && op->awaiting.compare_exchange_strong(seen, seen & ~1U, kAcqRel);
}

void Recorder::Release(OpSlot* op, std::uint32_t count) {
  if (op->refs.fetch_sub(count, kAcqRel) == count) {
    Complete(op);
  }
}

void* Recorder::StartChannel(void* parent, std::uint8_t channel, std::uint64_t gpu_start) {
  OpSlot* op = AsOp(parent);
  if (op == nullptr || !Acquire(op)) {
    Count(Counter::kChannelsDropped);
    return nullptr;
  }
  std::uint8_t idle = kChannelIdle;
  if (!op->channels[channel].compare_exchange_strong(
          idle, gpu_start != 0 ? kChannelRunning : kChannelRunningUntimed, kAcqRel)) {
    Release(op);
    Count(Counter::kChannelsDropped);
    return nullptr;
  }
  if (gpu_start != 0) {
    StoreMin(op->first_start, gpu_start);
  }
  return &op->channels[channel];
}

void Recorder::RecordChannelStop(void* handle, std::uint64_t gpu_stop) {
  std::atomic<std::uint8_t>* channel = nullptr;
  OpSlot* op = AsChannel(handle, &channel);
  if (op == nullptr) {
    if (handle != nullptr && handle != GroupHandle()) {
      Count(Counter::kEventsIgnored);
    }
    return;
  }
  std::uint8_t running = kChannelRunning;
  if (gpu_stop == 0) {
    channel->compare_exchange_strong(running, kChannelRunningUntimed, kAcqRel);
    return;
  }
  // The stop time first: the state's release then publishes it, whichever thread stops the
  // channel and completes the op.
  if (channel->load(kAcquire) == kChannelRunning) {
    StoreMax(op->last_stop, gpu_stop);
    channel->compare_exchange_strong(running, kChannelStopped, kAcqRel);
  }
}

void Recorder::Stop(void* handle) {
  if (OpSlot* op = AsOp(handle)) {
    // NCCL stops an op once, on one thread; a second stop is ignored, not guarded atomically.
    if (op->stopped.load(kRelaxedOrder) || op->refs.load(kRelaxedOrder) == 0) {
      return;  // stopped twice, or never started
    }
    op->stopped_at_ms.store(now_ms_.load(kRelaxedOrder), kRelaxedOrder);
    op->stopped.store(true, kRelease);  // publishes stopped_at_ms to the sweeper
    Release(op);
    return;
  }
  std::atomic<std::uint8_t>* channel = nullptr;
  OpSlot* op = AsChannel(handle, &channel);
  if (op == nullptr) {
    if (handle != nullptr && handle != GroupHandle()) {
      Count(Counter::kEventsIgnored);
    }
    return;
  }
  const std::uint8_t state = channel->exchange(kChannelIdle, kAcqRel);
  if (state == kChannelIdle) {
    return;  // stopped twice, or never started
  }
  const std::uint32_t delta = 1 + (state == kChannelStopped ? kTimedChannel : 0);
  const std::uint32_t counts = op->channel_counts.fetch_add(delta, kAcqRel) + delta;
  // The channel's own reference, and with the last channel the "still to come" one, in one go.
  const bool last = (counts & 0xFFFF) == op->n_channels &&
                    TakeAwaiting(op, op->awaiting.load(kAcquire));
  Release(op, last ? 2 : 1);
}

void Recorder::Complete(OpSlot* op) {
  CommSlot* comm = op->comm.load(kRelaxedOrder);
  const std::uint32_t counts = op->channel_counts.load(kRelaxedOrder);
  const std::uint32_t stopped = counts & 0xFFFF;
  const std::uint32_t timed = counts >> 16;
  const std::uint64_t first = op->first_start.load(kRelaxedOrder);
  const std::uint64_t last = op->last_stop.load(kRelaxedOrder);
  const bool timed_op = op->n_channels > 0 && stopped >= op->n_channels && timed == stopped &&
                        first != 0 && last > first;
  AddToCell(comm, *op, timed_op, timed_op ? last - first : 0);
  // Completed: every announced kernel channel stopped (or none was announced). An op the sweeper
  // gave up on never counts; a channel still running keeps the op from completing at all.
  if (IsCollective(op->op) && stopped >= op->n_channels) {
    comm->collectives_completed.fetch_add(1, kRelaxedOrder);
  }

  op->channel_counts.store(0, kRelaxedOrder);
  op->first_start.store(0, kRelaxedOrder);
  op->last_stop.store(0, kRelaxedOrder);
  op->stopped_at_ms.store(0, kRelaxedOrder);
  op->stopped.store(false, kRelaxedOrder);
  op->comm.store(nullptr, kRelaxedOrder);
  op->in_use.store(false, kRelease);
}

void Recorder::AddToCell(CommSlot* comm, const OpSlot& op, bool timed, std::uint64_t gpu_ns) {
  const std::uint16_t key = CellKey(op.op, op.bucket);
  const std::size_t start =
      (static_cast<std::size_t>(op.op) * 7 + op.bucket) % kMaxCellsPerCommunicator;
  CellSlot* cell = nullptr;
  for (std::size_t probe = 0; probe < kMaxCellsPerCommunicator && cell == nullptr; ++probe) {
    CellSlot& candidate = comm->cells[(start + probe) % kMaxCellsPerCommunicator];
    std::uint16_t current = candidate.key.load(kAcquire);
    if (current == 0 && candidate.key.compare_exchange_strong(current, key, kAcqRel)) {
      current = key;
    }
    if (current == key) {
      cell = &candidate;
    }
  }
  if (cell == nullptr) {
    Count(Counter::kCellsDropped);
    return;
  }
  if (timed) {
    cell->timed_calls.fetch_add(1, kRelaxedOrder);
    cell->timed_bytes.fetch_add(op.bytes, kRelaxedOrder);
    cell->gpu_ns.fetch_add(gpu_ns, kRelaxedOrder);
  } else {
    cell->untimed_calls.fetch_add(1, kRelaxedOrder);
    cell->untimed_bytes.fetch_add(op.bytes, kRelaxedOrder);
  }
}

// ---- Collective progress ----

void Recorder::NoteCollectiveStart(CommSlot* comm, Op op, std::uint64_t bytes,
                                   std::uint64_t unix_ns) {
  StartedProgress& started = comm->started;
  // A sequence lock's write (Boehm, "Can seqlocks get along with programming language memory
  // models?"): odd version, release fence, the fields, the next even version with release. The
  // version is read again at the end, so that two writers at once (which NCCL does not allow)
  // still leave it even, and the count is an atomic add, so that it stays exact.
  started.version.store(started.version.load(kRelaxedOrder) | 1, kRelaxedOrder);
  std::atomic_thread_fence(kRelease);
  started.collectives.fetch_add(1, kRelaxedOrder);
  started.last_op.store(static_cast<std::uint8_t>(op), kRelaxedOrder);
  started.last_bytes.store(bytes, kRelaxedOrder);
  started.last_unix_ns.store(unix_ns, kRelaxedOrder);
  started.version.store((started.version.load(kRelaxedOrder) | 1) + 1, kRelease);
}

CollectiveProgress Recorder::ReadProgress(CommSlot* comm) {
  // Completed first: a collective completes after it starts, so this never exceeds the count of
  // started ones read after it.
  const std::uint64_t completed = comm->collectives_completed.load(kAcquire);
  const StartedProgress& started = comm->started;
  for (int attempt = 0; attempt < kProgressReadAttempts; ++attempt) {
    const std::uint32_t before = started.version.load(kAcquire);
    CollectiveProgress read;
    read.collectives_started = started.collectives.load(kRelaxedOrder);
    read.last_started_op = static_cast<Op>(started.last_op.load(kRelaxedOrder));
    read.last_started_bytes = started.last_bytes.load(kRelaxedOrder);
    read.last_started_unix_ns = started.last_unix_ns.load(kRelaxedOrder);
    std::atomic_thread_fence(kAcquire);
    if ((before & 1) == 0 && started.version.load(kRelaxedOrder) == before) {
      comm->last_progress = read;
      break;
    }
    sched_yield();  // the writer is between its two version stores
  }
  CollectiveProgress progress = comm->last_progress;
  progress.collectives_completed = std::min(completed, progress.collectives_started);
  return progress;
}

// ---- The sender thread ----

void Recorder::Sweep(std::uint64_t incomplete_after_ms) {
  const std::uint64_t now = now_ms_.load(kRelaxedOrder);
  for (OpSlot& op : ops_) {
    const std::uint32_t awaiting = op.awaiting.load(kAcquire);
    if ((awaiting & 1) == 0 || !op.in_use.load(kAcquire) || !op.stopped.load(kAcquire)) {
      continue;
    }
    const std::uint64_t stopped_at = op.stopped_at_ms.load(kRelaxedOrder);
    if (now >= stopped_at + incomplete_after_ms && TakeAwaiting(&op, awaiting)) {
      Count(Counter::kOpsIncomplete);
      Release(&op);
    }
  }
}

std::optional<std::size_t> Recorder::WriteSnapshot(const SnapshotHeader& header,
                                                   std::span<std::uint8_t> buffer) {
  SnapshotHeader with_counters = header;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    with_counters.counters[i] = counters_[i].load(kRelaxedOrder);
  }
  SnapshotWriter writer(buffer);
  writer.Begin(with_counters);
  for (CommSlot& comm : comms_) {
    const std::uint8_t state = comm.state.load(kAcquire);
    if (state == kCommFree) {
      continue;
    }
    comm.written_finalized = state == kCommFinalized;
    writer.AddCommunicator({comm.comm_hash, comm.rank, comm.nranks, comm.nnodes,
                            comm.written_finalized,
                            std::string_view(comm.name.data(), comm.name_bytes),
                            ReadProgress(&comm)});
    for (CellSlot& slot : comm.cells) {
      const std::uint16_t key = slot.key.load(kAcquire);
      if (key == 0) {
        continue;
      }
      Cell cell;
      cell.op = static_cast<Op>((key - 1) / (kMaxBucket + 1));
      cell.bucket = static_cast<std::uint8_t>((key - 1) % (kMaxBucket + 1));
      cell.timed_calls = slot.timed_calls.load(kRelaxedOrder);
      cell.timed_bytes = slot.timed_bytes.load(kRelaxedOrder);
      cell.gpu_ns = slot.gpu_ns.load(kRelaxedOrder);
      cell.calls = cell.timed_calls + slot.untimed_calls.load(kRelaxedOrder);
      cell.bytes = cell.timed_bytes + slot.untimed_bytes.load(kRelaxedOrder);
      const auto bandwidth =
          CellBandwidth(cell.op, cell.timed_bytes, cell.gpu_ns, static_cast<int>(comm.nranks));
      cell.algbw_gbps = bandwidth.algbw_gbps;
      cell.busbw_gbps = bandwidth.busbw_gbps;
      writer.AddCell(cell);
    }
  }
  return writer.Finish();
}

void Recorder::ReleaseWrittenFinalized(bool delivered) {
  std::bitset<kMaxCommunicators> referenced;
  for (OpSlot& op : ops_) {
    if (!op.in_use.load(kAcquire)) {
      continue;
    }
    const std::uintptr_t at = Address(op.comm.load(kRelaxedOrder));
    const std::uintptr_t base = Address(comms_.data());
    if (at >= base && at < base + sizeof(comms_)) {
      referenced[(at - base) / sizeof(CommSlot)] = true;
    }
  }
  for (std::size_t i = 0; i < kMaxCommunicators; ++i) {
    CommSlot& comm = comms_[i];
    if (!comm.written_finalized) {
      continue;
    }
    ++comm.final_attempts;
    if ((delivered || comm.final_attempts >= kFinalSnapshotAttempts) && !referenced[i]) {
      ResetCommunicator(&comm);
    }
  }
}

}  // namespace ringleader::profiler
