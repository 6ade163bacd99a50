// Resource paths: /api/v1/... for the core group, /apis/group/version/... otherwise.
#include "operator/kube/resource.h"

#include "operator/kube/query.h"

namespace ringleader::kube {

std::string Resource::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

Resource Pods() { return {"", "v1", "pods", true}; }
Resource ConfigMaps() { return {"", "v1", "configmaps", true}; }
Resource Secrets() { return {"", "v1", "secrets", true}; }
Resource Services() { return {"", "v1", "services", true}; }
Resource NetworkPolicies() { return {"networking.k8s.io", "v1", "networkpolicies", true}; }
Resource Events() { return {"", "v1", "events", true}; }
Resource Namespaces() { return {"", "v1", "namespaces", false}; }
Resource Leases() { return {"coordination.k8s.io", "v1", "leases", true}; }
Resource CustomResourceDefinitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}
Resource TrainingJobs() { return {"ringleader.dev", "v1alpha1", "trainingjobs", true}; }
Resource CoschedulingPodGroups() { return {"scheduling.x-k8s.io", "v1alpha1", "podgroups", true}; }
Resource VolcanoPodGroups() { return {"scheduling.volcano.sh", "v1beta1", "podgroups", true}; }
Resource KubernetesPodGroups() { return {"scheduling.k8s.io", "v1beta1", "podgroups", true}; }

std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path = resource.group.empty() ? "/api/" + PercentEncode(resource.version)
                                            : "/apis/" + PercentEncode(resource.group) + "/" +
                                                  PercentEncode(resource.version);
  if (resource.namespaced && !ns.empty()) {
    path += "/namespaces/" + PercentEncode(ns);
  }
  path += "/" + PercentEncode(resource.plural);
  if (!name.empty()) {
    path += "/" + PercentEncode(name);
    if (!subresource.empty()) {
      path += "/" + PercentEncode(subresource);
    }
  }
  return path;
}

}  // namespace ringleader::kube
