// What the API server does to a custom resource with a structural schema: pruning (with the
// unknown-field paths Strict field validation reports), null pruning, embedded ObjectMeta
// coercion, defaulting, and validation - kube-openapi's validator (including its error-merging
// rules for allOf/anyOf/oneOf), the field-error wording of apiextensions-apiserver, embedded
// resources' ObjectMeta rules and x-kubernetes-list-type uniqueness.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "tests/support/schema_internal.h"
#include "tests/support/structural_schema.h"

namespace ringleader::schema {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): this file's own helpers

bool IsMetaField(std::string_view key) {
  return key == "apiVersion" || key == "kind" || key == "metadata";
}

const json* Property(const json* schema, const std::string& key) {
  if (schema == nullptr) {
    return nullptr;
  }
  const json* properties = SubSchema(*schema, "properties");
  return properties != nullptr ? SubSchema(*properties, key) : nullptr;
}

const json* Items(const json* schema) {
  return schema != nullptr ? SubSchema(*schema, "items") : nullptr;
}

bool Nullable(const json* schema) { return schema != nullptr && Flag(*schema, "nullable"); }

const json* DefaultOf(const json* schema) {
  return schema != nullptr ? Field(*schema, "default") : nullptr;
}

// ---- Pruning (pruning/algorithm.go) ---------------------------------------------------------

class Pruner {
 public:
  explicit Pruner(std::vector<std::string>* unknown) : unknown_(unknown) {}

  void Prune(json& x, const json* s, bool embedded, const std::string& path) {
    if (s != nullptr && Flag(*s, kPreserveUnknown)) {
      SkipPrune(x, s, embedded, path);
      return;
    }
    if (x.is_object()) {
      std::vector<std::string> keys;
      for (auto it = x.begin(); it != x.end(); ++it) {
        keys.push_back(it.key());
      }
      for (const std::string& key : keys) {
        if (s == nullptr) {
          Record(path, key);
          x.erase(key);
          continue;
        }
        if (embedded && IsMetaField(key)) {
          continue;
        }
        if (const json* property = Property(s, key)) {
          Prune(x[key], property, Flag(*property, kEmbedded), Child(path, key));
        } else if (HasAdditionalProperties(*s)) {
          const json* additional = AdditionalSchema(*s);
          Prune(x[key], additional, additional != nullptr && Flag(*additional, kEmbedded),
                Child(path, key));
        } else {
          if (!IsMetaField(key) || !path.empty()) {
            Record(path, key);
          }
          x.erase(key);
        }
      }
    } else if (x.is_array()) {
      const json* items = Items(s);
      for (std::size_t i = 0; i < x.size(); ++i) {
        Prune(x[i], items, items != nullptr && Flag(*items, kEmbedded), Index(path, i));
      }
    }
  }

 private:
  void SkipPrune(json& x, const json* s, bool embedded, const std::string& path) {
    if (s == nullptr) {
      return;
    }
    if (x.is_object()) {
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (embedded && IsMetaField(it.key())) {
          continue;
        }
        if (const json* property = Property(s, it.key())) {
          Prune(*it, property, Flag(*property, kEmbedded), Child(path, it.key()));
        } else if (HasAdditionalProperties(*s)) {
          const json* additional = AdditionalSchema(*s);
          Prune(*it, additional, additional != nullptr && Flag(*additional, kEmbedded),
                Child(path, it.key()));
        }
      }
    } else if (x.is_array()) {
      const json* items = Items(s);
      for (std::size_t i = 0; i < x.size(); ++i) {
        SkipPrune(x[i], items, items != nullptr && Flag(*items, kEmbedded), Index(path, i));
      }
    }
  }

  void Record(const std::string& path, const std::string& key) {
    unknown_->push_back(Child(path, key));
  }

  std::vector<std::string>* unknown_;
};

// defaulting/prunenulls.go: nulls in non-nullable fields without a default go; the rest stay
// (to be defaulted). Array items are never removed.
void PruneNulls(json& x, const json* s) {
  if (x.is_object()) {
    for (auto it = x.begin(); it != x.end();) {
      const json* field = Property(s, it.key());
      if (field == nullptr && s != nullptr) {
        field = AdditionalSchema(*s);
      }
      if (it->is_null() && field != nullptr && !Nullable(field) && DefaultOf(field) == nullptr) {
        it = x.erase(it);
        continue;
      }
      PruneNulls(*it, field);
      ++it;
    }
  } else if (x.is_array()) {
    for (json& item : x) {
      PruneNulls(item, Items(s));
    }
  }
}

// ---- ObjectMeta fields (metav1.ObjectMeta as json decodes it) ---------------------------------

enum class MetaShape {
  kString,
  kInt,
  kTime,
  kStringMap,
  kStringList,
  kOwnerReferences,
  kManagedFields
};

const std::vector<std::pair<std::string_view, MetaShape>>& ObjectMetaFields() {
  static const std::vector<std::pair<std::string_view, MetaShape>> kFields = {
      {"name", MetaShape::kString},
      {"generateName", MetaShape::kString},
      {"namespace", MetaShape::kString},
      {"selfLink", MetaShape::kString},
      {"uid", MetaShape::kString},
      {"resourceVersion", MetaShape::kString},
      {"generation", MetaShape::kInt},
      {"creationTimestamp", MetaShape::kTime},
      {"deletionTimestamp", MetaShape::kTime},
      {"deletionGracePeriodSeconds", MetaShape::kInt},
      {"labels", MetaShape::kStringMap},
      {"annotations", MetaShape::kStringMap},
      {"ownerReferences", MetaShape::kOwnerReferences},
      {"finalizers", MetaShape::kStringList},
      {"managedFields", MetaShape::kManagedFields},
  };
  return kFields;
}

std::optional<MetaShape> MetaFieldShape(std::string_view key) {
  for (const auto& [name, shape] : ObjectMetaFields()) {
    if (name == key) {
      return shape;
    }
  }
  return std::nullopt;
}

// Why a metadata field cannot decode into its Go type, or "" when it can (null decodes to the
// zero value). The wording follows encoding/json; the real server decodes with json-iterator,
// whose messages are longer.
std::string MetaFieldError(std::string_view key, MetaShape shape, const json& value) {
  if (value.is_null()) {
    return "";
  }
  std::string struct_field = "struct field ObjectMeta." + std::string(key) + " of type ";
  auto mismatch = [&](std::string_view go_type) {
    return UnmarshalError(value, struct_field + std::string(go_type));
  };
  // The first entry that is not a string (null decodes to "").
  auto strings = [&] {
    for (const json& entry : value) {
      if (!entry.is_string() && !entry.is_null()) {
        return UnmarshalError(entry, struct_field + "string");
      }
    }
    return std::string();
  };
  switch (shape) {
    case MetaShape::kString:
    case MetaShape::kTime:
      return value.is_string() ? "" : mismatch("string");
    case MetaShape::kInt:
      return IsGoInt64(value) ? "" : mismatch("int64");
    case MetaShape::kStringMap:
      return value.is_object() ? strings() : mismatch("map[string]string");
    case MetaShape::kStringList:
      return value.is_array() ? strings() : mismatch("[]string");
    case MetaShape::kOwnerReferences:
    case MetaShape::kManagedFields:
      if (!value.is_array()) {
        return mismatch(shape == MetaShape::kOwnerReferences ? "[]v1.OwnerReference"
                                                             : "[]v1.ManagedFieldsEntry");
      }
      return "";
  }
  return "";
}

