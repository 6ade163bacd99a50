// Equality, ordering, JSON conversion and text forms of CEL runtime values.
#include "tests/support/cel/value.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "tests/support/cel/decl_types.h"
#include "tests/support/schema_internal.h"

namespace ringleader::cel {
namespace {

using nlohmann::json;

bool IsNumber(const Value& v) { return v.is<int64_t>() || v.is<uint64_t>() || v.is<double>(); }

// Compares two numbers of any CEL numeric kind exactly (no precision loss for int/uint).
int CompareNumbers(const Value& a, const Value& b) {
  if (a.is<double>() || b.is<double>()) {
    auto to_double = [](const Value& v) {
      if (v.is<int64_t>()) {
        return static_cast<double>(v.as<int64_t>());
      }
      if (v.is<uint64_t>()) {
        return static_cast<double>(v.as<uint64_t>());
      }
      return v.as<double>();
    };
    double x = to_double(a);
    double y = to_double(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is<int64_t>() && b.is<int64_t>()) {
    return a.as<int64_t>() < b.as<int64_t>() ? -1 : (a.as<int64_t>() > b.as<int64_t>() ? 1 : 0);
  }
  if (a.is<uint64_t>() && b.is<uint64_t>()) {
    return a.as<uint64_t>() < b.as<uint64_t>() ? -1 : (a.as<uint64_t>() > b.as<uint64_t>() ? 1 : 0);
  }
  if (a.is<int64_t>()) {
    int64_t x = a.as<int64_t>();
    uint64_t y = b.as<uint64_t>();
    return x < 0 || static_cast<uint64_t>(x) < y ? -1 : (static_cast<uint64_t>(x) > y ? 1 : 0);
  }
  return -CompareNumbers(b, a);
}

bool NumbersEqual(const Value& a, const Value& b) {
  if ((a.is<double>() && std::isnan(a.as<double>())) ||
      (b.is<double>() && std::isnan(b.as<double>()))) {
    return false;
  }
  return CompareNumbers(a, b) == 0;
}

Value ListsEqual(const ListValue& a, const ListValue& b) {
  if (a.items.size() != b.items.size()) {
    return false;
  }
  if (a.semantics == ListSemantics::kAtomic || b.semantics == ListSemantics::kAtomic) {
    for (size_t i = 0; i < a.items.size(); ++i) {
      Value eq = Equals(a.items[i], b.items[i]);
      if (eq.is_error() || !eq.as<bool>()) {
        return eq;
      }
    }
    return true;
  }
  // set and map lists: every element of one has an equal element in the other.
  for (const Value& x : a.items) {
    bool found = false;
    for (const Value& y : b.items) {
      Value eq = Equals(x, y);
      if (eq.is_error()) {
        return eq;
      }
      if (eq.as<bool>()) {
        found = true;
        break;
      }
    }
    if (!found) {
      return false;
    }
  }
  return true;
}

Value MapsEqual(const MapValue& a, const MapValue& b) {
  if (a.entries.size() != b.entries.size()) {
    return false;
  }
  for (const auto& [key, value] : a.entries) {
    const Value* other = MapFind(b, key);
    if (other == nullptr) {
      return false;
    }
    Value eq = Equals(value, *other);
    if (eq.is_error() || !eq.as<bool>()) {
      return eq;
    }
  }
  return true;
}

bool QuantityIsZero(const Quantity& q) { return q.unscaled == 0; }

}  // namespace

Value Value::List(std::vector<Value> items) {
  auto list = std::make_shared<ListValue>();
  list->items = std::move(items);
  return Value(std::shared_ptr<const ListValue>(std::move(list)));
}

std::string RuntimeTypeName(const Value& v) {
  struct Visitor {
    std::string operator()(const NullValue&) const { return "null_type"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(int64_t) const { return "int"; }
    std::string operator()(uint64_t) const { return "uint"; }
    std::string operator()(double) const { return "double"; }
    std::string operator()(const std::string&) const { return "string"; }
    std::string operator()(const Bytes&) const { return "bytes"; }
    std::string operator()(const std::shared_ptr<const ListValue>&) const { return "list"; }
    std::string operator()(const std::shared_ptr<const MapValue>& m) const {
      return m->object_type.empty() ? "map" : m->object_type;
    }
    std::string operator()(const TypeValue&) const { return "type"; }
    std::string operator()(const Duration&) const { return "google.protobuf.Duration"; }
    std::string operator()(const Timestamp&) const { return "google.protobuf.Timestamp"; }
    std::string operator()(const ErrorValue&) const { return "*error*"; }
    std::string operator()(const OptionalValue&) const { return "optional_type"; }
    std::string operator()(const Quantity&) const { return "kubernetes.Quantity"; }
  };
  return std::visit(Visitor{}, v.storage());
}

const Value* MapFind(const MapValue& map, const Value& key) {
  for (const auto& [k, v] : map.entries) {
    if (k.is<std::string>() && key.is<std::string>()) {
      if (k.as<std::string>() == key.as<std::string>()) {
        return &v;
      }
      continue;
    }
    Value eq = Equals(k, key);
    if (eq.is<bool>() && eq.as<bool>()) {
      return &v;
    }
  }
  return nullptr;
}

Value Equals(const Value& a, const Value& b) {
  if (a.is_error()) {
    return a;
  }
  if (b.is_error()) {
    return b;
  }
  if (IsNumber(a) && IsNumber(b)) {
    return NumbersEqual(a, b);
  }
  if (a.storage().index() != b.storage().index()) {
    return false;
  }
  if (a.is<NullValue>()) {
    return true;
  }
  if (a.is<bool>()) {
    return a.as<bool>() == b.as<bool>();
  }
  if (a.is<std::string>()) {
    return a.as<std::string>() == b.as<std::string>();
  }
  if (a.is<Bytes>()) {
    return a.as<Bytes>() == b.as<Bytes>();
  }
  if (a.is_list()) {
    return ListsEqual(a.list(), b.list());
  }
  if (a.is_map()) {
    return MapsEqual(a.map(), b.map());
  }
  if (a.is<TypeValue>()) {
    return a.as<TypeValue>() == b.as<TypeValue>();
  }
  if (a.is<Duration>()) {
    return a.as<Duration>() == b.as<Duration>();
  }
  if (a.is<Timestamp>()) {
    return a.as<Timestamp>() == b.as<Timestamp>();
  }
  if (a.is<OptionalValue>()) {
    const auto& x = a.as<OptionalValue>().value;
    const auto& y = b.as<OptionalValue>().value;
    if (!x || !y) {
      return !x && !y;
    }
    return Equals(*x, *y);
  }
  if (a.is<Quantity>()) {
    // Quantities compare by value (Quantity.Equal); normalise both exponents first.
    Quantity x = a.as<Quantity>();
    Quantity y = b.as<Quantity>();
    if (QuantityIsZero(x) || QuantityIsZero(y)) {
      return QuantityIsZero(x) && QuantityIsZero(y);
    }
    while (x.exponent > y.exponent) {
      x.unscaled *= 10;
      --x.exponent;
    }
    while (y.exponent > x.exponent) {
      y.unscaled *= 10;
      --y.exponent;
    }
    return x.unscaled == y.unscaled;
  }
  return false;
}

std::optional<int> Compare(const Value& a, const Value& b) {
  if (IsNumber(a) && IsNumber(b)) {
    if ((a.is<double>() && std::isnan(a.as<double>())) ||
        (b.is<double>() && std::isnan(b.as<double>()))) {
      return std::nullopt;
    }
    return CompareNumbers(a, b);
  }
  if (a.storage().index() != b.storage().index()) {
    return std::nullopt;
  }
  auto three_way = [](const auto& x, const auto& y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (a.is<std::string>()) {
    return three_way(a.as<std::string>(), b.as<std::string>());
  }
  if (a.is<Bytes>()) {
    return three_way(a.as<Bytes>().data, b.as<Bytes>().data);
  }
  if (a.is<bool>()) {
    return three_way(a.as<bool>(), b.as<bool>());
  }
  if (a.is<Duration>()) {
    return three_way(a.as<Duration>().nanos, b.as<Duration>().nanos);
  }
  if (a.is<Timestamp>()) {
    const Timestamp& x = a.as<Timestamp>();
    const Timestamp& y = b.as<Timestamp>();
    if (x.seconds != y.seconds) {
      return three_way(x.seconds, y.seconds);
    }
    return three_way(x.nanos, y.nanos);
  }
  return std::nullopt;
}

// --- Durations and timestamps --------------------------------------------------------------------

std::optional<int64_t> ParseGoDuration(const std::string& text) {
  // Go's time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+, or "0".
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    negative = text[i] == '-';
    ++i;
  }
  if (text.substr(i) == "0") {
    return 0;
  }
  if (i >= text.size()) {
    return std::nullopt;
  }
  long double total = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) != 0 || text[i] == '.')) {
      ++i;
    }
    if (i == start) {
      return std::nullopt;
    }
    std::string number = text.substr(start, i - start);
    if (number == ".") {
      return std::nullopt;
    }
    size_t unit_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) == 0 &&
           text[i] != '.') {
      ++i;
    }
    std::string unit = text.substr(unit_start, i - unit_start);
    long double scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") {
      scale = 1e3L;
    } else if (unit == "ms") {
      scale = 1e6L;
    } else if (unit == "s") {
      scale = 1e9L;
    } else if (unit == "m") {
      scale = 60e9L;
    } else if (unit == "h") {
      scale = 3600e9L;
    } else {
      return std::nullopt;
    }
    total += std::strtold(number.c_str(), nullptr) * scale;
  }
  if (total > static_cast<long double>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  auto nanos = static_cast<int64_t>(std::llroundl(total));
  return negative ? -nanos : nanos;
}

