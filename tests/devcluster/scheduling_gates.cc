// The scheduling gate rules of kube-apiserver's Pod strategy and validation.
#include "tests/devcluster/scheduling_gates.h"

#include <map>
#include <string>

#include "tests/devcluster/json_field.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

const json& Gates(const json& pod) {
  static const json kNone = json::array();
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) {
    return kNone;
  }
  const auto gates = pod["spec"].find("schedulingGates");
  return gates != pod["spec"].end() && gates->is_array() ? *gates : kNone;
}

std::string GateName(const json& gate) {
  if (!gate.is_object()) {
    return "";
  }
  const auto name = gate.find("name");
  return name != gate.end() && name->is_string() ? name->get<std::string>() : "";
}

}  // namespace

bool HasSchedulingGates(const json& pod) { return !Gates(pod).empty(); }

void AddSchedulingGatedCondition(json& pod) {
  if (!HasSchedulingGates(pod)) {
    return;
  }
  json& conditions = ArrayFieldForWrite(pod, {"status", "conditions"});
  for (const json& condition : conditions) {
    if (condition.is_object() && condition.value("type", json()) == "PodScheduled") {
      return;
    }
  }
  conditions.push_back({{"type", "PodScheduled"},
                        {"status", "False"},
                        {"lastProbeTime", nullptr},
                        {"lastTransitionTime", nullptr},
                        {"reason", "SchedulingGated"},
                        {"message", "Scheduling is blocked due to non-empty scheduling gates"}});
}

std::vector<schema::SchemaError> SchedulingGateCreateErrors(const json& pod) {
  if (!HasSchedulingGates(pod)) {
    return {};
  }
  const json& node = pod["spec"].value("nodeName", json());
  if (!node.is_string() || node.get<std::string>().empty()) {
    return {};
  }
  return {schema::Forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")};
}

std::vector<schema::SchemaError> SchedulingGateUpdateErrors(const json& current, const json& updated) {
  const json& gates = Gates(updated);
  if (gates.empty()) {
    return {};
  }
  // Each new name at the last index it appears at, as the server's map of names to indices keeps it.
  std::map<std::string, std::size_t> added;
  for (std::size_t i = 0; i < gates.size(); ++i) {
    added[GateName(gates[i])] = i;
  }
  for (const json& gate : Gates(current)) {
    added.erase(GateName(gate));
  }
  std::map<std::size_t, std::string> by_index;
  for (const auto& [name, index] : added) {
    by_index.emplace(index, name);
  }
  std::vector<schema::SchemaError> errors;
  for (const auto& [index, name] : by_index) {
    errors.push_back(schema::Forbidden("spec.schedulingGates[" + std::to_string(index) + "].name",
                                       "only deletion is allowed, but found new scheduling gate '" + name + "'"));
  }
  return errors;
}

}  // namespace ringleader::devcluster