// Drops what metav1.ObjectMeta has no field for (recording "metadata.foo",
// "metadata.ownerReferences[0].bar") and what json.Marshal of the decoded struct would omit.
void NormalizeObjectMeta(json& metadata, const std::string& path,
                         std::vector<std::string>* unknown) {
  static const std::set<std::string, std::less<>> kOwnerReferenceFields = {
      "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"};
  static const std::set<std::string, std::less<>> kManagedFieldsFields = {
      "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"};
  std::vector<std::string> keys;
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    keys.push_back(it.key());
  }
  for (const std::string& key : keys) {
    std::optional<MetaShape> shape = MetaFieldShape(key);
    if (!shape) {
      unknown->push_back(Child(path, key));
      metadata.erase(key);
      continue;
    }
    json& value = metadata[key];
    if (*shape == MetaShape::kOwnerReferences || *shape == MetaShape::kManagedFields) {
      const auto& known =
          *shape == MetaShape::kOwnerReferences ? kOwnerReferenceFields : kManagedFieldsFields;
      if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i) {
          if (!value[i].is_object()) {
            continue;
          }
          for (auto it = value[i].begin(); it != value[i].end();) {
            if (!known.contains(it.key())) {
              unknown->push_back(Index(Child(path, key), i) + "." + it.key());
              it = value[i].erase(it);
            } else {
              ++it;
            }
          }
        }
      }
    }
  }
}

// omitempty: what SetObjectMeta's round trip through the typed struct leaves out.
void OmitEmptyObjectMeta(json& metadata) {
  for (auto it = metadata.begin(); it != metadata.end();) {
    const json& value = *it;
    bool empty = value.is_null() ||
                 (value.is_string() && value.get_ref<const std::string&>().empty()) ||
                 (value.is_object() && value.empty()) || (value.is_array() && value.empty()) ||
                 (it.key() == "generation" && value == 0);
    it = empty && it.key() != "deletionGracePeriodSeconds" ? metadata.erase(it) : std::next(it);
  }
}

// objectmeta/coerce.go for embedded resources (never the root): apiVersion and kind must be
// strings and metadata must decode as ObjectMeta (else an error, as for a request body), and
// metadata is rewritten through the typed struct, losing unknown fields.
class Coercer {
 public:
  Coercer(std::vector<std::string>* unknown, std::vector<SchemaError>* errors)
      : unknown_(unknown), errors_(errors) {}

  void Coerce(json& x, const json* s, const std::string& path) {
    if (s == nullptr) {
      return;
    }
    if (x.is_object()) {
      if (Flag(*s, kEmbedded)) {
        CoerceResource(x, path);
      }
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (const json* property = Property(s, it.key())) {
          Coerce(*it, property, Child(path, it.key()));
        } else if (HasAdditionalProperties(*s)) {
          Coerce(*it, AdditionalSchema(*s), Key(path, it.key()));
        }
      }
    } else if (x.is_array()) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        Coerce(x[i], Items(s), Index(path, i));
      }
    }
  }

 private:
  void CoerceResource(json& x, const std::string& path) {
    for (const char* key : {"apiVersion", "kind"}) {
      if (auto it = x.find(key); it != x.end() && !it->is_string()) {
        errors_->push_back(Invalid(Child(path, key), GoValue(*it), "must be a string"));
      }
    }
    auto metadata = x.find("metadata");
    if (metadata == x.end()) {
      return;
    }
    if (!metadata->is_object() && !metadata->is_null()) {
      errors_->push_back(Invalid(Child(path, "metadata"), GoValue(*metadata),
                                 UnmarshalError(*metadata, "value of type v1.ObjectMeta")));
      return;
    }
    if (metadata->is_null()) {
      *metadata = json::object();
    }
    for (auto it = metadata->begin(); it != metadata->end(); ++it) {
      if (std::optional<MetaShape> shape = MetaFieldShape(it.key())) {
        if (std::string why = MetaFieldError(it.key(), *shape, *it); !why.empty()) {
          errors_->push_back(Invalid(Child(path, "metadata"), GoValue(*metadata), why));
          return;
        }
      }
    }
    NormalizeObjectMeta(*metadata, Child(path, "metadata"), unknown_);
    OmitEmptyObjectMeta(*metadata);
  }

  std::vector<std::string>* unknown_;
  std::vector<SchemaError>* errors_;
};

struct PruneOutcome {
  std::vector<std::string> unknown;
  std::vector<SchemaError> errors;  // embedded metadata that cannot be decoded
};

PruneOutcome PruneAll(json& value, const json& schema) {
  PruneOutcome outcome;
  // The root's metadata goes through the typed ObjectMeta first (unknown fields reported).
  if (value.is_object()) {
    if (auto metadata = value.find("metadata"); metadata != value.end() && metadata->is_object()) {
      NormalizeObjectMeta(*metadata, "metadata", &outcome.unknown);
    }
  }
  std::vector<std::string> pruned;
  Pruner pruner(&pruned);
  pruner.Prune(value, &schema, true, "");
  std::sort(pruned.begin(), pruned.end());
  outcome.unknown.insert(outcome.unknown.end(), pruned.begin(), pruned.end());
  PruneNulls(value, &schema);
  Coercer coercer(&outcome.unknown, &outcome.errors);
  coercer.Coerce(value, &schema, "");
  return outcome;
}

// ---- Defaulting (defaulting/algorithm.go) -----------------------------------------------------

bool IsNonNullableNull(const json& value, const json* schema) {
  return value.is_null() && schema != nullptr && !Nullable(schema);
}

void Default(json& x, const json* s) {
  if (s == nullptr) {
    return;
  }
  if (x.is_object()) {
    if (const json* properties = SubSchema(*s, "properties")) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        const json* default_value = it->is_object() ? Field(*it, "default") : nullptr;
        if (default_value == nullptr) {
          continue;
        }
        auto field = x.find(it.key());
        if (field == x.end() || IsNonNullableNull(*field, &*it)) {
          x[it.key()] = *default_value;
        }
      }
    }
    const json* additional = AdditionalSchema(*s);
    for (auto it = x.begin(); it != x.end(); ++it) {
      if (const json* property = Property(s, it.key())) {
        Default(*it, property);
      } else if (additional != nullptr) {
        if (IsNonNullableNull(*it, additional)) {
          const json* default_value = Field(*additional, "default");
          *it = default_value != nullptr ? *default_value : json();
        }
        Default(*it, additional);
      }
    }
  } else if (x.is_array()) {
    const json* items = Items(s);
    for (json& item : x) {
      if (IsNonNullableNull(item, items)) {
        const json* default_value = Field(*items, "default");
        item = default_value != nullptr ? *default_value : json();
      }
      Default(item, items);
    }
  }
}

// ---- Strings formats (kube-openapi strfmt, after apiextensions strips unsupported ones) ---------

std::string NormalizeFormat(std::string format) {
  std::erase(format, '-');
  return format;
}

