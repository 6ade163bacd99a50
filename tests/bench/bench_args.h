// What the benchmark programs share: "--flag value" arguments, comma-separated lists, medians
// and a bootstrap interval for a median.
#pragma once

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ringleader::bench {

// Hands each "--flag value" pair to on_flag, which returns false for a flag it does not know;
// an unknown flag or a flag without a value throws std::invalid_argument naming it.
inline void ParseFlags(int argc, char** argv,
                       const std::function<bool(const std::string& flag,
                                                const std::string& value)>& on_flag) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      throw std::invalid_argument("flag " + flag + " needs a value");
    }
    if (!on_flag(flag, argv[i + 1])) {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
}

// "1024,4096,16384" as numbers.
template <typename T>
std::vector<T> ParseList(const std::string& text) {
  std::vector<T> values;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    values.push_back(static_cast<T>(std::stoull(text.substr(at, comma - at))));
    at = comma + 1;
  }
  return values;
}

// The middle value (the mean of the middle two for an even count); 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// A 95% percentile-bootstrap interval for the median of `values` (2,000 resamples, fixed seed
// so reruns on the same data agree): how far noise alone could move a median of this many
// samples. {0, 0} for none.
inline std::pair<double, double> MedianInterval95(const std::vector<double>& values) {
  if (values.empty()) {
    return {0, 0};
  }
  constexpr int kResamples = 2000;
  std::mt19937_64 random(12345);
  std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
  std::vector<double> medians;
  medians.reserve(kResamples);
  std::vector<double> resample(values.size());
  for (int r = 0; r < kResamples; ++r) {
    for (double& value : resample) {
      value = values[pick(random)];
    }
    medians.push_back(Median(resample));
  }
  std::sort(medians.begin(), medians.end());
  return {medians[kResamples * 25 / 1000], medians[kResamples * 975 / 1000 - 1]};
}

}  // namespace ringleader::bench
