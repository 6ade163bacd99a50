// The operator's metrics, read back through Registry::Collect() as a scrape would see them.
#include "operator/runtime/operator_metrics.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "tests/support/metric_series.h"

namespace ringleader::runtime {
namespace {

using Labels = testing::MetricLabels;

class OperatorMetricsTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  OperatorMetrics metrics_{registry_};

  std::optional<prometheus::MetricFamily> Family(const std::string& name) {
    return testing::FindFamily(registry_, name);
  }

  // Every series of the family, by its labels.
  std::map<Labels, prometheus::ClientMetric> Series(const std::string& name) {
    auto series = testing::SeriesByLabels(registry_, name);
    EXPECT_TRUE(series.has_value()) << name;
    return series.value_or(std::map<Labels, prometheus::ClientMetric>{});
  }

  prometheus::ClientMetric Only(const std::string& name) {
    const auto series = Series(name);
    EXPECT_EQ(series.size(), 1u) << name;
    return series.empty() ? prometheus::ClientMetric{} : series.begin()->second;
  }
};

TEST_F(OperatorMetricsTest, RegistersEveryFamilyWithItsType) {
  std::vector<std::pair<std::string, prometheus::MetricType>> expected = {
      {"ringleader_operator_reconciles_total", prometheus::MetricType::Counter},
      {"ringleader_operator_reconcile_duration_seconds", prometheus::MetricType::Histogram},
      {"ringleader_operator_queue_depth", prometheus::MetricType::Gauge},
      {"ringleader_operator_queue_wait_seconds", prometheus::MetricType::Histogram},
      {"ringleader_operator_jobs", prometheus::MetricType::Gauge},
      {"ringleader_operator_ports_in_use", prometheus::MetricType::Gauge},
      {"ringleader_operator_ports_capacity", prometheus::MetricType::Gauge},
      {"ringleader_operator_leader", prometheus::MetricType::Gauge},
      {"ringleader_operator_creates_refused_total", prometheus::MetricType::Counter},
      {"ringleader_operator_jobs_creates_refused", prometheus::MetricType::Gauge},
  };
  // prometheus-cpp leaves out a family with no series: the Events' appears with its first one.
  EXPECT_FALSE(Family("ringleader_operator_events_total").has_value());
  metrics_.CountEvent("Normal", "Created");
  expected.emplace_back("ringleader_operator_events_total", prometheus::MetricType::Counter);
  for (const auto& [name, type] : expected) {
    const std::optional<prometheus::MetricFamily> family = Family(name);
    ASSERT_TRUE(family.has_value()) << name;
    EXPECT_EQ(family->type, type) << name;
    EXPECT_FALSE(family->help.empty()) << name;
  }
}

TEST_F(OperatorMetricsTest, CountsReconcilesByResultFromZero) {
  auto series = Series("ringleader_operator_reconciles_total");
  ASSERT_EQ(series.size(), 4u);  // every result exists before the first reconcile
  for (const char* result : {"success", "requeue", "conflict", "error"}) {
    EXPECT_EQ((series[{{"result", result}}].counter.value), 0) << result;
  }
  metrics_.ObserveReconcile("success", 0.002);
  metrics_.ObserveReconcile("success", 0.010);
  metrics_.ObserveReconcile("conflict", 0.5);
  series = Series("ringleader_operator_reconciles_total");
  EXPECT_EQ((series[{{"result", "success"}}].counter.value), 2);
  EXPECT_EQ((series[{{"result", "conflict"}}].counter.value), 1);
  EXPECT_EQ((series[{{"result", "error"}}].counter.value), 0);
}

TEST_F(OperatorMetricsTest, ReconcileDurationBucketsSpanOneMillisecondToAMinute) {
  metrics_.ObserveReconcile("success", 0.0005);
  metrics_.ObserveReconcile("requeue", 0.003);
  metrics_.ObserveReconcile("error", 45);
  const prometheus::ClientMetric::Histogram histogram =
      Only("ringleader_operator_reconcile_duration_seconds").histogram;
  EXPECT_EQ(histogram.sample_count, 3u);
  EXPECT_DOUBLE_EQ(histogram.sample_sum, 45.0035);
  ASSERT_GE(histogram.bucket.size(), 3u);
  EXPECT_DOUBLE_EQ(histogram.bucket.front().upper_bound, 0.001);
  EXPECT_EQ(histogram.bucket.front().cumulative_count, 1u);
  // The last finite bound covers a minute; +Inf follows it.
  const auto& last_finite = histogram.bucket[histogram.bucket.size() - 2];
  EXPECT_GE(last_finite.upper_bound, 60);
  EXPECT_LE(last_finite.upper_bound, 120);
  EXPECT_EQ(last_finite.cumulative_count, 3u);
  for (std::size_t i = 1; i + 1 < histogram.bucket.size(); ++i) {
    EXPECT_DOUBLE_EQ(histogram.bucket[i].upper_bound, 2 * histogram.bucket[i - 1].upper_bound);
  }
}

TEST_F(OperatorMetricsTest, QueueDepthAndWait) {
  metrics_.SetQueueDepth(7);
  metrics_.ObserveQueueWait(0.25);
  metrics_.ObserveQueueWait(1.5);
  EXPECT_EQ(Only("ringleader_operator_queue_depth").gauge.value, 7);
  const auto histogram = Only("ringleader_operator_queue_wait_seconds").histogram;
  EXPECT_EQ(histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(histogram.sample_sum, 1.75);
  metrics_.SetQueueDepth(0);
  EXPECT_EQ(Only("ringleader_operator_queue_depth").gauge.value, 0);
}

TEST_F(OperatorMetricsTest, JobsExportAllSevenStatesAndResetMissingOnes) {
  auto series = Series("ringleader_operator_jobs");
  ASSERT_EQ(series.size(), 7u);
  for (const char* state :
       {"Pending", "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"}) {
    EXPECT_EQ((series[{{"state", state}}].gauge.value), 0) << state;
  }

  metrics_.SetJobsByState({{"Running", 5}, {"Failed", 2}, {"Pending", 1}});
  series = Series("ringleader_operator_jobs");
  EXPECT_EQ((series[{{"state", "Running"}}].gauge.value), 5);
  EXPECT_EQ((series[{{"state", "Failed"}}].gauge.value), 2);
  EXPECT_EQ((series[{{"state", "Pending"}}].gauge.value), 1);

  // A state left out of the next call drops to zero; an unknown one adds no series.
  metrics_.SetJobsByState({{"Running", 3}, {"Bogus", 9}});
  series = Series("ringleader_operator_jobs");
  EXPECT_EQ(series.size(), 7u);
  EXPECT_EQ((series[{{"state", "Running"}}].gauge.value), 3);
  EXPECT_EQ((series[{{"state", "Failed"}}].gauge.value), 0);
  EXPECT_EQ((series[{{"state", "Pending"}}].gauge.value), 0);
}

TEST_F(OperatorMetricsTest, PortsAndLeader) {
  metrics_.SetPorts(12, 4536);
  EXPECT_EQ(Only("ringleader_operator_ports_in_use").gauge.value, 12);
  EXPECT_EQ(Only("ringleader_operator_ports_capacity").gauge.value, 4536);
  EXPECT_EQ(Only("ringleader_operator_leader").gauge.value, 0);
  metrics_.SetLeader(true);
  EXPECT_EQ(Only("ringleader_operator_leader").gauge.value, 1);
  metrics_.SetLeader(false);
  EXPECT_EQ(Only("ringleader_operator_leader").gauge.value, 0);
}

TEST_F(OperatorMetricsTest, CountsEventsByTypeAndReason) {
  metrics_.CountEvent("Normal", "Created");
  metrics_.CountEvent("Normal", "Created");
  metrics_.CountEvent("Warning", "PreflightFailed");
  auto series = Series("ringleader_operator_events_total");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ((series[{{"type", "Normal"}, {"reason", "Created"}}].counter.value), 2);
  EXPECT_EQ((series[{{"type", "Warning"}, {"reason", "PreflightFailed"}}].counter.value), 1);
}

TEST_F(OperatorMetricsTest, CountsRefusedCreatesByKindAndReasonFromZero) {
  auto series = Series("ringleader_operator_creates_refused_total");
  // Pod, Service, Secret, NetworkPolicy, PodGroup x Forbidden, Invalid, BadRequest, NameConflict
  EXPECT_EQ(series.size(), 20u);
  metrics_.CountCreateRefused("Pod", "Forbidden");
  metrics_.CountCreateRefused("Pod", "Forbidden");
  metrics_.CountCreateRefused("Pod", "NameConflict");
  metrics_.CountCreateRefused("Pod", "Teapot");  // an unexpected reason adds one series, not one per value
  series = Series("ringleader_operator_creates_refused_total");
  EXPECT_EQ((series[{{"kind", "Pod"}, {"reason", "Forbidden"}}].counter.value), 2);
  EXPECT_EQ((series[{{"kind", "Pod"}, {"reason", "NameConflict"}}].counter.value), 1);
  EXPECT_EQ((series[{{"kind", "Pod"}, {"reason", "other"}}].counter.value), 1);
}

TEST_F(OperatorMetricsTest, JobsWithRefusedCreatesExportBothReasonsAndResetMissingOnes) {
  metrics_.SetJobsWithRefusedCreates({{"CreateRefused", 2}, {"NameConflict", 1}});
  metrics_.SetJobsWithRefusedCreates({{"CreateRefused", 1}});
  auto series = Series("ringleader_operator_jobs_creates_refused");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ((series[{{"reason", "CreateRefused"}}].gauge.value), 1);
  EXPECT_EQ((series[{{"reason", "NameConflict"}}].gauge.value), 0);
}

TEST_F(OperatorMetricsTest, UnschedulableJobsExportKnownReasonsAndFoldOthersIntoOther) {
  auto series = Series("ringleader_operator_jobs_unschedulable");
  EXPECT_EQ(series.size(), 5u);  // every reason from the start, at 0
  metrics_.SetUnschedulableJobs({{"Unschedulable", 2}, {"SchedulingGated", 1}, {"VolcanoQueueClosed", 1}, {"Odd", 2}});
  series = Series("ringleader_operator_jobs_unschedulable");
  ASSERT_EQ(series.size(), 5u);
  EXPECT_EQ((series[{{"reason", "Unschedulable"}}].gauge.value), 2);
  EXPECT_EQ((series[{{"reason", "SchedulingGated"}}].gauge.value), 1);
  EXPECT_EQ((series[{{"reason", "other"}}].gauge.value), 3);
  metrics_.SetUnschedulableJobs({});
  series = Series("ringleader_operator_jobs_unschedulable");
  EXPECT_EQ((series[{{"reason", "Unschedulable"}}].gauge.value), 0);
  EXPECT_EQ((series[{{"reason", "other"}}].gauge.value), 0);
}

}  // namespace
}  // namespace ringleader::runtime
