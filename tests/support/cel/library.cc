// Declarations and implementations of the CEL functions a Kubernetes 1.32 CRD rule may call.
// Overload ids follow cel-go's and Kubernetes' names, which the cost estimator keys on.
#include "tests/support/cel/library.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <type_traits>

#include "tests/support/field_errors.h"

namespace ringleader::cel {
namespace {

using Args = std::vector<Value>;
using schema::GoQuote;

Value NoSuchOverload() { return Value::Error("no such overload"); }

const std::string& Str(const Value& v) { return v.as<std::string>(); }
int64_t Int(const Value& v) { return v.as<int64_t>(); }

// --- Arithmetic ---------------------------------------------------------------------------------

enum class Op { kAdd, kSubtract, kMultiply };

// +, - and * on int or uint, with cel-go's overflow errors.
template <typename T, Op kOp>
Value Checked(const Args& a) {
  T x = a[0].as<T>();
  T y = a[1].as<T>();
  T r = 0;
  bool overflow = kOp == Op::kAdd        ? __builtin_add_overflow(x, y, &r)
                  : kOp == Op::kSubtract ? __builtin_sub_overflow(x, y, &r)
                                         : __builtin_mul_overflow(x, y, &r);
  if (overflow) {
    return Value::Error(std::is_signed_v<T> ? "integer overflow" : "unsigned integer overflow");
  }
  return r;
}
constexpr auto AddInt = &Checked<int64_t, Op::kAdd>;
constexpr auto SubInt = &Checked<int64_t, Op::kSubtract>;
constexpr auto MulInt = &Checked<int64_t, Op::kMultiply>;
constexpr auto AddUint = &Checked<uint64_t, Op::kAdd>;
constexpr auto SubUint = &Checked<uint64_t, Op::kSubtract>;
constexpr auto MulUint = &Checked<uint64_t, Op::kMultiply>;
Value DivInt(const Args& a) {
  if (Int(a[1]) == 0) {
    return Value::Error("division by zero");
  }
  if (Int(a[0]) == std::numeric_limits<int64_t>::min() && Int(a[1]) == -1) {
    return Value::Error("integer overflow");
  }
  return Int(a[0]) / Int(a[1]);
}
Value ModInt(const Args& a) {
  if (Int(a[1]) == 0) {
    return Value::Error("modulus by zero");
  }
  if (Int(a[0]) == std::numeric_limits<int64_t>::min() && Int(a[1]) == -1) {
    return Value::Error("integer overflow");
  }
  return Int(a[0]) % Int(a[1]);
}
Value NegInt(const Args& a) {
  if (Int(a[0]) == std::numeric_limits<int64_t>::min()) {
    return Value::Error("integer overflow");
  }
  return -Int(a[0]);
}
uint64_t Uint(const Value& v) { return v.as<uint64_t>(); }
Value DivUint(const Args& a) {
  if (Uint(a[1]) == 0) {
    return Value::Error("division by zero");
  }
  return Uint(a[0]) / Uint(a[1]);
}
Value ModUint(const Args& a) {
  if (Uint(a[1]) == 0) {
    return Value::Error("modulus by zero");
  }
  return Uint(a[0]) % Uint(a[1]);
}
double Dbl(const Value& v) { return v.as<double>(); }
Value AddDouble(const Args& a) { return Dbl(a[0]) + Dbl(a[1]); }
Value SubDouble(const Args& a) { return Dbl(a[0]) - Dbl(a[1]); }
Value MulDouble(const Args& a) { return Dbl(a[0]) * Dbl(a[1]); }
Value DivDouble(const Args& a) { return Dbl(a[0]) / Dbl(a[1]); }
Value NegDouble(const Args& a) { return -Dbl(a[0]); }
Value AddString(const Args& a) { return Str(a[0]) + Str(a[1]); }
Value AddBytes(const Args& a) { return Bytes{a[0].as<Bytes>().data + a[1].as<Bytes>().data}; }
Value AddList(const Args& a) {
  std::vector<Value> items = a[0].list().items;
  items.insert(items.end(), a[1].list().items.begin(), a[1].list().items.end());
  return Value::List(std::move(items));
}

// std::numeric_limits has no Int128 specialisation in strict C++ mode.
constexpr Int128 kInt128Max = static_cast<Int128>((static_cast<UInt128>(1) << 127) - 1);
constexpr Int128 kInt128Min = -kInt128Max - 1;

constexpr int64_t kMinTimestampSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr int64_t kMaxTimestampSeconds = 253402300799;  // 9999-12-31T23:59:59Z

Value MakeTimestamp(int64_t seconds, int64_t nanos) {
  seconds += nanos / 1000000000;
  nanos %= 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    --seconds;
  }
  if (seconds < kMinTimestampSeconds || seconds > kMaxTimestampSeconds) {
    return Value::Error("timestamp out of range");
  }
  return Timestamp{seconds, static_cast<int32_t>(nanos)};
}
Value AddTsDur(const Args& a) {
  const auto& ts = a[0].as<Timestamp>();
  int64_t d = a[1].as<Duration>().nanos;
  return MakeTimestamp(ts.seconds + d / 1000000000, ts.nanos + d % 1000000000);
}
Value AddDurTs(const Args& a) { return AddTsDur({a[1], a[0]}); }
Value AddDurDur(const Args& a) {
  int64_t r = 0;
  if (__builtin_add_overflow(a[0].as<Duration>().nanos, a[1].as<Duration>().nanos, &r)) {
    return Value::Error("integer overflow");
  }
  return Duration{r};
}
Value SubDurDur(const Args& a) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a[0].as<Duration>().nanos, a[1].as<Duration>().nanos, &r)) {
    return Value::Error("integer overflow");
  }
  return Duration{r};
}
Value SubTsDur(const Args& a) {
  const auto& ts = a[0].as<Timestamp>();
  int64_t d = a[1].as<Duration>().nanos;
  return MakeTimestamp(ts.seconds - d / 1000000000, ts.nanos - d % 1000000000);
}
Value SubTsTs(const Args& a) {
  const auto& x = a[0].as<Timestamp>();
  const auto& y = a[1].as<Timestamp>();
  Int128 nanos = (static_cast<Int128>(x.seconds) - y.seconds) * 1000000000 + (x.nanos - y.nanos);
  if (nanos > std::numeric_limits<int64_t>::max() || nanos < std::numeric_limits<int64_t>::min()) {
    return Value::Error("integer overflow");
  }
  return Duration{static_cast<int64_t>(nanos)};
}

// --- Logic, comparison, containers ------------------------------------------------------------

