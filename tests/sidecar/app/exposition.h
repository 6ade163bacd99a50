// One series' value read from a sidecar's /metrics body (the Prometheus text exposition), for
// the tests that scrape real sidecar processes.
#pragma once

#include <optional>
#include <regex>
#include <string>

namespace ringleader::testing {

// The value of `series`, written as the exposition writes it (`name{label="value"}`), or nullopt
// when the body has no such series.
inline std::optional<double> SeriesValue(const std::string& exposition, const std::string& series) {
  const std::regex line("(^|\n)" + std::regex_replace(series, std::regex(R"([{}])"), R"(\$&)") +
                        " ([0-9.e+]+)");
  std::smatch match;
  if (!std::regex_search(exposition, match, line)) {
    return std::nullopt;
  }
  return std::stod(match[2]);
}

}  // namespace ringleader::testing
