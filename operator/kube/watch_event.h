// One event of a Kubernetes watch stream.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

namespace ringleader::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR".
std::string_view WatchEventTypeName(WatchEventType type);
std::optional<WatchEventType> ParseWatchEventType(std::string_view name);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object; for kError a metav1.Status, for kBookmark an object with only
  // metadata.resourceVersion.
  nlohmann::json object;
};

// object.metadata.resourceVersion, or "" when absent.
std::string ResourceVersionOf(const nlohmann::json& object);

}  // namespace ringleader::kube