namespace {

namespace chrono = std::chrono;

// The fraction of a second in `nanos` (< 1e9) as ".5", ".000001", or "" for none.
std::string SecondFraction(uint32_t nanos) {
  if (nanos == 0) {
    return "";
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%09u", nanos);
  std::string digits(buf);
  return "." + digits.substr(0, digits.find_last_not_of('0') + 1);
}

bool ReadDigits(const std::string& s, size_t& i, size_t n, int& out) {
  if (i + n > s.size()) {
    return false;
  }
  out = 0;
  for (size_t k = 0; k < n; ++k) {
    if (std::isdigit(static_cast<unsigned char>(s[i + k])) == 0) {
      return false;
    }
    out = out * 10 + (s[i + k] - '0');
  }
  i += n;
  return true;
}

}  // namespace

std::optional<Timestamp> ParseRfc3339(const std::string& text) {
  size_t i = 0;
  int year = 0;
  int month = 0;
  int day = 0;
  if (!ReadDigits(text, i, 4, year) || i >= text.size() || text[i++] != '-' ||
      !ReadDigits(text, i, 2, month) || i >= text.size() || text[i++] != '-' ||
      !ReadDigits(text, i, 2, day)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31) {
    return std::nullopt;
  }
  int hour = 0;
  int minute = 0;
  int second = 0;
  int64_t nanos = 0;
  int64_t offset = 0;
  if (i == text.size()) {
    // A full-date ("date" format) is midnight UTC.
  } else {
    if (text[i] != 'T' && text[i] != 't') {
      return std::nullopt;
    }
    ++i;
    if (!ReadDigits(text, i, 2, hour) || i >= text.size() || text[i++] != ':' ||
        !ReadDigits(text, i, 2, minute) || i >= text.size() || text[i++] != ':' ||
        !ReadDigits(text, i, 2, second)) {
      return std::nullopt;
    }
    if (hour > 23 || minute > 59 || second > 59) {
      return std::nullopt;
    }
    if (i < text.size() && text[i] == '.') {
      ++i;
      int64_t scale = 100000000;
      size_t start = i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        if (scale > 0) {
          nanos += (text[i] - '0') * scale;
          scale /= 10;
        }
        ++i;
      }
      if (i == start) {
        return std::nullopt;
      }
    }
    if (i >= text.size()) {
      return std::nullopt;
    }
    if (text[i] == 'Z' || text[i] == 'z') {
      ++i;
    } else if (text[i] == '+' || text[i] == '-') {
      int sign = text[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0;
      int om = 0;
      if (!ReadDigits(text, i, 2, oh) || i >= text.size() || text[i++] != ':' ||
          !ReadDigits(text, i, 2, om)) {
        return std::nullopt;
      }
      offset = sign * (oh * 3600 + om * 60);
    } else {
      return std::nullopt;
    }
    if (i != text.size()) {
      return std::nullopt;
    }
  }
  // Days past the month's end roll over into the next month (February 31st is March 3rd).
  chrono::sys_days date = chrono::year{year} / chrono::month{static_cast<unsigned>(month)} /
                          chrono::day{static_cast<unsigned>(day)};
  Timestamp ts;
  ts.seconds = int64_t{date.time_since_epoch().count()} * 86400 + hour * 3600 + minute * 60 +
               second - offset;
  ts.nanos = static_cast<int32_t>(nanos);
  return ts;
}

std::string FormatDuration(int64_t nanos) {
  // cel-go renders durations as seconds with the shortest exact decimal and an "s".
  bool negative = nanos < 0;
  uint64_t abs = negative ? 0 - static_cast<uint64_t>(nanos) : static_cast<uint64_t>(nanos);
  return (negative ? "-" : "") + std::to_string(abs / 1000000000) +
         SecondFraction(static_cast<uint32_t>(abs % 1000000000)) + "s";
}

CivilTime ToCivil(int64_t seconds) {
  chrono::sys_seconds time{chrono::seconds{seconds}};
  chrono::sys_days day = chrono::floor<chrono::days>(time);
  chrono::year_month_day date{day};
  chrono::hh_mm_ss clock{time - day};
  return CivilTime{
      .year = static_cast<int>(date.year()),
      .month = static_cast<int>(static_cast<unsigned>(date.month())),
      .day = static_cast<int>(static_cast<unsigned>(date.day())),
      .hour = static_cast<int>(clock.hours().count()),
      .minute = static_cast<int>(clock.minutes().count()),
      .second = static_cast<int>(clock.seconds().count()),
      .weekday = static_cast<int>(chrono::weekday{day}.c_encoding()),
      .yearday =
          static_cast<int>((day - chrono::sys_days{date.year() / chrono::January / 1}).count()),
  };
}

std::string FormatTimestamp(const Timestamp& ts) {
  CivilTime c = ToCivil(ts.seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d", static_cast<long long>(c.year),
                c.month, c.day, c.hour, c.minute, c.second);
  return buf + SecondFraction(static_cast<uint32_t>(ts.nanos)) + "Z";
}

// --- JSON conversion ----------------------------------------------------------------------------

namespace {

std::optional<std::string> Base64Decode(const std::string& in) {
  auto decode = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  int buffer = 0;
  for (char c : in) {
    if (c == '=') {
      break;
    }
    int v = decode(c);
    if (v < 0) {
      return std::nullopt;
    }
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

Value FromJsonUntyped(const json& node) {
  switch (node.type()) {
    case json::value_t::null:
      return NullValue{};
    case json::value_t::boolean:
      return node.get<bool>();
    case json::value_t::number_integer:
      return node.get<int64_t>();
    case json::value_t::number_unsigned: {
      auto u = node.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return static_cast<int64_t>(u);
      }
      return static_cast<double>(u);
    }
    case json::value_t::number_float:
      return node.get<double>();
    case json::value_t::string:
      return node.get<std::string>();
    case json::value_t::array: {
      std::vector<Value> items;
      for (const json& item : node) {
        items.push_back(FromJsonUntyped(item));
      }
      return Value::List(std::move(items));
    }
    case json::value_t::object: {
      auto map = std::make_shared<MapValue>();
      for (const auto& [k, v] : node.items()) {
        map->entries.emplace_back(Value(k), FromJsonUntyped(v));
      }
      return Value(std::shared_ptr<const MapValue>(std::move(map)));
    }
    default:
      return NullValue{};
  }
}

}  // namespace

Value FromJson(const json& node, const Type* type) {
  if (type == nullptr || node.is_null()) {
    return FromJsonUntyped(node);
  }
  switch (type->kind) {
    case TypeKind::kInt:
      if (node.is_number_integer() || node.is_number_unsigned()) {
        return FromJsonUntyped(node);
      }
      break;
    case TypeKind::kDouble:
      if (node.is_number()) {
        return node.get<double>();
      }
      break;
    case TypeKind::kBytes:
      if (node.is_string()) {
        if (auto decoded = Base64Decode(node.get<std::string>())) {
          return Bytes{*decoded};
        }
        return Value::Error("illegal base64 data");
      }
      break;
    case TypeKind::kDuration:
      if (node.is_string()) {
        if (auto d = ParseGoDuration(node.get<std::string>())) {
          return Duration{*d};
        }
        return Value::Error("time: invalid duration \"" + node.get<std::string>() + "\"");
      }
      break;
    case TypeKind::kTimestamp:
      if (node.is_string()) {
        if (auto ts = ParseRfc3339(node.get<std::string>())) {
          return *ts;
        }
        return Value::Error("parsing time \"" + node.get<std::string>() + "\" as RFC 3339 failed");
      }
      break;
    case TypeKind::kList:
      if (node.is_array()) {
        auto list = std::make_shared<ListValue>();
        const Type* elem = type->params.empty() ? nullptr : type->params[0].get();
        for (const json& item : node) {
          list->items.push_back(FromJson(item, elem));
        }
        if (type->schema != nullptr) {
          std::string list_type =
              schema::internal::Text(*type->schema, schema::internal::kListType);
          if (list_type == "set") {
            list->semantics = ListSemantics::kSet;
          } else if (list_type == "map") {
            list->semantics = ListSemantics::kMap;
            list->map_keys =
                schema::internal::Strings(*type->schema, schema::internal::kListMapKeys);
          }
        }
        return Value(std::shared_ptr<const ListValue>(std::move(list)));
      }
      break;
    case TypeKind::kMap:
      if (node.is_object()) {
        auto map = std::make_shared<MapValue>();
        const Type* values = type->params.size() > 1 ? type->params[1].get() : nullptr;
        for (const auto& [k, v] : node.items()) {
          map->entries.emplace_back(Value(k), FromJson(v, values));
        }
        return Value(std::shared_ptr<const MapValue>(std::move(map)));
      }
      break;
    case TypeKind::kObject:
      if (node.is_object()) {
        auto map = std::make_shared<MapValue>();
        map->object_type = type->name;
        for (const auto& [k, v] : node.items()) {
          const Type* field_type = nullptr;
          if (auto escaped = EscapePropertyName(k)) {
            auto it = type->fields.find(*escaped);
            if (it != type->fields.end()) {
              field_type = it->second.type.get();
            }
          }
          // Fields CEL cannot see keep their JSON value (they still count for equality).
          map->entries.emplace_back(Value(field_type != nullptr ? *EscapePropertyName(k) : k),
                                    FromJson(v, field_type));
        }
        return Value(std::shared_ptr<const MapValue>(std::move(map)));
      }
      break;
    default:
      break;
  }
  return FromJsonUntyped(node);
}

std::string DebugString(const Value& v) {
  if (v.is<std::string>()) {
    return v.as<std::string>();
  }
  if (v.is<int64_t>()) {
    return std::to_string(v.as<int64_t>());
  }
  if (v.is<uint64_t>()) {
    return std::to_string(v.as<uint64_t>());
  }
  if (v.is<double>()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v.as<double>());
    return buf;
  }
  if (v.is<bool>()) {
    return v.as<bool>() ? "true" : "false";
  }
  if (v.is<NullValue>()) {
    return "null";
  }
  if (v.is<TypeValue>()) {
    return v.as<TypeValue>().name;
  }
  if (v.is_error()) {
    return v.error();
  }
  return RuntimeTypeName(v);
}

}  // namespace ringleader::cel
