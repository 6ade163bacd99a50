// What the api tests check validation errors with: the errors of parsing and validating a
// TrainingJob as strings, and a matcher for one error at a field path.
#pragma once

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/api/validation.h"

namespace ringleader::api::testing {

// ParseAndValidate's errors, each as its ToString().
inline std::vector<std::string> Errors(const nlohmann::json& object) {
  TrainingJob job;
  std::vector<std::string> out;
  for (const FieldError& error : ParseAndValidate(object, ValidationOptions{}, &job)) {
    out.push_back(error.ToString());
  }
  return out;
}

// One error's ToString(): exactly `path`, and a message that mentions `text`.
inline ::testing::Matcher<const std::string&> ErrorAt(const std::string& path, const std::string& text) {
  return ::testing::AllOf(::testing::StartsWith(path + ": "), ::testing::HasSubstr(text));
}

}  // namespace ringleader::api::testing
