// Go's text forms that Kubernetes error messages are built from: strconv.Quote (%q), and the
// field-error bodies of k8s.io/apimachinery/pkg/util/validation/field.
#pragma once

#include <string>
#include <vector>

namespace ringleader::cel {

// strconv.Quote: double quotes, Go escapes for quotes, backslashes and control characters.
std::string GoQuote(const std::string& s);

// field.Invalid(path, value, detail).ErrorBody() where value is already rendered
// ("\"object\"", "false", a %#v struct): "Invalid value: <value>: <detail>".
std::string InvalidValue(const std::string& rendered_value, const std::string& detail);
// field.Required / Forbidden / InternalError / Duplicate / NotSupported bodies.
std::string RequiredValue(const std::string& detail);
std::string Forbidden(const std::string& detail);
std::string InternalError(const std::string& detail);
std::string DuplicateValue(const std::string& rendered_value);
std::string UnsupportedValue(const std::string& rendered_value,
                             const std::vector<std::string>& supported);

}  // namespace ringleader::cel
