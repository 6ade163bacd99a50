// Object-metadata helpers: comparisons, identifiers, time stamps, owner references, names.
#include "tests/devcluster/machinery/object_meta.h"

#include <openssl/rand.h>

#include <array>
#include <cstdio>
#include <stdexcept>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

constexpr std::string_view kSubdomainMessage =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
// The real message has two spaces before "or": Kubernetes' RegexError joins examples that way.
constexpr std::string_view kLabelMessage =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr std::string_view kDns1035LabelMessage =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

template <size_t N>
std::array<unsigned char, N> RandomBytes() {
  std::array<unsigned char, N> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return bytes;
}

json WithoutKeys(const json& object, std::initializer_list<const char*> keys) {
  json copy = object;
  if (copy.is_object()) {
    for (const char* key : keys) {
      copy.erase(key);
    }
  }
  return copy;
}

bool IsLabelChars(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(text.front()) || !alnum(text.back())) {
    return false;
  }
  for (char c : text) {
    if (!alnum(c) && c != '-') {
      return false;
    }
  }
  return true;
}

bool IsSubdomainChars(std::string_view text) {
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    if (!IsLabelChars(text.substr(start, dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

// A string as Go's %q prints it (enough for names: quotes and backslashes escaped).
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

// metadata.ownerReferences entries that are objects.
std::vector<json> OwnerReferences(const json& object) {
  std::vector<json> refs;
  if (!object.is_object()) {
    return refs;
  }
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return refs;
  }
  auto list = metadata->find("ownerReferences");
  if (list == metadata->end() || !list->is_array()) {
    return refs;
  }
  for (const json& ref : *list) {
    if (ref.is_object()) {
      refs.push_back(ref);
    }
  }
  return refs;
}

int ParseDigits(std::string_view text, size_t pos, size_t count, bool& ok) {
  int value = 0;
  if (pos + count > text.size()) {
    ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      ok = false;
      return 0;
    }
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

bool SpecChanged(const json& old_object, const json& new_object) {
  return WithoutKeys(old_object, {"metadata", "status"}) !=
         WithoutKeys(new_object, {"metadata", "status"});
}

bool SameObject(const json& a, const json& b) {
  auto strip = [](const json& object) {
    json copy = object;
    if (copy.is_object() && copy.contains("metadata") && copy["metadata"].is_object()) {
      copy["metadata"].erase("resourceVersion");
      copy["metadata"].erase("managedFields");
    }
    return copy;
  };
  return strip(a) == strip(b);
}

std::string NewUid() {
  std::array<unsigned char, 16> bytes = RandomBytes<16>();
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string uid;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      uid += '-';
    }
    uid += kHex[bytes[i] >> 4];
    uid += kHex[bytes[i] & 0x0f];
  }
  return uid;
}

std::string GenerateName(std::string_view prefix) {
  // The alphabet of Kubernetes' utilrand.String: no vowels, no look-alike digits.
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::array<unsigned char, 5> bytes = RandomBytes<5>();
  std::string name(prefix);
  for (unsigned char byte : bytes) {
    name += kAlphabet[byte % kAlphabet.size()];
  }
  return name;
}

std::string FormatTime(Time time) {
  using namespace std::chrono;
  auto seconds = floor<std::chrono::seconds>(time);
  auto day = floor<days>(seconds);
  year_month_day date{day};
  hh_mm_ss clock{seconds - day};
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02dZ", int(date.year()),
                unsigned(date.month()), unsigned(date.day()), int(clock.hours().count()),
                int(clock.minutes().count()), int(clock.seconds().count()));
  return buffer;
}

std::string FormatMicroTime(Time time) {
  using namespace std::chrono;
  std::string whole = FormatTime(time);
  auto micros = duration_cast<microseconds>(time - floor<seconds>(time)).count();
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), ".%06lld", static_cast<long long>(micros));
  whole.insert(whole.size() - 1, buffer);
  return whole;
}