// The formats apiextensions keeps (StripUnsupportedFormatsPostProcess); others are ignored.
bool IsSupportedFormat(const std::string& format) {
  static const std::set<std::string, std::less<>> kSupported = {
      "bsonobjectid", "uri",    "email",    "hostname",   "ipv4",     "ipv6",
      "cidr",         "mac",    "uuid",     "uuid3",      "uuid4",    "uuid5",
      "isbn",         "isbn10", "isbn13",   "creditcard", "ssn",      "hexcolor",
      "rgbcolor",     "byte",   "password", "date",       "duration", "datetime"};
  return kSupported.contains(NormalizeFormat(format));
}

// Whether strfmt.Default has a validator for the format (bsonobjectid has none).
bool FormatIsChecked(const std::string& format) {
  return IsSupportedFormat(format) && NormalizeFormat(format) != "bsonobjectid";
}

bool IsDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// time.Parse("2006-01-02", text).
bool IsDate(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' || !IsDigits(text.substr(0, 4)) ||
      !IsDigits(text.substr(5, 2)) || !IsDigits(text.substr(8, 2))) {
    return false;
  }
  auto number = [&](std::size_t start, std::size_t length) {
    return static_cast<unsigned>(std::stoi(std::string(text.substr(start, length))));
  };
  std::chrono::year_month_day date{std::chrono::year{static_cast<int>(number(0, 4))},
                                   std::chrono::month{number(5, 2)},
                                   std::chrono::day{number(8, 2)}};
  return date.ok();
}

// strfmt.IsDateTime.
bool IsDateTime(std::string_view text) {
  if (text.size() < 4) {
    return false;
  }
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t t = lower.find('t');
  if (t == std::string::npos || !IsDate(lower.substr(0, t))) {
    return false;
  }
  std::size_t next = lower.find('t', t + 1);
  std::string clock =
      lower.substr(t + 1, next == std::string::npos ? std::string::npos : next - t - 1);
  if (!FullMatch(clock, "([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")) {
    return false;
  }
  return clock.substr(0, 2) <= "23" && clock.substr(3, 2) <= "59" && clock.substr(6, 2) <= "59";
}

// net.ParseIP's IPv4 form: four decimal fields, no leading zeros, each at most 255.
bool ParseIPv4(std::string_view text) {
  int fields = 0;
  std::size_t i = 0;
  while (true) {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
    }
    std::size_t length = i - start;
    if (length == 0 || length > 3 || (length > 1 && text[start] == '0') ||
        std::stoi(std::string(text.substr(start, length))) > 255) {
      return false;
    }
    ++fields;
    if (fields == 4) {
      return i == text.size();
    }
    if (i >= text.size() || text[i] != '.') {
      return false;
    }
    ++i;
  }
}

// net.ParseIP's IPv6 form (no zone): hex groups, one "::", an optional trailing IPv4.
bool ParseIPv6(std::string_view text) {
  int groups = 0;
  bool ellipsis = false;
  std::size_t i = 0;
  if (text.starts_with("::")) {
    ellipsis = true;
    i = 2;
    if (i == text.size()) {
      return true;
    }
  }
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && std::isxdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    if (i < text.size() && text[i] == '.') {
      if (groups > 6 || !ParseIPv4(text.substr(start))) {
        return false;
      }
      groups += 2;
      i = text.size();
      break;
    }
    std::size_t length = i - start;
    if (length == 0 || length > 4) {
      return false;
    }
    ++groups;
    if (i == text.size()) {
      break;
    }
    if (text[i] != ':' || i + 1 >= text.size()) {
      return false;
    }
    ++i;
    if (text[i] == ':') {
      if (ellipsis) {
        return false;
      }
      ellipsis = true;
      ++i;
      if (i == text.size()) {
        break;
      }
    }
    if (groups > 8) {
      return false;
    }
  }
  return ellipsis ? groups < 8 : groups == 8;
}

bool ParseIP(std::string_view text) { return ParseIPv4(text) || ParseIPv6(text); }

bool ParseCidr(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  std::string_view address = text.substr(0, slash);
  std::string_view bits = text.substr(slash + 1);
  bool v4 = ParseIPv4(address);
  if (!v4 && !ParseIPv6(address)) {
    return false;
  }
  if (!IsDigits(bits) || bits.size() > 3) {
    return false;
  }
  int prefix = std::stoi(std::string(bits));
  return prefix <= (v4 ? 32 : 128);
}

