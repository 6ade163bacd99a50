// Formats each log line whole, then writes it under the lock so lines never interleave.
#include "operator/runtime/logger.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// "2026-01-02T15:04:05.123Z"
std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[96];  // room for any int fields, which keeps -Wformat-truncation quiet
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis % 1000));
  return buffer;
}

// Invalid UTF-8 becomes U+FFFD instead of an exception: logging must never throw.
template <typename Json>
std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsReserved(const std::string& key) { return key == "ts" || key == "level" || key == "msg"; }

// A field named like a reserved key is written as "field.<key>" so it cannot hide ts/level/msg.
std::string FieldKey(const std::string& key) { return IsReserved(key) ? "field." + key : key; }

// Plain strings stay bare (key=value); anything with spaces, quotes or '=' is JSON-quoted.
std::string TextValue(const json& value) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    bool bare = !text.empty();
    for (const char c : text) {
      if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
        bare = false;
        break;
      }
    }
    if (bare) {
      return text;
    }
  }
  return Dump(value);
}

// The message on one line: newlines would split an entry in two.
std::string OneLine(std::string_view msg) {
  std::string out;
  out.reserve(msg.size());
  for (const char c : msg) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Upper(std::string_view level) {
  std::string out(level);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

}  // namespace

Logger::Logger(LogFormat format, std::ostream* out)
    : format_(format), out_(out != nullptr ? out : &std::cerr) {}

void Logger::Info(std::string_view msg, const json& fields) { Write("info", msg, fields); }
void Logger::Warn(std::string_view msg, const json& fields) { Write("warn", msg, fields); }
void Logger::Error(std::string_view msg, const json& fields) { Write("error", msg, fields); }

void Logger::Write(std::string_view level, std::string_view msg, const json& fields) {
  std::string line;
  try {
    if (format_ == LogFormat::kJson) {
      ordered_json entry = {{"ts", Timestamp()}, {"level", level}, {"msg", msg}};
      if (fields.is_object()) {
        for (const auto& [key, value] : fields.items()) {
          entry[FieldKey(key)] = value;
        }
      } else if (!fields.is_null()) {
        entry["fields"] = fields;
      }
      line = Dump(entry);
    } else {
      line = Timestamp() + " " + Upper(level) + " " + OneLine(msg);
      if (fields.is_object()) {
        for (const auto& [key, value] : fields.items()) {
          line += " " + key + "=" + TextValue(value);
        }
      } else if (!fields.is_null()) {
        line += " fields=" + TextValue(fields);
      }
    }
  } catch (const std::exception& e) {
    line = "log line could not be formatted: " + std::string(e.what());
  }
  line += '\n';
  const std::lock_guard<std::mutex> lock(mutex_);
  out_->write(line.data(), static_cast<std::streamsize>(line.size()));
  out_->flush();
}

}  // namespace ringleader::runtime
