// Which gang-scheduling providers the API server serves (scheduler-plugins' coscheduling and
// Volcano PodGroups, Kueue's Workloads, Kubernetes' own PodGroups), found through API discovery, which every authenticated
// user may read. The controller asks at start and again every minute or so; the planner gets the
// answer in Observed::providers.
#pragma once

#include <mutex>
#include <string_view>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "operator/planner/gang_scheduling.h"
#include "operator/runtime/logger.h"

namespace ringleader::runtime {

class ProviderDiscovery {
 public:
  // Both must outlive this.
  ProviderDiscovery(kube::Client& client, Logger& logger);

  // Asks the server. A group version it does not serve (404), or one without the resource, means
  // the provider is missing; any other failure keeps what the last look found for that provider.
  // Returns true when the answer changed.
  bool Refresh();
  planner::SchedulingProviders Current() const;

 private:
  // nullopt when the server could not say.
  std::optional<bool> Serves(std::string_view group_version, std::string_view plural);

  kube::Client& client_;
  Logger& logger_;
  mutable std::mutex mutex_;
  planner::SchedulingProviders current_;
};

// Whether an APIResourceList names `plural` as a resource (not a subresource such as plural/status).
bool ListsResource(const nlohmann::json& resource_list, std::string_view plural);

}  // namespace ringleader::runtime
