// The trainers' own collectives, from the profiler plugin's cumulative snapshots: per process
// deltas between consecutive snapshots, exported as Prometheus series, and the Pod's report for
// the cross-rank comparison (training_report.h). Pure logic: the listener hands snapshots in.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "sidecar/profiler/snapshot_protocol.h"
#include "sidecar/service/profiler_listener.h"
#include "sidecar/service/training_report.h"

namespace ringleader::sidecar {

struct TrainingCollectivesOptions {
  // Processes remembered at once. A process whose connection closed is kept (a trainer's plugin
  // reconnects with counters cumulative since it loaded, which must not count twice) until its
  // slot is needed: then the one updated longest ago goes.
  std::size_t max_processes = 1024;
  // Cells (communicator x op x bucket) remembered across all processes; a snapshot that would
  // exceed it, with no closed process left to forget, is refused (table_full).
  std::size_t max_cells = std::size_t{1} << 20;
};

// `local_rank` label of a snapshot's LOCAL_RANK: "0".."63", "unknown" for -1 (unset), "other".
std::string LocalRankLabel(std::int32_t local_rank);

class TrainingCollectives : public SnapshotSink {
 public:
  // Registers, in `registry` (which must outlive this), with rank = `rank` (this Pod's rank),
  // local_rank as LocalRankLabel, collective = profiler::OpName, size = SizeBucket of the
  // bucket's upper bound (the probes' `size` label):
  //   ringleader_training_collective_calls_total{rank,local_rank,collective,size}       counter
  //   ringleader_training_collective_bytes_total{...}         counter, nccl-tests' size S summed
  //   ringleader_training_collective_gpu_seconds_total{...}   counter, timed calls' GPU time
  //   ringleader_training_collective_bus_bandwidth_bytes_per_second{...}        gauge
  //   ringleader_training_collective_algorithm_bandwidth_bytes_per_second{...}  gauge
  //     over the process's latest interval with a timed call in that cell: the sum over its
  //     communicators of delta(timed bytes) (x the op's busbw factor for the bus bandwidth) over
  //     the sum of delta(GPU time)
  //   ringleader_training_profiler_dropped_total{what}       counter, the plugin's counters
  //   ringleader_training_profiler_snapshots_total{result}   counter, received | missed
  //   ringleader_training_profiler_frames_rejected_total{reason}  counter, FrameRejectionName
  //   ringleader_training_profiler_processes                 gauge, processes connected now
  //   ringleader_training_profiler_plugin_installed          gauge, 1 once the plugin is copied
  // and on Pod rank 0 only, whose sidecar compares the ranks (training_stall.h):
  //   ringleader_training_stalled{rank}   gauge, 1 while /summary names a stalled collective
  // Methods are thread-safe.
  TrainingCollectives(prometheus::Registry& registry, int rank,
                      TrainingCollectivesOptions options = {});

  void OnSnapshot(std::uint64_t connection, const profiler::Snapshot& snapshot) override;
  void OnConnectionClosed(std::uint64_t connection) override;
  void OnRejected(FrameRejection reason) override;

  void SetPluginInstalled(bool installed);
  // Rank 0's verdict; nothing on other ranks, which have no such series.
  void SetStalled(bool stalled);

  // The Pod's cells for the cross-rank report: every process's timed bytes since this sidecar
  // started, and the bus bandwidth over the processes' latest intervals with a timed call. And
  // the collective progress of each communicator rank in a process still connected, as of its
  // latest snapshot: a closed process's communicators are gone with it (a trainer restarted
  // inside the Pod makes new ones), and a finalized communicator says nothing more.
  TrainingReport Report() const;
  std::size_t processes() const;

 private:
  using CommunicatorKey = std::pair<std::uint64_t, std::uint32_t>;  // comm_hash, rank
  using CellKey = std::pair<profiler::Op, std::uint8_t>;            // op, bucket
  // A series' (collective, size): buckets above 16 GiB share the 16 GiB label.
  using LabelKey = std::pair<profiler::Op, std::uint8_t>;  // op, bucket clamped to the labels

  struct Communicator {
    std::uint32_t nranks = 1;
    bool finalized = false;
    profiler::CollectiveProgress progress;
    std::map<CellKey, profiler::Cell> cells;
  };
  // One interval's timed work in a label cell.
  struct Interval {
    double bus_bytes = 0;  // timed bytes x the busbw factor
    double timed_bytes = 0;
    std::uint64_t gpu_ns = 0;
  };
  struct Process {
    std::uint64_t sequence = 0;
    std::uint64_t unix_time_ns = 0;  // when the plugin took its latest snapshot
    std::array<std::uint64_t, profiler::kCounterCount> counters{};
    std::map<CommunicatorKey, Communicator> communicators;
    std::size_t cells = 0;
    std::string local_rank;
    std::optional<std::uint64_t> connection;  // open connection; nullopt once it closed
    std::uint64_t touched = 0;                // when it last sent, in snapshots taken
    std::map<LabelKey, Interval> latest;      // each label cell's latest interval with a timed call
  };
  struct PodCell {
    double timed_bytes = 0;
    std::optional<double> bus_bandwidth;
  };
  using ProcessKey = std::pair<std::uint32_t, std::uint64_t>;  // pid, process_start_ns

  // Makes room for `cells` more cells and one more process; false when only connected
  // processes hold the table. Under mutex_.
  bool MakeRoom(std::size_t cells, bool new_process, const ProcessKey& keep);
  void UpdateProcessGauge();
  prometheus::Labels SeriesLabels(const std::string& local_rank, const LabelKey& key) const;

  const std::string rank_;
  const TrainingCollectivesOptions options_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Counter>& bytes_;
  prometheus::Family<prometheus::Counter>& gpu_seconds_;
  prometheus::Family<prometheus::Gauge>& bus_bandwidth_;
  prometheus::Family<prometheus::Gauge>& algorithm_bandwidth_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& snapshots_;
  prometheus::Counter& snapshots_received_;
  prometheus::Counter& snapshots_missed_;
  prometheus::Family<prometheus::Counter>& frames_rejected_;
  prometheus::Gauge& processes_gauge_;
  prometheus::Gauge& plugin_installed_;
  prometheus::Gauge* stalled_ = nullptr;  // rank 0 only

  mutable std::mutex mutex_;
  std::map<ProcessKey, Process> processes_;  // guarded by mutex_
  std::size_t cells_ = 0;                    // guarded: cells held by all processes
  std::uint64_t snapshots_taken_ = 0;        // guarded
  std::map<LabelKey, PodCell> pod_;          // guarded
};

}  // namespace ringleader::sidecar
