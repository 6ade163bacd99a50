// Per-process deltas of the plugin's cumulative snapshots, as bounded Prometheus series.
#include "sidecar/service/training_collectives.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "sidecar/collectives/bus_bandwidth.h"
#include "sidecar/profiler/op_names.h"
#include "sidecar/service/sidecar_metrics.h"

namespace ringleader::sidecar {
namespace {

std::string CounterLabel(std::size_t index) {
  return std::string(profiler::CounterName(static_cast<profiler::Counter>(index)));
}

// A process table entry whose connection is open.
constexpr auto kConnected = [](const auto& entry) { return entry.second.connection.has_value(); };

// The `size` label stops at 16 GiB (SizeBucket), bucket 34: larger buckets share its series.
constexpr std::uint8_t kTopLabelBucket =
    static_cast<std::uint8_t>(std::countr_zero(kMaxSizeBucketBytes));
constexpr std::int32_t kMaxLocalRankLabel = 63;

constexpr std::array<FrameRejection, kFrameRejectionCount> kRejections = {
    FrameRejection::kBadHeader,          FrameRejection::kTooLarge, FrameRejection::kBadPayload,
    FrameRejection::kTruncated,          FrameRejection::kTooManyConnections,
    FrameRejection::kStale,              FrameRejection::kTableFull};

// What one cell moved since `before` (nullptr: since the communicator's init). A cell that went
// backwards belongs to a communicator that started again under the same key: it counts whole.
profiler::Cell Difference(const profiler::Cell& now, const profiler::Cell* before) {
  if (before == nullptr || now.calls < before->calls || now.bytes < before->bytes ||
      now.timed_calls < before->timed_calls || now.timed_bytes < before->timed_bytes ||
      now.gpu_ns < before->gpu_ns) {
    return now;
  }
  profiler::Cell delta = now;
  delta.calls -= before->calls;
  delta.bytes -= before->bytes;
  delta.timed_calls -= before->timed_calls;
  delta.timed_bytes -= before->timed_bytes;
  delta.gpu_ns -= before->gpu_ns;
  return delta;
}

int RankCount(std::uint32_t nranks) {
  return static_cast<int>(std::clamp<std::uint32_t>(
      nranks, 1, static_cast<std::uint32_t>(std::numeric_limits<int>::max())));
}

}  // namespace

std::string LocalRankLabel(std::int32_t local_rank) {
  if (local_rank == -1) {
    return "unknown";
  }
  if (local_rank < 0 || local_rank > kMaxLocalRankLabel) {
    return "other";
  }
  return std::to_string(local_rank);
}

TrainingCollectives::TrainingCollectives(prometheus::Registry& registry, int rank,
                                         TrainingCollectivesOptions options)
    : rank_(std::to_string(rank)),
      options_(options),
      calls_(prometheus::BuildCounter()
                 .Name("ringleader_training_collective_calls_total")
                 .Help("The trainers' collective and p2p calls, as the NCCL profiler plugin saw "
                       "them, by local rank, collective and size bucket")
                 .Register(registry)),
      bytes_(prometheus::BuildCounter()
                 .Name("ringleader_training_collective_bytes_total")
                 .Help("nccl-tests' size S of the trainers' calls, summed")
                 .Register(registry)),
      gpu_seconds_(prometheus::BuildCounter()
                       .Name("ringleader_training_collective_gpu_seconds_total")
                       .Help("GPU time of the trainers' timed calls (first kernel channel's start "
                             "to last channel's stop)")
                       .Register(registry)),
      bus_bandwidth_(prometheus::BuildGauge()
                         .Name("ringleader_training_collective_bus_bandwidth_bytes_per_second")
                         .Help("Bus bandwidth (nccl-tests' busbw) of the trainers' timed calls "
                               "over the process's latest interval with one")
                         .Register(registry)),
      algorithm_bandwidth_(
          prometheus::BuildGauge()
              .Name("ringleader_training_collective_algorithm_bandwidth_bytes_per_second")
              .Help("Algorithm bandwidth (S / GPU time) of the trainers' timed calls over the "
                    "process's latest interval with one")
              .Register(registry)),
      dropped_(prometheus::BuildCounter()
                   .Name("ringleader_training_profiler_dropped_total")
                   .Help("What the profiler plugin could not record or deliver, by what")
                   .Register(registry)),
      snapshots_(prometheus::BuildCounter()
                     .Name("ringleader_training_profiler_snapshots_total")
                     .Help("Profiler snapshots taken (received) and sequence gaps (missed)")
                     .Register(registry)),
      snapshots_received_(snapshots_.Add({{"result", "received"}})),
      snapshots_missed_(snapshots_.Add({{"result", "missed"}})),
      frames_rejected_(prometheus::BuildCounter()
                           .Name("ringleader_training_profiler_frames_rejected_total")
                           .Help("Frames, connections and snapshots on the profiler socket turned "
                                 "away, by reason")
                           .Register(registry)),
      processes_gauge_(prometheus::BuildGauge()
                           .Name("ringleader_training_profiler_processes")
                           .Help("Trainer processes connected to the profiler socket")
                           .Register(registry)
                           .Add({})),
      plugin_installed_(prometheus::BuildGauge()
                            .Name("ringleader_training_profiler_plugin_installed")
                            .Help("1 once the sidecar copied the NCCL profiler plugin where the "
                                  "trainers load it")
                            .Register(registry)
                            .Add({})) {
  // Every known series exists from the start, so rate() and absent() see a zero, not a gap.
  for (std::size_t i = 0; i < profiler::kCounterCount; ++i) {
    dropped_.Add({{"what", CounterLabel(i)}});
  }
  for (const FrameRejection reason : kRejections) {
    frames_rejected_.Add({{"reason", std::string(FrameRejectionName(reason))}});
  }
  // Only rank 0 compares the ranks; a 0 elsewhere would claim a verdict nobody made.
  if (rank == 0) {
    stalled_ = &prometheus::BuildGauge()
                    .Name("ringleader_training_stalled")
                    .Help("1 while some ranks of a communicator have waited stallSeconds in a "
                          "collective that others never entered (rank 0's sidecar; /summary's "
                          "stall names them)")
                    .Register(registry)
                    .Add({{"rank", rank_}});
  }
}

void TrainingCollectives::SetStalled(bool stalled) {
  if (stalled_ != nullptr) {
    stalled_->Set(stalled ? 1 : 0);
  }
}

void TrainingCollectives::SetPluginInstalled(bool installed) {
  plugin_installed_.Set(installed ? 1 : 0);
}

void TrainingCollectives::OnRejected(FrameRejection reason) {
  frames_rejected_.Add({{"reason", std::string(FrameRejectionName(reason))}}).Increment();
}

prometheus::Labels TrainingCollectives::SeriesLabels(const std::string& local_rank,
                                                     const LabelKey& key) const {
  return {{"rank", rank_},
          {"local_rank", local_rank},
          {"collective", std::string(profiler::OpName(key.first))},
          {"size", SizeBucket(profiler::BucketUpperBytes(key.second))}};
}

bool TrainingCollectives::MakeRoom(std::size_t cells, bool new_process, const ProcessKey& keep) {
  while ((new_process && processes_.size() >= options_.max_processes) ||
         cells_ + cells > options_.max_cells) {
    auto victim = processes_.end();
    for (auto it = processes_.begin(); it != processes_.end(); ++it) {
      if (!it->second.connection && it->first != keep &&
          (victim == processes_.end() || it->second.touched < victim->second.touched)) {
        victim = it;
      }
    }
    if (victim == processes_.end()) {
      return false;
    }
    cells_ -= victim->second.cells;
    processes_.erase(victim);
  }
  return true;
}

void TrainingCollectives::OnSnapshot(std::uint64_t connection, const profiler::Snapshot& snapshot) {
  const profiler::SnapshotHeader& header = snapshot.header;
  std::size_t cells = 0;
  for (const profiler::Communicator& comm : snapshot.communicators) {
    cells += comm.cells.size();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const ProcessKey key{header.pid, header.process_start_ns};
  auto found = processes_.find(key);
  const bool known = found != processes_.end();
  if (known && header.sequence <= found->second.sequence) {
    OnRejected(FrameRejection::kStale);
    return;
  }
  const std::size_t held = known ? found->second.cells : 0;
  if (!MakeRoom(cells > held ? cells - held : 0, !known, key)) {
    OnRejected(FrameRejection::kTableFull);
    return;
  }
  Process& process = processes_[key];
  snapshots_received_.Increment();
  if (known && header.sequence > process.sequence + 1) {
    snapshots_missed_.Increment(static_cast<double>(header.sequence - process.sequence - 1));
  }
  process.sequence = header.sequence;
  process.unix_time_ns = header.unix_time_ns;
  process.connection = connection;
  process.touched = ++snapshots_taken_;
  process.local_rank = LocalRankLabel(header.local_rank);

  for (std::size_t i = 0; i < profiler::kCounterCount; ++i) {
    const std::uint64_t now = header.counters[i];
    const std::uint64_t before = process.counters[i];
    const std::uint64_t delta = now >= before ? now - before : now;
    if (delta > 0) {
      dropped_.Add({{"what", CounterLabel(i)}}).Increment(static_cast<double>(delta));
    }
    process.counters[i] = now;
  }

  struct Delta {
    double calls = 0;
    double bytes = 0;
    double timed_bytes = 0;
    double bus_bytes = 0;
    std::uint64_t gpu_ns = 0;
  };
  std::map<LabelKey, Delta> deltas;
  std::map<CommunicatorKey, Communicator> communicators;
  std::size_t kept = 0;
  for (const profiler::Communicator& comm : snapshot.communicators) {
    const CommunicatorKey comm_key{comm.info.comm_hash, comm.info.rank};
    if (communicators.contains(comm_key)) {
      continue;  // one record per communicator; a repeat would count twice
    }
    const auto previous = process.communicators.find(comm_key);
    const Communicator* before =
        previous == process.communicators.end() ? nullptr : &previous->second;
    Communicator& now = communicators[comm_key];
    now.nranks = comm.info.nranks;
    now.finalized = comm.info.finalized;
    now.progress = comm.info.progress;
    for (const profiler::Cell& cell : comm.cells) {
      const CellKey cell_key{cell.op, cell.bucket};
      const profiler::Cell* last = nullptr;
      if (before != nullptr) {
        const auto it = before->cells.find(cell_key);
        last = it == before->cells.end() ? nullptr : &it->second;
      }
      const profiler::Cell delta = Difference(cell, last);
      Delta& sum = deltas[{cell.op, std::min(cell.bucket, kTopLabelBucket)}];
      sum.calls += static_cast<double>(delta.calls);
      sum.bytes += static_cast<double>(delta.bytes);
      sum.timed_bytes += static_cast<double>(delta.timed_bytes);
      sum.bus_bytes += static_cast<double>(delta.timed_bytes) *
                       collectives::BusBandwidthFactor(profiler::BandwidthModel(cell.op),
                                                       RankCount(comm.info.nranks));
      sum.gpu_ns += delta.gpu_ns;
      now.cells[cell_key] = cell;
      ++kept;
    }
  }
  cells_ = cells_ - process.cells + kept;
  process.cells = kept;
  // A communicator missing from this snapshot was finalized and released by the plugin.
  process.communicators = std::move(communicators);

  for (const auto& [label_key, sum] : deltas) {
    const prometheus::Labels labels = SeriesLabels(process.local_rank, label_key);
    calls_.Add(labels).Increment(sum.calls);
    bytes_.Add(labels).Increment(sum.bytes);
    gpu_seconds_.Add(labels).Increment(static_cast<double>(sum.gpu_ns) / 1e9);
    PodCell& pod = pod_[label_key];
    pod.timed_bytes += sum.timed_bytes;
    if (sum.gpu_ns == 0) {
      continue;  // no timed call this interval: the bandwidths keep their last values
    }
    const double seconds = static_cast<double>(sum.gpu_ns) / 1e9;
    bus_bandwidth_.Add(labels).Set(sum.bus_bytes / seconds);
    algorithm_bandwidth_.Add(labels).Set(sum.timed_bytes / seconds);
    process.latest[label_key] = Interval{sum.bus_bytes, sum.timed_bytes, sum.gpu_ns};
    // The Pod's bandwidth in this cell: every remembered process's latest interval.
    double bus_bytes = 0;
    double gpu_seconds = 0;
    for (const auto& [other_key, other] : processes_) {
      if (const auto it = other.latest.find(label_key); it != other.latest.end()) {
        bus_bytes += it->second.bus_bytes;
        gpu_seconds += static_cast<double>(it->second.gpu_ns) / 1e9;
      }
    }
    pod.bus_bandwidth = bus_bytes / gpu_seconds;
  }
  UpdateProcessGauge();
}

void TrainingCollectives::OnConnectionClosed(std::uint64_t connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, process] : processes_) {
    if (process.connection == connection) {
      process.connection.reset();
    }
  }
  UpdateProcessGauge();
}

