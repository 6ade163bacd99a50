// Locked access to the resource registry.
#include "tests/devcluster/catalog.h"

#include <mutex>

namespace ringleader::devcluster {

Catalog::Catalog() : registry_(ResourceRegistry::WithBuiltins()) {}

std::optional<ResourceInfo> Catalog::Find(const std::string& group, const std::string& version,
                                          const std::string& plural) const {
  std::shared_lock lock(mu_);
  const ResourceInfo* info = registry_.Find(group, version, plural);
  return info == nullptr ? std::nullopt : std::optional<ResourceInfo>(*info);
}

std::optional<ResourceInfo> Catalog::FindKind(const std::string& group, const std::string& version,
                                              const std::string& kind) const {
  std::shared_lock lock(mu_);
  const ResourceInfo* info = registry_.FindKind(group, version, kind);
  return info == nullptr ? std::nullopt : std::optional<ResourceInfo>(*info);
}

std::vector<ResourceInfo> Catalog::All() const {
  std::shared_lock lock(mu_);
  std::vector<ResourceInfo> out;
  for (const ResourceInfo* info : registry_.All()) {
    out.push_back(*info);
  }
  return out;
}

void Catalog::SetCrd(const std::string& group, const std::string& plural, std::vector<ResourceInfo> versions) {
  std::unique_lock lock(mu_);
  registry_.Remove(group, plural);
  for (ResourceInfo& info : versions) {
    registry_.Add(std::move(info));
  }
}

nlohmann::json Catalog::AggregatedDiscovery(bool core) const {
  std::shared_lock lock(mu_);
  return registry_.AggregatedDiscovery(core);
}

nlohmann::json Catalog::OpenApiIndex() const {
  std::shared_lock lock(mu_);
  return registry_.OpenApiIndex();
}

nlohmann::json Catalog::OpenApiDocument(const std::string& group_version) const {
  std::shared_lock lock(mu_);
  return registry_.OpenApiDocument(group_version);
}

std::string StoreKey(const ResourceInfo& info) { return info.group + "/" + info.plural; }

}  // namespace ringleader::devcluster
