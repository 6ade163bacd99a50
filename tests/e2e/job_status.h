// Reading a TrainingJob as `kubectl get trainingjob -o json` shows it: its state, its conditions
// and its Events, one definition for every end-to-end test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/end_to_end.h"

namespace ringleader::testing {

// status.state; "" before the operator wrote one (or when `job` is no object, as after a wait
// that timed out), so a failed wait fails the assertion rather than throwing.
std::string JobState(const nlohmann::json& job);
// The job ended: Succeeded or Failed.
bool JobFinished(const nlohmann::json& job);
bool JobRunning(const nlohmann::json& job);

// The job's condition `type` in status.conditions, pointing into `job` itself; nullptr when there
// is none (no status, no conditions, or `job` no object).
const nlohmann::json* FindJobCondition(const nlohmann::json& job, const std::string& type);
// A pointer into a temporary would dangle at once: callers keep the job in a variable.
const nlohmann::json* FindJobCondition(const nlohmann::json&& job, const std::string& type) = delete;
// The job has condition `type` with this status ("True", "False", "Unknown").
bool JobConditionIs(const nlohmann::json& job, const std::string& type, const std::string& status);

// The messages of the Events about the object named `job` with this reason, oldest first as
// `kubectl get events -o json` lists them; none when kubectl fails.
std::vector<std::string> JobEventMessages(EndToEnd& bed, const std::string& job, const std::string& reason);

}  // namespace ringleader::testing