void TrainingCollectives::UpdateProcessGauge() {
  processes_gauge_.Set(
      static_cast<double>(std::count_if(processes_.begin(), processes_.end(), kConnected)));
}

TrainingReport TrainingCollectives::Report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TrainingReport report;
  for (const auto& [key, cell] : pod_) {
    if (cell.timed_bytes > 0 && cell.bus_bandwidth) {
      report.cells.push_back({std::string(profiler::OpName(key.first)),
                              SizeBucket(profiler::BucketUpperBytes(key.second)), cell.timed_bytes,
                              *cell.bus_bandwidth});
    }
  }
  constexpr std::uint64_t kNsPerMs = 1'000'000;
  for (const auto& [key, process] : processes_) {
    if (!process.connection) {
      continue;
    }
    for (const auto& [comm_key, comm] : process.communicators) {
      if (comm.finalized) {
        continue;
      }
      const profiler::CollectiveProgress& progress = comm.progress;
      ReportProgress entry;
      entry.communicator = comm_key.first;
      entry.rank = comm_key.second;
      entry.ranks = comm.nranks;
      entry.started = progress.collectives_started;
      entry.completed = progress.collectives_completed;
      if (progress.collectives_started > 0) {
        entry.last_collective = std::string(profiler::OpName(progress.last_started_op));
        entry.last_bytes = progress.last_started_bytes;
        entry.last_started_unix_ms = progress.last_started_unix_ns / kNsPerMs;
      }
      entry.as_of_unix_ms = process.unix_time_ns / kNsPerMs;
      report.progress.push_back(std::move(entry));
    }
  }
  return report;
}

std::size_t TrainingCollectives::processes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(processes_.begin(), processes_.end(), kConnected));
}

}  // namespace ringleader::sidecar
