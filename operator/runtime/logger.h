// Structured logs: one JSON object per line on stderr ({"ts","level","msg", fields...}) or,
// for people at a terminal, "ts LEVEL msg key=value ...". Thread-safe; lines never interleave.
#pragma once

#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ringleader::runtime {

enum class LogFormat { kJson, kText };

class Logger {
 public:
  // `out` must outlive the logger (std::cerr by default).
  explicit Logger(LogFormat format = LogFormat::kJson, std::ostream* out = nullptr);

  // `fields` is a JSON object (may be null); its members follow msg in the line.
  void Info(std::string_view msg, const nlohmann::json& fields = nullptr);
  void Warn(std::string_view msg, const nlohmann::json& fields = nullptr);
  void Error(std::string_view msg, const nlohmann::json& fields = nullptr);

 private:
  void Write(std::string_view level, std::string_view msg, const nlohmann::json& fields);

  LogFormat format_;
  std::ostream* out_;
  std::mutex mutex_;
};

}  // namespace ringleader::runtime
