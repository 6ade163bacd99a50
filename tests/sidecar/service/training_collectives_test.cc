// The trainers' collectives from the plugin's cumulative snapshots: exact per-process deltas,
// restarts and gaps, bounded labels and tables, read back through Registry::Collect().
#include "sidecar/service/training_collectives.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/support/metric_series.h"

namespace ringleader::sidecar {
namespace {

using profiler::Op;
using Labels = testing::MetricLabels;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

profiler::Cell MakeCell(Op op, std::uint8_t bucket, std::uint64_t calls, std::uint64_t bytes,
                        std::uint64_t timed_calls, std::uint64_t timed_bytes, std::uint64_t gpu_ns) {
  profiler::Cell cell;
  cell.op = op;
  cell.bucket = bucket;
  cell.calls = calls;
  cell.bytes = bytes;
  cell.timed_calls = timed_calls;
  cell.timed_bytes = timed_bytes;
  cell.gpu_ns = gpu_ns;
  return cell;
}

// A 1 MiB all_reduce cell (bucket 20) whose calls were all timed.
profiler::Cell AllReduce1MiB(std::uint64_t calls, std::uint64_t gpu_ns) {
  return MakeCell(Op::kAllReduce, 20, calls, calls * kMiB, calls, calls * kMiB, gpu_ns);
}

profiler::Communicator MakeComm(std::uint64_t hash, std::uint32_t nranks,
                                std::vector<profiler::Cell> cells, std::uint32_t rank = 0) {
  profiler::Communicator comm;
  comm.info.comm_hash = hash;
  comm.info.rank = rank;
  comm.info.nranks = nranks;
  comm.info.name = "comm";
  comm.cells = std::move(cells);
  return comm;
}

struct Process {
  std::uint32_t pid = 100;
  std::uint64_t start = 1'000;
  std::int32_t local_rank = 0;
};

profiler::Snapshot MakeSnapshot(const Process& process, std::uint64_t sequence,
                                std::vector<profiler::Communicator> comms) {
  profiler::Snapshot snapshot;
  snapshot.header.pid = process.pid;
  snapshot.header.process_start_ns = process.start;
  snapshot.header.local_rank = process.local_rank;
  snapshot.header.sequence = sequence;
  snapshot.communicators = std::move(comms);
  return snapshot;
}

Labels SeriesLabels(const std::string& local_rank, const std::string& collective,
                    const std::string& size) {
  return {{"rank", "3"}, {"local_rank", local_rank}, {"collective", collective}, {"size", size}};
}

const Labels kAllReduce1MiB = SeriesLabels("0", "all_reduce", "1MiB");

class TrainingCollectivesTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  TrainingCollectives training_{registry_, /*rank=*/3};

