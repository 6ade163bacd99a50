// The resource types devcluster serves, safe to read while a CRD write changes them: a
// ResourceRegistry behind a reader-writer lock that hands out copies.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tests/devcluster/machinery/resource_registry.h"

namespace ringleader::devcluster {

class Catalog {
 public:
  Catalog();  // the built-in resources

  std::optional<ResourceInfo> Find(const std::string& group, const std::string& version,
                                   const std::string& plural) const;
  std::optional<ResourceInfo> FindKind(const std::string& group, const std::string& version,
                                       const std::string& kind) const;
  // Every version served for group (any version), e.g. for GET /apis/<group>.
  std::vector<ResourceInfo> All() const;

  // Replaces what a CRD (group/plural) serves with `versions`; empty removes it.
  void SetCrd(const std::string& group, const std::string& plural, std::vector<ResourceInfo> versions);

  nlohmann::json AggregatedDiscovery(bool core) const;
  nlohmann::json OpenApiIndex() const;
  nlohmann::json OpenApiDocument(const std::string& group_version) const;

 private:
  mutable std::shared_mutex mu_;
  ResourceRegistry registry_;
};

// The store key of a resource: every version of group/plural shares one collection.
std::string StoreKey(const ResourceInfo& info);

}  // namespace ringleader::devcluster
