// CEL runtime values (cel-go's ref.Val): scalars, lists and maps with Kubernetes' list-type
// equality, objects from custom resources, types, durations, timestamps, optionals,
// quantities and errors, plus JSON <-> value conversion driven by declared types.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tests/support/cel/ast.h"
#include "tests/support/cel/types.h"

namespace ringleader::cel {

class Value;

// Kubernetes compares x-kubernetes-list-type set and map lists without regard to order.
enum class ListSemantics { kAtomic, kSet, kMap };

struct ListValue {
  std::vector<Value> items;
  ListSemantics semantics = ListSemantics::kAtomic;
  std::vector<std::string> map_keys;  // x-kubernetes-list-map-keys
};

struct MapValue {
  std::vector<std::pair<Value, Value>> entries;  // in insertion (JSON) order
  std::string object_type;                       // non-empty for objects of a declared object type
};

struct TypeValue {
  std::string name;  // "int", "list", "map", "type", an object type name, ...
  bool operator==(const TypeValue&) const = default;
};

struct Duration {
  int64_t nanos = 0;
  bool operator==(const Duration&) const = default;
};

struct Timestamp {
  int64_t seconds = 0;  // since the Unix epoch, UTC
  int32_t nanos = 0;
  bool operator==(const Timestamp&) const = default;
};

struct ErrorValue {
  std::string message;
};

struct OptionalValue {
  std::shared_ptr<const Value> value;  // null: optional.none()
};

// 128-bit integers for exact quantity arithmetic (a GCC and Clang extension).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// A Kubernetes resource.Quantity held exactly as unscaled * 10^exponent.
struct Quantity {
  Int128 unscaled = 0;
  int32_t exponent = 0;
};

class Value {
 public:
  using Storage = std::variant<NullValue, bool, int64_t, uint64_t, double, std::string, Bytes,
                               std::shared_ptr<const ListValue>, std::shared_ptr<const MapValue>,
                               TypeValue, Duration, Timestamp, ErrorValue, OptionalValue, Quantity>;

  Value() : v_(NullValue{}) {}
  Value(NullValue v) : v_(v) {}                 // NOLINT: implicit by design, values are variants
  Value(bool v) : v_(v) {}                      // NOLINT
  Value(int64_t v) : v_(v) {}                   // NOLINT
  Value(uint64_t v) : v_(v) {}                  // NOLINT
  Value(double v) : v_(v) {}                    // NOLINT
  Value(std::string v) : v_(std::move(v)) {}    // NOLINT
  Value(const char* v) : v_(std::string(v)) {}  // NOLINT
  Value(Bytes v) : v_(std::move(v)) {}          // NOLINT
  Value(std::shared_ptr<const ListValue> v) : v_(std::move(v)) {}  // NOLINT
  Value(std::shared_ptr<const MapValue> v) : v_(std::move(v)) {}   // NOLINT
  Value(TypeValue v) : v_(std::move(v)) {}                         // NOLINT
  Value(Duration v) : v_(v) {}                                     // NOLINT
  Value(Timestamp v) : v_(v) {}                                    // NOLINT
  Value(ErrorValue v) : v_(std::move(v)) {}                        // NOLINT
  Value(OptionalValue v) : v_(std::move(v)) {}                     // NOLINT
  Value(Quantity v) : v_(v) {}                                     // NOLINT

  static Value Error(std::string message) { return Value(ErrorValue{std::move(message)}); }
  static Value List(std::vector<Value> items);
  static Value None() { return Value(OptionalValue{}); }
  static Value Some(Value v) {
    return Value(OptionalValue{std::make_shared<const Value>(std::move(v))});
  }

  template <typename T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  template <typename T>
  const T& as() const {
    return std::get<T>(v_);
  }
  bool is_error() const { return is<ErrorValue>(); }
  bool is_list() const { return is<std::shared_ptr<const ListValue>>(); }
  bool is_map() const { return is<std::shared_ptr<const MapValue>>(); }
  const ListValue& list() const { return *as<std::shared_ptr<const ListValue>>(); }
  const MapValue& map() const { return *as<std::shared_ptr<const MapValue>>(); }
  const std::string& error() const { return as<ErrorValue>().message; }
  const Storage& storage() const { return v_; }

 private:
  Storage v_;
};

// The runtime type name, as type(v) reports it ("int", "list", "map", an object type name).
std::string RuntimeTypeName(const Value& v);

// CEL equality: heterogeneous numeric equality, false across other kinds, Kubernetes' set and
// map list semantics, deep comparison of lists, maps and objects; errors propagate.
Value Equals(const Value& a, const Value& b);

// Ordering for <, <=, >, >= (cross-type numeric, strings, bytes, bools, durations, timestamps):
// -1, 0, 1, or nullopt when the operands are not comparable.
std::optional<int> Compare(const Value& a, const Value& b);

// Looks a key up in a map value with CEL's heterogeneous numeric key equality.
const Value* MapFind(const MapValue& map, const Value& key);

// The value of a custom-resource JSON node under its declared type (null types mean dyn):
// integers, numbers, strings with byte/date/date-time/duration formats, int-or-string,
// objects, maps and lists with their list type.
Value FromJson(const nlohmann::json& node, const Type* type);

// Renders a value in Go's %v style for messages (strings unquoted).
std::string DebugString(const Value& v);

// Duration and timestamp text forms (Go's time.ParseDuration and RFC 3339).
std::optional<int64_t> ParseGoDuration(const std::string& text);
std::optional<Timestamp> ParseRfc3339(const std::string& text);
std::string FormatDuration(int64_t nanos);
std::string FormatTimestamp(const Timestamp& ts);

// The proleptic Gregorian calendar fields of a time `seconds` after the Unix epoch.
struct CivilTime {
  int64_t year;
  int month;  // 1-12
  int day;    // 1-31
  int hour, minute, second;
  int weekday;  // 0 is Sunday
  int yearday;  // 0 is January 1st
};
CivilTime ToCivil(int64_t seconds);

}  // namespace ringleader::cel