// net.ParseMAC: 6, 8 or 20 octets as xx:xx:.., xx-xx-.. or xxxx.xxxx...
bool ParseMac(std::string_view text) {
  auto hex = [](std::string_view part) {
    return std::all_of(part.begin(), part.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  };
  if (text.size() < 14) {
    return false;
  }
  if (text[2] == ':' || text[2] == '-') {
    if ((text.size() + 1) % 3 != 0) {
      return false;
    }
    std::size_t octets = (text.size() + 1) / 3;
    if (octets != 6 && octets != 8 && octets != 20) {
      return false;
    }
    for (std::size_t i = 0; i < octets; ++i) {
      if (!hex(text.substr(3 * i, 2)) || (i + 1 < octets && text[3 * i + 2] != text[2])) {
        return false;
      }
    }
    return true;
  }
  if (text[4] == '.') {
    if ((text.size() + 1) % 5 != 0) {
      return false;
    }
    std::size_t octets = 2 * (text.size() + 1) / 5;
    if (octets != 6 && octets != 8 && octets != 20) {
      return false;
    }
    for (std::size_t i = 0; i < octets / 2; ++i) {
      if (!hex(text.substr(5 * i, 4)) || (i + 1 < octets / 2 && text[5 * i + 4] != '.')) {
        return false;
      }
    }
    return true;
  }
  return false;
}

bool IsHostname(std::string_view text) {
  static const std::string kPattern =
      R"(([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62}))";
  if (!FullMatch(text, kPattern) || text.size() > 255) {
    return false;
  }
  std::size_t start = 0;
  while (true) {
    std::size_t dot = text.find('.', start);
    if ((dot == std::string_view::npos ? text.size() : dot) - start > 63) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

// Whether `text` has `format`; nullopt for a format devcluster cannot check.
std::optional<bool> CheckFormat(const std::string& format, const std::string& text) {
  std::string name = NormalizeFormat(format);
  if (name == "password") {
    return true;
  }
  if (name == "date") {
    return IsDate(text);
  }
  if (name == "datetime") {
    return IsDateTime(text);
  }
  if (name == "byte") {
    return FullMatch(
        text,
        "(?:[A-Za-z0-9+\\/]{4})*(?:[A-Za-z0-9+\\/]{2}==|[A-Za-z0-9+\\/]{3}=|[A-Za-z0-9+\\/]{4})");
  }
  if (name == "uuid") {
    return FullMatch(text, "(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}");
  }
  if (name == "uuid3") {
    return FullMatch(text, "(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}");
  }
  if (name == "uuid4") {
    return FullMatch(text,
                     "(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}");
  }
  if (name == "uuid5") {
    return FullMatch(text,
                     "(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}");
  }
  if (name == "hostname") {
    return IsHostname(text);
  }
  if (name == "ipv4") {
    return ParseIP(text) && text.find('.') != std::string::npos;
  }
  if (name == "ipv6") {
    return ParseIP(text) && text.find(':') != std::string::npos;
  }
  if (name == "cidr") {
    return ParseCidr(text);
  }
  if (name == "mac") {
    return ParseMac(text);
  }
  if (name == "hexcolor") {
    return FullMatch(text, "#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})");
  }
  if (name == "ssn") {
    return text.size() == 11 && FullMatch(text, R"(\d{3}[- ]?\d{2}[- ]?\d{4})");
  }
  if (name == "rgbcolor") {
    static const std::string kByte = R"((0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5]))";
    return FullMatch(
        text, R"(rgb\(\s*)" + kByte + R"(\s*,\s*)" + kByte + R"(\s*,\s*)" + kByte + R"(\s*\))");
  }
  return std::nullopt;  // email, uri, isbn*, creditcard, duration
}

// ---- kube-openapi validation ------------------------------------------------------------------

enum class Code {
  kInvalidType,
  kRequired,
  kTooLong,
  kTooShort,
  kPattern,
  kEnum,
  kMultipleOf,
  kMax,
  kMin,
  kMaxItems,
  kMinItems,
  kTooFewProperties,
  kTooManyProperties,
  kUnallowedProperty,
  kUnique,
  kComposite,  // allOf/anyOf/oneOf/not: an apiError without a field name
  kUnchecked,  // devcluster's own: a format it cannot check
};

struct OpenApiError {
  Code code;
  std::string name;  // kube-openapi's path of the value, "spec.replicas"
  json value;        // Validation.Value
  std::int64_t limit = -1;
  json enum_values;
  std::string message;
};

struct Result {
  std::vector<OpenApiError> errors;
  int matches = 0;

  // Result.AddErrors keeps one error per message.
  void Add(OpenApiError error) {
    for (const OpenApiError& existing : errors) {
      if (existing.message == error.message) {
        return;
      }
    }
    errors.push_back(std::move(error));
  }
  void Merge(const Result& other) {
    for (const OpenApiError& error : other.errors) {
      Add(error);
    }
    matches += other.matches;
  }
  bool valid() const { return errors.empty(); }
};

Result Fail(OpenApiError error) {
  Result result;
  result.errors.push_back(std::move(error));
  return result;
}

enum class Kind { kNull, kBool, kString, kInt, kFloat, kSlice, kMap };

Kind KindOf(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return Kind::kNull;
    case json::value_t::boolean:
      return Kind::kBool;
    case json::value_t::string:
      return Kind::kString;
    case json::value_t::array:
      return Kind::kSlice;
    case json::value_t::object:
      return Kind::kMap;
    default:
      return IsGoInt64(value) ? Kind::kInt : Kind::kFloat;
  }
}

// swag.IsFloat64AJSONInteger.
bool IsJsonInteger(double value) {
  constexpr double kMaxJsonFloat = 9007199254740991.0;
  if (!std::isfinite(value) || value < -kMaxJsonFloat || value > kMaxJsonFloat) {
    return false;
  }
  double magnitude = std::abs(value);
  return magnitude - std::floor(magnitude) < 1e-9;
}

std::string In(const std::string& name) { return name + " in body"; }

OpenApiError InvalidType(const std::string& name, const std::string& type_name,
                         const std::string& value) {
  return {Code::kInvalidType,
          name,
          value,
          -1,
          json(),
          In(name) + " must be of type " + type_name + ": " + GoQuote(value)};
}

// Go's reflect.DeepEqual for values decoded into interface{} (int64 and float64 differ).
bool GoDeepEqual(const json& a, const json& b) {
  Kind ka = KindOf(a);
  if (ka != KindOf(b)) {
    return false;
  }
  switch (ka) {
    case Kind::kInt:
      return a.get<std::int64_t>() == b.get<std::int64_t>();
    case Kind::kFloat:
      return AsDouble(a) == AsDouble(b);
    case Kind::kSlice:
      if (a.size() != b.size()) {
        return false;
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (!GoDeepEqual(a[i], b[i])) {
          return false;
        }
      }
      return true;
    case Kind::kMap:
      if (a.size() != b.size()) {
        return false;
      }
      for (auto it = a.begin(); it != a.end(); ++it) {
        auto other = b.find(it.key());
        if (other == b.end() || !GoDeepEqual(*it, *other)) {
          return false;
        }
      }
      return true;
    default:
      return a == b;
  }
}

// basicCommonValidator's enum match: DeepEqual after Go's reflect conversion of the value to
// the enum value's type (an int converts to a float or a string, a float to an int).
bool EnumMatches(const json& data, const json& option) {
  if (option.is_null() || data.is_null()) {
    return false;
  }
  Kind from = KindOf(data);
  Kind to = KindOf(option);
  if (from == Kind::kInt && to == Kind::kFloat) {
    return static_cast<double>(data.get<std::int64_t>()) == AsDouble(option);
  }
  if (from == Kind::kFloat && to == Kind::kInt) {
    double value = AsDouble(data);
    return std::isfinite(value) && std::abs(value) < 9.2e18 &&
           static_cast<std::int64_t>(value) == option.get<std::int64_t>();
  }
  if (from == Kind::kInt && to == Kind::kString) {
    std::int64_t rune = data.get<std::int64_t>();
    std::string text;
    if (rune < 0 || rune > 0x10ffff || (rune >= 0xd800 && rune <= 0xdfff)) {
      text = "\xef\xbf\xbd";
    } else if (rune < 0x80) {
      text = std::string(1, static_cast<char>(rune));
    } else {
      // Encode as UTF-8.
      auto r = static_cast<std::uint32_t>(rune);
      if (r < 0x800) {
        text += static_cast<char>(0xc0 | (r >> 6));
      } else if (r < 0x10000) {
        text += static_cast<char>(0xe0 | (r >> 12));
        text += static_cast<char>(0x80 | ((r >> 6) & 0x3f));
      } else {
        text += static_cast<char>(0xf0 | (r >> 18));
        text += static_cast<char>(0x80 | ((r >> 12) & 0x3f));
        text += static_cast<char>(0x80 | ((r >> 6) & 0x3f));
      }
      text += static_cast<char>(0x80 | (r & 0x3f));
    }
    return text == option.get<std::string>();
  }
  return GoDeepEqual(data, option);
}

// The kube-openapi view of a CRD schema node (ConvertJSONSchemaProps + the format strip).
struct OpenApiSchema {
  std::vector<std::string> types;
  std::string format;

  explicit OpenApiSchema(const json& node) {
    if (Flag(node, kIntOrString)) {
      types = {"integer", "string"};
    } else if (std::string type = Text(node, "type"); !type.empty()) {
      types = {type};
    }
    format = Text(node, "format");
    if (!IsSupportedFormat(format)) {
      format.clear();
    }
  }

  bool Has(std::string_view type) const {
    return std::find(types.begin(), types.end(), type) != types.end();
  }
  std::string Joined() const { return Join(types, ","); }
};

class OpenApiValidator {
 public:
  // SchemaValidator.Validate for `node` at kube-openapi path `path`.
  Result Validate(const json& node, const json& data, const std::string& path) {
    Result result;
    if (!node.is_object()) {
      return result;
    }
    OpenApiSchema schema(node);
    if (data.is_null()) {
      result.Merge(ValidateType(node, schema, data, path));
      result.Merge(ValidateEnum(node, data, path));
      return result;
    }
    Kind kind = KindOf(data);
    auto run = [&](bool applies, auto&& validator) {
      if (applies) {
        result.Merge(validator());
        result.matches += 1;
      }
    };
    run(!schema.types.empty() || !schema.format.empty(),
        [&] { return ValidateType(node, schema, data, path); });
    run(true, [&] { return ValidateJunctors(node, data, path); });
    run(kind == Kind::kString, [&] { return ValidateString(node, data, path); });
    run(kind == Kind::kString && FormatIsChecked(schema.format),
        [&] { return ValidateFormat(schema, data, path); });
    run(kind == Kind::kInt || kind == Kind::kFloat,
        [&] { return ValidateNumber(node, data, path); });
    run(kind == Kind::kSlice, [&] { return ValidateSlice(node, data, path); });
    run(true, [&] { return ValidateEnum(node, data, path); });
    run(kind == Kind::kMap, [&] { return ValidateObject(node, data, path); });
    result.matches += 1;
    return result;
  }

 private:
  static Result ValidateType(const json& node, const OpenApiSchema& schema, const json& data,
                             const std::string& path) {
    Result result;
    if (data.is_null()) {
      if (!schema.types.empty() && !schema.Has("null") && !Flag(node, "nullable")) {
        return Fail(InvalidType(path, schema.Joined(), "null"));
      }
      result.matches = 1;
      return result;
    }
    result.matches = 1;
    Kind kind = KindOf(data);
    std::string type_name;
    std::string format;
    switch (kind) {
      case Kind::kBool:
        type_name = "boolean";
        break;
      case Kind::kString:
        type_name = "string";
        break;
      case Kind::kInt:
        type_name = "integer";
        format = "int64";
        break;
      case Kind::kFloat:
        type_name = "number";
        format = "float64";
        break;
      case Kind::kSlice:
        type_name = "array";
        break;
      case Kind::kMap:
      case Kind::kNull:
        type_name = "object";
        break;
    }
    bool float_int = kind == Kind::kFloat && IsJsonInteger(AsDouble(data)) && schema.Has("integer");
    bool int_float = kind == Kind::kInt && schema.Has("number");
    bool stringish = kind == Kind::kString || kind == Kind::kSlice;
    if (!stringish && !schema.format.empty() &&
        !(schema.Has(type_name) || format == schema.format || float_int || int_float)) {
      return Fail(InvalidType(path, schema.format, format));
    }
    if (!(schema.Has("number") || schema.Has("integer")) && !schema.format.empty() && stringish) {
      return result;
    }
    if (!(schema.Has(type_name) || float_int || int_float)) {
      return Fail(InvalidType(path, schema.Joined(), type_name));
    }
    return result;
  }

  static Result ValidateEnum(const json& node, const json& data, const std::string& path) {
    const json* options = NonEmptyArray(node, "enum");
    if (options == nullptr) {
      return {};
    }
    for (const json& option : *options) {
      if (EnumMatches(data, option)) {
        return {};
      }
    }
    std::string listed;
    for (const json& option : *options) {
      listed += (listed.empty() ? "" : " ") +
                (option.is_string() ? option.get<std::string>() : GoJson(option));
    }
    return Fail(
        {Code::kEnum, path, data, -1, *options, In(path) + " should be one of [" + listed + "]"});
  }

  Result ValidateJunctors(const json& node, const json& data, const std::string& path) {
    Result main;
    if (const json* any_of = NonEmptyArray(node, "anyOf")) {
      std::optional<Result> best_failure;
      std::optional<Result> first_success;
      bool succeeded = false;
      for (const json& branch : *any_of) {
        Result result = Validate(branch, data, path);
        if (result.valid()) {
          best_failure.reset();
          succeeded = true;
          if (!first_success) {
            first_success = result;
          }
          break;
        }
        if (!best_failure || result.matches > best_failure->matches) {
          best_failure = result;
        }
      }
      if (!succeeded) {
        main.Add({Code::kComposite, "", json(), -1, json(),
                  GoQuote(path) + " must validate at least one schema (anyOf)"});
      }
      if (best_failure) {
        main.Merge(*best_failure);
      } else if (first_success) {
        main.Merge(*first_success);
      }
    }
    if (const json* one_of = NonEmptyArray(node, "oneOf")) {
      std::optional<Result> best_failure;
      std::optional<Result> first_success;
      int validated = 0;
      for (const json& branch : *one_of) {
        Result result = Validate(branch, data, path);
        if (result.valid()) {
          ++validated;
          best_failure.reset();
          if (!first_success) {
            first_success = result;
          }
          continue;
        }
        if (validated == 0 && (!best_failure || result.matches > best_failure->matches)) {
          best_failure = result;
        }
      }
      if (validated != 1) {
        std::string found = validated == 0
                                ? "Found none valid"
                                : "Found " + std::to_string(validated) + " valid alternatives";
        main.Add({Code::kComposite, "", json(), -1, json(),
                  GoQuote(path) + " must validate one and only one schema (oneOf). " + found});
        if (best_failure) {
          main.Merge(*best_failure);
        }
      } else if (first_success) {
        main.Merge(*first_success);
      }
    }
    if (const json* all_of = NonEmptyArray(node, "allOf")) {
      std::size_t validated = 0;
      for (const json& branch : *all_of) {
        Result result = Validate(branch, data, path);
        validated += result.valid() ? 1 : 0;
        main.Merge(result);
      }
      if (validated != all_of->size()) {
        main.Add({Code::kComposite, "", json(), -1, json(),
                  GoQuote(path) + " must validate all the schemas (allOf)" +
                      (validated == 0 ? ". None validated" : "")});
      }
    }
    if (const json* negated = SubSchema(node, "not")) {
      if (Validate(*negated, data, path).valid()) {
        main.Add({Code::kComposite, "", json(), -1, json(),
                  GoQuote(path) + " must not validate the schema (not)"});
      }
    }
    main.matches += 1;
    return main;
  }

  static Result ValidateString(const json& node, const json& data, const std::string& path) {
    const std::string& text = data.get_ref<const std::string&>();
    auto count = static_cast<std::int64_t>(RuneCount(text));
    if (const json* max_length = Field(node, "maxLength");
        max_length != nullptr && IsGoInt64(*max_length) &&
        count > max_length->get<std::int64_t>()) {
      std::int64_t max = max_length->get<std::int64_t>();
      return Fail({Code::kTooLong, path, data, max, json(),
                   In(path) + " should be at most " + std::to_string(max) + " chars long"});
    }
    if (const json* min_length = Field(node, "minLength");
        min_length != nullptr && IsGoInt64(*min_length) &&
        count < min_length->get<std::int64_t>()) {
      return Fail({Code::kTooShort, path, data, -1, json(),
                   In(path) + " should be at least " +
                       std::to_string(min_length->get<std::int64_t>()) + " chars long"});
    }
    if (std::string pattern = Text(node, "pattern"); !pattern.empty()) {
      GoRegexp regexp = CompileGoRegexp(pattern);
      if (regexp.re == nullptr) {
        return Fail({Code::kPattern, path, data, -1, json(),
                     In(path) + " should match '" + pattern +
                         ", but pattern is invalid: " + regexp.error + "'"});
      }
      if (!GoRegexpMatch(regexp, text)) {
        return Fail(
            {Code::kPattern, path, data, -1, json(), In(path) + " should match '" + pattern + "'"});
      }
    }
    return {};
  }

  static Result ValidateFormat(const OpenApiSchema& schema, const json& data,
                               const std::string& path) {
    const std::string& text = data.get_ref<const std::string&>();
    std::optional<bool> ok = CheckFormat(schema.format, text);
    if (!ok) {
      return Fail({Code::kUnchecked, path, data, -1, json(),
                   "devcluster cannot check format " + GoQuote(schema.format) +
                       " (the API server does); refusing rather than accepting unchecked"});
    }
    if (!*ok) {
      return Fail(InvalidType(path, schema.format, text));
    }
    return {};
  }

  static Result ValidateNumber(const json& node, const json& data, const std::string& path) {
    Result multiple;
    Result minimum;
    Result maximum;
    bool integer = KindOf(data) == Kind::kInt;
    double value = AsDouble(data);
    if (const json* factor_json = Field(node, "multipleOf");
        factor_json != nullptr && factor_json->is_number()) {
      double factor = AsDouble(*factor_json);
      auto int_factor = static_cast<std::int64_t>(factor);
      if (integer && int_factor != 0) {
        if (int_factor < 0) {
          multiple = Fail({Code::kMultipleOf, path, json(int_factor), -1, json(),
                           "factor MultipleOf declared for " + path +
                               " must be positive: " + std::to_string(int_factor)});
        } else if (data.get<std::int64_t>() % int_factor != 0) {
          multiple = Fail({Code::kMultipleOf, path, data, -1, json(),
                           In(path) + " should be a multiple of " + std::to_string(int_factor)});
        }
      } else if (factor < 0) {
        multiple = Fail(
            {Code::kMultipleOf, path, *factor_json, -1, json(),
             "factor MultipleOf declared for " + path + " must be positive: " + GoFloat(factor)});
      } else if (!IsJsonInteger(factor < 1 ? 1 / factor * value : value / factor)) {
        multiple = Fail({Code::kMultipleOf, path, data, -1, json(),
                         In(path) + " should be a multiple of " + GoFloat(factor)});
      }
    }
    auto bound_text = [&](double bound) {
      return integer ? std::to_string(static_cast<std::int64_t>(bound)) : GoFloat(bound);
    };
    if (const json* max_json = Field(node, "maximum");
        max_json != nullptr && max_json->is_number()) {
      double bound = AsDouble(*max_json);
      bool exclusive = Flag(node, "exclusiveMaximum");
      bool over = integer
                      ? (exclusive ? data.get<std::int64_t>() >= static_cast<std::int64_t>(bound)
                                   : data.get<std::int64_t>() > static_cast<std::int64_t>(bound))
                      : (exclusive ? value >= bound : value > bound);
      if (over) {
        maximum = Fail({Code::kMax, path, data, -1, json(),
                        In(path) + " should be less than " + (exclusive ? "" : "or equal to ") +
                            bound_text(bound)});
      }
    }
    if (const json* min_json = Field(node, "minimum");
        min_json != nullptr && min_json->is_number()) {
      double bound = AsDouble(*min_json);
      bool exclusive = Flag(node, "exclusiveMinimum");
      bool under = integer
                       ? (exclusive ? data.get<std::int64_t>() <= static_cast<std::int64_t>(bound)
                                    : data.get<std::int64_t>() < static_cast<std::int64_t>(bound))
                       : (exclusive ? value <= bound : value < bound);
      if (under) {
        minimum = Fail({Code::kMin, path, data, -1, json(),
                        In(path) + " should be greater than " + (exclusive ? "" : "or equal to ") +
                            bound_text(bound)});
      }
    }
    Result result;
    result.Merge(multiple);
    result.Merge(minimum);
    result.Merge(maximum);
    result.matches += 1;
    return result;
  }

  Result ValidateSlice(const json& node, const json& data, const std::string& path) {
    Result result;
    if (const json* items = SubSchema(node, "items")) {
      for (std::size_t i = 0; i < data.size(); ++i) {
        result.Merge(Validate(*items, data[i], Index(path, i)));
      }
    }
    auto size = static_cast<std::int64_t>(data.size());
    if (const json* min_items = Field(node, "minItems");
        min_items != nullptr && IsGoInt64(*min_items) && size < min_items->get<std::int64_t>()) {
      result.Add({Code::kMinItems, path, size, -1, json(),
                  In(path) + " should have at least " +
                      std::to_string(min_items->get<std::int64_t>()) + " items"});
    }
    if (const json* max_items = Field(node, "maxItems");
        max_items != nullptr && IsGoInt64(*max_items) && size > max_items->get<std::int64_t>()) {
      std::int64_t max = max_items->get<std::int64_t>();
      result.Add({Code::kMaxItems, path, size, max, json(),
                  In(path) + " should have at most " + std::to_string(max) + " items"});
    }
    if (Flag(node, "uniqueItems")) {
      for (std::size_t i = 0; i < data.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (GoDeepEqual(data[i], data[j])) {
            result.Add({Code::kUnique, path, json(), -1, json(),
                        In(path) + " shouldn't contain duplicates"});
            i = data.size();
            break;
          }
        }
      }
    }
    result.matches += 1;
    return result;
  }

  Result ValidateObject(const json& node, const json& data, const std::string& path) {
    auto count = static_cast<std::int64_t>(data.size());
    if (const json* min = Field(node, "minProperties");
        min != nullptr && IsGoInt64(*min) && count < min->get<std::int64_t>()) {
      return Fail({Code::kTooFewProperties, path, count, -1, json(),
                   In(path) + " should have at least " + std::to_string(min->get<std::int64_t>()) +
                       " properties"});
    }
    if (const json* max = Field(node, "maxProperties");
        max != nullptr && IsGoInt64(*max) && count > max->get<std::int64_t>()) {
      return Fail({Code::kTooManyProperties, path, count, max->get<std::int64_t>(), json(),
                   In(path) + " should have at most " + std::to_string(max->get<std::int64_t>()) +
                       " properties"});
    }
    Result result;
    const json* properties = SubSchema(node, "properties");
    auto is_property = [&](const std::string& key) {
      return properties != nullptr && properties->contains(key);
    };
    const json* additional = Field(node, "additionalProperties");
    if (additional != nullptr && additional->is_boolean() && !additional->get<bool>()) {
      for (auto it = data.begin(); it != data.end(); ++it) {
        if (!is_property(it.key())) {
          result.Add({Code::kUnallowedProperty, path, it.key(), -1, json(),
                      path + "." + it.key() + " in body is a forbidden property"});
        }
      }
    } else if (const json* additional_schema = AdditionalSchema(node)) {
      for (auto it = data.begin(); it != data.end(); ++it) {
        if (!is_property(it.key())) {
          result.Merge(Validate(*additional_schema, *it, path + "." + it.key()));
        }
      }
    }
    if (properties != nullptr) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        if (auto value = data.find(it.key()); value != data.end()) {
          result.Merge(Validate(*it, *value, path.empty() ? it.key() : path + "." + it.key()));
        }
      }
    }
    for (const std::string& key : Strings(node, "required")) {
      if (!data.contains(key)) {
        result.Add({Code::kRequired, path + "." + key, json(), -1, json(),
                    In(path + "." + key) + " is required"});
      }
    }
    return result;
  }
};

