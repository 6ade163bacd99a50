// Joining field errors into one message.
#include "operator/api/field_error.h"

namespace ringleader::api {

std::string JoinErrors(const FieldErrors& errors) {
  std::string out;
  for (const FieldError& error : errors) {
    if (!out.empty()) {
      out += "; ";
    }
    out += error.ToString();
  }
  return out;
}

}  // namespace ringleader::api
