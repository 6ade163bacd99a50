// The profiler's snapshot protocol (snapshot_protocol.h): names, buckets, the writer, the
// decoders.
#include "sidecar/profiler/snapshot_protocol.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace ringleader::profiler {
namespace {

std::uint64_t LoadBigEndian(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  }
  return v;
}

// Bounds-checked reading of one payload; the first failure sticks and names its field. The
// field's path ("communicators[2].cells[5].calls") is built only when something fails: a
// snapshot of thousands of cells decodes without making a string per field.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : rest_(payload) {}

  // Where the following fields are: -1 for none.
  void At(long communicator, long cell) {
    communicator_ = communicator;
    cell_ = cell;
  }

  bool Unsigned(const char* field, int bytes, std::uint64_t* out) {
    if (!Need(field, static_cast<std::size_t>(bytes))) {
      return false;
    }
    *out = LoadBigEndian(rest_.data(), bytes);
    rest_.remove_prefix(static_cast<std::size_t>(bytes));
    return true;
  }

  // A count or length, refused above `bound` before anything is read or allocated for it.
  bool Count(const char* field, int bytes, std::size_t bound, std::size_t* out) {
    std::uint64_t v = 0;
    if (!Unsigned(field, bytes, &v)) {
      return false;
    }
    if (v > bound) {
      return Fail(field, std::to_string(v) + " exceeds " + std::to_string(bound));
    }
    *out = static_cast<std::size_t>(v);
    return true;
  }

  bool Double(const char* field, double* out) {
    std::uint64_t bits = 0;
    if (!Unsigned(field, 8, &bits)) {
      return false;
    }
    const auto value = std::bit_cast<double>(bits);
    if (!std::isfinite(value) || value < 0) {
      return Fail(field, "not a finite non-negative number");
    }
    *out = value;
    return true;
  }

  bool Bytes(const char* field, std::size_t length, std::string* out) {
    if (!Need(field, length)) {
      return false;
    }
    out->assign(rest_.substr(0, length));
    rest_.remove_prefix(length);
    return true;
  }

  // Fails naming `field` (nullptr: the current communicator or cell itself).
  bool Fail(const char* field, const std::string& why) {
    if (error_.empty()) {
      error_ = Path(field) + ": " + why;
    }
    return false;
  }

  bool AtEnd() {
    if (!rest_.empty()) {
      At(-1, -1);
      return Fail("snapshot", std::to_string(rest_.size()) + " bytes after the last field");
    }
    return true;
  }

  std::size_t remaining() const { return rest_.size(); }
  const std::string& error() const { return error_; }

 private:
  std::string Path(const char* field) const {
    std::string path;
    if (communicator_ >= 0) {
      path = "communicators[" + std::to_string(communicator_) + "]";
    }
    if (cell_ >= 0) {
      path += ".cells[" + std::to_string(cell_) + "]";
    }
    if (field != nullptr) {
      path += path.empty() ? field : std::string(".") + field;
    }
    return path;
  }

  bool Need(const char* field, std::size_t bytes) {
    if (rest_.size() < bytes) {
      return Fail(field, "needs " + std::to_string(bytes) + " bytes, " +
                             std::to_string(rest_.size()) + " left");
    }
    return true;
  }

  std::string_view rest_;
  long communicator_ = -1;
  long cell_ = -1;
  std::string error_;
};

bool ReadHeader(PayloadReader& in, SnapshotHeader* header) {
  std::uint64_t v = 0;
  if (!in.Unsigned("pid", 4, &v)) {
    return false;
  }
  header->pid = static_cast<std::uint32_t>(v);
  if (!in.Unsigned("process_start_ns", 8, &header->process_start_ns) ||
      !in.Unsigned("local_rank", 4, &v)) {
    return false;
  }
  header->local_rank = static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
  if (!in.Unsigned("sequence", 8, &header->sequence) ||
      !in.Unsigned("unix_time_ns", 8, &header->unix_time_ns)) {
    return false;
  }
  std::size_t counters = 0;
  if (!in.Count("counters", 1, kMaxCounters, &counters)) {
    return false;
  }
  for (std::size_t i = 0; i < counters; ++i) {
    if (!in.Unsigned("counters", 8, &v)) {
      return false;
    }
    if (i < kCounterCount) {
      header->counters[i] = v;
    }
  }
  return true;
}

