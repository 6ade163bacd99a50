// ProviderDiscovery: one discovery GET per provider group version.
#include "operator/runtime/provider_discovery.h"

namespace ringleader::runtime {

using nlohmann::json;

bool ListsResource(const json& resource_list, std::string_view plural) {
  const auto resources = resource_list.find("resources");
  if (!resource_list.is_object() || resources == resource_list.end() || !resources->is_array()) {
    return false;
  }
  for (const json& resource : *resources) {
    if (resource.is_object() && resource.value("name", "") == plural) {
      return true;
    }
  }
  return false;
}

ProviderDiscovery::ProviderDiscovery(kube::Client& client, Logger& logger) : client_(client), logger_(logger) {}

std::optional<bool> ProviderDiscovery::Serves(std::string_view group_version, std::string_view plural) {
  try {
    return ListsResource(client_.Discover(std::string(group_version)), plural);
  } catch (const kube::ApiError& e) {
    if (kube::IsNotFound(e)) {
      return false;
    }
    logger_.Warn("API discovery failed; keeping what the last look found",
                 {{"groupVersion", std::string(group_version)}, {"error", e.what()}});
    return std::nullopt;
  }
}

bool ProviderDiscovery::Refresh() {
  planner::SchedulingProviders next = Current();
  if (const std::optional<bool> served = Serves(planner::kCoschedulingApiVersion, "podgroups")) {
    next.coscheduling = *served;
  }
  if (const std::optional<bool> served = Serves(planner::kVolcanoApiVersion, "podgroups")) {
    next.volcano = *served;
  }
  if (const std::optional<bool> served = Serves(planner::kKubernetesApiVersion, "podgroups")) {
    next.kubernetes = *served;
  }
  // Kueue serves v1beta2 from 0.15 and v1beta1 before (and beside it for a while).
  const std::optional<bool> v1beta2 = Serves("kueue.x-k8s.io/v1beta2", "workloads");
  const std::optional<bool> v1beta1 = Serves("kueue.x-k8s.io/v1beta1", "workloads");
  if (v1beta2 == true || v1beta1 == true) {
    next.kueue = true;
  } else if (v1beta2.has_value() && v1beta1.has_value()) {
    next.kueue = false;
  }
  std::lock_guard lock(mutex_);
  if (next == current_) {
    return false;
  }
  current_ = next;
  logger_.Info("gang-scheduling providers found by discovery",
               {{"coscheduling", next.coscheduling},
                {"volcano", next.volcano},
                {"kueue", next.kueue},
                {"kubernetes", next.kubernetes}});
  return true;
}

planner::SchedulingProviders ProviderDiscovery::Current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

}  // namespace ringleader::runtime