// kubeOpenAPIResultToFieldErrors: the field error for each kube-openapi error, under `base`
// (empty for a custom resource's root, "<schema path>.default" for a default).
std::vector<SchemaError> ToFieldErrors(const Result& result, const std::string& base) {
  std::vector<SchemaError> errors;
  auto at = [&](const std::string& name) {
    std::string trimmed = name.starts_with(".") ? name.substr(1) : name;
    if (name.empty() || name == ".") {
      return base.empty() ? std::string("<nil>") : base;
    }
    return base.empty() ? trimmed : base + "." + trimmed;
  };
  for (const OpenApiError& error : result.errors) {
    std::string path = at(error.name);
    std::string value = error.value.is_null() ? GoQuote("") : GoValue(error.value);
    switch (error.code) {
      case Code::kRequired:
        errors.push_back(Required(path, ""));
        break;
      case Code::kEnum: {
        std::vector<std::string> supported;
        for (const json& option : error.enum_values) {
          supported.push_back(option.is_string() ? option.get<std::string>() : GoJson(option));
        }
        errors.push_back(NotSupported(path, GoValue(error.value), supported));
        break;
      }
      case Code::kTooLong:
        errors.push_back(TooLong(path, error.limit));
        break;
      case Code::kMaxItems:
      case Code::kTooManyProperties:
        errors.push_back(TooMany(path, error.value.get<std::int64_t>(), error.limit));
        break;
      case Code::kInvalidType:
        errors.push_back(TypeInvalid(path, value, error.message));
        break;
      case Code::kComposite:
        errors.push_back(Invalid(base.empty() ? "<nil>" : base, GoQuote(""), error.message));
        break;
      default:
        errors.push_back(Invalid(path, value, error.message));
    }
  }
  return errors;
}