Value Not(const Args& a) { return !a[0].as<bool>(); }
Value NotStrictlyFalse(const Args& a) { return !(a[0].is<bool>() && !a[0].as<bool>()); }
Value Eq(const Args& a) { return Equals(a[0], a[1]); }
Value Ne(const Args& a) {
  Value eq = Equals(a[0], a[1]);
  return eq.is_error() ? eq : Value(!eq.as<bool>());
}
Value Less(const Args& a) {
  auto c = Compare(a[0], a[1]);
  return c ? Value(*c < 0) : NoSuchOverload();
}
Value LessEq(const Args& a) {
  auto c = Compare(a[0], a[1]);
  return c ? Value(*c <= 0) : NoSuchOverload();
}
Value Greater(const Args& a) {
  auto c = Compare(a[0], a[1]);
  return c ? Value(*c > 0) : NoSuchOverload();
}
Value GreaterEq(const Args& a) {
  auto c = Compare(a[0], a[1]);
  return c ? Value(*c >= 0) : NoSuchOverload();
}
Value InList(const Args& a) {
  for (const Value& item : a[1].list().items) {
    Value eq = Equals(a[0], item);
    if (eq.is<bool>() && eq.as<bool>()) {
      return true;
    }
  }
  return false;
}
Value InMap(const Args& a) { return MapFind(a[1].map(), a[0]) != nullptr; }
Value SizeString(const Args& a) { return static_cast<int64_t>(CodePointCount(Str(a[0]))); }
Value SizeBytes(const Args& a) { return static_cast<int64_t>(a[0].as<Bytes>().data.size()); }
Value SizeList(const Args& a) { return static_cast<int64_t>(a[0].list().items.size()); }
Value SizeMap(const Args& a) { return static_cast<int64_t>(a[0].map().entries.size()); }
Value Contains(const Args& a) { return Str(a[0]).find(Str(a[1])) != std::string::npos; }
Value StartsWith(const Args& a) { return Str(a[0]).rfind(Str(a[1]), 0) == 0; }
Value EndsWith(const Args& a) {
  const std::string& s = Str(a[0]);
  const std::string& suffix = Str(a[1]);
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --- Regular expressions (RE2, the syntax of Go's regexp) -------------------------------------

std::shared_ptr<RE2> CompileRegex(const std::string& pattern, std::string& error) {
  // Compiled patterns are cached: rules run the same few patterns on every write.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<RE2>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(pattern);
  if (it != cache.end()) {
    return it->second;
  }
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<RE2>(pattern, options);
  if (!re->ok()) {
    error = "error parsing regexp: " + re->error();
    return nullptr;
  }
  if (cache.size() > 256) {
    cache.clear();
  }
  cache[pattern] = re;
  return re;
}

Value Matches(const Args& a) {
  std::string error;
  auto re = CompileRegex(Str(a[1]), error);
  if (!re) {
    return Value::Error(error);
  }
  return RE2::PartialMatch(Str(a[0]), *re);
}

std::vector<std::string> FindAll(const std::string& text, const RE2& re, int64_t limit) {
  std::vector<std::string> out;
  re2::StringPiece input(text);
  size_t pos = 0;
  re2::StringPiece match;
  int64_t prev_end = -1;
  while (pos <= text.size() && (limit < 0 || static_cast<int64_t>(out.size()) < limit)) {
    if (!re.Match(input, pos, text.size(), RE2::UNANCHORED, &match, 1)) {
      break;
    }
    auto start = static_cast<size_t>(match.data() - text.data());
    size_t end = start + match.size();
    // Go skips an empty match right after the previous match.
    if (!(match.empty() && static_cast<int64_t>(start) == prev_end)) {
      out.emplace_back(match.data(), match.size());
    }
    prev_end = static_cast<int64_t>(end);
    pos = match.empty() ? end + 1 : end;
  }
  return out;
}

Value Find(const Args& a) {
  std::string error;
  auto re = CompileRegex(Str(a[1]), error);
  if (!re) {
    return Value::Error(error);
  }
  auto found = FindAll(Str(a[0]), *re, 1);
  return found.empty() ? std::string() : found[0];
}
Value FindAllFn(const Args& a) {
  std::string error;
  auto re = CompileRegex(Str(a[1]), error);
  if (!re) {
    return Value::Error(error);
  }
  int64_t limit = a.size() > 2 ? Int(a[2]) : -1;
  std::vector<Value> items;
  for (std::string& s : FindAll(Str(a[0]), *re, limit)) {
    items.emplace_back(std::move(s));
  }
  return Value::List(std::move(items));
}

// --- Conversions --------------------------------------------------------------------------------

Value Identity(const Args& a) { return a[0]; }
Value UintToInt(const Args& a) {
  if (Uint(a[0]) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Value::Error("integer overflow");
  }
  return static_cast<int64_t>(Uint(a[0]));
}
Value DoubleToInt(const Args& a) {
  double d = Dbl(a[0]);
  // cel-go refuses doubles at or beyond +/-2^63 and NaN.
  if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) {
    return Value::Error("integer overflow");
  }
  return static_cast<int64_t>(d);
}
Value StringToInt(const Args& a) {
  const std::string& s = Str(a[0]);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  bool syntax_ok = !s.empty() && end == s.c_str() + s.size() &&
                   std::isspace(static_cast<unsigned char>(s[0])) == 0;
  if (!syntax_ok) {
    return Value::Error("strconv.ParseInt: parsing " + GoQuote(s) + ": invalid syntax");
  }
  if (errno == ERANGE) {
    return Value::Error("strconv.ParseInt: parsing " + GoQuote(s) + ": value out of range");
  }
  return static_cast<int64_t>(v);
}
Value TimestampToInt(const Args& a) { return a[0].as<Timestamp>().seconds; }
Value IntToUint(const Args& a) {
  if (Int(a[0]) < 0) {
    return Value::Error("unsigned integer overflow");
  }
  return static_cast<uint64_t>(Int(a[0]));
}
Value DoubleToUint(const Args& a) {
  double d = Dbl(a[0]);
  if (!(d > -1.0 && d < 18446744073709551616.0)) {
    return Value::Error("unsigned integer overflow");
  }
  return static_cast<uint64_t>(d);
}
Value StringToUint(const Args& a) {
  const std::string& s = Str(a[0]);
  bool digits =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    return Value::Error("strconv.ParseUint: parsing " + GoQuote(s) + ": invalid syntax");
  }
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    return Value::Error("strconv.ParseUint: parsing " + GoQuote(s) + ": value out of range");
  }
  return static_cast<uint64_t>(v);
}
Value IntToDouble(const Args& a) { return static_cast<double>(Int(a[0])); }
Value UintToDouble(const Args& a) { return static_cast<double>(Uint(a[0])); }
Value StringToDouble(const Args& a) {
  const std::string& s = Str(a[0]);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() ||
      std::isspace(static_cast<unsigned char>(s[0])) != 0) {
    return Value::Error("strconv.ParseFloat: parsing " + GoQuote(s) + ": invalid syntax");
  }
  return v;
}
Value IntToString(const Args& a) { return std::to_string(Int(a[0])); }
Value UintToString(const Args& a) { return std::to_string(Uint(a[0])); }
Value DoubleToString(const Args& a) {
  // Go's strconv.FormatFloat(d, 'g', -1, 64): the shortest text that reads back exactly.
  double d = Dbl(a[0]);
  if (std::isnan(d)) {
    return std::string("NaN");
  }
  if (std::isinf(d)) {
    return std::string(d > 0 ? "+Inf" : "-Inf");
  }
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) {
      break;
    }
  }
  std::string s(buf);
  // Go writes exponents with at least two digits and no leading '+' padding quirks: 1e+21.
  return s;
}
Value BoolToString(const Args& a) { return std::string(a[0].as<bool>() ? "true" : "false"); }
Value BytesToString(const Args& a) { return a[0].as<Bytes>().data; }
Value TimestampToString(const Args& a) { return FormatTimestamp(a[0].as<Timestamp>()); }
Value DurationToString(const Args& a) { return FormatDuration(a[0].as<Duration>().nanos); }
Value StringToBytes(const Args& a) { return Bytes{Str(a[0])}; }
Value StringToBool(const Args& a) {
  const std::string& s = Str(a[0]);
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") {
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return false;
  }
  return Value::Error("strconv.ParseBool: parsing " + GoQuote(s) + ": invalid syntax");
}
Value StringToTimestamp(const Args& a) {
  auto ts = ParseRfc3339(Str(a[0]));
  if (!ts || Str(a[0]).find('T') == std::string::npos) {
    return Value::Error("parsing time " + GoQuote(Str(a[0])) +
                        " as \"2006-01-02T15:04:05Z07:00\": cannot parse");
  }
  return MakeTimestamp(ts->seconds, ts->nanos);
}
Value IntToTimestamp(const Args& a) { return MakeTimestamp(Int(a[0]), 0); }
Value StringToDuration(const Args& a) {
  auto d = ParseGoDuration(Str(a[0]));
  if (!d) {
    return Value::Error("time: invalid duration " + GoQuote(Str(a[0])));
  }
  return Duration{*d};
}
Value ToDyn(const Args& a) { return a[0]; }

