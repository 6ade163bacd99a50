// Reaching a member deep inside a Kubernetes object without a chain of checks.
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

// object[path[0]]...[path[n-1]] for writing: each step made an object, and the last an array,
// where missing or of another type (a Pod's status.conditions before anyone wrote one).
inline nlohmann::json& ArrayFieldForWrite(nlohmann::json& object, std::initializer_list<const char*> path) {
  nlohmann::json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) {
      *at = nlohmann::json::object();
    }
    at = &(*at)[key];
  }
  if (!at->is_array()) {
    *at = nlohmann::json::array();
  }
  return *at;
}

}  // namespace ringleader::devcluster
