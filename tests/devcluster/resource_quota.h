// kube-apiserver's ResourceQuota admission, pure: what a create would use of each quota in its
// namespace, refused with the server's own wording when it would exceed one. Pods are charged
// their compute resources while not terminal; other kinds are counted as objects.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/field_errors.h"

namespace ringleader::devcluster {

// A resource.Quantity as a whole number of thousandths, with the format it prints in.
struct QuotaQuantity {
  std::int64_t milli = 0;
  bool binary = false;  // Ki, Mi, ...: prints in powers of 1024 where exact

  bool operator==(const QuotaQuantity&) const = default;
};

// "500m", "2", "1Gi", "1.5", "2e3"; nullopt for anything else (or negative, or too large).
std::optional<QuotaQuantity> ParseQuotaQuantity(const std::string& text);
// As Quantity.String() prints it canonically: "1500m", "2", "1k", "1Gi", "1500".
std::string FormatQuotaQuantity(const QuotaQuantity& quantity);

using ResourceUsage = std::map<std::string, QuotaQuantity>;

// What one Pod is charged, as the pods evaluator computes it: count/pods always; pods, cpu,
// memory, ephemeral-storage, requests.*, limits.*, hugepages and requests.<extended> while the Pod
// is not Succeeded or Failed and its deletion grace period has not run out at `now`.
ResourceUsage PodUsage(const nlohmann::json& pod, std::chrono::system_clock::time_point now);

// Field errors for a ResourceQuota spec devcluster cannot enforce honestly: a hard resource it
// does not count, a quantity that does not parse, scopes or a scope selector.
std::vector<schema::SchemaError> QuotaSpecErrors(const nlohmann::json& quota);

struct QuotaAdmission {
  std::string plural;  // "pods", "services", ...
  std::string group;   // "" for the core group
  const nlohmann::json* object = nullptr;
  // Every object of the same resource already in the namespace.
  std::vector<const nlohmann::json*> existing;
  // The namespace's ResourceQuotas.
  std::vector<const nlohmann::json*> quotas;
  std::chrono::system_clock::time_point now;
};

// "" when the create fits every quota; otherwise why it is forbidden, in kube-apiserver's words
// ("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2", "failed quota: q: must
// specify limits.cpu for: trainer"), to follow `pods "x" is forbidden: `.
std::string QuotaRefusal(const QuotaAdmission& admission);

}  // namespace ringleader::devcluster