// ---- ObjectMeta of embedded resources (objectmeta/validation.go) --------------------------------

// ValidateObjectMetaAccessor with path.ValidatePathSegmentName for names.
void ValidateObjectMeta(const json& metadata, const std::string& path,
                        std::vector<SchemaError>& errors) {
  auto segment_errors = [](const std::string& name, bool prefix) {
    std::vector<std::string> messages;
    if (!prefix && (name == "." || name == "..")) {
      messages.push_back("may not be '" + name + "'");
      return messages;
    }
    for (const char* bad : {"/", "%"}) {
      if (name.find(bad) != std::string::npos) {
        messages.push_back(std::string("may not contain '") + bad + "'");
      }
    }
    return messages;
  };
  std::string generate_name = Text(metadata, "generateName");
  if (!generate_name.empty()) {
    for (const std::string& message : segment_errors(generate_name, true)) {
      errors.push_back(Invalid(Child(path, "generateName"), GoQuote(generate_name), message));
    }
  }
  std::string name = Text(metadata, "name");
  if (name.empty()) {
    name = "fakename";  // objectmeta.Validate sets one so that a missing name is no error
  }
  for (const std::string& message : segment_errors(name, false)) {
    errors.push_back(Invalid(Child(path, "name"), GoQuote(name), message));
  }
  if (std::string ns = Text(metadata, "namespace"); !ns.empty()) {
    for (const std::string& message : Dns1123LabelErrors(ns)) {
      errors.push_back(Invalid(Child(path, "namespace"), GoQuote(ns), message));
    }
  }
  if (const json* generation = Field(metadata, "generation");
      generation != nullptr && IsGoInt64(*generation) && generation->get<std::int64_t>() < 0) {
    errors.push_back(Invalid(Child(path, "generation"),
                             std::to_string(generation->get<std::int64_t>()),
                             "must be greater than or equal to 0"));
  }
  if (const json* labels = Field(metadata, "labels"); labels != nullptr && labels->is_object()) {
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      for (const std::string& message : QualifiedNameErrors(it.key())) {
        errors.push_back(Invalid(Child(path, "labels"), GoQuote(it.key()), message));
      }
      std::string value = it->is_string() ? it->get<std::string>() : "";
      for (const std::string& message : LabelValueErrors(value)) {
        errors.push_back(Invalid(Child(path, "labels"), GoQuote(value), message));
      }
    }
  }
  if (const json* annotations = Field(metadata, "annotations");
      annotations != nullptr && annotations->is_object()) {
    std::size_t total = 0;
    for (auto it = annotations->begin(); it != annotations->end(); ++it) {
      std::string lower = it.key();
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      for (const std::string& message : QualifiedNameErrors(lower)) {
        errors.push_back(Invalid(Child(path, "annotations"), GoQuote(it.key()), message));
      }
      total += it.key().size() + (it->is_string() ? it->get_ref<const std::string&>().size() : 0);
    }
    if (total > 256 * 1024) {
      errors.push_back(TooLong(Child(path, "annotations"), 256 * 1024));
    }
  }
  if (const json* owners = Field(metadata, "ownerReferences");
      owners != nullptr && owners->is_array()) {
    std::string controller;
    for (const json& owner : *owners) {
      std::string api_version = Text(owner, "apiVersion");
      std::string version = api_version.substr(
          api_version.find('/') == std::string::npos ? 0 : api_version.find('/') + 1);
      std::string owners_path = Child(path, "ownerReferences");
      if (version.empty()) {
        errors.push_back(Invalid(Child(owners_path, "apiVersion"), GoQuote(api_version),
                                 "version must not be empty"));
      }
      for (const char* key : {"kind", "name", "uid"}) {
        if (Text(owner, key).empty()) {
          errors.push_back(Invalid(Child(owners_path, key), GoQuote(Text(owner, key)),
                                   std::string(key) + " must not be empty"));
        }
      }
      if (Flag(owner, "controller")) {
        std::string current = Text(owner, "kind") + "/" + Text(owner, "name");
        if (!controller.empty()) {
          errors.push_back(
              Invalid(owners_path, GoValue(*owners),
                      "Only one reference can have Controller set to true. Found \"true\" in "
                      "references for " +
                          controller + " and " + current));
        } else {
          controller = current;
        }
      }
    }
  }
  for (const std::string& finalizer : Strings(metadata, "finalizers")) {
    for (const std::string& message : QualifiedNameErrors(finalizer)) {
      errors.push_back(Invalid(Child(path, "finalizers"), GoQuote(finalizer), message));
    }
  }
}