bool ReadCell(PayloadReader& in, Cell* cell) {
  std::uint64_t v = 0;
  if (!in.Unsigned("op", 1, &v)) {
    return false;
  }
  if (v >= kOpCount) {
    return in.Fail("op", std::to_string(v) + " is not an operation");
  }
  cell->op = static_cast<Op>(v);
  if (!in.Unsigned("bucket", 1, &v)) {
    return false;
  }
  if (v > kMaxBucket) {
    return in.Fail("bucket", std::to_string(v) + " exceeds " + std::to_string(kMaxBucket));
  }
  cell->bucket = static_cast<std::uint8_t>(v);
  if (!in.Unsigned("calls", 8, &cell->calls) || !in.Unsigned("bytes", 8, &cell->bytes) ||
      !in.Unsigned("timed_calls", 8, &cell->timed_calls) ||
      !in.Unsigned("timed_bytes", 8, &cell->timed_bytes) ||
      !in.Unsigned("gpu_ns", 8, &cell->gpu_ns) || !in.Double("algbw_gbps", &cell->algbw_gbps) ||
      !in.Double("busbw_gbps", &cell->busbw_gbps)) {
    return false;
  }
  if (cell->timed_calls > cell->calls) {
    return in.Fail("timed_calls", std::to_string(cell->timed_calls) + " exceeds calls " +
                                      std::to_string(cell->calls));
  }
  if (cell->timed_bytes > cell->bytes) {
    return in.Fail("timed_bytes", std::to_string(cell->timed_bytes) + " exceeds bytes " +
                                      std::to_string(cell->bytes));
  }
  return true;
}

bool ReadProgress(PayloadReader& in, CollectiveProgress* progress) {
  std::uint64_t op = 0;
  if (!in.Unsigned("collectives_started", 8, &progress->collectives_started) ||
      !in.Unsigned("collectives_completed", 8, &progress->collectives_completed) ||
      !in.Unsigned("last_started_op", 1, &op) ||
      !in.Unsigned("last_started_bytes", 8, &progress->last_started_bytes) ||
      !in.Unsigned("last_started_unix_ns", 8, &progress->last_started_unix_ns)) {
    return false;
  }
  if (progress->collectives_completed > progress->collectives_started) {
    return in.Fail("collectives_completed",
                   std::to_string(progress->collectives_completed) +
                       " exceeds collectives_started " +
                       std::to_string(progress->collectives_started));
  }
  if (progress->collectives_started == 0) {
    const std::pair<const char*, std::uint64_t> last[] = {
        {"last_started_op", op},
        {"last_started_bytes", progress->last_started_bytes},
        {"last_started_unix_ns", progress->last_started_unix_ns}};
    for (const auto& [field, value] : last) {
      if (value != 0) {
        return in.Fail(field, std::to_string(value) + " with no collective started");
      }
    }
  }
  if (op >= kOpCount) {
    return in.Fail("last_started_op", std::to_string(op) + " is not an operation");
  }
  progress->last_started_op = static_cast<Op>(op);
  if (!IsCollective(progress->last_started_op)) {
    return in.Fail("last_started_op",
                   std::string(OpName(progress->last_started_op)) + " is not a collective");
  }
  return true;
}

