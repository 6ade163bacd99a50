// ResourceQuota admission after kube-apiserver's plugin/pkg/admission/resourcequota and the pods
// evaluator (pkg/quota/v1/evaluator/core/pods.go): usage is computed from the store at each
// create rather than read from the quota's status, as if the quota controller were never behind.
#include "tests/devcluster/resource_quota.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "tests/devcluster/json_field.h"
#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster {

using nlohmann::json;

namespace {

bool CheckedMul(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

std::optional<std::int64_t> Pow(std::int64_t base, int exponent) {
  std::int64_t value = 1;
  for (int i = 0; i < exponent; ++i) {
    if (!CheckedMul(value, base, value)) {
      return std::nullopt;
    }
  }
  return value;
}

// mantissa * 10^exponent, rounded up when exponent < 0 (a quantity's MilliValue rounds up).
std::optional<std::int64_t> ScaleDecimal(std::int64_t mantissa, int exponent) {
  if (exponent >= 0) {
    const auto factor = Pow(10, exponent);
    std::int64_t out = 0;
    if (!factor || !CheckedMul(mantissa, *factor, out)) {
      return std::nullopt;
    }
    return out;
  }
  if (exponent < -18) {
    return mantissa == 0 ? 0 : 1;
  }
  const std::int64_t divisor = *Pow(10, -exponent);
  return mantissa / divisor + (mantissa % divisor != 0 ? 1 : 0);
}


std::string Text(const json& value) {
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_number_integer()) {
    return std::to_string(value.get<std::int64_t>());
  }
  return "";
}

// Sums keep the left operand's format, as quota.Add keeps the first list's quantities'.
void AddTo(ResourceUsage& total, const std::string& name, const QuotaQuantity& quantity) {
  auto [it, inserted] = total.emplace(name, quantity);
  if (!inserted) {
    it->second.milli += quantity.milli;
  }
}

ResourceUsage Sum(ResourceUsage a, const ResourceUsage& b) {
  for (const auto& [name, quantity] : b) {
    AddTo(a, name, quantity);
  }
  return a;
}

ResourceUsage Max(ResourceUsage a, const ResourceUsage& b) {
  for (const auto& [name, quantity] : b) {
    auto [it, inserted] = a.emplace(name, quantity);
    if (!inserted && quantity.milli > it->second.milli) {
      it->second = quantity;
    }
  }
  return a;
}

ResourceUsage ParseList(const json& list) {
  ResourceUsage out;
  if (!list.is_object()) {
    return out;
  }
  for (const auto& [name, value] : list.items()) {
    if (auto quantity = ParseQuotaQuantity(Text(value))) {
      out[name] = *quantity;
    }
  }
  return out;
}

// A container's requests after the API's defaulting (a limit stands in for a missing request).
ResourceUsage ContainerRequests(const json& container) {
  ResourceUsage requests = ParseList(Field(container, {"resources", "requests"}));
  for (const auto& [name, quantity] : ParseList(Field(container, {"resources", "limits"}))) {
    requests.emplace(name, quantity);
  }
  return requests;
}

ResourceUsage ContainerLimits(const json& container) { return ParseList(Field(container, {"resources", "limits"})); }

bool IsSidecar(const json& container) { return Field(container, {"restartPolicy"}) == "Always"; }

// resourcehelper.PodRequests / PodLimits: regular containers plus sidecars, or the peak of the
// init sequence if larger, plus the Pod's overhead.
ResourceUsage PodTotal(const json& pod, ResourceUsage (*of)(const json&)) {
  ResourceUsage regular;
  const json& containers = Field(pod, {"spec", "containers"});
  if (containers.is_array()) {
    for (const json& container : containers) {
      regular = Sum(regular, of(container));
    }
  }
  ResourceUsage sidecars;
  ResourceUsage init_peak;
  const json& init_containers = Field(pod, {"spec", "initContainers"});
  if (init_containers.is_array()) {
    for (const json& container : init_containers) {
      const ResourceUsage own = of(container);
      if (IsSidecar(container)) {
        regular = Sum(regular, own);
        sidecars = Sum(sidecars, own);
        init_peak = Max(init_peak, sidecars);
      } else {
        init_peak = Max(init_peak, Sum(own, sidecars));
      }
    }
  }
  return Sum(Max(regular, init_peak), ParseList(Field(pod, {"spec", "overhead"})));
}

bool IsNativeResource(const std::string& name) {
  return name.find('/') == std::string::npos || name.starts_with("kubernetes.io/");
}

bool IsExtendedResource(const std::string& name) {
  return !IsNativeResource(name) && !name.starts_with("requests.");
}

// podComputeUsageHelper: the quota names for one set of requests and limits.
ResourceUsage ComputeUsage(const ResourceUsage& requests, const ResourceUsage& limits) {
  ResourceUsage usage{{"pods", {1000, false}}};
  for (const char* name : {"cpu", "memory", "ephemeral-storage"}) {
    if (auto it = requests.find(name); it != requests.end()) {
      usage[name] = it->second;
      usage[std::string("requests.") + name] = it->second;
    }
    if (auto it = limits.find(name); it != limits.end()) {
      usage[std::string("limits.") + name] = it->second;
    }
  }
  for (const auto& [name, quantity] : requests) {
    if (name.starts_with("hugepages-")) {
      usage[name] = quantity;
      usage["requests." + name] = quantity;
    }
    if (IsExtendedResource(name)) {
      usage["requests." + name] = quantity;
    }
  }
  return usage;
}

constexpr std::array<std::string_view, 11> kPodResources = {
    "count/pods",   "cpu",           "memory",        "ephemeral-storage",          "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"};

// The pods evaluator's MatchingResources.
bool PodMatches(const std::string& name) {
  return std::find(kPodResources.begin(), kPodResources.end(), name) != kPodResources.end() ||
         name.starts_with("hugepages-") || name.starts_with("requests.hugepages-") ||
         (name.starts_with("requests.") && !IsNativeResource(name.substr(9)));
}

// The names kube-apiserver also counts a core resource under (legacyObjectCountAliases).
std::string LegacyAlias(const std::string& group, const std::string& plural) {
  static const std::set<std::string> kAliased = {"configmaps",  "persistentvolumeclaims", "replicationcontrollers",
                                                 "resourcequotas", "secrets",              "services"};
  return group.empty() && kAliased.contains(plural) ? plural : "";
}

std::string CountName(const std::string& group, const std::string& plural) {
  return "count/" + plural + (group.empty() ? "" : "." + group);
}

// The resources validationSet names: quota on them makes every container state them.
constexpr std::array<std::string_view, 6> kMustSpecify = {"cpu",        "limits.cpu",      "limits.memory",
                                                           "memory",     "requests.cpu",    "requests.memory"};

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    out += (out.empty() ? "" : std::string(separator)) + part;
  }
  return out;
}

