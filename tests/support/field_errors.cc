// Field errors in the 1.32 API server's words, and Go's formatting of values (strconv.Quote, %v,
// %#v, encoding/json) so that a bad value prints as the real server prints it.
#include "tests/support/field_errors.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace ringleader::schema {
namespace {

using nlohmann::json;

std::string WithDetail(std::string text, std::string_view detail) {
  if (!detail.empty()) {
    text += ": ";
    text += detail;
  }
  return text;
}

SchemaError Make(std::string path, std::string message, ErrorType type) {
  SchemaError error;
  error.path = std::move(path);
  error.message = std::move(message);
  error.type = type;
  return error;
}

// Decodes one UTF-8 sequence at `text[i]`; returns the rune and its length, or -1 and 1 for an
// invalid byte (as Go's utf8.DecodeRuneInString reports RuneError with width 1).
std::pair<std::int32_t, std::size_t> DecodeRune(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) {
    return {lead, 1};
  }
  std::size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || i + length > text.size()) {
    return {-1, 1};
  }
  std::int32_t rune = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) {
      return {-1, 1};
    }
    rune = (rune << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr std::int32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (rune < kMinForLength[length] || rune > 0x10ffff || (rune >= 0xd800 && rune <= 0xdfff)) {
    return {-1, 1};
  }
  return {rune, length};
}

// unicode.IsPrint for the runes that matter in messages: letters, marks, numbers, punctuation,
// symbols and the ASCII space; separators, format characters and private use are not.
bool IsPrint(std::int32_t rune) {
  if (rune < 0x80) {
    return rune >= 0x20 && rune < 0x7f;
  }
  if (rune < 0xa1 || rune == 0xad || rune == 0x1680 || (rune >= 0x2000 && rune <= 0x200f) ||
      (rune >= 0x2028 && rune <= 0x202f) || (rune >= 0x205f && rune <= 0x206f) || rune == 0x3000 ||
      (rune >= 0xe000 && rune <= 0xf8ff) || rune == 0xfeff || (rune >= 0xfff9 && rune <= 0xfffb) ||
      rune >= 0xf0000) {
    return false;
  }
  return true;
}

void AppendHex(std::string& out, const char* prefix, unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%s%0*x", prefix, digits, value);
  out += buffer;
}

// %#v of a value inside a map[string]interface{} or []interface{}.
void AppendSharpV(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      out += "interface {}(nil)";
      return;
    case json::value_t::object: {
      out += "map[string]interface {}{";
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {  // nlohmann objects iterate sorted
        out += first ? "" : ", ";
        first = false;
        out += GoQuote(it.key()) + ":";
        AppendSharpV(out, *it);
      }
      out += "}";
      return;
    }
    case json::value_t::array: {
      out += "[]interface {}{";
      for (std::size_t i = 0; i < value.size(); ++i) {
        out += i == 0 ? "" : ", ";
        AppendSharpV(out, value[i]);
      }
      out += "}";
      return;
    }
    default:
      out += GoValue(value);  // scalars print as field errors print them
  }
}

// encoding/json's float64: 'f' format, 'e' below 1e-6 and from 1e21, shortest digits.
std::string GoJsonFloat(double value) {
  double magnitude = std::abs(value);
  char buffer[64];
  if (magnitude != 0 && (magnitude < 1e-6 || magnitude >= 1e21)) {
    auto result =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    std::string text(buffer, result.ptr);
    // Go writes e-07 as e-7: no leading zeros in the exponent, but at least one digit.
    std::size_t digits = text.find('e') + 2;
    text.erase(digits, std::min(text.find_first_not_of('0', digits), text.size() - 1) - digits);
    return text;
  }
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  return std::string(buffer, result.ptr);
}

void AppendGoJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    auto [rune, length] = DecodeRune(text, i);
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (rune < 0) {
      out += "\\ufffd";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (rune < 0x20 || c == '<' || c == '>' || c == '&' || rune == 0x2028 ||
               rune == 0x2029) {
      AppendHex(out, "\\u", static_cast<unsigned>(rune), 4);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  out += '"';
}

void AppendGoJson(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out += first ? "" : ",";
        first = false;
        AppendGoJsonString(out, it.key());
        out += ':';
        AppendGoJson(out, *it);
      }
      out += '}';
      return;
    }
    case json::value_t::array:
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        out += i == 0 ? "" : ",";
        AppendGoJson(out, value[i]);
      }
      out += ']';
      return;
    case json::value_t::string:
      AppendGoJsonString(out, value.get_ref<const std::string&>());
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      out += IsGoInt64(value) ? std::to_string(value.get<std::int64_t>())
                              : GoJsonFloat(AsDouble(value));
      return;
    default:
      out += value.dump();
  }
}

}  // namespace

std::string SchemaError::ToString() const { return path.empty() ? message : path + ": " + message; }

ErrorType SchemaError::Type() const {
  if (type != ErrorType::kUnspecified) {
    return type;
  }
  static const std::pair<std::string_view, ErrorType> kPrefixes[] = {
      {"Required value", ErrorType::kRequired},
      {"Invalid value", ErrorType::kInvalid},
      {"Unsupported value", ErrorType::kNotSupported},
      {"Duplicate value", ErrorType::kDuplicate},
      {"Forbidden", ErrorType::kForbidden},
      {"Too long", ErrorType::kTooLong},
      {"Too many", ErrorType::kTooMany},
      {"Not found", ErrorType::kNotFound},
      {"Internal error", ErrorType::kInternal},
  };
  for (const auto& [prefix, kind] : kPrefixes) {
    if (std::string_view(message).starts_with(prefix)) {
      return kind;
    }
  }
  return ErrorType::kInvalid;
}

std::string SchemaError::CauseType() const {
  switch (Type()) {
    case ErrorType::kNotFound:
      return "FieldValueNotFound";
    case ErrorType::kRequired:
      return "FieldValueRequired";
    case ErrorType::kDuplicate:
      return "FieldValueDuplicate";
    case ErrorType::kNotSupported:
      return "FieldValueNotSupported";
    case ErrorType::kForbidden:
      return "FieldValueForbidden";
    case ErrorType::kTooLong:
      return "FieldValueTooLong";
    case ErrorType::kTooMany:
      return "FieldValueTooMany";
    case ErrorType::kInternal:
      return "InternalError";
    case ErrorType::kTypeInvalid:
      return "FieldValueTypeInvalid";
    case ErrorType::kUnspecified:
    case ErrorType::kInvalid:
      break;
  }
  return "FieldValueInvalid";
}

bool SchemaError::BlocksCel() const {
  ErrorType kind = Type();
  return kind == ErrorType::kNotSupported || kind == ErrorType::kRequired ||
         kind == ErrorType::kTooLong || kind == ErrorType::kTooMany ||
         kind == ErrorType::kTypeInvalid;
}

SchemaError CelRulesSkipped() {
  return Invalid("<nil>", GoQuote("null"),
                 "some validation rules were not checked because the object was invalid; correct "
                 "the existing errors to complete validation");
}

SchemaError Required(std::string path, std::string_view detail) {
  return Make(std::move(path), WithDetail("Required value", detail), ErrorType::kRequired);
}

SchemaError Forbidden(std::string path, std::string_view detail) {
  return Make(std::move(path), WithDetail("Forbidden", detail), ErrorType::kForbidden);
}

SchemaError Invalid(std::string path, std::string_view value, std::string_view detail) {
  return Make(std::move(path), WithDetail("Invalid value: " + std::string(value), detail),
              ErrorType::kInvalid);
}

SchemaError TypeInvalid(std::string path, std::string_view value, std::string_view detail) {
  return Make(std::move(path), WithDetail("Invalid value: " + std::string(value), detail),
              ErrorType::kTypeInvalid);
}

SchemaError Duplicate(std::string path, std::string_view value) {
  return Make(std::move(path), "Duplicate value: " + std::string(value), ErrorType::kDuplicate);
}

SchemaError NotFound(std::string path, std::string_view value) {
  return Make(std::move(path), "Not found: " + std::string(value), ErrorType::kNotFound);
}