bool ReadCommunicator(PayloadReader& in, long index, Communicator* comm) {
  in.At(index, -1);
  CommunicatorInfo& info = comm->info;
  std::uint64_t v = 0;
  if (!in.Unsigned("comm_hash", 8, &info.comm_hash) || !in.Unsigned("rank", 4, &v)) {
    return false;
  }
  info.rank = static_cast<std::uint32_t>(v);
  if (!in.Unsigned("nranks", 4, &v)) {
    return false;
  }
  info.nranks = static_cast<std::uint32_t>(v);
  if (info.nranks == 0) {
    return in.Fail("nranks", "must be at least 1");
  }
  if (info.rank >= info.nranks) {
    return in.Fail("rank", std::to_string(info.rank) + " is not below nranks " +
                               std::to_string(info.nranks));
  }
  if (!in.Unsigned("nnodes", 4, &v)) {
    return false;
  }
  info.nnodes = static_cast<std::uint32_t>(v);
  if (!in.Unsigned("flags", 1, &v)) {
    return false;
  }
  if ((v & ~std::uint64_t{1}) != 0) {
    return in.Fail("flags", "unknown bits " + std::to_string(v & ~std::uint64_t{1}));
  }
  info.finalized = (v & 1) != 0;
  std::size_t length = 0;
  if (!in.Count("name", 1, kMaxNameBytes, &length) || !in.Bytes("name", length, &info.name) ||
      !ReadProgress(in, &info.progress)) {
    return false;
  }
  std::size_t cells = 0;
  if (!in.Count("cells", 1, kMaxCellsPerCommunicator, &cells)) {
    return false;
  }
  if (cells * kCellBytes > in.remaining()) {
    return in.Fail("cells", std::to_string(cells) + " cells need " +
                                std::to_string(cells * kCellBytes) + " bytes, " +
                                std::to_string(in.remaining()) + " left");
  }
  comm->cells.resize(cells);
  std::array<bool, kOpCount * (kMaxBucket + 1)> seen{};
  for (std::size_t i = 0; i < cells; ++i) {
    in.At(index, static_cast<long>(i));
    Cell& cell = comm->cells[i];
    if (!ReadCell(in, &cell)) {
      return false;
    }
    const std::size_t key = static_cast<std::size_t>(cell.op) * (kMaxBucket + 1) + cell.bucket;
    if (seen[key]) {
      return in.Fail(nullptr, "a second cell for " + std::string(OpName(cell.op)) + " bucket " +
                                  std::to_string(cell.bucket));
    }
    seen[key] = true;
  }
  return true;
}

// What the decoder accepts of a progress record (ReadProgress), so the writer refuses the rest.
bool ValidProgress(const CollectiveProgress& progress) {
  if (progress.collectives_completed > progress.collectives_started) {
    return false;
  }
  if (progress.collectives_started == 0) {
    return progress.last_started_op == Op{} && progress.last_started_bytes == 0 &&
           progress.last_started_unix_ns == 0;
  }
  return static_cast<std::size_t>(progress.last_started_op) < kOpCount &&
         IsCollective(progress.last_started_op);
}

}  // namespace

bool IsCollective(Op op) { return op != Op::kSend && op != Op::kRecv; }

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kAllReduce: return "all_reduce";
    case Op::kAllGather: return "all_gather";
    case Op::kReduceScatter: return "reduce_scatter";
    case Op::kBroadcast: return "broadcast";
    case Op::kReduce: return "reduce";
    case Op::kAllToAll: return "alltoall";
    case Op::kGather: return "gather";
    case Op::kScatter: return "scatter";
    case Op::kSend: return "send";
    case Op::kRecv: return "recv";
  }
  return "unknown";
}

std::string_view CounterName(Counter counter) {
  switch (counter) {
    case Counter::kCommunicatorsDropped: return "communicators_dropped";
    case Counter::kOpsDropped: return "ops_dropped";
    case Counter::kOpsUnrecognized: return "ops_unrecognized";
    case Counter::kOpsIncomplete: return "ops_incomplete";
    case Counter::kChannelsDropped: return "channels_dropped";
    case Counter::kCellsDropped: return "cells_dropped";
    case Counter::kEventsIgnored: return "events_ignored";
    case Counter::kSnapshotsDropped: return "snapshots_dropped";
  }
  return "unknown";
}

std::uint8_t SizeBucket(std::uint64_t bytes) {
  if (bytes <= 1) {
    return 0;
  }
  const int width = std::bit_width(bytes - 1);
  return static_cast<std::uint8_t>(width > kMaxBucket ? kMaxBucket : width);
}

std::uint64_t BucketUpperBytes(std::uint8_t bucket) {
  return std::uint64_t{1} << (bucket > kMaxBucket ? kMaxBucket : bucket);
}

