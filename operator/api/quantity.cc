// Exact integer parsing of Kubernetes quantities, without floating point.
#include "operator/api/quantity.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ringleader::api {
namespace {

__extension__ using Wide = __int128;  // exact products of a 64-bit mantissa and a scale
constexpr Wide kMax = std::numeric_limits<std::int64_t>::max();

struct Suffix {
  std::string_view text;
  int base;      // 2 or 10
  int exponent;  // power of the base
};

// Binary suffixes first so "Mi" is not read as "M" followed by garbage.
constexpr std::array<Suffix, 13> kSuffixes = {{
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    {"m", 10, -3}, {"k", 10, 3}, {"M", 10, 6}, {"G", 10, 9}, {"T", 10, 12}, {"P", 10, 15},
    {"E", 10, 18},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Past this a quantity cannot fit int64 even after dividing by the largest fraction (10^18).
constexpr Wide kScaleLimit = static_cast<Wide>(kMax) * 1'000'000'000'000'000'000;

// Multiplies value by base^exponent exactly; false once it passes kScaleLimit.
bool Scale(Wide* value, int base, int exponent) {
  for (int i = 0; i < exponent; ++i) {
    *value *= base;
    if (*value > kScaleLimit) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::int64_t> ParseIntegerQuantity(std::string_view text) {
  std::size_t pos = 0;
  if (pos < text.size() && text[pos] == '+') {
    ++pos;
  }
  Wide mantissa = 0;
  int fraction_digits = 0;
  bool any_digit = false;
  bool in_fraction = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (IsDigit(c)) {
      any_digit = true;
      if (mantissa > kMax) {
        return std::nullopt;
      }
      mantissa = mantissa * 10 + (c - '0');
      if (in_fraction) {
        ++fraction_digits;
      }
    } else if (c == '.' && !in_fraction) {
      in_fraction = true;
    } else {
      break;
    }
  }
  if (!any_digit || fraction_digits > 18) {
    return std::nullopt;
  }
  const std::string_view rest = text.substr(pos);
  int base = 10;
  int exponent = 0;
  // "1E" is the exa suffix; an exponent is e/E followed by digits ("2e3").
  const bool is_exponent = rest.size() >= 2 && (rest[0] == 'e' || rest[0] == 'E') && IsDigit(rest[1]);
  if (is_exponent) {
    if (rest.size() > 3) {
      return std::nullopt;
    }
    for (char c : rest.substr(1)) {
      if (!IsDigit(c)) {
        return std::nullopt;
      }
      exponent = exponent * 10 + (c - '0');
    }
  } else if (!rest.empty()) {
    bool matched = false;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) {
        base = suffix.base;
        exponent = suffix.exponent;
        matched = true;
        break;
      }
    }
    if (!matched) {
      return std::nullopt;
    }
  }
  // value = mantissa * base^exponent / 10^fraction_digits, which must come out integral.
  Wide numerator = mantissa;
  Wide denominator = 1;
  if (!Scale(&denominator, 10, fraction_digits)) {
    return std::nullopt;
  }
  if (exponent >= 0) {
    if (!Scale(&numerator, base, exponent)) {
      return std::nullopt;
    }
  } else if (!Scale(&denominator, base, -exponent)) {
    return std::nullopt;
  }
  if (numerator % denominator != 0) {
    return std::nullopt;
  }
  const Wide value = numerator / denominator;
  if (value > kMax) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(value);
}

namespace {

// The value in the largest unit of `units` that divides it exactly, or the plain number.
template <std::size_t N>
std::string InLargestUnit(std::int64_t value,
                          const std::array<std::pair<std::string_view, std::int64_t>, N>& units) {
  for (const auto& [suffix, unit] : units) {
    if (value % unit == 0) {
      return std::to_string(value / unit) + std::string(suffix);
    }
  }
  return std::to_string(value);
}

}  // namespace

std::string FormatQuantity(std::int64_t value) {
  if (value == 0) {
    return "0";
  }
  constexpr std::array<std::pair<std::string_view, std::int64_t>, 6> kBinary = {{
      {"Ei", std::int64_t{1} << 60}, {"Pi", std::int64_t{1} << 50}, {"Ti", std::int64_t{1} << 40},
      {"Gi", std::int64_t{1} << 30}, {"Mi", std::int64_t{1} << 20}, {"Ki", std::int64_t{1} << 10}}};
  constexpr std::array<std::pair<std::string_view, std::int64_t>, 6> kDecimal = {{
      {"E", 1'000'000'000'000'000'000}, {"P", 1'000'000'000'000'000}, {"T", 1'000'000'000'000},
      {"G", 1'000'000'000}, {"M", 1'000'000}, {"k", 1'000}}};
  // Byte sizes read best in binary units ("1000Ki"), unless the binary number is unwieldy
  // ("9765625Ki") and a decimal form is shorter ("10G").
  std::string binary = InLargestUnit(value, kBinary);
  std::string decimal = InLargestUnit(value, kDecimal);
  for (const auto& [suffix, unit] : kBinary) {
    if (value % unit == 0 && value / unit < 1024) {
      return binary;
    }
  }
  return decimal.size() < binary.size() ? decimal : binary;
}

std::string FormatBandwidth(double bytes_per_second) {
  constexpr std::array<std::pair<const char*, double>, 5> kUnits = {
      {{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}, {"B/s", 1}}};
  // A value that would round to 1000 of one unit is shown as 1 of the next.
  const double magnitude = std::fabs(bytes_per_second);
  const auto* chosen = &kUnits.back();
  for (const auto& unit : kUnits) {
    if (magnitude >= unit.second * 0.9995) {
      chosen = &unit;
      break;
    }
  }
  const double scaled = bytes_per_second / chosen->second;
  const double shown = std::fabs(scaled);
  const int decimals = shown >= 99.95 ? 0 : (shown >= 9.995 ? 1 : 2);
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, scaled);
  std::string text = buffer.data();
  // Three significant digits without trailing zeros: "2.5 TB/s", "1 TB/s".
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') {
      text.pop_back();
    }
  }
  return text + " " + chosen->first;
}

}  // namespace ringleader::api
