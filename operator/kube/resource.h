// Which API resource a request is about, and the URL path the API server serves it on.
#pragma once

#include <string>
#include <string_view>

namespace ringleader::kube {

// A resource by group/version/plural. `group` is empty for the core group ("/api/v1").
struct Resource {
  std::string group;
  std::string version;
  std::string plural;
  bool namespaced = true;

  // "v1" or "ringleader.dev/v1alpha1".
  std::string ApiVersion() const;
  friend bool operator==(const Resource&, const Resource&) = default;
};

// Resources the operator uses.
Resource Pods();
Resource ConfigMaps();
Resource Secrets();
Resource Services();
Resource NetworkPolicies();  // networking.k8s.io/v1
Resource Events();
Resource Namespaces();
Resource Leases();
Resource CustomResourceDefinitions();
Resource TrainingJobs();
// The gang-scheduling providers' resources (operator/planner/gang_scheduling.h).
Resource CoschedulingPodGroups();  // scheduling.x-k8s.io/v1alpha1 (scheduler-plugins)
Resource VolcanoPodGroups();       // scheduling.volcano.sh/v1beta1
Resource KubernetesPodGroups();    // scheduling.k8s.io/v1beta1 (Kubernetes' own, GenericWorkload)

// The path for a collection (`name` empty) or one object, optionally a subresource:
//   /api/v1/namespaces/ns/pods/name/status, /apis/g/v/plural (all namespaces when `ns` is
//   empty), /apis/g/v/plural/name for cluster-scoped resources (`ns` ignored).
// Segments are percent-encoded.
std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

}  // namespace ringleader::kube