std::string PrettyPrint(const ResourceUsage& usage) {
  std::vector<std::string> parts;
  for (const auto& [name, quantity] : usage) {  // a std::map: sorted by name
    parts.push_back(name + "=" + FormatQuotaQuantity(quantity));
  }
  return Join(parts, ",");
}

std::string QuotaName(const json& quota) { return Text(Field(quota, {"metadata", "name"})); }

}  // namespace

std::optional<QuotaQuantity> ParseQuotaQuantity(const std::string& text) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '+') {
    ++i;
  }
  std::int64_t mantissa = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  bool seen_digit = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') {
      break;
    }
    seen_digit = true;
    if (!CheckedMul(mantissa, 10, mantissa) || __builtin_add_overflow(mantissa, c - '0', &mantissa)) {
      return std::nullopt;
    }
    if (seen_point) {
      ++fraction_digits;
    }
  }
  if (!seen_digit) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(i);
  static const std::map<std::string, int> kDecimal = {{"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
                                                      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static const std::map<std::string, int> kBinary = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3}, {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  if (auto it = kDecimal.find(suffix); it != kDecimal.end()) {
    auto milli = ScaleDecimal(mantissa, it->second + 3 - fraction_digits);
    return milli ? std::optional<QuotaQuantity>({*milli, false}) : std::nullopt;
  }
  if (auto it = kBinary.find(suffix); it != kBinary.end()) {
    const auto factor = Pow(1024, it->second);
    std::int64_t scaled = 0;
    if (!factor || !CheckedMul(mantissa, *factor, scaled)) {
      return std::nullopt;
    }
    auto milli = ScaleDecimal(scaled, 3 - fraction_digits);
    return milli ? std::optional<QuotaQuantity>({*milli, true}) : std::nullopt;
  }
  if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    std::size_t j = 1;
    const bool negative = suffix[j] == '-';
    if (suffix[j] == '-' || suffix[j] == '+') {
      ++j;
    }
    if (j >= suffix.size() || suffix.size() - j > 3 ||
        !std::all_of(suffix.begin() + static_cast<std::ptrdiff_t>(j), suffix.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    const int exponent = std::stoi(suffix.substr(j)) * (negative ? -1 : 1);
    auto milli = ScaleDecimal(mantissa, exponent + 3 - fraction_digits);
    return milli ? std::optional<QuotaQuantity>({*milli, false}) : std::nullopt;
  }
  return std::nullopt;
}

std::string FormatQuotaQuantity(const QuotaQuantity& quantity) {
  const std::int64_t milli = quantity.milli;
  if (milli % 1000 != 0) {
    return std::to_string(milli) + "m";
  }
  std::int64_t value = milli / 1000;
  if (value == 0) {
    return "0";
  }
  if (quantity.binary && value >= 1024) {
    static constexpr const char* kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int exponent = 0;
    while (exponent < 6 && value % 1024 == 0) {
      value /= 1024;
      ++exponent;
    }
    return std::to_string(value) + kSuffixes[exponent];
  }
  static constexpr const char* kSuffixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int exponent = 0;
  while (exponent < 6 && value % 1000 == 0) {
    value /= 1000;
    ++exponent;
  }
  return std::to_string(value) + kSuffixes[exponent];
}

ResourceUsage PodUsage(const json& pod, std::chrono::system_clock::time_point now) {
  ResourceUsage usage{{"count/pods", {1000, false}}};
  const std::string phase = Text(Field(pod, {"status", "phase"}));
  if (phase == "Succeeded" || phase == "Failed") {
    return usage;
  }
  const json& grace = Field(pod, {"metadata", "deletionGracePeriodSeconds"});
  if (auto deleted = ParseTime(Text(Field(pod, {"metadata", "deletionTimestamp"})));
      deleted && grace.is_number_integer() && now > *deleted + std::chrono::seconds(grace.get<std::int64_t>())) {
    return usage;
  }
  return Sum(usage, ComputeUsage(PodTotal(pod, ContainerRequests), PodTotal(pod, ContainerLimits)));
}

std::vector<schema::SchemaError> QuotaSpecErrors(const json& quota) {
  std::vector<schema::SchemaError> errors;
  const json& hard = Field(quota, {"spec", "hard"});
  if (hard.is_object()) {
    for (const auto& [name, value] : hard.items()) {
      const std::string path = "spec.hard[" + name + "]";
      const std::string text = Text(value);
      if (!text.empty() && text[0] == '-') {
        errors.push_back(schema::Invalid(path, json(text).dump(), "must be greater than or equal to 0"));
        continue;
      }
      if (!ParseQuotaQuantity(text)) {
        errors.push_back(schema::Invalid(path, json(text).dump(), "quantities must match the regular expression "
                                                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
        continue;
      }
      const bool enforced = PodMatches(name) || name.starts_with("count/") || !LegacyAlias("", name).empty();
      if (!enforced) {
        errors.push_back(schema::Forbidden(path, "devcluster does not enforce quota on this resource"));
      }
    }
  }
  const json& scopes = Field(quota, {"spec", "scopes"});
  if (scopes.is_array() && !scopes.empty()) {
    errors.push_back(schema::Forbidden("spec.scopes", "devcluster does not enforce quota scopes"));
  }
  if (!Field(quota, {"spec", "scopeSelector"}).is_null()) {
    errors.push_back(schema::Forbidden("spec.scopeSelector", "devcluster does not enforce quota scopes"));
  }
  return errors;
}

std::string QuotaRefusal(const QuotaAdmission& admission) {
  if (admission.object == nullptr || admission.quotas.empty() ||
      (admission.group.empty() && admission.plural == "events") ||
      (admission.group == "events.k8s.io" && admission.plural == "events")) {
    return "";  // kube-apiserver's quota ignores Events
  }
  const bool pods = admission.group.empty() && admission.plural == "pods";
  const std::string count_name = CountName(admission.group, admission.plural);
  const std::string alias = LegacyAlias(admission.group, admission.plural);
  auto matches = [&](const std::string& name) {
    return pods ? PodMatches(name) : name == count_name || (!alias.empty() && name == alias);
  };
  auto usage_of = [&](const json& object) {
    if (pods) {
      return PodUsage(object, admission.now);
    }
    ResourceUsage usage{{count_name, {1000, false}}};
    if (!alias.empty()) {
      usage[alias] = {1000, false};
    }
    return usage;
  };

  // The quotas that govern this kind; every one's constraints are checked before any usage.
  std::vector<std::pair<const json*, ResourceUsage>> interesting;
  for (const json* quota : admission.quotas) {
    ResourceUsage hard;
    for (const auto& [name, quantity] : ParseList(Field(*quota, {"spec", "hard"}))) {
      if (matches(name)) {
        hard[name] = quantity;
      }
    }
    if (hard.empty()) {
      continue;
    }
    if (pods) {
      // pods.go's Constraints: quota on cpu or memory makes every container state them.
      std::map<std::string, std::set<std::string>> missing;
      auto check = [&](const json& containers) {
        if (!containers.is_array()) {
          return;
        }
        for (const json& container : containers) {
          const ResourceUsage own = ComputeUsage(ContainerRequests(container), ContainerLimits(container));
          for (std::string_view name : kMustSpecify) {
            const std::string resource(name);
            if (hard.contains(resource) && !own.contains(resource)) {
              missing[resource].insert(Text(Field(container, {"name"})));
            }
          }
        }
      };
      check(Field(*admission.object, {"spec", "containers"}));
      check(Field(*admission.object, {"spec", "initContainers"}));
      if (!missing.empty()) {
        std::vector<std::string> parts;
        for (const auto& [resource, names] : missing) {
          parts.push_back(resource + " for: " + Join({names.begin(), names.end()}, ","));
        }
        return "failed quota: " + QuotaName(*quota) + ": must specify " + Join(parts, "; ");
      }
    }
    interesting.emplace_back(quota, std::move(hard));
  }
  if (interesting.empty()) {
    return "";
  }

  ResourceUsage used_all;
  for (const json* existing : admission.existing) {
    used_all = Sum(used_all, usage_of(*existing));
  }
  ResourceUsage requested_all;
  for (const auto& [name, quantity] : usage_of(*admission.object)) {
    if (quantity.milli != 0) {
      requested_all[name] = quantity;
    }
  }
  for (const auto& [quota, hard] : interesting) {
    ResourceUsage requested;
    ResourceUsage used;
    ResourceUsage limited;
    for (const auto& [name, limit] : hard) {
      auto want = requested_all.find(name);
      if (want == requested_all.end()) {
        continue;
      }
      auto have = used_all.find(name);
      const QuotaQuantity in_use = have != used_all.end() ? have->second : QuotaQuantity{};
      if (in_use.milli + want->second.milli > limit.milli) {
        requested[name] = want->second;
        used[name] = in_use;
        limited[name] = limit;
      }
    }
    if (!limited.empty()) {
      return "exceeded quota: " + QuotaName(*quota) + ", requested: " + PrettyPrint(requested) +
             ", used: " + PrettyPrint(used) + ", limited: " + PrettyPrint(limited);
    }
  }
  return "";
}

}  // namespace ringleader::devcluster
