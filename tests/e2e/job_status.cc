#include "tests/e2e/job_status.h"

namespace ringleader::testing {

using nlohmann::json;

std::string JobState(const json& job) {
  if (!job.is_object()) {
    return "";
  }
  return job.value("status", json::object()).value("state", "");
}

bool JobFinished(const json& job) {
  const std::string state = JobState(job);
  return state == "Succeeded" || state == "Failed";
}

bool JobRunning(const json& job) { return JobState(job) == "Running"; }

const json* FindJobCondition(const json& job, const std::string& type) {
  // find() on the const object, never operator[]: a missing key must not be read or inserted.
  if (!job.is_object()) {
    return nullptr;
  }
  const auto status = job.find("status");
  if (status == job.end() || !status->is_object()) {
    return nullptr;
  }
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) {
    return nullptr;
  }
  for (const json& condition : *conditions) {
    if (condition.is_object() && condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool JobConditionIs(const json& job, const std::string& type, const std::string& status) {
  const json* condition = FindJobCondition(job, type);
  return condition != nullptr && condition->value("status", "") == status;
}

std::vector<std::string> JobEventMessages(EndToEnd& bed, const std::string& job, const std::string& reason) {
  std::vector<std::string> messages;
  const CommandOutput got = bed.Kubectl({"get", "events", "-o", "json"});
  if (got.exit_code != 0) {
    return messages;
  }
  const json events = json::parse(got.output, nullptr, false);
  if (!events.is_object()) {
    return messages;
  }
  for (const json& event : events.value("items", json::array())) {
    if (event.value("reason", "") == reason &&
        event.value("involvedObject", json::object()).value("name", "") == job) {
      messages.push_back(event.value("message", ""));
    }
  }
  return messages;
}

}  // namespace ringleader::testing