void ValidateEmbeddedResource(const json& x, const std::string& path,
                              std::vector<SchemaError>& errors) {
  if (!x.contains("apiVersion")) {
    errors.push_back(Required(Child(path, "apiVersion"), ""));
  }
  if (!x.contains("kind")) {
    errors.push_back(Required(Child(path, "kind"), ""));
  }
  for (auto it = x.begin(); it != x.end(); ++it) {
    if (it.key() == "apiVersion") {
      if (!it->is_string()) {
        errors.push_back(Invalid(Child(path, "apiVersion"), GoValue(*it), "must be a string"));
      } else if (it->get_ref<const std::string&>().empty()) {
        errors.push_back(Required(Child(path, "apiVersion"), ""));
      } else if (std::count(it->get_ref<const std::string&>().begin(),
                            it->get_ref<const std::string&>().end(), '/') > 1) {
        errors.push_back(Invalid(Child(path, "apiVersion"), GoValue(*it),
                                 "unexpected GroupVersion string: " + it->get<std::string>()));
      }
    } else if (it.key() == "kind") {
      if (!it->is_string()) {
        errors.push_back(Invalid(Child(path, "kind"), GoValue(*it), "must be a string"));
      } else if (it->get_ref<const std::string&>().empty()) {
        errors.push_back(Required(Child(path, "kind"), ""));
      } else {
        std::string lower = it->get<std::string>();
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (std::vector<std::string> messages = Dns1035LabelErrors(lower); !messages.empty()) {
          errors.push_back(
              Invalid(Child(path, "kind"), GoValue(*it),
                      "may have mixed case, but should otherwise match: " + Join(messages, ",")));
        }
      }
    } else if (it.key() == "metadata" && it->is_object()) {
      ValidateObjectMeta(*it, Child(path, "metadata"), errors);
    }
  }
}

