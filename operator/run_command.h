// `ringleader-operator run`: the operator itself - connects to the API server, elects a leader
// (optional), serves metrics and probes, and reconciles TrainingJobs until SIGTERM or SIGINT.
#pragma once

#include <string>
#include <vector>

namespace ringleader::cli {

// Returns the process exit code: 0 after a signal, 1 when leadership was lost or the operator
// could not start, 2 for bad flags.
int RunOperator(const std::vector<std::string>& args);

}  // namespace ringleader::cli