// ---- Writer ----

bool SnapshotWriter::Fail() {
  failed_ = true;
  return false;
}

bool SnapshotWriter::Put(std::uint64_t value, int bytes) {
  if (failed_ || buffer_.size() - size_ < static_cast<std::size_t>(bytes)) {
    return Fail();
  }
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
    buffer_[size_++] = static_cast<std::uint8_t>((value >> shift) & 0xFF);
  }
  return true;
}

bool SnapshotWriter::Begin(const SnapshotHeader& header) {
  if (begun_ || buffer_.size() < kHeaderBytes) {
    return Fail();
  }
  begun_ = true;
  size_ = kHeaderBytes;  // Finish writes the header once the length is known
  Put(header.pid, 4);
  Put(header.process_start_ns, 8);
  Put(static_cast<std::uint32_t>(header.local_rank), 4);
  Put(header.sequence, 8);
  Put(header.unix_time_ns, 8);
  Put(kCounterCount, 1);
  for (std::uint64_t counter : header.counters) {
    Put(counter, 8);
  }
  communicators_at_ = size_;
  return Put(0, 2);
}

void SnapshotWriter::PatchCellCount() {
  if (cells_at_ != 0 && !failed_) {
    buffer_[cells_at_] = static_cast<std::uint8_t>(cells_);
  }
}

bool SnapshotWriter::AddCommunicator(const CommunicatorHeader& comm) {
  if (!begun_ || communicators_ == kMaxCommunicators || !ValidProgress(comm.progress)) {
    return Fail();
  }
  PatchCellCount();
  ++communicators_;
  const std::size_t name_bytes = std::min(comm.name.size(), kMaxNameBytes);
  Put(comm.comm_hash, 8);
  Put(comm.rank, 4);
  Put(comm.nranks, 4);
  Put(comm.nnodes, 4);
  Put(comm.finalized ? 1 : 0, 1);
  Put(name_bytes, 1);
  if (failed_ || buffer_.size() - size_ < name_bytes) {
    return Fail();
  }
  std::memcpy(buffer_.data() + size_, comm.name.data(), name_bytes);
  size_ += name_bytes;
  const CollectiveProgress& progress = comm.progress;
  Put(progress.collectives_started, 8);
  Put(progress.collectives_completed, 8);
  Put(static_cast<std::uint8_t>(progress.last_started_op), 1);
  Put(progress.last_started_bytes, 8);
  Put(progress.last_started_unix_ns, 8);
  if (failed_) {
    return false;
  }
  cells_at_ = size_;
  cells_ = 0;
  return Put(0, 1);
}

bool SnapshotWriter::AddCell(const Cell& cell) {
  if (cells_at_ == 0 || cells_ == kMaxCellsPerCommunicator) {
    return Fail();
  }
  ++cells_;
  Put(static_cast<std::uint8_t>(cell.op), 1);
  Put(cell.bucket, 1);
  Put(cell.calls, 8);
  Put(cell.bytes, 8);
  Put(cell.timed_calls, 8);
  Put(cell.timed_bytes, 8);
  Put(cell.gpu_ns, 8);
  Put(std::bit_cast<std::uint64_t>(cell.algbw_gbps), 8);
  return Put(std::bit_cast<std::uint64_t>(cell.busbw_gbps), 8);
}

std::optional<std::size_t> SnapshotWriter::Finish() {
  if (!begun_ || failed_) {
    return std::nullopt;
  }
  PatchCellCount();
  buffer_[communicators_at_] = static_cast<std::uint8_t>(communicators_ >> 8);
  buffer_[communicators_at_ + 1] = static_cast<std::uint8_t>(communicators_ & 0xFF);
  const std::size_t payload = size_ - kHeaderBytes;
  const std::size_t end = size_;
  size_ = 0;
  Put(kMagic, 4);
  Put(kVersion, 2);
  Put(kSnapshotType, 2);
  Put(payload, 4);
  size_ = end;
  failed_ = true;  // a writer makes one frame
  return end;
}

