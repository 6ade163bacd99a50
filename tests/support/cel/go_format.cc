// Go string quoting and Kubernetes field-error bodies (field.Error.ErrorBody).
#include "tests/support/cel/go_format.h"

#include <cstdio>

#include "tests/support/cel/ast.h"

namespace ringleader::cel {

std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (char32_t c : DecodeUtf8(s)) {
    switch (c) {
      case U'"':
        out += "\\\"";
        break;
      case U'\\':
        out += "\\\\";
        break;
      case U'\a':
        out += "\\a";
        break;
      case U'\b':
        out += "\\b";
        break;
      case U'\f':
        out += "\\f";
        break;
      case U'\n':
        out += "\\n";
        break;
      case U'\r':
        out += "\\r";
        break;
      case U'\t':
        out += "\\t";
        break;
      case U'\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
          out += buf;
        } else if (c == 0xFFFD) {
          out += "\\ufffd";
        } else {
          AppendUtf8(out, c);
        }
    }
  }
  return out + "\"";
}

std::string InvalidValue(const std::string& rendered_value, const std::string& detail) {
  std::string out = "Invalid value: " + rendered_value;
  return detail.empty() ? out : out + ": " + detail;
}

std::string RequiredValue(const std::string& detail) {
  return detail.empty() ? "Required value" : "Required value: " + detail;
}

std::string Forbidden(const std::string& detail) {
  return detail.empty() ? "Forbidden" : "Forbidden: " + detail;
}

std::string InternalError(const std::string& detail) {
  return detail.empty() ? "Internal error" : "Internal error: " + detail;
}

std::string DuplicateValue(const std::string& rendered_value) {
  return "Duplicate value: " + rendered_value;
}

std::string UnsupportedValue(const std::string& rendered_value,
                             const std::vector<std::string>& supported) {
  std::string out = "Unsupported value: " + rendered_value;
  if (!supported.empty()) {
    out += ": supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      out += (i > 0 ? ", " : "") + GoQuote(supported[i]);
    }
  }
  return out;
}

}  // namespace ringleader::cel
