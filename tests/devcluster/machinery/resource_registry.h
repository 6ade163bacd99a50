// What devcluster serves: the resource types (built-in and from CRDs), and the documents kubectl
// reads to learn them (aggregated discovery and OpenAPI v3).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster {

// One Table column after Name (which every table has). A column reads `json_path`
// (".status.phase", ".status.conditions[?(@.type==\"Ready\")].status") unless it has `compute`.
struct PrinterColumn {
  std::string name, type, json_path, description;
  int priority = 0;
  std::string format;  // OpenAPI format shown in columnDefinitions, usually ""
  std::function<nlohmann::json(const nlohmann::json& object, Time now)> compute;
};

struct ResourceInfo {
  std::string group;  // "" for core
  std::string version, kind, list_kind, plural, singular;
  std::vector<std::string> short_names, categories;
  bool namespaced = true;
  bool has_status = false;
  // openAPIV3Schema. Built-ins get a permissive object schema (unknown fields preserved) with
  // the few typed, described fields kubectl explain shows.
  nlohmann::json schema;
  std::vector<PrinterColumn> columns;
  bool is_custom = false;

  std::string GroupVersion() const;   // "v1" or "apps/v1"
  std::string GroupResource() const;  // "pods" or "trainingjobs.ringleader.dev"
  std::string QualifiedKind() const;  // "Pod" or "TrainingJob.ringleader.dev" (for Invalid())
};

class ResourceRegistry {
 public:
  // Namespace, Pod, Service, Secret, ConfigMap, Event, ServiceAccount, Node (v1); Deployment
  // (apps/v1); Lease (coordination.k8s.io/v1); Role, ClusterRole, RoleBinding, ClusterRoleBinding
  // (rbac.authorization.k8s.io/v1); CustomResourceDefinition (apiextensions.k8s.io/v1).
  static ResourceRegistry WithBuiltins();

  // Adds or replaces the (group, version, plural) entry. Pointers handed out stay valid until
  // that entry is replaced or removed.
  void Add(ResourceInfo info);
  // Removes every version of group/plural.
  void Remove(const std::string& group, const std::string& plural);
  const ResourceInfo* Find(const std::string& group, const std::string& version,
                           const std::string& plural) const;
  const ResourceInfo* FindKind(const std::string& group, const std::string& version,
                               const std::string& kind) const;
  std::vector<const ResourceInfo*> All() const;

  // One ResourceInfo per served version of a CRD (apiextensions.k8s.io/v1 JSON). Throws ApiError
  // Invalid (kind CustomResourceDefinition.apiextensions.k8s.io) if the CRD is malformed or a
  // schema is not structural (checked without requiring descriptions).
  static std::vector<ResourceInfo> FromCrd(const nlohmann::json& crd);

  // Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) for GET /api (core) or
  // GET /apis (every other group). Serve it with Content-Type
  // `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`.
  nlohmann::json AggregatedDiscovery(bool core) const;
  // GET /openapi/v3: {"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=..."},...}}.
  nlohmann::json OpenApiIndex() const;
  // GET /openapi/v3/api/v1 or /openapi/v3/apis/<group>/<version>; `group_version` is "v1" or
  // "apps/v1". Throws ApiError NotFound for a group-version nothing is served under.
  nlohmann::json OpenApiDocument(const std::string& group_version) const;

 private:
  std::vector<std::unique_ptr<ResourceInfo>> resources_;
};

}  // namespace ringleader::devcluster
