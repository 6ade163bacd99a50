// Kubernetes' declared CEL types for structural schemas (apiserver/pkg/cel/common/schemas.go):
// which schema nodes CEL sees, under which escaped field names, and their size bounds.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/support/cel/types.h"

namespace ringleader::cel {

// The request size bound Kubernetes estimates unbounded values from (3 MiB).
inline constexpr int64_t kMaxRequestSizeBytes = 3 * 1024 * 1024;

// The declared type of `schema`, or null where Kubernetes exposes nothing to CEL (no type,
// arrays whose items are not exposed, ...). `resource_root` adds apiVersion, kind and
// metadata (name and generateName only) as the API server does for the root of a custom
// resource and of x-kubernetes-embedded-resource objects. Object types are named
// `type_name`, their fields `type_name.field`, list items `.@idx` and map values `.@elem`.
// The returned types point into `schema`, which must outlive them.
TypePtr SchemaDeclType(const nlohmann::json& schema, bool resource_root,
                       const std::string& type_name);

// A property name as a CEL identifier: reserved words become __word__, "__" __underscores__,
// "." __dot__, "-" __dash__, "/" __slash__; names that cannot be escaped give nullopt.
std::optional<std::string> EscapePropertyName(const std::string& name);

}  // namespace ringleader::cel