// --- Timestamp and duration accessors ---------------------------------------------------------

// Seconds east of UTC for a time-zone argument: "UTC", "" or a fixed "+hh:mm" offset.
std::optional<int64_t> ZoneOffset(const std::string& zone) {
  if (zone.empty() || zone == "UTC" || zone == "Z") {
    return 0;
  }
  std::string z = zone;
  if (z.size() == 6 && (z[0] == '+' || z[0] == '-') && z[3] == ':') {
    int h = std::atoi(z.substr(1, 2).c_str());
    int m = std::atoi(z.substr(4, 2).c_str());
    return (z[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
  }
  return std::nullopt;
}

template <int Field>
Value TimestampField(const Args& a) {
  int64_t offset = 0;
  if (a.size() > 1) {
    auto z = ZoneOffset(Str(a[1]));
    if (!z) {
      return Value::Error("unknown time zone " + Str(a[1]));
    }
    offset = *z;
  }
  const auto& ts = a[0].as<Timestamp>();
  CivilTime c = ToCivil(ts.seconds + offset);
  switch (Field) {
    case 0:
      return c.year;
    case 1:
      return static_cast<int64_t>(c.month - 1);
    case 2:
      return static_cast<int64_t>(c.day);  // getDate: 1-based
    case 3:
      return static_cast<int64_t>(c.day - 1);  // getDayOfMonth: 0-based
    case 4:
      return static_cast<int64_t>(c.weekday);
    case 5:
      return static_cast<int64_t>(c.yearday);
    case 6:
      return static_cast<int64_t>(c.hour);
    case 7:
      return static_cast<int64_t>(c.minute);
    case 8:
      return static_cast<int64_t>(c.second);
    default:
      return static_cast<int64_t>(ts.nanos / 1000000);
  }
}
Value DurationHours(const Args& a) { return a[0].as<Duration>().nanos / int64_t{3600000000000}; }
Value DurationMinutes(const Args& a) { return a[0].as<Duration>().nanos / int64_t{60000000000}; }
Value DurationSeconds(const Args& a) { return a[0].as<Duration>().nanos / int64_t{1000000000}; }
Value DurationMillis(const Args& a) {
  return (a[0].as<Duration>().nanos / int64_t{1000000}) % 1000;
}

// --- Optional types ---------------------------------------------------------------------------

bool IsZeroValue(const Value& v) {
  if (v.is<NullValue>()) return true;
  if (v.is<bool>()) return !v.as<bool>();
  if (v.is<int64_t>()) return v.as<int64_t>() == 0;
  if (v.is<uint64_t>()) return v.as<uint64_t>() == 0;
  if (v.is<double>()) return v.as<double>() == 0;
  if (v.is<std::string>()) return v.as<std::string>().empty();
  if (v.is<Bytes>()) return v.as<Bytes>().data.empty();
  if (v.is_list()) return v.list().items.empty();
  if (v.is_map()) return v.map().entries.empty();
  if (v.is<Duration>()) return v.as<Duration>().nanos == 0;
  if (v.is<Timestamp>()) return v.as<Timestamp>().seconds == 0 && v.as<Timestamp>().nanos == 0;
  return false;
}
Value OptionalOf(const Args& a) { return Value::Some(a[0]); }
Value OptionalOfNonZero(const Args& a) {
  return IsZeroValue(a[0]) ? Value::None() : Value::Some(a[0]);
}
Value OptionalNone(const Args&) { return Value::None(); }
Value OptionalValueFn(const Args& a) {
  const auto& o = a[0].as<OptionalValue>();
  if (!o.value) {
    return Value::Error("optional.none() dereference");
  }
  return *o.value;
}
Value OptionalHasValue(const Args& a) { return a[0].as<OptionalValue>().value != nullptr; }
Value OptionalOr(const Args& a) { return a[0].as<OptionalValue>().value ? a[0] : a[1]; }
Value OptionalOrValue(const Args& a) {
  const auto& o = a[0].as<OptionalValue>();
  return o.value ? *o.value : a[1];
}

// --- Strings extension (cel-go ext.Strings version 2) -----------------------------------------

Value IndexOutOfRange(int64_t i) {
  return Value::Error("index out of range: " + std::to_string(i));
}

Value CharAt(const Args& a) {
  std::u32string s = DecodeUtf8(Str(a[0]));
  int64_t i = Int(a[1]);
  if (i < 0 || i > static_cast<int64_t>(s.size())) {
    return IndexOutOfRange(i);
  }
  if (i == static_cast<int64_t>(s.size())) {
    return std::string();
  }
  std::string out;
  AppendUtf8(out, s[static_cast<size_t>(i)]);
  return out;
}
Value IndexOfString(const Args& a) {
  std::u32string s = DecodeUtf8(Str(a[0]));
  std::u32string sub = DecodeUtf8(Str(a[1]));
  int64_t offset = a.size() > 2 ? Int(a[2]) : 0;
  if (offset < 0 || offset > static_cast<int64_t>(s.size())) {
    return IndexOutOfRange(offset);
  }
  size_t pos = s.find(sub, static_cast<size_t>(offset));
  return pos == std::u32string::npos ? int64_t{-1} : static_cast<int64_t>(pos);
}
Value LastIndexOfString(const Args& a) {
  std::u32string s = DecodeUtf8(Str(a[0]));
  std::u32string sub = DecodeUtf8(Str(a[1]));
  int64_t offset = a.size() > 2 ? Int(a[2]) : static_cast<int64_t>(s.size());
  if (offset < 0 || offset > static_cast<int64_t>(s.size())) {
    return IndexOutOfRange(offset);
  }
  size_t pos = s.rfind(sub, static_cast<size_t>(offset));
  return pos == std::u32string::npos ? int64_t{-1} : static_cast<int64_t>(pos);
}
Value LowerAscii(const Args& a) {
  std::string s = Str(a[0]);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return s;
}
Value UpperAscii(const Args& a) {
  std::string s = Str(a[0]);
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return s;
}
Value Replace(const Args& a) {
  const std::string& s = Str(a[0]);
  const std::string& from = Str(a[1]);
  const std::string& to = Str(a[2]);
  int64_t n = a.size() > 3 ? Int(a[3]) : -1;
  if (n == 0) {
    return s;
  }
  std::string out;
  if (from.empty()) {
    // Go inserts the replacement before every code point and at the end.
    std::u32string cps = DecodeUtf8(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (n < 0 || done < n) {
        out += to;
        ++done;
      }
      AppendUtf8(out, c);
    }
    if (n < 0 || done < n) {
      out += to;
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (n < 0 || done < n) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) {
      break;
    }
    out += s.substr(pos, hit - pos) + to;
    pos = hit + from.size();
    ++done;
  }
  return out + s.substr(pos);
}
Value Split(const Args& a) {
  const std::string& s = Str(a[0]);
  const std::string& sep = Str(a[1]);
  int64_t n = a.size() > 2 ? Int(a[2]) : -1;
  std::vector<Value> parts;
  if (n == 0) {
    return Value::List({});
  }
  if (sep.empty()) {
    std::u32string cps = DecodeUtf8(s);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(parts.size()) == n - 1) {
        parts.emplace_back(EncodeUtf8(cps.substr(i)));
        return Value::List(std::move(parts));
      }
      std::string one;
      AppendUtf8(one, cps[i]);
      parts.emplace_back(one);
    }
    return Value::List(std::move(parts));
  }
  size_t pos = 0;
  while (n < 0 || static_cast<int64_t>(parts.size()) < n - 1) {
    size_t hit = s.find(sep, pos);
    if (hit == std::string::npos) {
      break;
    }
    parts.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  parts.emplace_back(s.substr(pos));
  return Value::List(std::move(parts));
}
Value Substring(const Args& a) {
  std::u32string s = DecodeUtf8(Str(a[0]));
  int64_t start = Int(a[1]);
  int64_t end = a.size() > 2 ? Int(a[2]) : static_cast<int64_t>(s.size());
  auto size = static_cast<int64_t>(s.size());
  if (start < 0 || start > size) {
    return IndexOutOfRange(start);
  }
  if (end < 0 || end > size) {
    return IndexOutOfRange(end);
  }
  if (start > end) {
    return Value::Error("invalid substring range. start: " + std::to_string(start) +
                        ", end: " + std::to_string(end));
  }
  return EncodeUtf8(s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
}
bool IsUnicodeSpace(char32_t c) {
  return c == U' ' || (c >= U'\t' && c <= U'\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}
Value Trim(const Args& a) {
  std::u32string s = DecodeUtf8(Str(a[0]));
  size_t b = 0;
  size_t e = s.size();
  while (b < e && IsUnicodeSpace(s[b])) {
    ++b;
  }
  while (e > b && IsUnicodeSpace(s[e - 1])) {
    --e;
  }
  return EncodeUtf8(s.substr(b, e - b));
}
Value Join(const Args& a) {
  std::string sep = a.size() > 1 ? Str(a[1]) : "";
  std::string out;
  bool first = true;
  for (const Value& item : a[0].list().items) {
    if (!item.is<std::string>()) {
      return NoSuchOverload();
    }
    if (!first) {
      out += sep;
    }
    out += item.as<std::string>();
    first = false;
  }
  return out;
}

// --- Kubernetes lists library -----------------------------------------------------------------

Value IsSorted(const Args& a) {
  const auto& items = a[0].list().items;
  for (size_t i = 1; i < items.size(); ++i) {
    auto c = Compare(items[i - 1], items[i]);
    if (!c) {
      return NoSuchOverload();
    }
    if (*c > 0) {
      return false;
    }
  }
  return true;
}
Value Sum(const Args& a) {
  const auto& items = a[0].list().items;
  if (items.empty()) {
    return int64_t{0};
  }
  Value total = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    const Value& x = items[i];
    if (total.is<int64_t>() && x.is<int64_t>()) {
      total = AddInt({total, x});
    } else if (total.is<uint64_t>() && x.is<uint64_t>()) {
      total = AddUint({total, x});
    } else if (total.is<double>() && x.is<double>()) {
      total = AddDouble({total, x});
    } else if (total.is<Duration>() && x.is<Duration>()) {
      total = AddDurDur({total, x});
    } else {
      return NoSuchOverload();
    }
    if (total.is_error()) {
      return total;
    }
  }
  return total;
}
template <bool kMin>
Value MinMax(const Args& a) {
  const auto& items = a[0].list().items;
  if (items.empty()) {
    return Value::Error(std::string(kMin ? "min" : "max") + " called on empty list");
  }
  Value best = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    auto c = Compare(items[i], best);
    if (!c) {
      return NoSuchOverload();
    }
    if (kMin ? *c < 0 : *c > 0) {
      best = items[i];
    }
  }
  return best;
}
Value ListIndexOf(const Args& a) {
  const auto& items = a[0].list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    Value eq = Equals(items[i], a[1]);
    if (eq.is<bool>() && eq.as<bool>()) {
      return static_cast<int64_t>(i);
    }
  }
  return int64_t{-1};
}
Value ListLastIndexOf(const Args& a) {
  const auto& items = a[0].list().items;
  for (size_t i = items.size(); i > 0; --i) {
    Value eq = Equals(items[i - 1], a[1]);
    if (eq.is<bool>() && eq.as<bool>()) {
      return static_cast<int64_t>(i - 1);
    }
  }
  return int64_t{-1};
}

// --- Sets extension ---------------------------------------------------------------------------

bool ListHas(const ListValue& list, const Value& v) {
  return std::any_of(list.items.begin(), list.items.end(), [&](const Value& item) {
    Value eq = Equals(item, v);
    return eq.is<bool>() && eq.as<bool>();
  });
}
Value SetsContains(const Args& a) {
  const auto& sub = a[1].list().items;
  return std::all_of(sub.begin(), sub.end(),
                     [&](const Value& v) { return ListHas(a[0].list(), v); });
}
Value SetsEquivalent(const Args& a) {
  return SetsContains({a[0], a[1]}).as<bool>() && SetsContains({a[1], a[0]}).as<bool>();
}
Value SetsIntersects(const Args& a) {
  const auto& items = a[1].list().items;
  return std::any_of(items.begin(), items.end(),
                     [&](const Value& v) { return ListHas(a[0].list(), v); });
}

// --- Kubernetes quantity library --------------------------------------------------------------

constexpr const char* kQuantityFormatError =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

Value QuantityFn(const Args& a) {
  auto q = ParseQuantity(Str(a[0]));
  if (!q) {
    return Value::Error(kQuantityFormatError);
  }
  return *q;
}
Value IsQuantity(const Args& a) { return ParseQuantity(Str(a[0])).has_value(); }

// Brings two quantities to one exponent (the smaller) for exact arithmetic.
bool Align(Quantity& x, Quantity& y) {
  while (x.exponent > y.exponent) {
    if (x.unscaled > kInt128Max / 10 || x.unscaled < kInt128Min / 10) {
      return false;
    }
    x.unscaled *= 10;
    --x.exponent;
  }
  while (y.exponent > x.exponent) {
    if (y.unscaled > kInt128Max / 10 || y.unscaled < kInt128Min / 10) {
      return false;
    }
    y.unscaled *= 10;
    --y.exponent;
  }
  return true;
}
int QuantityCompare(Quantity x, Quantity y) {
  if (!Align(x, y)) {
    return x.unscaled < 0 ? -1 : 1;
  }
  return x.unscaled < y.unscaled ? -1 : (x.unscaled > y.unscaled ? 1 : 0);
}
std::optional<int64_t> QuantityAsInt64(Quantity q) {
  while (q.exponent > 0) {
    if (q.unscaled > std::numeric_limits<int64_t>::max() ||
        q.unscaled < std::numeric_limits<int64_t>::min()) {
      return std::nullopt;
    }
    q.unscaled *= 10;
    --q.exponent;
  }
  while (q.exponent < 0) {
    if (q.unscaled % 10 != 0) {
      return std::nullopt;
    }
    q.unscaled /= 10;
    ++q.exponent;
  }
  if (q.unscaled > std::numeric_limits<int64_t>::max() ||
      q.unscaled < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(q.unscaled);
}
Value QuantitySign(const Args& a) {
  Int128 u = a[0].as<Quantity>().unscaled;
  return static_cast<int64_t>(u > 0 ? 1 : (u < 0 ? -1 : 0));
}
Value QuantityIsInteger(const Args& a) { return QuantityAsInt64(a[0].as<Quantity>()).has_value(); }
Value QuantityAsInteger(const Args& a) {
  auto v = QuantityAsInt64(a[0].as<Quantity>());
  if (!v) {
    return Value::Error("cannot convert value to integer");
  }
  return *v;
}
Value QuantityAsFloat(const Args& a) {
  const Quantity& q = a[0].as<Quantity>();
  return static_cast<double>(q.unscaled) * std::pow(10.0, q.exponent);
}
Quantity ToQuantity(const Value& v) {
  if (v.is<int64_t>()) {
    return Quantity{v.as<int64_t>(), 0};
  }
  return v.as<Quantity>();
}
Value QuantityAdd(const Args& a) {
  Quantity x = ToQuantity(a[0]);
  Quantity y = ToQuantity(a[1]);
  if (!Align(x, y)) {
    return Value::Error("integer overflow");
  }
  return Quantity{x.unscaled + y.unscaled, x.exponent};
}
Value QuantitySub(const Args& a) {
  Quantity x = ToQuantity(a[0]);
  Quantity y = ToQuantity(a[1]);
  if (!Align(x, y)) {
    return Value::Error("integer overflow");
  }
  return Quantity{x.unscaled - y.unscaled, x.exponent};
}
Value QuantityGreater(const Args& a) {
  return QuantityCompare(a[0].as<Quantity>(), a[1].as<Quantity>()) > 0;
}
Value QuantityLess(const Args& a) {
  return QuantityCompare(a[0].as<Quantity>(), a[1].as<Quantity>()) < 0;
}
Value QuantityCompareTo(const Args& a) {
  return static_cast<int64_t>(QuantityCompare(a[0].as<Quantity>(), a[1].as<Quantity>()));
}

// --- The table ----------------------------------------------------------------------------------

struct Registry {
  std::map<std::string, FunctionDecl> functions;
  std::map<std::string, FunctionImpl> impls;

  // Adds an overload: "fn", "id", member?, "(param, param) -> result", impl.
  void Add(const std::string& fn, const std::string& id, bool member,
           std::vector<std::string> params, const std::string& result, FunctionImpl impl,
           const std::string& library = "") {
    FunctionDecl& decl = functions[fn];
    decl.name = fn;
    if (!library.empty()) {
      decl.library = library;
    }
    OverloadDecl o;
    o.id = id;
    o.member = member;
    for (const std::string& p : params) {
      o.params.push_back(ParseTypeSignature(p));
    }
    o.result = ParseTypeSignature(result);
    o.impl = impl;
    decl.overloads.push_back(std::move(o));
    if (impl != nullptr) {
      impls[id] = impl;
    }
  }
};

const std::vector<std::string> kComparable = {"int",      "uint",      "double", "bool",
                                              "duration", "timestamp", "string", "bytes"};

std::string TypeIdName(const std::string& t) {
  return t == "int" ? "int64" : (t == "uint" ? "uint64" : t);
}

void AddOperators(Registry& r) {
  r.Add("!_", "logical_not", false, {"bool"}, "bool", Not);
  r.Add("-_", "negate_int64", false, {"int"}, "int", NegInt);
  r.Add("-_", "negate_double", false, {"double"}, "double", NegDouble);
  r.Add("_&&_", "logical_and", false, {"bool", "bool"}, "bool", nullptr);
  r.Add("_||_", "logical_or", false, {"bool", "bool"}, "bool", nullptr);
  r.Add("_?_:_", "conditional", false, {"bool", "A", "A"}, "A", nullptr);
  r.Add("@not_strictly_false", "not_strictly_false", false, {"bool"}, "bool", NotStrictlyFalse);
  r.Add("_==_", "equals", false, {"A", "A"}, "bool", Eq);
  r.Add("_!=_", "not_equals", false, {"A", "A"}, "bool", Ne);
  struct Rel {
    const char* fn;
    const char* prefix;
    FunctionImpl impl;
  };
  for (const Rel& rel :
       {Rel{"_<_", "less", Less}, Rel{"_<=_", "less_equals", LessEq},
        Rel{"_>_", "greater", Greater}, Rel{"_>=_", "greater_equals", GreaterEq}}) {
    for (const char* t :
         {"bool", "int", "uint", "double", "string", "bytes", "timestamp", "duration"}) {
      r.Add(rel.fn, std::string(rel.prefix) + "_" + TypeIdName(t), false, {t, t}, "bool", rel.impl);
    }
    // Kubernetes enables cel.CrossTypeNumericComparisons (1.28+).
    for (const auto& [x, y] :
         std::vector<std::pair<std::string, std::string>>{{"int", "uint"},
                                                          {"int", "double"},
                                                          {"uint", "int"},
                                                          {"uint", "double"},
                                                          {"double", "int"},
                                                          {"double", "uint"}}) {
      r.Add(rel.fn, std::string(rel.prefix) + "_" + TypeIdName(x) + "_" + TypeIdName(y), false,
            {x, y}, "bool", rel.impl);
    }
  }
  r.Add("_+_", "add_int64", false, {"int", "int"}, "int", AddInt);
  r.Add("_+_", "add_uint64", false, {"uint", "uint"}, "uint", AddUint);
  r.Add("_+_", "add_double", false, {"double", "double"}, "double", AddDouble);
  r.Add("_+_", "add_string", false, {"string", "string"}, "string", AddString);
  r.Add("_+_", "add_bytes", false, {"bytes", "bytes"}, "bytes", AddBytes);
  r.Add("_+_", "add_list", false, {"list(A)", "list(A)"}, "list(A)", AddList);
  r.Add("_+_", "add_timestamp_duration", false, {"timestamp", "duration"}, "timestamp", AddTsDur);
  r.Add("_+_", "add_duration_timestamp", false, {"duration", "timestamp"}, "timestamp", AddDurTs);
  r.Add("_+_", "add_duration_duration", false, {"duration", "duration"}, "duration", AddDurDur);
  r.Add("_-_", "subtract_int64", false, {"int", "int"}, "int", SubInt);
  r.Add("_-_", "subtract_uint64", false, {"uint", "uint"}, "uint", SubUint);
  r.Add("_-_", "subtract_double", false, {"double", "double"}, "double", SubDouble);
  r.Add("_-_", "subtract_timestamp_timestamp", false, {"timestamp", "timestamp"}, "duration",
        SubTsTs);
  r.Add("_-_", "subtract_timestamp_duration", false, {"timestamp", "duration"}, "timestamp",
        SubTsDur);
  r.Add("_-_", "subtract_duration_duration", false, {"duration", "duration"}, "duration",
        SubDurDur);
  r.Add("_*_", "multiply_int64", false, {"int", "int"}, "int", MulInt);
  r.Add("_*_", "multiply_uint64", false, {"uint", "uint"}, "uint", MulUint);
  r.Add("_*_", "multiply_double", false, {"double", "double"}, "double", MulDouble);
  r.Add("_/_", "divide_int64", false, {"int", "int"}, "int", DivInt);
  r.Add("_/_", "divide_uint64", false, {"uint", "uint"}, "uint", DivUint);
  r.Add("_/_", "divide_double", false, {"double", "double"}, "double", DivDouble);
  r.Add("_%_", "modulo_int64", false, {"int", "int"}, "int", ModInt);
  r.Add("_%_", "modulo_uint64", false, {"uint", "uint"}, "uint", ModUint);
  // Indexing is evaluated by the interpreter (lists, maps, optionals); these are for the checker.
  r.Add("_[_]", "index_list", false, {"list(A)", "int"}, "A", nullptr);
  r.Add("_[_]", "index_map", false, {"map(A, B)", "A"}, "B", nullptr);
  r.Add("_[_]", "optional_list_index_int", false, {"optional(list(A))", "int"}, "optional(A)",
        nullptr);
  r.Add("_[_]", "optional_map_index_value", false, {"optional(map(A, B))", "A"}, "optional(B)",
        nullptr);
  r.Add("_[?_]", "list_optindex_optional_int", false, {"list(A)", "int"}, "optional(A)", nullptr);
  r.Add("_[?_]", "optional_list_optindex_optional_int", false, {"optional(list(A))", "int"},
        "optional(A)", nullptr);
  r.Add("_[?_]", "map_optindex_optional_value", false, {"map(A, B)", "A"}, "optional(B)", nullptr);
  r.Add("_[?_]", "optional_map_optindex_optional_value", false, {"optional(map(A, B))", "A"},
        "optional(B)", nullptr);
  r.Add("@in", "in_list", false, {"A", "list(A)"}, "bool", InList);
  r.Add("@in", "in_map", false, {"A", "map(A, B)"}, "bool", InMap);
}

void AddStandardFunctions(Registry& r) {
  r.Add("size", "size_string", false, {"string"}, "int", SizeString);
  r.Add("size", "size_bytes", false, {"bytes"}, "int", SizeBytes);
  r.Add("size", "size_list", false, {"list(A)"}, "int", SizeList);
  r.Add("size", "size_map", false, {"map(A, B)"}, "int", SizeMap);
  r.Add("size", "string_size", true, {"string"}, "int", SizeString);
  r.Add("size", "bytes_size", true, {"bytes"}, "int", SizeBytes);
  r.Add("size", "list_size", true, {"list(A)"}, "int", SizeList);
  r.Add("size", "map_size", true, {"map(A, B)"}, "int", SizeMap);
  r.Add("contains", "contains_string", true, {"string", "string"}, "bool", Contains);
  r.Add("startsWith", "starts_with_string", true, {"string", "string"}, "bool", StartsWith);
  r.Add("endsWith", "ends_with_string", true, {"string", "string"}, "bool", EndsWith);
  r.Add("matches", "matches", false, {"string", "string"}, "bool", Matches);
  r.Add("matches", "matches_string", true, {"string", "string"}, "bool", Matches);
  r.Add("int", "int64_to_int64", false, {"int"}, "int", Identity);
  r.Add("int", "uint64_to_int64", false, {"uint"}, "int", UintToInt);
  r.Add("int", "double_to_int64", false, {"double"}, "int", DoubleToInt);
  r.Add("int", "string_to_int64", false, {"string"}, "int", StringToInt);
  r.Add("int", "timestamp_to_int64", false, {"timestamp"}, "int", TimestampToInt);
  r.Add("uint", "uint64_to_uint64", false, {"uint"}, "uint", Identity);
  r.Add("uint", "int64_to_uint64", false, {"int"}, "uint", IntToUint);
  r.Add("uint", "double_to_uint64", false, {"double"}, "uint", DoubleToUint);
  r.Add("uint", "string_to_uint64", false, {"string"}, "uint", StringToUint);
  r.Add("double", "double_to_double", false, {"double"}, "double", Identity);
  r.Add("double", "int64_to_double", false, {"int"}, "double", IntToDouble);
  r.Add("double", "uint64_to_double", false, {"uint"}, "double", UintToDouble);
  r.Add("double", "string_to_double", false, {"string"}, "double", StringToDouble);
  r.Add("string", "string_to_string", false, {"string"}, "string", Identity);
  r.Add("string", "int64_to_string", false, {"int"}, "string", IntToString);
  r.Add("string", "uint64_to_string", false, {"uint"}, "string", UintToString);
  r.Add("string", "double_to_string", false, {"double"}, "string", DoubleToString);
  r.Add("string", "bool_to_string", false, {"bool"}, "string", BoolToString);
  r.Add("string", "bytes_to_string", false, {"bytes"}, "string", BytesToString);
  r.Add("string", "timestamp_to_string", false, {"timestamp"}, "string", TimestampToString);
  r.Add("string", "duration_to_string", false, {"duration"}, "string", DurationToString);
  r.Add("bytes", "bytes_to_bytes", false, {"bytes"}, "bytes", Identity);
  r.Add("bytes", "string_to_bytes", false, {"string"}, "bytes", StringToBytes);
  r.Add("bool", "bool_to_bool", false, {"bool"}, "bool", Identity);
  r.Add("bool", "string_to_bool", false, {"string"}, "bool", StringToBool);
  r.Add("timestamp", "timestamp_to_timestamp", false, {"timestamp"}, "timestamp", Identity);
  r.Add("timestamp", "string_to_timestamp", false, {"string"}, "timestamp", StringToTimestamp);
  r.Add("timestamp", "int64_to_timestamp", false, {"int"}, "timestamp", IntToTimestamp);
  r.Add("duration", "duration_to_duration", false, {"duration"}, "duration", Identity);
  r.Add("duration", "string_to_duration", false, {"string"}, "duration", StringToDuration);
  r.Add("dyn", "to_dyn", false, {"A"}, "dyn", ToDyn);
  r.Add("type", "type", false, {"A"}, "type(A)", nullptr);
  struct Getter {
    const char* fn;
    const char* id;
    FunctionImpl ts_impl;
    FunctionImpl duration_impl;
  };
  for (const Getter& g :
       {Getter{"getFullYear", "to_year", TimestampField<0>, nullptr},
        Getter{"getMonth", "to_month", TimestampField<1>, nullptr},
        Getter{"getDate", "to_day_of_month_1_based", TimestampField<2>, nullptr},
        Getter{"getDayOfMonth", "to_day_of_month", TimestampField<3>, nullptr},
        Getter{"getDayOfWeek", "to_day_of_week", TimestampField<4>, nullptr},
        Getter{"getDayOfYear", "to_day_of_year", TimestampField<5>, nullptr},
        Getter{"getHours", "to_hours", TimestampField<6>, DurationHours},
        Getter{"getMinutes", "to_minutes", TimestampField<7>, DurationMinutes},
        Getter{"getSeconds", "to_seconds", TimestampField<8>, DurationSeconds},
        Getter{"getMilliseconds", "to_milliseconds", TimestampField<9>, DurationMillis}}) {
    r.Add(g.fn, std::string("timestamp_") + g.id, true, {"timestamp"}, "int", g.ts_impl);
    r.Add(g.fn, std::string("timestamp_") + g.id + "_with_tz", true, {"timestamp", "string"}, "int",
          g.ts_impl);
    if (g.duration_impl != nullptr) {
      r.Add(g.fn, std::string("duration_") + g.id, true, {"duration"}, "int", g.duration_impl);
    }
  }
}

void AddOptionals(Registry& r) {
  r.Add("optional.of", "optional_of", false, {"A"}, "optional(A)", OptionalOf);
  r.Add("optional.ofNonZeroValue", "optional_ofNonZeroValue", false, {"A"}, "optional(A)",
        OptionalOfNonZero);
  r.Add("optional.none", "optional_none", false, {}, "optional(A)", OptionalNone);
  r.Add("value", "optional_value", true, {"optional(A)"}, "A", OptionalValueFn);
  r.Add("hasValue", "optional_hasValue", true, {"optional(A)"}, "bool", OptionalHasValue);
  r.Add("or", "optional_or_optional", true, {"optional(A)", "optional(A)"}, "optional(A)",
        OptionalOr);
  r.Add("orValue", "optional_orValue_value", true, {"optional(A)", "A"}, "A", OptionalOrValue);
  r.Add("_?._", "select_optional_field", false, {"dyn", "string"}, "optional(dyn)", nullptr);
}

void AddStringsExtension(Registry& r) {
  const std::string lib = "strings extension";
  r.Add("charAt", "string_char_at_int", true, {"string", "int"}, "string", CharAt, lib);
  r.Add("indexOf", "string_index_of_string", true, {"string", "string"}, "int", IndexOfString, lib);
  r.Add("indexOf", "string_index_of_string_int", true, {"string", "string", "int"}, "int",
        IndexOfString, lib);
  r.Add("lastIndexOf", "string_last_index_of_string", true, {"string", "string"}, "int",
        LastIndexOfString, lib);
  r.Add("lastIndexOf", "string_last_index_of_string_int", true, {"string", "string", "int"}, "int",
        LastIndexOfString, lib);
  r.Add("lowerAscii", "string_lower_ascii", true, {"string"}, "string", LowerAscii, lib);
  r.Add("upperAscii", "string_upper_ascii", true, {"string"}, "string", UpperAscii, lib);
  r.Add("replace", "string_replace_string_string", true, {"string", "string", "string"}, "string",
        Replace, lib);
  r.Add("replace", "string_replace_string_string_int", true, {"string", "string", "string", "int"},
        "string", Replace, lib);
  r.Add("split", "string_split_string", true, {"string", "string"}, "list(string)", Split, lib);
  r.Add("split", "string_split_string_int", true, {"string", "string", "int"}, "list(string)",
        Split, lib);
  r.Add("substring", "string_substring_int", true, {"string", "int"}, "string", Substring, lib);
  r.Add("substring", "string_substring_int_int", true, {"string", "int", "int"}, "string",
        Substring, lib);
  r.Add("trim", "string_trim", true, {"string"}, "string", Trim, lib);
  r.Add("join", "list_join", true, {"list(string)"}, "string", Join, lib);
  r.Add("join", "list_join_string", true, {"list(string)", "string"}, "string", Join, lib);
  r.Add("format", "string_format", true, {"string", "list(dyn)"}, "string", nullptr, lib);
  r.Add("strings.quote", "strings_quote", false, {"string"}, "string", nullptr, lib);
}

void AddKubernetesLists(Registry& r) {
  const std::string lib = "Kubernetes lists library";
  for (const std::string& t : kComparable) {
    std::string list = "list(" + t + ")";
    r.Add("isSorted", "list_" + t + "_is_sorted_bool", true, {list}, "bool", IsSorted, lib);
    r.Add("min", "list_" + t + "_min_" + t, true, {list}, t, MinMax<true>, lib);
    r.Add("max", "list_" + t + "_max_" + t, true, {list}, t, MinMax<false>, lib);
  }
  for (const std::string t : {"int", "uint", "double", "duration"}) {
    r.Add("sum", "list_" + t + "_sum_" + t, true, {"list(" + t + ")"}, t, Sum, lib);
  }
  r.Add("indexOf", "list_a_index_of_int", true, {"list(A)", "A"}, "int", ListIndexOf, lib);
  r.Add("lastIndexOf", "list_a_last_index_of_int", true, {"list(A)", "A"}, "int", ListLastIndexOf,
        lib);
}

void AddKubernetesRegex(Registry& r) {
  const std::string lib = "Kubernetes regex library";
  r.Add("find", "string_find_string", true, {"string", "string"}, "string", Find, lib);
  r.Add("findAll", "string_find_all_string", true, {"string", "string"}, "list(string)", FindAllFn,
        lib);
  r.Add("findAll", "string_find_all_string_int", true, {"string", "string", "int"}, "list(string)",
        FindAllFn, lib);
}

void AddSets(Registry& r) {
  const std::string lib = "sets extension";
  r.Add("sets.contains", "list_sets_contains_list", false, {"list(A)", "list(A)"}, "bool",
        SetsContains, lib);
  r.Add("sets.equivalent", "list_sets_equivalent_list", false, {"list(A)", "list(A)"}, "bool",
        SetsEquivalent, lib);
  r.Add("sets.intersects", "list_sets_intersects_list", false, {"list(A)", "list(A)"}, "bool",
        SetsIntersects, lib);
}

void AddKubernetesQuantity(Registry& r) {
  const std::string lib = "Kubernetes quantity library";
  const std::string q = "kubernetes.Quantity";
  r.Add("quantity", "string_to_quantity", false, {"string"}, q, QuantityFn, lib);
  r.Add("isQuantity", "is_quantity_string", false, {"string"}, "bool", IsQuantity, lib);
  r.Add("sign", "quantity_sign", true, {q}, "int", QuantitySign, lib);
  r.Add("isInteger", "quantity_is_integer", true, {q}, "bool", QuantityIsInteger, lib);
  r.Add("asInteger", "quantity_as_integer", true, {q}, "int", QuantityAsInteger, lib);
  r.Add("asApproximateFloat", "quantity_as_float", true, {q}, "double", QuantityAsFloat, lib);
  r.Add("add", "quantity_add", true, {q, q}, q, QuantityAdd, lib);
  r.Add("add", "quantity_add_int", true, {q, "int"}, q, QuantityAdd, lib);
  r.Add("sub", "quantity_sub", true, {q, q}, q, QuantitySub, lib);
  r.Add("sub", "quantity_sub_int", true, {q, "int"}, q, QuantitySub, lib);
  r.Add("isGreaterThan", "quantity_is_greater_than", true, {q, q}, "bool", QuantityGreater, lib);
  r.Add("isLessThan", "quantity_is_less_than", true, {q, q}, "bool", QuantityLess, lib);
  r.Add("compareTo", "quantity_compare_to", true, {q, q}, "int", QuantityCompareTo, lib);
}

// Kubernetes libraries devcluster declares (so types check as on the server) but refuses.
void AddUnimplemented(Registry& r) {
  const std::string urls = "Kubernetes URL library";
  const std::string url = "kubernetes.URL";
  r.Add("url", "string_to_url", false, {"string"}, url, nullptr, urls);
  r.Add("isURL", "is_url_string", false, {"string"}, "bool", nullptr, urls);
  for (const char* fn : {"getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"}) {
    r.Add(fn, std::string("url_") + fn, true, {url}, "string", nullptr, urls);
  }
  r.Add("getQuery", "url_get_query", true, {url}, "map(string, list(string))", nullptr, urls);

  const std::string ips = "Kubernetes IP address library";
  const std::string ip = "net.IP";
  const std::string cidr = "net.CIDR";
  r.Add("ip", "string_to_ip", false, {"string"}, ip, nullptr, ips);
  r.Add("isIP", "is_ip", false, {"string"}, "bool", nullptr, ips);
  r.Add("ip.isCanonical", "ip_is_canonical", false, {"string"}, "bool", nullptr, ips);
  r.Add("family", "ip_family", true, {ip}, "int", nullptr, ips);
  for (const char* fn : {"isUnspecified", "isLoopback", "isLinkLocalMulticast",
                         "isLinkLocalUnicast", "isGlobalUnicast"}) {
    r.Add(fn, std::string("ip_") + fn, true, {ip}, "bool", nullptr, ips);
  }
  const std::string cidrs = "Kubernetes CIDR library";
  r.Add("cidr", "string_to_cidr", false, {"string"}, cidr, nullptr, cidrs);
  r.Add("isCIDR", "is_cidr", false, {"string"}, "bool", nullptr, cidrs);
  r.Add("containsIP", "cidr_contains_ip_string", true, {cidr, "string"}, "bool", nullptr, cidrs);
  r.Add("containsIP", "cidr_contains_ip_ip", true, {cidr, ip}, "bool", nullptr, cidrs);
  r.Add("containsCIDR", "cidr_contains_cidr_string", true, {cidr, "string"}, "bool", nullptr,
        cidrs);
  r.Add("containsCIDR", "cidr_contains_cidr", true, {cidr, cidr}, "bool", nullptr, cidrs);
  r.Add("ip", "cidr_ip", true, {cidr}, ip, nullptr, cidrs);
  r.Add("masked", "cidr_masked", true, {cidr}, cidr, nullptr, cidrs);
  r.Add("prefixLength", "cidr_prefix_length", true, {cidr}, "int", nullptr, cidrs);
  r.Add("string", "ip_to_string", false, {ip}, "string", nullptr, ips);
  r.Add("string", "cidr_to_string", false, {cidr}, "string", nullptr, cidrs);

  const std::string formats = "Kubernetes format library";
  const std::string format = "kubernetes.NamedFormat";
  r.Add("format.named", "format_named", false, {"string"}, "optional(" + format + ")", nullptr,
        formats);
  for (const char* fn : {"dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
                         "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
                         "labelValue", "uri", "uuid", "byte", "date", "datetime"}) {
    r.Add(std::string("format.") + fn, std::string("format_") + fn, false, {}, format, nullptr,
          formats);
  }
  r.Add("validate", "format_validate", true, {format, "string"}, "optional(list(string))", nullptr,
        formats);

  // The authorizer library needs an `authorizer` variable, which CRD rules do not have; its
  // functions exist but accept only authorizer types, so any call fails to type-check.
  const std::string authz = "Kubernetes authorizer library";
  for (const char* fn :
       {"path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check",
        "allowed", "reason", "errored", "error", "fieldSelector", "labelSelector"}) {
    r.Add(fn, std::string("authorizer_") + fn, true,
          {"kubernetes.authorization.Authorizer", "string"}, "kubernetes.authorization.Authorizer",
          nullptr, authz);
  }
}

const Registry& GetRegistry() {
  static const Registry registry = [] {
    Registry r;
    AddOperators(r);
    AddStandardFunctions(r);
    AddOptionals(r);
    AddStringsExtension(r);
    AddKubernetesLists(r);
    AddKubernetesRegex(r);
    AddSets(r);
    AddKubernetesQuantity(r);
    AddUnimplemented(r);
    return r;
  }();
  return registry;
}

}  // namespace

const FunctionDecl* FindFunction(const std::string& name) {
  const auto& functions = GetRegistry().functions;
  auto it = functions.find(name);
  return it == functions.end() ? nullptr : &it->second;
}

FunctionImpl FindImplementation(const std::string& overload_id) {
  const auto& impls = GetRegistry().impls;
  auto it = impls.find(overload_id);
  return it == impls.end() ? nullptr : it->second;
}

std::optional<Quantity> ParseQuantity(const std::string& text) {
  // resource.ParseQuantity: [+-]?digits[.digits] then a suffix: SI decimal (n u m "" k M G T P E),
  // binary (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e|E)[+-]?digits.
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    negative = text[i] == '-';
    ++i;
  }
  Int128 unscaled = 0;
  int32_t exponent = 0;
  bool any_digit = false;
  bool seen_dot = false;
  for (; i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (seen_dot) {
        return std::nullopt;
      }
      seen_dot = true;
      continue;
    }
    any_digit = true;
    if (unscaled < static_cast<Int128>(1) << 100) {
      unscaled = unscaled * 10 + (text[i] - '0');
      if (seen_dot) {
        --exponent;
      }
    } else if (!seen_dot) {
      ++exponent;
    }
  }
  if (!any_digit) {
    return std::nullopt;
  }
  std::string suffix = text.substr(i);
  static const std::map<std::string, int> kDecimal = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},
                                                      {"k", 3},  {"M", 6},  {"G", 9},  {"T", 12},
                                                      {"P", 15}, {"E", 18}};
  static const std::map<std::string, int> kBinary = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                     {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  if (auto it = kDecimal.find(suffix); it != kDecimal.end()) {
    exponent += it->second;
  } else if (auto bin = kBinary.find(suffix); bin != kBinary.end()) {
    if (unscaled >= static_cast<Int128>(1) << 60) {
      return std::nullopt;
    }
    unscaled <<= bin->second;
  } else if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t p = 1;
    bool neg_exp = false;
    if (p < suffix.size() && (suffix[p] == '+' || suffix[p] == '-')) {
      neg_exp = suffix[p] == '-';
      ++p;
    }
    if (p >= suffix.size()) {
      return std::nullopt;
    }
    int e = 0;
    for (; p < suffix.size(); ++p) {
      if (suffix[p] < '0' || suffix[p] > '9' || e > 100000) {
        return std::nullopt;
      }
      e = e * 10 + (suffix[p] - '0');
    }
    exponent += neg_exp ? -e : e;
  } else {
    return std::nullopt;
  }
  return Quantity{negative ? -unscaled : unscaled, exponent};
}

}  // namespace ringleader::cel