  std::map<Labels, prometheus::ClientMetric> Series(const std::string& name) {
    return testing::SeriesByLabels(registry_, name).value_or(
        std::map<Labels, prometheus::ClientMetric>{});
  }
  std::optional<double> Counter(const std::string& name, const Labels& labels) {
    const auto series = Series(name);
    const auto it = series.find(labels);
    return it == series.end() ? std::nullopt : std::optional<double>(it->second.counter.value);
  }
  std::optional<double> Gauge(const std::string& name, const Labels& labels) {
    const auto series = Series(name);
    const auto it = series.find(labels);
    return it == series.end() ? std::nullopt : std::optional<double>(it->second.gauge.value);
  }
  std::optional<double> Calls(const Labels& labels = kAllReduce1MiB) {
    return Counter("ringleader_training_collective_calls_total", labels);
  }
  std::optional<double> Bytes(const Labels& labels = kAllReduce1MiB) {
    return Counter("ringleader_training_collective_bytes_total", labels);
  }
  std::optional<double> GpuSeconds(const Labels& labels = kAllReduce1MiB) {
    return Counter("ringleader_training_collective_gpu_seconds_total", labels);
  }
  std::optional<double> BusBandwidth(const Labels& labels = kAllReduce1MiB) {
    return Gauge("ringleader_training_collective_bus_bandwidth_bytes_per_second", labels);
  }
  std::optional<double> AlgorithmBandwidth(const Labels& labels = kAllReduce1MiB) {
    return Gauge("ringleader_training_collective_algorithm_bandwidth_bytes_per_second", labels);
  }
  double Snapshots(const std::string& result) {
    return Counter("ringleader_training_profiler_snapshots_total", {{"result", result}}).value_or(-1);
  }
  double Rejected(const std::string& reason) {
    return Counter("ringleader_training_profiler_frames_rejected_total", {{"reason", reason}})
        .value_or(-1);
  }
  double Dropped(const std::string& what) {
    return Counter("ringleader_training_profiler_dropped_total", {{"what", what}}).value_or(-1);
  }
  double Processes() {
    return Gauge("ringleader_training_profiler_processes", {}).value_or(-1);
  }
};

TEST_F(TrainingCollectivesTest, EveryFixedSeriesExistsFromTheStart) {
  for (const char* what : {"communicators_dropped", "ops_dropped", "ops_unrecognized",
                           "ops_incomplete", "channels_dropped", "cells_dropped", "events_ignored",
                           "snapshots_dropped"}) {
    EXPECT_EQ(Dropped(what), 0) << what;
  }
  for (const char* reason : {"bad_header", "too_large", "bad_payload", "truncated",
                             "too_many_connections", "stale", "table_full"}) {
    EXPECT_EQ(Rejected(reason), 0) << reason;
  }
  EXPECT_EQ(Snapshots("received"), 0);
  EXPECT_EQ(Snapshots("missed"), 0);
  EXPECT_EQ(Processes(), 0);
  EXPECT_EQ(Gauge("ringleader_training_profiler_plugin_installed", {}), 0);
  training_.SetPluginInstalled(true);
  EXPECT_EQ(Gauge("ringleader_training_profiler_plugin_installed", {}), 1);
  for (const prometheus::MetricFamily& family : registry_.Collect()) {
    EXPECT_EQ(family.name.rfind("ringleader_training_", 0), 0u) << family.name;
    EXPECT_FALSE(family.help.empty()) << family.name;
  }
}

TEST_F(TrainingCollectivesTest, CountersAreTheSnapshotsDeltasAndBandwidthIsTheLatestIntervals) {
  const Process p;
  // 10 calls in 2 ms, then 6 more in 3 ms, on 4 ranks: all_reduce's busbw factor is 2 x 3/4.
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 4, {AllReduce1MiB(10, 2'000'000)})}));
  EXPECT_EQ(Calls(), 10);
  EXPECT_EQ(Bytes(), 10.0 * kMiB);
  EXPECT_DOUBLE_EQ(GpuSeconds().value_or(0), 0.002);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth().value_or(0), 10.0 * kMiB / 0.002);
  EXPECT_DOUBLE_EQ(BusBandwidth().value_or(0), 10.0 * kMiB / 0.002 * 1.5);

  training_.OnSnapshot(1, MakeSnapshot(p, 2, {MakeComm(7, 4, {AllReduce1MiB(16, 5'000'000)})}));
  EXPECT_EQ(Calls(), 16);
  EXPECT_EQ(Bytes(), 16.0 * kMiB);
  EXPECT_DOUBLE_EQ(GpuSeconds().value_or(0), 0.005);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth().value_or(0), 6.0 * kMiB / 0.003);
  EXPECT_DOUBLE_EQ(BusBandwidth().value_or(0), 6.0 * kMiB / 0.003 * 1.5);
  EXPECT_EQ(Snapshots("received"), 2);
  EXPECT_EQ(Snapshots("missed"), 0);
  EXPECT_EQ(Processes(), 1);
}

TEST_F(TrainingCollectivesTest, BytesCountEveryCallAndBandwidthOnlyTheTimedOnes) {
  const Process p;
  // 4 calls of 1 MiB, 3 of them timed in 1 ms, on 8 ranks.
  training_.OnSnapshot(
      1, MakeSnapshot(p, 1, {MakeComm(7, 8, {MakeCell(Op::kAllReduce, 20, 4, 4 * kMiB, 3,
                                                      3 * kMiB, 1'000'000)})}));
  EXPECT_EQ(Calls(), 4);
  EXPECT_EQ(Bytes(), 4.0 * kMiB);
  EXPECT_DOUBLE_EQ(BusBandwidth().value_or(0), 3.0 * kMiB / 0.001 * 2 * 7 / 8);
}

