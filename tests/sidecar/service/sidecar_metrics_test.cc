// The sidecar's metrics, read back through Registry::Collect() as a scrape would see them.
#include "sidecar/service/sidecar_metrics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sidecar/rendezvous/store_server.h"
#include "tests/support/metric_series.h"

namespace ringleader::sidecar {
namespace {

using Labels = testing::MetricLabels;
using collectives::Collective;

class SidecarMetricsTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  SidecarMetrics metrics_{registry_, /*rank=*/2, /*world_size=*/4};

  std::optional<prometheus::MetricFamily> Family(const std::string& name) {
    return testing::FindFamily(registry_, name);
  }

  // Every series of the family, by its labels.
  std::map<Labels, prometheus::ClientMetric> Series(const std::string& name) {
    auto series = testing::SeriesByLabels(registry_, name);
    EXPECT_TRUE(series.has_value()) << name;
    return series.value_or(std::map<Labels, prometheus::ClientMetric>{});
  }
};

TEST(SizeBucketTest, RoundsUpToAPowerOfTwoWithBinaryUnits) {
  EXPECT_EQ(SizeBucket(0), "1B");
  EXPECT_EQ(SizeBucket(1), "1B");
  EXPECT_EQ(SizeBucket(4), "4B");
  EXPECT_EQ(SizeBucket(5), "8B");
  EXPECT_EQ(SizeBucket(512), "512B");
  EXPECT_EQ(SizeBucket(1000), "1KiB");
  EXPECT_EQ(SizeBucket(1024), "1KiB");
  EXPECT_EQ(SizeBucket(1025), "2KiB");
  EXPECT_EQ(SizeBucket(std::uint64_t{1} << 20), "1MiB");
  EXPECT_EQ(SizeBucket(3 << 20), "4MiB");
  EXPECT_EQ(SizeBucket(std::uint64_t{64} << 20), "64MiB");
  EXPECT_EQ(SizeBucket(std::uint64_t{1} << 30), "1GiB");
  EXPECT_EQ(SizeBucket(std::uint64_t{16} << 30), "16GiB");
}

TEST(SizeBucketTest, IsBoundedWhateverTheSize) {
  std::set<std::string> buckets;
  for (std::uint64_t bytes = 0; bytes < (std::uint64_t{1} << 40); bytes = bytes * 3 + 1) {
    buckets.insert(SizeBucket(bytes));
  }
  buckets.insert(SizeBucket(UINT64_MAX));
  EXPECT_LE(buckets.size(), 35u);
  EXPECT_EQ(SizeBucket(UINT64_MAX), "16GiB");  // clamped to the largest preflight message
  EXPECT_EQ(SizeBucket((std::uint64_t{16} << 30) + 1), "16GiB");
}

TEST_F(SidecarMetricsTest, RegistersEveryFamilyWithItsType) {
  // Families whose series appear with their first observation are absent until then.
  EXPECT_FALSE(Family("ringleader_sidecar_bus_bandwidth_bytes_per_second").has_value());
  EXPECT_FALSE(Family("ringleader_sidecar_info").has_value());
  metrics_.ObserveProbe(Collective::kAllReduce, 1 << 20, 1e9, 1.5e9, 0.001);
  metrics_.SetEdgeBandwidth(0, 3, Direction::kSend, 1e9);
  metrics_.SetInfo({"gloo", "tcp", "", "network", "llama", "team-a"});
  metrics_.SetPreflightTransport("gloo", "tcp", false, false);
  const std::vector<std::pair<std::string, prometheus::MetricType>> expected = {
      {"ringleader_sidecar_bus_bandwidth_bytes_per_second", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_algorithm_bandwidth_bytes_per_second", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_probe_duration_seconds", prometheus::MetricType::Histogram},
      {"ringleader_sidecar_probe_runs_total", prometheus::MetricType::Counter},
      {"ringleader_sidecar_probe_wrong_elements_total", prometheus::MetricType::Counter},
      {"ringleader_sidecar_rendezvous_duration_seconds", prometheus::MetricType::Histogram},
      {"ringleader_sidecar_rendezvous_failures_total", prometheus::MetricType::Counter},
      {"ringleader_sidecar_refused_connections_total", prometheus::MetricType::Counter},
      {"ringleader_sidecar_edge_bandwidth_bytes_per_second", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_preflight_state", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_info", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_preflight_transport_info", prometheus::MetricType::Gauge},
      {"ringleader_sidecar_rdma_fallback", prometheus::MetricType::Gauge},
  };
  for (const auto& [name, type] : expected) {
    const std::optional<prometheus::MetricFamily> family = Family(name);
    ASSERT_TRUE(family.has_value()) << name;
    EXPECT_EQ(family->type, type) << name;
    EXPECT_FALSE(family->help.empty()) << name;
  }
  for (const prometheus::MetricFamily& family : registry_.Collect()) {
    EXPECT_EQ(family.name.rfind("ringleader_sidecar_", 0), 0u) << family.name;
  }
}

TEST_F(SidecarMetricsTest, BandwidthsAreKeptPerCollectiveAndSizeBucket) {
  metrics_.ObserveProbe(Collective::kAllReduce, 1 << 20, 1.0e9, 1.5e9, 0.001);
  metrics_.ObserveProbe(Collective::kAllReduce, 64 << 20, 8.0e9, 12.0e9, 0.008);
  metrics_.ObserveProbe(Collective::kAllGather, 1 << 20, 2.0e9, 1.5e9, 0.0005);
  // A later probe of the same size replaces the value.
  metrics_.ObserveProbe(Collective::kAllReduce, 1 << 20, 1.2e9, 1.8e9, 0.0009);

  auto busbw = Series("ringleader_sidecar_bus_bandwidth_bytes_per_second");
  ASSERT_EQ(busbw.size(), 3u);
  EXPECT_EQ((busbw[{{"collective", "all_reduce"}, {"size", "1MiB"}}].gauge.value), 1.8e9);
  EXPECT_EQ((busbw[{{"collective", "all_reduce"}, {"size", "64MiB"}}].gauge.value), 12.0e9);
  EXPECT_EQ((busbw[{{"collective", "all_gather"}, {"size", "1MiB"}}].gauge.value), 1.5e9);
  auto algbw = Series("ringleader_sidecar_algorithm_bandwidth_bytes_per_second");
  EXPECT_EQ((algbw[{{"collective", "all_reduce"}, {"size", "1MiB"}}].gauge.value), 1.2e9);

  auto durations = Series("ringleader_sidecar_probe_duration_seconds");
  ASSERT_EQ(durations.size(), 2u);
  const auto& all_reduce = durations[{{"collective", "all_reduce"}}].histogram;
  EXPECT_EQ(all_reduce.sample_count, 3u);
  EXPECT_DOUBLE_EQ(all_reduce.sample_sum, 0.001 + 0.008 + 0.0009);
  EXPECT_DOUBLE_EQ(all_reduce.bucket.front().upper_bound, 1e-5);
  EXPECT_GE(all_reduce.bucket[all_reduce.bucket.size() - 2].upper_bound, 60);
}

TEST_F(SidecarMetricsTest, ProbeRunsCountByResultFromZero) {
  auto runs = Series("ringleader_sidecar_probe_runs_total");
  ASSERT_EQ(runs.size(), 4u);  // all_reduce's four results exist before the first probe
  for (const char* result : {"ok", "wrong_data", "below_floor", "error"}) {
    EXPECT_EQ((runs[{{"collective", "all_reduce"}, {"result", result}}].counter.value), 0) << result;
  }
  metrics_.CountProbeRun(Collective::kAllReduce, ProbeResult::kOk);
  metrics_.CountProbeRun(Collective::kAllReduce, ProbeResult::kOk);
  metrics_.CountProbeRun(Collective::kAllReduce, ProbeResult::kBelowFloor);
  metrics_.CountProbeRun(Collective::kBroadcast, ProbeResult::kWrongData);
  metrics_.CountProbeRun(Collective::kSendRecv, ProbeResult::kError);
  runs = Series("ringleader_sidecar_probe_runs_total");
  EXPECT_EQ((runs[{{"collective", "all_reduce"}, {"result", "ok"}}].counter.value), 2);
  EXPECT_EQ((runs[{{"collective", "all_reduce"}, {"result", "below_floor"}}].counter.value), 1);
  EXPECT_EQ((runs[{{"collective", "broadcast"}, {"result", "wrong_data"}}].counter.value), 1);
  EXPECT_EQ((runs[{{"collective", "sendrecv"}, {"result", "error"}}].counter.value), 1);
}

TEST_F(SidecarMetricsTest, WrongElementsAccumulate) {
  EXPECT_EQ((Series("ringleader_sidecar_probe_wrong_elements_total")[{{"collective", "all_reduce"}}]
                 .counter.value),
            0);
  metrics_.AddWrongElements(Collective::kAllReduce, 3);
  metrics_.AddWrongElements(Collective::kAllReduce, 1000);
  EXPECT_EQ((Series("ringleader_sidecar_probe_wrong_elements_total")[{{"collective", "all_reduce"}}]
                 .counter.value),
            1003);
}

TEST_F(SidecarMetricsTest, RendezvousDurationAndFailures) {
  metrics_.ObserveRendezvous(2.5);
  const auto duration = Series("ringleader_sidecar_rendezvous_duration_seconds");
  ASSERT_EQ(duration.size(), 1u);
  EXPECT_EQ(duration.begin()->second.histogram.sample_count, 1u);
  EXPECT_DOUBLE_EQ(duration.begin()->second.histogram.sample_sum, 2.5);

  auto failures = Series("ringleader_sidecar_rendezvous_failures_total");
  ASSERT_EQ(failures.size(), 5u);
  metrics_.CountRendezvousFailure(RendezvousFailure::kTimeout);
  metrics_.CountRendezvousFailure(RendezvousFailure::kTimeout);
  metrics_.CountRendezvousFailure(RendezvousFailure::kRefused);
  failures = Series("ringleader_sidecar_rendezvous_failures_total");
  EXPECT_EQ((failures[{{"reason", "timeout"}}].counter.value), 2);
  EXPECT_EQ((failures[{{"reason", "refused"}}].counter.value), 1);
  EXPECT_EQ((failures[{{"reason", "connect"}}].counter.value), 0);
}

TEST_F(SidecarMetricsTest, RefusedConnectionsByTheServersReasons) {
  namespace refusal = rendezvous::refusal;
  auto refused = Series("ringleader_sidecar_refused_connections_total");
  const std::vector<std::string_view> reasons = {
      refusal::kBadFrame,          refusal::kUnsupportedVersion, refusal::kAuthenticationFailed,
      refusal::kBadRank,           refusal::kWorldSizeMismatch,  refusal::kHandshakeTimeout,
      refusal::kProtocolViolation, refusal::kTooManyConnections, refusal::kInternalError,
      refusal::kStaleProof,        refusal::kAttemptMismatch};
  ASSERT_EQ(refused.size(), reasons.size() + 1);  // and "other"
  for (const std::string_view reason : reasons) {
    EXPECT_EQ((refused[{{"reason", std::string(reason)}}].counter.value), 0) << reason;
    metrics_.CountRefusedConnection(reason);
  }
  metrics_.CountRefusedConnection(refusal::kAuthenticationFailed);
  // A reason the server does not list adds no series.
  metrics_.CountRefusedConnection("port scan from 10.0.0.1");
  metrics_.CountRefusedConnection("");
  refused = Series("ringleader_sidecar_refused_connections_total");
  EXPECT_EQ(refused.size(), reasons.size() + 1);
  EXPECT_EQ((refused[{{"reason", "authentication_failed"}}].counter.value), 2);
  EXPECT_EQ((refused[{{"reason", "bad_frame"}}].counter.value), 1);
  EXPECT_EQ((refused[{{"reason", "other"}}].counter.value), 2);
}

TEST_F(SidecarMetricsTest, EdgeBandwidthOnlyForThisRanksPeers) {
  EXPECT_TRUE(metrics_.SetEdgeBandwidth(0, 1, Direction::kRecv, 3e9));
  EXPECT_TRUE(metrics_.SetEdgeBandwidth(0, 3, Direction::kSend, 4e9));
  EXPECT_TRUE(metrics_.SetEdgeBandwidth(0, 3, Direction::kSend, 5e9));
  EXPECT_FALSE(metrics_.SetEdgeBandwidth(0, 2, Direction::kSend, 1e9));  // this rank itself
  EXPECT_FALSE(metrics_.SetEdgeBandwidth(0, 4, Direction::kSend, 1e9));  // beyond the world
  EXPECT_FALSE(metrics_.SetEdgeBandwidth(0, -1, Direction::kRecv, 1e9));
  EXPECT_FALSE(metrics_.SetEdgeBandwidth(1, 3, Direction::kRecv, 1e9));  // no local rank 1
  auto edges = Series("ringleader_sidecar_edge_bandwidth_bytes_per_second");
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ((edges[{{"local_rank", "0"}, {"peer_rank", "1"}, {"direction", "recv"}}].gauge.value),
            3e9);
  EXPECT_EQ((edges[{{"local_rank", "0"}, {"peer_rank", "3"}, {"direction", "send"}}].gauge.value),
            5e9);
}

// Pod rank 2 of 4 with two local ranks holds communicator ranks 4 and 5 of 8: an edge between
// them is between two GPUs of this Pod, and each end is labelled by its own local rank.
TEST(SidecarMetricsLocalRanksTest, EdgesAreKeyedByLocalRankAndPeerCommunicatorRank) {
  prometheus::Registry registry;
  SidecarMetrics metrics(registry, /*rank=*/2, /*world_size=*/4, /*local_ranks=*/2);
  EXPECT_TRUE(metrics.SetEdgeBandwidth(0, 5, Direction::kSend, 1e9));
  EXPECT_TRUE(metrics.SetEdgeBandwidth(1, 4, Direction::kRecv, 2e9));
  EXPECT_TRUE(metrics.SetEdgeBandwidth(1, 7, Direction::kSend, 3e9));
  EXPECT_FALSE(metrics.SetEdgeBandwidth(1, 5, Direction::kSend, 1e9));  // local rank 1 is 5
  EXPECT_FALSE(metrics.SetEdgeBandwidth(0, 8, Direction::kSend, 1e9));  // beyond 8 ranks
  EXPECT_FALSE(metrics.SetEdgeBandwidth(2, 0, Direction::kSend, 1e9));  // no local rank 2
  const auto edges =
      testing::SeriesByLabels(registry, "ringleader_sidecar_edge_bandwidth_bytes_per_second");
  ASSERT_TRUE(edges.has_value());
  EXPECT_EQ(edges->size(), 3u);
}

TEST_F(SidecarMetricsTest, PreflightStateIsOneHot) {
  const auto state_values = [this] {
    std::map<std::string, double> values;
    for (const auto& [labels, metric] : Series("ringleader_sidecar_preflight_state")) {
      values[labels.at("state")] = metric.gauge.value;
    }
    return values;
  };
  EXPECT_EQ(state_values(), (std::map<std::string, double>{
                                {"pending", 1}, {"running", 0}, {"passed", 0}, {"failed", 0},
                                {"disabled", 0}}));
  metrics_.SetPreflightState(PreflightState::kRunning);
  metrics_.SetPreflightState(PreflightState::kFailed);
  EXPECT_EQ(state_values(), (std::map<std::string, double>{
                                {"pending", 0}, {"running", 0}, {"passed", 0}, {"failed", 1},
                                {"disabled", 0}}));
}

TEST_F(SidecarMetricsTest, InfoIsOneSeriesWithTheIdentityLabels) {
  metrics_.SetInfo({"gloo", "tcp", "", "network", "llama", "team-a"});
  metrics_.SetInfo({"nccl", "ib", "2.21.5", "gpus", "llama", "team-a"});
  const auto info = Series("ringleader_sidecar_info");
  ASSERT_EQ(info.size(), 1u);  // the first call's series is gone
  const Labels expected = {{"backend", "nccl"},  {"transport", "ib"}, {"nccl_version", "2.21.5"},
                           {"measures", "gpus"}, {"world_size", "4"}, {"rank", "2"},
                           {"job", "llama"},     {"namespace", "team-a"}};
  ASSERT_EQ(info.begin()->first, expected);
  EXPECT_EQ(info.begin()->second.gauge.value, 1);
}

TEST_F(SidecarMetricsTest, ThePreflightTransportIsOneSeriesAndTheFallbackAGauge) {
  EXPECT_EQ(Series("ringleader_sidecar_rdma_fallback").begin()->second.gauge.value, 0);
  metrics_.SetPreflightTransport("nccl", "NET/IB (mlx5_0:1)", true, false);
  metrics_.SetPreflightTransport("nccl", "NET/Socket (eth0)", true, true);
  const auto transport = Series("ringleader_sidecar_preflight_transport_info");
  ASSERT_EQ(transport.size(), 1u);
  const Labels expected = {{"backend", "nccl"},
                           {"transport", "NET/Socket (eth0)"},
                           {"rdma_requested", "true"},
                           {"rdma_fallback", "true"}};
  EXPECT_EQ(transport.begin()->first, expected);
  EXPECT_EQ(Series("ringleader_sidecar_rdma_fallback").begin()->second.gauge.value, 1);
}

TEST_F(SidecarMetricsTest, NoLabelCarriesATimestampOrSequence) {
  // Many probes over time add no series beyond the size buckets they cover.
  for (int i = 0; i < 200; ++i) {
    metrics_.ObserveProbe(Collective::kAllReduce, 16 << 20, 1e9 + i, 1e9 + i, 0.01);
    metrics_.CountProbeRun(Collective::kAllReduce, ProbeResult::kOk);
  }
  EXPECT_EQ(Series("ringleader_sidecar_bus_bandwidth_bytes_per_second").size(), 1u);
  EXPECT_EQ(Series("ringleader_sidecar_probe_runs_total").size(), 4u);
}

// The trainer store's series: every query and close reason from the start, the clients gauge
// following accepts and closes, and labels bounded whatever the network sends.
TEST(TrainerStoreMetricsTest, CountsClientsRequestsUnknownQueriesAndClosesWithBoundedLabels) {
  namespace ts = rendezvous::torch_store;
  prometheus::Registry registry;
  TrainerStoreMetrics metrics(registry);
  const auto series = [&](const std::string& name) {
    return testing::SeriesByLabels(registry, name).value_or(std::map<Labels, prometheus::ClientMetric>{});
  };
  EXPECT_EQ(series("ringleader_sidecar_trainer_store_requests_total").size(), ts::kQueryCount);
  EXPECT_EQ(series("ringleader_sidecar_trainer_store_closed_connections_total").size(), 7u);

  metrics.OnAccepted();
  metrics.OnAccepted();
  metrics.OnAccepted();
  metrics.OnClosed();
  EXPECT_EQ(series("ringleader_sidecar_trainer_store_clients").begin()->second.gauge.value, 2);
  EXPECT_EQ(series("ringleader_sidecar_trainer_store_connections_total").begin()->second.counter.value, 3);

  metrics.OnRequest(ts::Query::kWait);
  metrics.OnRequest(ts::Query::kWait);
  metrics.OnRequest(ts::Query::kCompareSet);
  const auto requests = series("ringleader_sidecar_trainer_store_requests_total");
  EXPECT_EQ(requests.at({{"query", "wait"}}).counter.value, 2);
  EXPECT_EQ(requests.at({{"query", "compare_set"}}).counter.value, 1);
  EXPECT_EQ(requests.at({{"query", "barrier"}}).counter.value, 0);

  // Every type byte of both dialects: at most 512 series, however many arrive.
  for (int round = 0; round < 2; ++round) {
    for (int type = 0; type < 256; ++type) {
      metrics.OnUnknownQuery(ts::Dialect::kTorch1, static_cast<std::uint8_t>(type));
      metrics.OnUnknownQuery(ts::Dialect::kTorch2, static_cast<std::uint8_t>(type));
    }
  }
  const auto unknown = series("ringleader_sidecar_trainer_store_unknown_queries_total");
  EXPECT_EQ(unknown.size(), 512u);
  EXPECT_EQ(unknown.at({{"dialect", "torch2"}, {"type", "66"}}).counter.value, 2);

  metrics.OnClosedForCause(rendezvous::torch_close::kEvicted);
  metrics.OnClosedForCause("a reason nobody listed");
  const auto closed = series("ringleader_sidecar_trainer_store_closed_connections_total");
  EXPECT_EQ(closed.size(), 7u);
  EXPECT_EQ(closed.at({{"reason", "evicted"}}).counter.value, 1);
  EXPECT_EQ(closed.at({{"reason", "other"}}).counter.value, 1);
}

}  // namespace
}  // namespace ringleader::sidecar