SchemaError NotSupported(std::string path, std::string_view value,
                         const std::vector<std::string>& supported) {
  std::string detail;
  for (const std::string& option : supported) {
    detail += (detail.empty() ? "supported values: " : ", ") + GoQuote(option);
  }
  return Make(std::move(path), WithDetail("Unsupported value: " + std::string(value), detail),
              ErrorType::kNotSupported);
}

SchemaError TooLong(std::string path, std::int64_t max_length) {
  std::string detail = max_length < 0 ? "value is too long"
                                      : "may not be more than " + std::to_string(max_length) +
                                            (max_length == 1 ? " byte" : " bytes");
  return Make(std::move(path), "Too long: " + detail, ErrorType::kTooLong);
}

SchemaError TooMany(std::string path, std::int64_t actual, std::int64_t max) {
  std::string detail =
      max < 0 ? "has too many items"
              : "must have at most " + std::to_string(max) + (max == 1 ? " item" : " items");
  std::string body = actual < 0 ? "Too many" : "Too many: " + std::to_string(actual);
  return Make(std::move(path), body + ": " + detail, ErrorType::kTooMany);
}

SchemaError InternalError(std::string path, std::string_view detail) {
  return Make(std::move(path), WithDetail("Internal error", detail), ErrorType::kInternal);
}

std::string GoQuote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    auto [rune, length] = DecodeRune(text, i);
    if (rune < 0) {
      AppendHex(out, "\\x", static_cast<unsigned char>(text[i]), 2);
    } else if (rune == '"' || rune == '\\') {
      out += '\\';
      out += static_cast<char>(rune);
    } else if (IsPrint(rune)) {
      out.append(text.substr(i, length));
    } else {
      switch (rune) {
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (rune < 0x20 || rune == 0x7f) {
            AppendHex(out, "\\x", static_cast<unsigned>(rune), 2);
          } else if (rune < 0x10000) {
            AppendHex(out, "\\u", static_cast<unsigned>(rune), 4);
          } else {
            AppendHex(out, "\\U", static_cast<unsigned>(rune), 8);
          }
      }
    }
    i += length;
  }
  return out + "\"";
}

std::string GoFloat(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  char buffer[64];
  auto scientific =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string text(buffer, scientific.ptr);
  int exponent = std::stoi(text.substr(text.find('e') + 1));
  if (exponent < -4 || exponent >= 6) {
    // Go writes at least two exponent digits: 1e+06, 1e-05.
    std::size_t e = text.find('e');
    std::string digits = text.substr(e + 2);
    while (digits.size() < 2) {
      digits.insert(0, "0");
    }
    return text.substr(0, e + 2) + digits;
  }
  auto fixed = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  return std::string(buffer, fixed.ptr);
}

std::string GoValue(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return GoQuote("null");
    case json::value_t::string:
      return GoQuote(value.get_ref<const std::string&>());
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return IsGoInt64(value) ? std::to_string(value.get<std::int64_t>())
                              : GoFloat(AsDouble(value));
    case json::value_t::object:
    case json::value_t::array: {
      std::string out;
      AppendSharpV(out, value);
      return out;
    }
    case json::value_t::binary:
    case json::value_t::discarded:
      break;
  }
  return "<unknown>";
}

std::string GoStringSlice(const std::optional<std::vector<std::string>>& values) {
  if (!values) {
    return "[]string(nil)";
  }
  std::string out = "[]string{";
  for (std::size_t i = 0; i < values->size(); ++i) {
    out += (i == 0 ? "" : ", ") + GoQuote((*values)[i]);
  }
  return out + "}";
}

std::string GoJson(const json& value) {
  std::string out;
  AppendGoJson(out, value);
  return out;
}

bool IsGoInt64(const json& value) {
  if (value.is_number_unsigned()) {
    return value.get<std::uint64_t>() <=
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  }
  return value.is_number_integer();
}

double AsDouble(const json& value) {
  if (value.is_number_float()) {
    return value.get<double>();
  }
  if (value.is_number_unsigned()) {
    return static_cast<double>(value.get<std::uint64_t>());
  }
  return value.is_number_integer() ? static_cast<double>(value.get<std::int64_t>()) : 0.0;
}

}  // namespace ringleader::schema