TEST_F(TrainingCollectivesTest, BandwidthSumsTheCellAcrossTheProcesssCommunicators) {
  const Process p;
  // all_gather (factor (n-1)/n): 2 MiB in 1 ms on 2 ranks, 4 MiB in 3 ms on 4 ranks.
  const auto all_gather = [](std::uint64_t bytes, std::uint64_t ns) {
    return MakeCell(Op::kAllGather, 22, 1, bytes, 1, bytes, ns);
  };
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(1, 2, {all_gather(2 * kMiB, 1'000'000)}),
                                              MakeComm(2, 4, {all_gather(4 * kMiB, 3'000'000)})}));
  const Labels labels = SeriesLabels("0", "all_gather", "4MiB");
  EXPECT_DOUBLE_EQ(BusBandwidth(labels).value_or(0),
                   (2.0 * kMiB * 0.5 + 4.0 * kMiB * 0.75) / 0.004);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(labels).value_or(0), 6.0 * kMiB / 0.004);
  EXPECT_EQ(Calls(labels), 2);
}

TEST_F(TrainingCollectivesTest, ACellWithNoTimedCallInTheIntervalKeepsItsBandwidth) {
  const Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)})}));
  const double before = BusBandwidth().value_or(0);
  ASSERT_GT(before, 0);
  // Two more calls, neither timed.
  training_.OnSnapshot(1, MakeSnapshot(p, 2, {MakeComm(7, 2, {MakeCell(Op::kAllReduce, 20, 12, 12 * kMiB,
                                                                        10, 10 * kMiB, 1'000'000)})}));
  EXPECT_EQ(Calls(), 12);
  EXPECT_EQ(BusBandwidth(), before);
}

TEST_F(TrainingCollectivesTest, ACommunicatorSeenForTheFirstTimeCountsFromZero) {
  const Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)})}));
  // A second communicator appears with 5 calls behind it; the first adds 1.
  training_.OnSnapshot(1, MakeSnapshot(p, 2, {MakeComm(7, 2, {AllReduce1MiB(11, 1'100'000)}),
                                              MakeComm(8, 2, {AllReduce1MiB(5, 500'000)})}));
  EXPECT_EQ(Calls(), 16);
  // The first is finalized and gone; the second goes on.
  training_.OnSnapshot(1, MakeSnapshot(p, 3, {MakeComm(8, 2, {AllReduce1MiB(7, 700'000)})}));
  EXPECT_EQ(Calls(), 18);
  // A communicator whose cell went backwards started again under its key: it counts whole.
  training_.OnSnapshot(1, MakeSnapshot(p, 4, {MakeComm(8, 2, {AllReduce1MiB(3, 300'000)})}));
  EXPECT_EQ(Calls(), 21);
}

TEST_F(TrainingCollectivesTest, RanksOfOneCommunicatorInOneProcessAreKeptApart) {
  const Process p;
  // One process driving two GPUs of the same communicator: same hash, ranks 0 and 1.
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)}, 0),
                                              MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)}, 1)}));
  EXPECT_EQ(Calls(), 20);
  training_.OnSnapshot(1, MakeSnapshot(p, 2, {MakeComm(7, 2, {AllReduce1MiB(12, 1'200'000)}, 0),
                                              MakeComm(7, 2, {AllReduce1MiB(11, 1'100'000)}, 1)}));
  EXPECT_EQ(Calls(), 23);
}

TEST_F(TrainingCollectivesTest, ARepeatedCommunicatorRecordCountsOnce) {
  const Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)}),
                                              MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)})}));
  EXPECT_EQ(Calls(), 10);
}

