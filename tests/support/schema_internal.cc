// Reading decoded schemas, Go-syntax regular expressions on RE2 with Go's error texts, and the
// apimachinery name validators the CRD and ObjectMeta checks share.
#include "tests/support/schema_internal.h"

#include <re2/re2.h>

#include <algorithm>
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

bool MapIsCorrelatable(const json& node) {
  const json* map_type = Field(node, kMapType);
  if (map_type == nullptr) {
    return true;
  }
  std::string value = map_type->is_string() ? map_type->get<std::string>() : "";
  return value == "granular" || value == "atomic";
}

std::string Child(const std::string& parent, std::string_view name) {
  return parent.empty() ? std::string(name) : parent + "." + std::string(name);
}

std::string Key(const std::string& parent, std::string_view key) {
  return parent + "[" + std::string(key) + "]";
}

std::string Index(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::optional<std::string> ValidFieldPath(std::string_view field_path, const json& schema) {
  const json* node = &schema;
  std::string path;
  bool started = false;  // as field.Path prints it: no dot before the first name, even ""
  auto step = [&](const std::string& name) {
    if (node == nullptr) {
      return false;
    }
    if (const json* properties = NonEmptyObject(*node, "properties")) {
      path = started ? path + "." + name : name;
      started = true;
      node = SubSchema(*properties, name);
      return node != nullptr;
    }
    if (!HasAdditionalProperties(*node)) {
      return false;
    }
    path = Key(path, name);
    started = true;
    node = AdditionalSchema(*node);
    return true;
  };
  std::size_t i = 0;
  while (i < field_path.size()) {
    if (field_path[i] == '.') {
      std::size_t end = std::min(field_path.find_first_of(".[]", i + 1), field_path.size());
      std::string name(field_path.substr(i + 1, end - i - 1));
      if (name.empty() || !step(name)) {
        return std::nullopt;
      }
      i = end;
    } else if (field_path[i] == '[') {
      if (i + 1 >= field_path.size() || field_path[i + 1] != '\'') {
        return std::nullopt;
      }
      std::size_t close = i + 2;
      while (close < field_path.size() &&
             !(field_path[close] == '\'' && field_path[close - 1] != '\\')) {
        ++close;
      }
      if (close + 1 >= field_path.size() || field_path[close + 1] != ']') {
        return std::nullopt;
      }
      std::string_view quoted = field_path.substr(i + 2, close - i - 2);
      std::string name;
      for (std::size_t k = 0; k < quoted.size(); ++k) {
        if (quoted[k] == '\\' && k + 1 < quoted.size()) {
          static constexpr std::string_view kEscapes = "abfnrtv'\\";
          static constexpr std::string_view kValues = "\a\b\f\n\r\t\v'\\";
          std::size_t which = kEscapes.find(quoted[++k]);
          if (which == std::string_view::npos) {
            return std::nullopt;
          }
          name += kValues[which];
        } else {
          name += quoted[k];
        }
      }
      if (!step(name)) {
        return std::nullopt;
      }
      i = close + 2;
    } else {
      return std::nullopt;
    }
  }
  return path;
}

std::string TrimSpace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  std::size_t start = text.find_first_not_of(kSpace);
  if (start == std::string_view::npos) {
    return "";
  }
  return std::string(text.substr(start, text.find_last_not_of(kSpace) - start + 1));
}

std::string GoPointer(std::string_view type, bool set) {
  return "(" + std::string(type) + ")(" + (set ? "0xc000000000" : "nil") + ")";
}

std::string UnmarshalError(const json& value, std::string_view target, bool integer_target) {
  std::string what;
  switch (value.type()) {
    case json::value_t::null:
      what = "null";
      break;
    case json::value_t::string:
      what = "string";
      break;
    case json::value_t::boolean:
      what = "bool";
      break;
    case json::value_t::array:
      what = "array";
      break;
    case json::value_t::object:
      what = "object";
      break;
    default:
      what = integer_target && value.is_number_float() ? "number " + GoJson(value) : "number";
  }
  return "json: cannot unmarshal " + what + " into Go " + std::string(target);
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

// The shape of most apimachinery validators: a length limit, then a pattern for the whole value.
std::vector<std::string> LengthAndFormatErrors(std::string_view value, int max_length,
                                               const std::string& format, std::string_view message,
                                               std::initializer_list<std::string_view> examples) {
  std::vector<std::string> errors;
  if (value.size() > static_cast<std::size_t>(max_length)) {
    errors.push_back(MaxLenError(max_length));
  }
  if (!FullMatch(value, format)) {
    errors.push_back(RegexError(message, format, examples));
  }
  return errors;
}

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
  return LengthAndFormatErrors(
      value, 63, std::string(kDns1035LabelFormat),
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
      "alphabetic character, and end with an alphanumeric character",
      {"my-name", "abc-123"});
}

std::vector<std::string> Dns1123LabelErrors(std::string_view value) {
  return LengthAndFormatErrors(
      value, 63, std::string(kDns1123LabelFormat),
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
      "must start and end with an alphanumeric character",
      {"my-name", "123-abc"});
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  return LengthAndFormatErrors(
      value, 253,
      std::string(kDns1123LabelFormat) + "(\\." + std::string(kDns1123LabelFormat) + ")*",
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
      "'.', and must start and end with an alphanumeric character",
      {"example.com"});
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
  return LengthAndFormatErrors(
      value, 63, "(" + std::string(kQualifiedNameFormat) + ")?",
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
      "'.', and must start and end with an alphanumeric character",
      {"MyValue", "my_value", "12345"});
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : std::string(separator)) + parts[i];
  }
  return out;
}

}  // namespace ringleader::schema::internal
