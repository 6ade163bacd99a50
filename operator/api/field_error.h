// A problem found in an API object, named by its field path ("spec.replicas") so a user knows
// exactly what to fix.
#pragma once

#include <string>
#include <vector>

namespace ringleader::api {

struct FieldError {
  std::string path;     // e.g. "spec.template.spec.containers[0].env[2].name"
  std::string message;  // e.g. "must be at least 1, got 0"

  // "spec.replicas: must be at least 1, got 0"
  std::string ToString() const { return path + ": " + message; }
  bool operator==(const FieldError&) const = default;
};

using FieldErrors = std::vector<FieldError>;

// All errors joined with "; ", for a condition message or an exception text.
std::string JoinErrors(const FieldErrors& errors);

}  // namespace ringleader::api
