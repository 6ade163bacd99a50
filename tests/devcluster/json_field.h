// Reading a member deep inside a Kubernetes object without a chain of checks.
#pragma once

#include <initializer_list>

#include <nlohmann/json.hpp>

namespace ringleader::devcluster {

// object[path[0]][path[1]]..., or null where a step is missing or not an object.
inline const nlohmann::json& Field(const nlohmann::json& object, std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) {
      return kNull;
    }
    const auto it = at->find(key);
    if (it == at->end()) {
      return kNull;
    }
    at = &*it;
  }
  return *at;
}

}  // namespace ringleader::devcluster
