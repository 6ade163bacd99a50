// Reading decoded schemas, Go-syntax regular expressions on RE2 with Go's error texts, and the
// apimachinery name validators the CRD and ObjectMeta checks share.
#include "tests/support/schema_internal.h"

#include <re2/re2.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace ringleader::schema::internal {

const json* Field(const json& node, std::string_view key) {
  if (!node.is_object()) {
    return nullptr;
  }
  auto it = node.find(key);
  return it == node.end() || it->is_null() ? nullptr : &*it;
}

const json* SubSchema(const json& node, std::string_view key) {
  const json* child = Field(node, key);
  return child != nullptr && child->is_object() ? child : nullptr;
}

bool Flag(const json& node, std::string_view key) {
  const json* value = Field(node, key);
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

std::string Text(const json& node, std::string_view key) {
  const json* value = Field(node, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

const json* NonEmptyObject(const json& node, std::string_view key) {
  const json* value = Field(node, key);
  return value != nullptr && value->is_object() && !value->empty() ? value : nullptr;
}

const json* NonEmptyArray(const json& node, std::string_view key) {
  const json* value = Field(node, key);
  return value != nullptr && value->is_array() && !value->empty() ? value : nullptr;
}

std::vector<std::string> Strings(const json& node, std::string_view key) {
  std::vector<std::string> out;
  if (const json* value = Field(node, key); value != nullptr && value->is_array()) {
    for (const json& item : *value) {
      if (item.is_string()) {
        out.push_back(item.get<std::string>());
      }
    }
  }
  return out;
}

const json* AdditionalSchema(const json& node) { return SubSchema(node, "additionalProperties"); }

bool HasAdditionalProperties(const json& node) {
  const json* value = Field(node, "additionalProperties");
  return value != nullptr && (value->is_object() || value->is_boolean());
}

namespace {

// Go's regexp/syntax ErrorCode texts for RE2's codes (the two libraries share their design).
std::string GoErrorCode(re2::RE2::ErrorCode code) {
  switch (code) {
    case re2::RE2::ErrorBadEscape:
      return "invalid escape sequence";
    case re2::RE2::ErrorBadCharClass:
      return "invalid character class";
    case re2::RE2::ErrorBadCharRange:
      return "invalid character class range";
    case re2::RE2::ErrorMissingBracket:
      return "missing closing ]";
    case re2::RE2::ErrorMissingParen:
      return "missing closing )";
    case re2::RE2::ErrorUnexpectedParen:
      return "unexpected )";
    case re2::RE2::ErrorTrailingBackslash:
      return "trailing backslash at end of expression";
    case re2::RE2::ErrorRepeatArgument:
      return "missing argument to repetition operator";
    case re2::RE2::ErrorRepeatSize:
      return "invalid repeat count";
    case re2::RE2::ErrorRepeatOp:
      return "invalid nested repetition operator";
    case re2::RE2::ErrorBadPerlOp:
      return "invalid or unsupported Perl syntax";
    case re2::RE2::ErrorBadUTF8:
      return "invalid UTF-8";
    case re2::RE2::ErrorBadNamedCapture:
      return "invalid named capture";
    case re2::RE2::ErrorPatternTooLarge:
      return "expression too large";
    default:
      return "regexp/syntax: internal error";
  }
}

std::string RegexError(std::string_view message, std::string_view format,
                       std::initializer_list<std::string_view> examples) {
  std::string out(message);
  out += " (e.g. ";
  bool first = true;
  for (std::string_view example : examples) {
    out += first ? "" : " or ";
    first = false;
    out += "'" + std::string(example) + "', ";
  }
  return out + "regex used for validation is '" + std::string(format) + "')";
}

std::string MaxLenError(int length) {
  return "must be no more than " + std::to_string(length) + " characters";
}

constexpr std::string_view kDns1123LabelFormat = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1035LabelFormat = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kQualifiedNameFormat = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

}  // namespace

GoRegexp CompileGoRegexp(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, GoRegexp> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(pattern); it != cache.end()) {
    return it->second;
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<re2::RE2>(pattern, options);
  GoRegexp compiled;
  if (re->ok()) {
    compiled.re = std::move(re);
  } else {
    compiled.error =
        "error parsing regexp: " + GoErrorCode(re->error_code()) + ": `" + re->error_arg() + "`";
  }
  if (cache.size() > 4096) {
    cache.clear();
  }
  cache.emplace(pattern, compiled);
  return compiled;
}

bool GoRegexpMatch(const GoRegexp& regexp, std::string_view text) {
  return regexp.re != nullptr && re2::RE2::PartialMatch(text, *regexp.re);
}

bool FullMatch(std::string_view text, const std::string& pattern) {
  GoRegexp compiled = CompileGoRegexp(pattern);
  if (compiled.re == nullptr) {
    std::abort();  // a fixed pattern in this file is broken
  }
  return re2::RE2::FullMatch(text, *compiled.re);
}

std::size_t RuneCount(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size();) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    std::size_t length = lead < 0x80    ? 1
                         : lead >= 0xf0 ? 4
                         : lead >= 0xe0 ? 3
                         : lead >= 0xc0 ? 2
                                        : 1;
    bool valid = i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    }
    i += valid ? length : 1;
    ++count;
  }
  return count;
}

std::vector<std::string> Dns1035LabelErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) {
    errors.push_back(MaxLenError(63));
  }
  if (!FullMatch(value, std::string(kDns1035LabelFormat))) {
    errors.push_back(RegexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
        "an alphabetic character, and end with an alphanumeric character",
        kDns1035LabelFormat, {"my-name", "abc-123"}));
  }
  return errors;
}

std::vector<std::string> Dns1123LabelErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) {
    errors.push_back(MaxLenError(63));
  }
  if (!FullMatch(value, std::string(kDns1123LabelFormat))) {
    errors.push_back(RegexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character",
        kDns1123LabelFormat, {"my-name", "123-abc"}));
  }
  return errors;
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 253) {
    errors.push_back(MaxLenError(253));
  }
  std::string format =
      std::string(kDns1123LabelFormat) + "(\\." + std::string(kDns1123LabelFormat) + ")*";
  if (!FullMatch(value, format)) {
    errors.push_back(RegexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character",
        format, {"example.com"}));
  }
  return errors;
}

std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  static constexpr std::string_view kMessage =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character";
  std::vector<std::string> errors;
  std::string_view name = value;
  std::size_t slashes = std::count(value.begin(), value.end(), '/');
  if (slashes > 1) {
    errors.push_back("a qualified name " +
                     RegexError(kMessage, kQualifiedNameFormat, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errors;
  }
  if (slashes == 1) {
    std::string_view prefix = value.substr(0, value.find('/'));
    name = value.substr(value.find('/') + 1);
    if (prefix.empty()) {
      errors.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& message : Dns1123SubdomainErrors(prefix)) {
        errors.push_back("prefix part " + message);
      }
    }
  }
  if (name.empty()) {
    errors.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errors.push_back("name part " + MaxLenError(63));
  }
  if (!FullMatch(name, std::string(kQualifiedNameFormat))) {
    errors.push_back("name part " +
                     RegexError(kMessage, kQualifiedNameFormat, {"MyName", "my.name", "123-abc"}));
  }
  return errors;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) {
    errors.push_back(MaxLenError(63));
  }
  std::string format = "(" + std::string(kQualifiedNameFormat) + ")?";
  if (!FullMatch(value, format)) {
    errors.push_back(RegexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character",
        format, {"MyValue", "my_value", "12345"}));
  }
  return errors;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : std::string(separator)) + parts[i];
  }
  return out;
}

}  // namespace ringleader::schema::internal
