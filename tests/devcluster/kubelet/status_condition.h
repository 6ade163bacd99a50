// The condition of one type in a Node's or Pod's status, for the node agent's status tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ringleader::devcluster::kubelet {

// status["conditions"]'s entry of `type`, or null when there is none.
inline const nlohmann::json& ConditionOf(const nlohmann::json& status, const std::string& type) {
  for (const nlohmann::json& condition : status["conditions"]) {
    if (condition["type"] == type) {
      return condition;
    }
  }
  static const nlohmann::json kNone;
  return kNone;
}

}  // namespace ringleader::devcluster::kubelet