TEST_F(TrainingCollectivesTest, ARestartedProcessIsNewAndCountersStayMonotonic) {
  Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)})}));
  training_.OnSnapshot(1, MakeSnapshot(p, 2, {MakeComm(7, 2, {AllReduce1MiB(40, 4'000'000)})}));
  training_.OnConnectionClosed(1);
  // Same pid, new process_start_ns: a new process whose counts start at zero.
  p.start = 2'000;
  training_.OnSnapshot(2, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(3, 300'000)})}));
  EXPECT_EQ(Calls(), 43);
  EXPECT_EQ(Snapshots("missed"), 0);  // its sequence starts again at 1: no gap
  EXPECT_EQ(Rejected("stale"), 0);
}

TEST_F(TrainingCollectivesTest, AReconnectingProcessIsNotCountedTwice) {
  const Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 1'000'000)})}));
  training_.OnConnectionClosed(1);
  EXPECT_EQ(Processes(), 0);
  // The plugin's next snapshot comes on a new connection, still cumulative since it loaded.
  training_.OnSnapshot(2, MakeSnapshot(p, 2, {MakeComm(7, 2, {AllReduce1MiB(12, 1'200'000)})}));
  EXPECT_EQ(Calls(), 12);
  EXPECT_EQ(Processes(), 1);
}

