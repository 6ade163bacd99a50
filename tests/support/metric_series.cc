#include "tests/support/metric_series.h"

namespace ringleader::testing {

std::optional<prometheus::MetricFamily> FindFamily(const prometheus::Collectable& registry,
                                                   const std::string& name) {
  for (prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == name) {
      return family;
    }
  }
  return std::nullopt;
}

std::optional<std::map<MetricLabels, prometheus::ClientMetric>> SeriesByLabels(
    const prometheus::Collectable& registry, const std::string& name) {
  const std::optional<prometheus::MetricFamily> family = FindFamily(registry, name);
  if (!family) {
    return std::nullopt;
  }
  std::map<MetricLabels, prometheus::ClientMetric> series;
  for (const prometheus::ClientMetric& metric : family->metric) {
    MetricLabels labels;
    for (const auto& label : metric.label) {
      labels[label.name] = label.value;
    }
    series[labels] = metric;
  }
  return series;
}

}  // namespace ringleader::testing
