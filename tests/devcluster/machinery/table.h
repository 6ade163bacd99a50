// meta.k8s.io/v1 Table responses (what `kubectl get` prints), CRD printer-column JSONPath, and
// kubectl's age formatting.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/devcluster/machinery/resource_registry.h"

namespace ringleader::devcluster {

// A duration as kubectl prints ages: "45s", "3m20s", "15m", "5h3m", "20h", "3d4h", "30d", "2y5d",
// "10y"; "<invalid>" for a negative duration beyond a second of clock skew.
std::string HumanDuration(std::chrono::nanoseconds duration);

// The values a printer-column JSONPath selects: `.a.b`, `{.a.b}`, `.a[0]`, `.a[-1:]`, `.a[*].b`,
// `.a[?(@.type=="Ready")].status` (== and !=, string, number or boolean literals), and
// `['key.with.dots']`. Nothing matched gives an empty vector. Throws ApiError BadRequest for a
// path it cannot parse.
std::vector<nlohmann::json> EvaluateJsonPath(const nlohmann::json& object, std::string_view path);

// A Table for `objects`: column Name (format "name") then info.columns; date columns print as
// ages relative to `now`; a column with nothing to show is a null cell. With
// include_object_metadata each row carries a PartialObjectMetadata (for -A and --show-labels).
nlohmann::json BuildTable(const ResourceInfo& info, const std::vector<nlohmann::json>& objects,
                          Time now, const std::string& list_resource_version,
                          bool include_object_metadata);

}  // namespace ringleader::devcluster