TEST_F(TrainingCollectivesTest, SequenceGapsCountAsMissedAndOldSequencesAsStale) {
  const Process p;
  training_.OnSnapshot(1, MakeSnapshot(p, 1, {MakeComm(7, 2, {AllReduce1MiB(1, 100'000)})}));
  training_.OnSnapshot(1, MakeSnapshot(p, 5, {MakeComm(7, 2, {AllReduce1MiB(5, 500'000)})}));
  EXPECT_EQ(Snapshots("received"), 2);
  EXPECT_EQ(Snapshots("missed"), 3);
  // Nothing was lost but time resolution: the counters are cumulative.
  EXPECT_EQ(Calls(), 5);
  training_.OnSnapshot(1, MakeSnapshot(p, 5, {MakeComm(7, 2, {AllReduce1MiB(9, 900'000)})}));
  training_.OnSnapshot(1, MakeSnapshot(p, 4, {MakeComm(7, 2, {AllReduce1MiB(9, 900'000)})}));
  EXPECT_EQ(Rejected("stale"), 2);
  EXPECT_EQ(Snapshots("received"), 2);
  EXPECT_EQ(Calls(), 5);
}

TEST_F(TrainingCollectivesTest, DroppedCountersAreSummedDeltasAcrossProcesses) {
  Process a;
  Process b{.pid = 200, .start = 5'000, .local_rank = 1};
  auto with_counters = [](profiler::Snapshot snapshot, std::uint64_t ops_dropped,
                          std::uint64_t snapshots_dropped) {
    snapshot.header.counters[static_cast<std::size_t>(profiler::Counter::kOpsDropped)] = ops_dropped;
    snapshot.header.counters[static_cast<std::size_t>(profiler::Counter::kSnapshotsDropped)] =
        snapshots_dropped;
    return snapshot;
  };
  training_.OnSnapshot(1, with_counters(MakeSnapshot(a, 1, {}), 5, 2));
  training_.OnSnapshot(1, with_counters(MakeSnapshot(a, 2, {}), 7, 2));
  training_.OnSnapshot(2, with_counters(MakeSnapshot(b, 1, {}), 1, 4));
  EXPECT_EQ(Dropped("ops_dropped"), 8);
  EXPECT_EQ(Dropped("snapshots_dropped"), 6);
  EXPECT_EQ(Dropped("cells_dropped"), 0);
}

TEST_F(TrainingCollectivesTest, LabelsAreBoundedAndSizesMatchTheProbes) {
  const std::map<std::int32_t, std::string> local_ranks = {
      {0, "0"}, {7, "7"}, {63, "63"}, {64, "other"}, {1 << 20, "other"}, {-1, "unknown"},
      {-2, "other"}};
  std::uint32_t pid = 1;
  for (const auto& [local_rank, label] : local_ranks) {
    EXPECT_EQ(LocalRankLabel(local_rank), label);
    training_.OnSnapshot(pid, MakeSnapshot({.pid = pid, .start = 1, .local_rank = local_rank}, 1,
                                           {MakeComm(7, 2, {AllReduce1MiB(1, 1'000)})}));
    ++pid;
  }
  std::set<std::string> seen;
  for (const auto& [labels, metric] : Series("ringleader_training_collective_calls_total")) {
    seen.insert(labels.at("local_rank"));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"0", "7", "63", "other", "unknown"}));

  // Sizes: the bucket's upper bound through the probes' SizeBucket; above 16 GiB they share it.
  const Process p{.pid = 999, .start = 1, .local_rank = 5};
  training_.OnSnapshot(9, MakeSnapshot(p, 1, {MakeComm(7, 2, {
      MakeCell(Op::kBroadcast, 0, 1, 1, 1, 1, 10), MakeCell(Op::kBroadcast, 10, 1, 1000, 1, 1000, 10),
      MakeCell(Op::kBroadcast, 34, 1, 1, 1, 1, 10), MakeCell(Op::kBroadcast, 40, 2, 1, 2, 1, 10),
      MakeCell(Op::kBroadcast, 63, 3, 1, 3, 1, 10)})}));
  EXPECT_EQ(Calls(SeriesLabels("5", "broadcast", "1B")), 1);
  EXPECT_EQ(Calls(SeriesLabels("5", "broadcast", "1KiB")), 1);
  EXPECT_EQ(Calls(SeriesLabels("5", "broadcast", "16GiB")), 6);

  // Every op's name is the profiler's.
  std::vector<profiler::Cell> cells;
  for (std::uint8_t op = 0; op < profiler::kOpCount; ++op) {
    cells.push_back(MakeCell(static_cast<Op>(op), 20, 1, kMiB, 1, kMiB, 1000));
  }
  training_.OnSnapshot(9, MakeSnapshot(p, 2, {MakeComm(8, 2, cells)}));
  for (std::uint8_t op = 0; op < profiler::kOpCount; ++op) {
    EXPECT_EQ(Calls(SeriesLabels("5", std::string(profiler::OpName(static_cast<Op>(op))), "1MiB")), 1)
        << profiler::OpName(static_cast<Op>(op));
  }
}

TEST(TrainingCollectivesBoundsTest, TheProcessTableIsBoundedAndForgetsClosedProcessesFirst) {
  prometheus::Registry registry;
  TrainingCollectives training(registry, 0, {.max_processes = 2});
  const auto snapshot = [](std::uint32_t pid, std::uint64_t sequence, std::uint64_t calls) {
    return MakeSnapshot({.pid = pid, .start = 1, .local_rank = 0}, sequence,
                        {MakeComm(7, 2, {AllReduce1MiB(calls, calls * 1000)})});
  };
  const auto rejected = [&](const std::string& reason) {
    return testing::SeriesByLabels(registry, "ringleader_training_profiler_frames_rejected_total")
        ->at({{"reason", reason}})
        .counter.value;
  };
  const auto calls = [&] {
    return testing::SeriesByLabels(registry, "ringleader_training_collective_calls_total")
        ->at({{"rank", "0"}, {"local_rank", "0"}, {"collective", "all_reduce"}, {"size", "1MiB"}})
        .counter.value;
  };
  training.OnSnapshot(1, snapshot(1, 1, 10));
  training.OnSnapshot(2, snapshot(2, 1, 10));
  // Both connected: a third process finds no slot.
  training.OnSnapshot(3, snapshot(3, 1, 10));
  EXPECT_EQ(rejected("table_full"), 1);
  EXPECT_EQ(calls(), 20);
  // Once one has gone, its slot is taken.
  training.OnConnectionClosed(1);
  training.OnSnapshot(3, snapshot(3, 1, 10));
  EXPECT_EQ(calls(), 30);
  EXPECT_EQ(training.processes(), 2u);
}

TEST(TrainingCollectivesBoundsTest, TheCellBudgetIsBounded) {
  prometheus::Registry registry;
  TrainingCollectives training(registry, 0, {.max_processes = 8, .max_cells = 3});
  // all_reduce calls per size label, as collected.
  const auto calls_by_size = [&registry] {
    std::map<std::string, double> calls;
    for (const auto& [labels, metric] :
         testing::SeriesByLabels(registry, "ringleader_training_collective_calls_total")
             .value_or(std::map<Labels, prometheus::ClientMetric>{})) {
      calls[labels.at("size")] += metric.counter.value;
    }
    return calls;
  };
  const auto cells = [](std::size_t count, std::uint64_t calls) {
    std::vector<profiler::Cell> out;
    for (std::uint8_t bucket = 10; bucket < 10 + count; ++bucket) {
      out.push_back(MakeCell(Op::kAllReduce, bucket, calls, calls, calls, calls, calls));
    }
    return out;
  };
  training.OnSnapshot(1, MakeSnapshot({}, 1, {MakeComm(7, 2, cells(4, 1))}));
  EXPECT_EQ(testing::SeriesByLabels(registry, "ringleader_training_profiler_frames_rejected_total")
                ->at({{"reason", "table_full"}})
                .counter.value,
            1);
  EXPECT_EQ(training.processes(), 0u);
  EXPECT_EQ(calls_by_size(), (std::map<std::string, double>{})) << "the refused snapshot counts nothing";
  // Three cells fit: that snapshot is accepted, counted whole (the refused one left no baseline),
  // and the next counts only what was added since.
  training.OnSnapshot(1, MakeSnapshot({}, 2, {MakeComm(7, 2, cells(3, 1))}));
  EXPECT_EQ(training.processes(), 1u);
  EXPECT_EQ(calls_by_size(), (std::map<std::string, double>{{"1KiB", 1}, {"2KiB", 1}, {"4KiB", 1}}));
  training.OnSnapshot(1, MakeSnapshot({}, 3, {MakeComm(7, 2, cells(3, 5))}));
  EXPECT_EQ(calls_by_size(), (std::map<std::string, double>{{"1KiB", 5}, {"2KiB", 5}, {"4KiB", 5}}));
}

TEST_F(TrainingCollectivesTest, ThePodsReportSumsTimedBytesAndWeighsTheProcessesLatestIntervals) {
  const Process a{.pid = 1, .start = 1, .local_rank = 0};
  const Process b{.pid = 2, .start = 1, .local_rank = 1};
  // Local rank 0 moved 10 MiB in 2 ms, local rank 1 10 MiB in 6 ms, on 2 ranks (factor 1).
  training_.OnSnapshot(1, MakeSnapshot(a, 1, {MakeComm(7, 2, {AllReduce1MiB(10, 2'000'000)})}));
  training_.OnSnapshot(2, MakeSnapshot(b, 1, {MakeComm(8, 2, {AllReduce1MiB(10, 6'000'000)})}));
  training_.OnSnapshot(2, MakeSnapshot(b, 2, {MakeComm(8, 2, {MakeCell(Op::kAllReduce, 10, 1, 1000, 0, 0, 0),
                                                               AllReduce1MiB(10, 6'000'000)})}));
  const TrainingReport report = training_.Report();
  ASSERT_EQ(report.cells.size(), 1u);  // the untimed 1 KiB cell is not reported
  EXPECT_EQ(report.cells[0].collective, "all_reduce");
  EXPECT_EQ(report.cells[0].size, "1MiB");
  EXPECT_EQ(report.cells[0].timed_bytes, 20.0 * kMiB);
  EXPECT_DOUBLE_EQ(report.cells[0].bus_bandwidth, 20.0 * kMiB / 0.008);
  // Each local rank's own series.
  EXPECT_DOUBLE_EQ(BusBandwidth(SeriesLabels("0", "all_reduce", "1MiB")).value_or(0), 10.0 * kMiB / 0.002);
  EXPECT_DOUBLE_EQ(BusBandwidth(SeriesLabels("1", "all_reduce", "1MiB")).value_or(0), 10.0 * kMiB / 0.006);
}

TEST_F(TrainingCollectivesTest, TheReportCarriesEachConnectedRanksProgressAsOfItsLatestSnapshot) {
  const Process a{.pid = 1, .start = 1, .local_rank = 0};
  const Process b{.pid = 2, .start = 1, .local_rank = 1};
  profiler::Communicator comm_a = MakeComm(7, 2, {AllReduce1MiB(5, 1000)}, /*rank=*/0);
  comm_a.info.progress = {.collectives_started = 5,
                          .collectives_completed = 4,
                          .last_started_op = Op::kAllReduce,
                          .last_started_bytes = kMiB,
                          .last_started_unix_ns = 1'500'999'999};
  profiler::Snapshot snapshot_a = MakeSnapshot(a, 1, {comm_a});
  snapshot_a.header.unix_time_ns = 2'000'000'000;
  training_.OnSnapshot(1, snapshot_a);
  // b: rank 1 of the same communicator, nothing started yet, and a finalized one, which says
  // nothing more about progress.
  profiler::Communicator finalized = MakeComm(9, 2, {}, /*rank=*/1);
  finalized.info.finalized = true;
  finalized.info.progress.collectives_started = 3;
  finalized.info.progress.collectives_completed = 3;
  finalized.info.progress.last_started_op = Op::kBroadcast;
  profiler::Snapshot snapshot_b = MakeSnapshot(b, 1, {MakeComm(7, 2, {}, /*rank=*/1), finalized});
  snapshot_b.header.unix_time_ns = 2'100'000'000;
  training_.OnSnapshot(2, snapshot_b);

  ReportProgress expected_a;
  expected_a.communicator = 7;
  expected_a.rank = 0;
  expected_a.ranks = 2;
  expected_a.started = 5;
  expected_a.completed = 4;
  expected_a.last_collective = "all_reduce";
  expected_a.last_bytes = kMiB;
  expected_a.last_started_unix_ms = 1500;
  expected_a.as_of_unix_ms = 2000;
  ReportProgress expected_b;
  expected_b.communicator = 7;
  expected_b.rank = 1;
  expected_b.ranks = 2;
  expected_b.as_of_unix_ms = 2100;
  EXPECT_EQ(training_.Report().progress, (std::vector<ReportProgress>{expected_a, expected_b}));

  // A newer snapshot moves the progress and its time; a closed process's progress goes with it
  // (its counters stay remembered for a reconnect, its communicators are gone).
  comm_a.info.progress.collectives_started = 6;
  comm_a.info.progress.collectives_completed = 6;
  snapshot_a = MakeSnapshot(a, 2, {comm_a});
  snapshot_a.header.unix_time_ns = 7'000'000'000;
  training_.OnSnapshot(1, snapshot_a);
  training_.OnConnectionClosed(2);
  const TrainingReport report = training_.Report();
  ASSERT_EQ(report.progress.size(), 1u);
  EXPECT_EQ(report.progress[0].started, 6u);
  EXPECT_EQ(report.progress[0].completed, 6u);
  EXPECT_EQ(report.progress[0].as_of_unix_ms, 7000u);
  // What the report carries, its rank 0 reads back whole.
  const auto decoded = DecodeTrainingReport(EncodeTrainingReport(report));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->progress, report.progress);
}

TEST(TrainingCollectivesStallTest, OnlyRankZeroExportsTheStalledGauge) {
  prometheus::Registry zero_registry;
  TrainingCollectives zero(zero_registry, /*rank=*/0);
  const auto stalled = [&zero_registry] {
    const auto series = testing::SeriesByLabels(zero_registry, "ringleader_training_stalled");
    return series && series->contains(Labels{{"rank", "0"}})
               ? std::optional<double>(series->at(Labels{{"rank", "0"}}).gauge.value)
               : std::nullopt;
  };
  EXPECT_EQ(stalled(), 0.0);
  zero.SetStalled(true);
  EXPECT_EQ(stalled(), 1.0);
  zero.SetStalled(false);
  EXPECT_EQ(stalled(), 0.0);

  prometheus::Registry other_registry;
  TrainingCollectives other(other_registry, /*rank=*/3);
  other.SetStalled(true);
  EXPECT_FALSE(testing::FindFamily(other_registry, "ringleader_training_stalled").has_value());
}

}  // namespace
}  // namespace ringleader::sidecar