void ValidateEmbedded(const json& x, const json* s, const std::string& path, bool root,
                      std::vector<SchemaError>& errors) {
  if (s == nullptr) {
    return;
  }
  if (x.is_object()) {
    if (Flag(*s, kEmbedded) && !root) {
      ValidateEmbeddedResource(x, path, errors);
    }
    for (auto it = x.begin(); it != x.end(); ++it) {
      if (const json* property = Property(s, it.key())) {
        ValidateEmbedded(*it, property, Child(path, it.key()), false, errors);
      } else if (HasAdditionalProperties(*s)) {
        ValidateEmbedded(*it, AdditionalSchema(*s), Key(path, it.key()), false, errors);
      }
    }
  } else if (x.is_array()) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      ValidateEmbedded(x[i], Items(s), Index(path, i), false, errors);
    }
  }
}

// ---- x-kubernetes-list-type set and map (listtype/validation.go) -------------------------------

// The identity listtype's uniqueness check compares: Go interface{} equality for scalars (an
// int64 1 and a float64 1 differ), the JSON encoding for objects and arrays.
std::string UniquenessKey(const json& value) {
  switch (KindOf(value)) {
    case Kind::kMap:
    case Kind::kSlice:
      return "c" + GoJson(value);
    case Kind::kInt:
      return "i" + GoJson(value);
    case Kind::kFloat:
      return "f" + GoFloat(AsDouble(value));
    default:
      return "s" + GoJson(value);
  }
}

// The indices of the second appearance of each repeated value (a third is not reported).
std::vector<std::size_t> NonUnique(const std::vector<json>& values) {
  std::vector<std::size_t> out;
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (seen[UniquenessKey(values[i])]++ == 1) {
      out.push_back(i);
    }
  }
  return out;
}

void ValidateLists(const json& x, const json* s, const std::string& path,
                   std::vector<SchemaError>& errors);

void ValidateListArray(const json& x, const json& s, const std::string& path,
                       std::vector<SchemaError>& errors) {
  std::string list_type = Text(s, kListType);
  if (list_type == "set" && x.size() > 1) {
    std::vector<json> values(x.begin(), x.end());
    for (std::size_t i : NonUnique(values)) {
      errors.push_back(Duplicate(Index(path, i), GoValue(x[i])));
    }
  } else if (list_type == "map") {
    bool objects = true;
    for (std::size_t i = 0; i < x.size() && objects; ++i) {
      if (!x[i].is_null() && !x[i].is_object()) {
        errors.push_back(Invalid(Index(path, i), GoValue(x[i]),
                                 "must be an object for an array of list-type map"));
        objects = false;
      }
    }
    if (objects && x.size() > 1) {
      std::vector<std::string> key_names = Strings(s, kListMapKeys);
      std::vector<json> keys;
      for (const json& item : x) {
        json key = json::object();
        for (const std::string& name : key_names) {
          if (item.is_object() && item.contains(name)) {
            key[name] = item[name];
          }
        }
        keys.push_back(std::move(key));
      }
      for (std::size_t i : NonUnique(keys)) {
        errors.push_back(Duplicate(Index(path, i), GoValue(keys[i])));
      }
    }
  }
  if (const json* items = SubSchema(s, "items")) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      ValidateLists(x[i], items, Index(path, i), errors);
    }
  }
}

void ValidateLists(const json& x, const json* s, const std::string& path,
                   std::vector<SchemaError>& errors) {
  if (s == nullptr) {
    return;
  }
  if (x.is_array()) {
    ValidateListArray(x, *s, path, errors);
  } else if (x.is_object()) {
    if (const json* additional = AdditionalSchema(*s)) {
      for (auto it = x.begin(); it != x.end(); ++it) {
        ValidateLists(*it, additional, Key(path, it.key()), errors);
      }
    }
    for (auto it = x.begin(); it != x.end(); ++it) {
      if (const json* property = Property(s, it.key())) {
        ValidateLists(*it, property, Child(path, it.key()), errors);
      }
    }
  }
}

}  // namespace

std::vector<std::string> Prune(json& value, const json& schema) {
  return PruneAll(value, schema).unknown;
}

void ApplyDefaults(json& value, const json& schema) { Default(value, &schema); }

bool ValidationResult::BlocksCel() const {
  return std::any_of(errors.begin(), errors.end(),
                     [](const SchemaError& error) { return error.BlocksCel(); });
}

ValidationResult Validate(const json& value, const json& schema) {
  ValidationResult result;
  json pruned = value;
  PruneOutcome outcome = PruneAll(pruned, schema);
  result.unknown_fields = std::move(outcome.unknown);
  result.errors = std::move(outcome.errors);
  OpenApiValidator validator;
  for (SchemaError& error : ToFieldErrors(validator.Validate(schema, pruned, ""), "")) {
    result.errors.push_back(std::move(error));
  }
  ValidateEmbedded(pruned, &schema, "", true, result.errors);
  if (pruned.is_object()) {
    ValidateLists(pruned, &schema, "", result.errors);
  }
  return result;
}

namespace internal {

// The default-value validation ValidateSchema uses (defaulting/validation.go): the default is
// checked as kube-openapi checks a value, with field errors under `base`.
std::vector<SchemaError> ValidateDefaultValue(const json& node, const json& value,
                                              const std::string& base) {
  OpenApiValidator validator;
  return ToFieldErrors(validator.Validate(node, value, ""), base);
}

std::vector<SchemaError> ValidateEmbeddedDefault(const json& node, const json& value,
                                                 const std::string& base) {
  std::vector<SchemaError> errors;
  json copy = value;
  std::vector<std::string> unknown;
  Coercer coercer(&unknown, &errors);
  coercer.Coerce(copy, &node, base);
  if (!errors.empty()) {
    return errors;
  }
  if (Flag(node, kEmbedded) && copy.is_object()) {
    ValidateEmbeddedResource(copy, base, errors);
  }
  ValidateEmbedded(copy, &node, base, true, errors);
  return errors;
}

bool DefaultIsPruned(const json& node, const json& value) {
  json copy = value;
  std::vector<std::string> unknown;
  Pruner pruner(&unknown);
  pruner.Prune(copy, &node, Flag(node, kEmbedded), "");
  return GoDeepEqual(copy, value);
}

}  // namespace internal

}  // namespace ringleader::schema