std::optional<Time> ParseTime(std::string_view text) {
  using namespace std::chrono;
  bool ok = true;
  int year = ParseDigits(text, 0, 4, ok);
  int month = ParseDigits(text, 5, 2, ok);
  int day_of_month = ParseDigits(text, 8, 2, ok);
  int hour = ParseDigits(text, 11, 2, ok);
  int minute = ParseDigits(text, 14, 2, ok);
  int second = ParseDigits(text, 17, 2, ok);
  if (!ok || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
      text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  size_t pos = 19;
  nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    long long scale = 100000000;
    size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      fraction += nanoseconds((text[pos] - '0') * scale);
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) {
      return std::nullopt;
    }
  }
  minutes offset{0};
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    int offset_hours = ParseDigits(text, pos + 1, 2, ok);
    int offset_minutes = ParseDigits(text, pos + 4, 2, ok);
    if (!ok || text[pos + 3] != ':') {
      return std::nullopt;
    }
    offset = minutes(sign * (offset_hours * 60 + offset_minutes));
    pos += 6;
  } else {
    return std::nullopt;
  }
  year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                      std::chrono::day(static_cast<unsigned>(day_of_month))};
  if (pos != text.size() || !date.ok() || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  sys_days days_since_epoch{date};
  Time time = time_point_cast<Time::duration>(
      sys_time<nanoseconds>(days_since_epoch) + hours(hour) + minutes(minute) + seconds(second) +
      fraction - offset);
  return time;
}

std::vector<std::string> OwnerUids(const json& object) {
  std::vector<std::string> uids;
  for (const json& ref : OwnerReferences(object)) {
    if (ref.contains("uid") && ref["uid"].is_string()) {
      uids.push_back(ref["uid"].get<std::string>());
    }
  }
  return uids;
}

bool BlocksOwnerDeletion(const json& object, std::string_view owner_uid) {
  for (const json& ref : OwnerReferences(object)) {
    if (ref.value("uid", "") == owner_uid && ref.value("blockOwnerDeletion", false)) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> ControllerUid(const json& object) {
  for (const json& ref : OwnerReferences(object)) {
    if (ref.value("controller", false) && ref.contains("uid")) {
      return ref.value("uid", "");
    }
  }
  return std::nullopt;
}

std::vector<schema::SchemaError> NameErrors(std::string_view name, NameRule rule) {
  std::vector<schema::SchemaError> errors;
  if (name.empty()) {
    errors.push_back({"metadata.name", "Required value: name or generateName is required"});
    return errors;
  }
  size_t max_length = rule == NameRule::kDnsSubdomain ? 253 : 63;
  std::string prefix = "Invalid value: " + Quote(name) + ": ";
  if (name.size() > max_length) {
    errors.push_back({"metadata.name", prefix + "must be no more than " +
                                           std::to_string(max_length) + " characters"});
  }
  switch (rule) {
    case NameRule::kDnsSubdomain:
      if (!IsSubdomainChars(name)) {
        errors.push_back({"metadata.name", prefix + std::string(kSubdomainMessage)});
      }
      break;
    case NameRule::kDnsLabel:
      if (!IsLabelChars(name)) {
        errors.push_back({"metadata.name", prefix + std::string(kLabelMessage)});
      }
      break;
    case NameRule::kDns1035Label:
      if (!IsLabelChars(name) || !(name.front() >= 'a' && name.front() <= 'z')) {
        errors.push_back({"metadata.name", prefix + std::string(kDns1035LabelMessage)});
      }
      break;
  }
  return errors;
}

std::optional<ApiError> ValidateName(std::string_view qualified_kind, std::string_view name,
                                     NameRule rule) {
  std::vector<schema::SchemaError> errors = NameErrors(name, rule);
  if (errors.empty()) {
    return std::nullopt;
  }
  return Invalid(qualified_kind, name, errors);
}

}  // namespace ringleader::devcluster