std::optional<std::string> EncodeSnapshotFrame(const Snapshot& snapshot) {
  std::size_t bytes = kHeaderBytes + kSnapshotFixedBytes;
  for (const Communicator& comm : snapshot.communicators) {
    bytes += kCommunicatorFixedBytes + std::min(comm.info.name.size(), kMaxNameBytes) +
             comm.cells.size() * kCellBytes;
  }
  std::string frame(bytes, '\0');
  SnapshotWriter writer(
      std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(frame.data()), frame.size()));
  writer.Begin(snapshot.header);
  for (const Communicator& comm : snapshot.communicators) {
    const CommunicatorInfo& info = comm.info;
    writer.AddCommunicator({info.comm_hash, info.rank, info.nranks, info.nnodes, info.finalized,
                            info.name, info.progress});
    for (const Cell& cell : comm.cells) {
      writer.AddCell(cell);
    }
  }
  const auto size = writer.Finish();
  if (!size) {
    return std::nullopt;
  }
  frame.resize(*size);
  return frame;
}

// ---- Decoders ----

Decoded<Snapshot> DecodeSnapshot(std::string_view payload) {
  PayloadReader in(payload);
  Snapshot snapshot;
  std::size_t communicators = 0;
  bool ok = ReadHeader(in, &snapshot.header) &&
            in.Count("communicators", 2, kMaxCommunicators, &communicators);
  if (ok && communicators * kCommunicatorFixedBytes > in.remaining()) {
    ok = in.Fail("communicators", std::to_string(communicators) + " need at least " +
                                      std::to_string(communicators * kCommunicatorFixedBytes) +
                                      " bytes, " + std::to_string(in.remaining()) + " left");
  }
  if (ok) {
    snapshot.communicators.resize(communicators);
    for (std::size_t i = 0; ok && i < communicators; ++i) {
      ok = ReadCommunicator(in, static_cast<long>(i), &snapshot.communicators[i]);
    }
  }
  if (ok && in.AtEnd()) {
    return {std::move(snapshot), {}};
  }
  return {std::nullopt, in.error()};
}

bool SnapshotFrameDecoder::Feed(std::string_view data) {
  while (!data.empty() && !failed()) {
    if (!in_payload_) {
      const std::size_t take = std::min(kHeaderBytes - header_filled_, data.size());
      std::memcpy(header_.data() + header_filled_, data.data(), take);
      header_filled_ += take;
      data.remove_prefix(take);
      if (header_filled_ == kHeaderBytes) {
        ParseHeader();
      }
      continue;
    }
    const std::size_t take = std::min(payload_length_ - payload_.size(), data.size());
    payload_.append(data.substr(0, take));
    data.remove_prefix(take);
    if (payload_.size() == payload_length_) {
      ready_.push_back(std::exchange(payload_, {}));
      in_payload_ = false;
    }
  }
  return !failed();
}

void SnapshotFrameDecoder::ParseHeader() {
  header_filled_ = 0;
  const auto magic = LoadBigEndian(header_.data(), 4);
  const auto version = LoadBigEndian(header_.data() + 4, 2);
  const auto type = LoadBigEndian(header_.data() + 6, 2);
  const auto length = LoadBigEndian(header_.data() + 8, 4);
  if (magic != kMagic) {
    error_ = "header.magic: " + std::to_string(magic) + " is not " + std::to_string(kMagic);
  } else if (version != kVersion) {
    error_ = "header.version: " + std::to_string(version) + " is not supported";
  } else if (type != kSnapshotType) {
    error_ = "header.type: " + std::to_string(type) + " is not a snapshot";
  } else if (length > max_payload_) {
    error_ = "header.length: " + std::to_string(length) + " exceeds " +
             std::to_string(max_payload_);
  } else if (length == 0) {
    ready_.emplace_back();
  } else {
    in_payload_ = true;
    payload_length_ = static_cast<std::size_t>(length);
  }
}

std::optional<std::string> SnapshotFrameDecoder::Next() {
  if (ready_.empty()) {
    return std::nullopt;
  }
  std::string payload = std::move(ready_.front());
  ready_.pop_front();
  return payload;
}

}  // namespace ringleader::profiler
