// Reading metrics back in unit tests: a family by name, and its series keyed by their labels,
// straight from Collect() (no HTTP).
#pragma once

#include <map>
#include <optional>
#include <string>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace ringleader::testing {

using MetricLabels = std::map<std::string, std::string>;

std::optional<prometheus::MetricFamily> FindFamily(const prometheus::Collectable& registry,
                                                   const std::string& name);

// Every series of the family by its labels; nullopt when there is no such family.
std::optional<std::map<MetricLabels, prometheus::ClientMetric>> SeriesByLabels(
    const prometheus::Collectable& registry, const std::string& name);

}  // namespace ringleader::testing
