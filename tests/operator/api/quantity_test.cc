// Tests for Kubernetes quantities as exact integers: parsing, the shortest-form writer and the
// human bandwidth text written to TrainingJob status.
#include "operator/api/quantity.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::api {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kKi = std::int64_t{1} << 10;
constexpr std::int64_t kMi = std::int64_t{1} << 20;
constexpr std::int64_t kGi = std::int64_t{1} << 30;
constexpr std::int64_t kEi = std::int64_t{1} << 60;
constexpr std::int64_t kExa = 1'000'000'000'000'000'000;

struct QuantityCase {
  std::string name;  // the ctest suffix; gtest names allow only letters, digits and '_'
  std::string text;
  std::optional<std::int64_t> expected;
};

void PrintTo(const QuantityCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class ParseIntegerQuantityTest : public ::testing::TestWithParam<QuantityCase> {};

TEST_P(ParseIntegerQuantityTest, GivesTheExactValueOrNullopt) {
  const QuantityCase& c = GetParam();
  EXPECT_EQ(ParseIntegerQuantity(c.text), c.expected) << "text: \"" << c.text << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    Quantities, ParseIntegerQuantityTest,
    ::testing::Values(
        QuantityCase{"Binary64Mi", "64Mi", 64 * kMi},
        QuantityCase{"Binary1Gi", "1Gi", kGi},
        QuantityCase{"Binary1Ki", "1Ki", kKi},
        QuantityCase{"Binary3Ti", "3Ti", std::int64_t{3} << 40},
        QuantityCase{"Binary2Pi", "2Pi", std::int64_t{2} << 50},
        QuantityCase{"Binary7Ei", "7Ei", 7 * kEi},
        QuantityCase{"Decimal10G", "10G", 10'000'000'000},
        QuantityCase{"Decimal1k", "1k", 1000},
        QuantityCase{"Decimal300G", "300G", 300'000'000'000},
        QuantityCase{"Decimal2M", "2M", 2'000'000},
        QuantityCase{"Decimal4T", "4T", 4'000'000'000'000},
        QuantityCase{"Decimal5P", "5P", 5'000'000'000'000'000},
        // "E" alone is the exa suffix, not an exponent with its digits missing.
        QuantityCase{"Decimal1E", "1E", kExa},
        QuantityCase{"Decimal9E", "9E", 9 * kExa},
        QuantityCase{"MilliThatIsWhole", "2000m", 2},
        QuantityCase{"MilliThatIsFractional", "1500m", std::nullopt},
        QuantityCase{"FractionalMantissaExactInBytes", "1.5Gi", 3 * (kGi / 2)},
        QuantityCase{"FractionalMantissaDecimalSuffix", "2.50k", 2500},
        QuantityCase{"FractionalPlainNumber", "1.5", std::nullopt},
        QuantityCase{"FractionalHalf", "0.5", std::nullopt},
        QuantityCase{"FractionOfAKiloThatIsNotWhole", "1.0001k", std::nullopt},
        QuantityCase{"ExponentLower", "2e3", 2000},
        QuantityCase{"ExponentUpper", "2E3", 2000},
        QuantityCase{"ExponentTwoDigits", "1e18", kExa},
        QuantityCase{"ExponentWithFraction", "1.5e3", 1500},
        QuantityCase{"ExponentWithoutDigits", "1e", std::nullopt},
        QuantityCase{"ExponentNegative", "1e-3", std::nullopt},
        QuantityCase{"ExponentTooLarge", "1e19", std::nullopt},
        QuantityCase{"Zero", "0", 0},
        QuantityCase{"ZeroWithSuffix", "0Gi", 0},
        QuantityCase{"PlainNumber", "1048576", kMi},
        QuantityCase{"ExplicitPlusSign", "+5", 5},
        QuantityCase{"Empty", "", std::nullopt},
        QuantityCase{"Letters", "abc", std::nullopt},
        QuantityCase{"SuffixWithoutNumber", "Mi", std::nullopt},
        QuantityCase{"Negative", "-1", std::nullopt},
        QuantityCase{"NegativeWithSuffix", "-1Gi", std::nullopt},
        QuantityCase{"UnknownSuffix", "1Zi", std::nullopt},
        // Kubernetes spells decimal kilo with a lowercase k; "K" is no suffix at all.
        QuantityCase{"UppercaseKilo", "1K", std::nullopt},
        QuantityCase{"SpaceBeforeSuffix", "1 Mi", std::nullopt},
        QuantityCase{"TrailingSpace", "64Mi ", std::nullopt},
        QuantityCase{"TwoDots", "1.2.3", std::nullopt},
        QuantityCase{"Int64Max", "9223372036854775807", kInt64Max},
        QuantityCase{"Int64MaxPlusOne", "9223372036854775808", std::nullopt},
        QuantityCase{"NineteenNines", "9999999999999999999", std::nullopt},
        QuantityCase{"TwentyDigits", "99999999999999999999", std::nullopt},
        QuantityCase{"EightEiIsTwoToThe63", "8Ei", std::nullopt},
        QuantityCase{"TenExa", "10E", std::nullopt},
        QuantityCase{"HugeMantissaTimesSuffix", "9223372036854775807Ki", std::nullopt}),
    [](const ::testing::TestParamInfo<QuantityCase>& case_info) { return case_info.param.name; });

// Values that FormatQuantity must write in a form ParseIntegerQuantity reads back exactly.
std::vector<std::int64_t> RoundTripValues() {
  std::vector<std::int64_t> values = {0, 1, 3, 7, 999, 1001, 1023, 1025, 1536, 12345, 65537,
                                      (std::int64_t{1} << 40) + 1, kExa + 1, kInt64Max,
                                      kInt64Max - 1, 1000 * kKi, 1024 * 1000 * 1000,
                                      3 * kGi / 2, 7 * kEi};
  for (int shift = 0; shift <= 62; ++shift) {
    values.push_back(std::int64_t{1} << shift);
    if (shift <= 61) {
      values.push_back(std::int64_t{3} << shift);
    }
  }
  std::int64_t power = 1;
  for (int exponent = 0; exponent <= 18; ++exponent) {
    values.push_back(power);
    values.push_back(power + 1);
    if (exponent <= 17) {
      values.push_back(5 * power);
    }
    if (exponent < 18) {
      power *= 10;
    }
  }
  for (std::int64_t factor = 1; factor <= 9; ++factor) {
    values.push_back(factor * kExa);
  }
  return values;
}

TEST(FormatQuantityTest, RoundTripsThroughParseIntegerQuantity) {
  for (const std::int64_t value : RoundTripValues()) {
    const std::string text = FormatQuantity(value);
    EXPECT_EQ(ParseIntegerQuantity(text), value)
        << "FormatQuantity(" << value << ") wrote \"" << text << "\"";
  }
}

TEST(FormatQuantityTest, WritesBinarySuffixesForMultiplesOfAKi) {
  EXPECT_EQ(FormatQuantity(0), "0");
  EXPECT_EQ(FormatQuantity(64 * kMi), "64Mi");
  EXPECT_EQ(FormatQuantity(kKi), "1Ki");
  EXPECT_EQ(FormatQuantity(1000 * kKi), "1000Ki");
  EXPECT_EQ(FormatQuantity(3 * kGi), "3Gi");
  EXPECT_EQ(FormatQuantity(7 * kEi), "7Ei");
}

TEST(FormatQuantityTest, WritesDecimalSuffixesForValuesWithNoBinaryForm) {
  EXPECT_EQ(FormatQuantity(1000), "1k");
  EXPECT_EQ(FormatQuantity(1'500'000), "1500k");
  EXPECT_EQ(FormatQuantity(2'000'000), "2M");
  EXPECT_EQ(FormatQuantity(5'000'000'000), "5G");
}

TEST(FormatQuantityTest, WritesPlainNumbersWithoutAnExactSuffix) {
  EXPECT_EQ(FormatQuantity(1), "1");
  EXPECT_EQ(FormatQuantity(1023), "1023");
  EXPECT_EQ(FormatQuantity(1536), "1536");
  EXPECT_EQ(FormatQuantity(kInt64Max), "9223372036854775807");
}

// The header promises the shortest exact form and gives "10G" for 10000000000 as its example;
// 10^10 is also a multiple of 1Ki, so trying binary suffixes first must not win with a longer
// "9765625Ki".
TEST(FormatQuantityTest, PrefersTheShorterOfBinaryAndDecimalForms) {
  EXPECT_EQ(FormatQuantity(10'000'000'000), "10G");
  EXPECT_EQ(FormatQuantity(300'000'000'000), "300G");
  EXPECT_EQ(FormatQuantity(1024 * std::int64_t{1'000'000'000}), "1024G");
  EXPECT_EQ(FormatQuantity(2048 * std::int64_t{1'000'000}), "2048M");
  EXPECT_EQ(FormatQuantity(1'000'000'000'000), "1T");
  for (const std::int64_t value : RoundTripValues()) {
    EXPECT_LE(FormatQuantity(value).size(), std::to_string(value).size())
        << "FormatQuantity(" << value << ") = " << FormatQuantity(value);
  }
}

TEST(QuantityTest, FormatBandwidthUsesDecimalUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(FormatBandwidth(11.8e9), "11.8 GB/s");
  EXPECT_EQ(FormatBandwidth(12'345'678'901.0), "12.3 GB/s");
  EXPECT_EQ(FormatBandwidth(300e9), "300 GB/s");
  EXPECT_EQ(FormatBandwidth(1e12), "1 TB/s");
  EXPECT_EQ(FormatBandwidth(2.5e12), "2.5 TB/s");
  EXPECT_EQ(FormatBandwidth(123.4e6), "123 MB/s");
  EXPECT_EQ(FormatBandwidth(1500), "1.5 kB/s");
  EXPECT_EQ(FormatBandwidth(999), "999 B/s");
  EXPECT_EQ(FormatBandwidth(0), "0 B/s");
}

// Values just under a unit boundary round up to 1000 of the smaller unit; "%.3g" then writes
// "1e+03 GB/s", which is not what a user expects to read in kubectl get.
TEST(QuantityTest, FormatBandwidthNeverFallsBackToExponentNotation) {
  for (const double value : {999.9, 999'900.0, 999'960'000.0, 999.96e9, 5e15}) {
    const std::string text = FormatBandwidth(value);
    EXPECT_EQ(text.find('e'), std::string::npos) << "FormatBandwidth(" << value << ") = " << text;
  }
}

}  // namespace
}  // namespace ringleader::api
