// `ringleader-operator render` and `validate`: run the planner offline on a TrainingJob file and
// print what the operator would create (like `helm template`), or the validation errors.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ringleader::cli {

// Returns the process exit code: 0 on success, 1 for an invalid job, 2 for bad usage or input.
int RunRender(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ringleader::cli
