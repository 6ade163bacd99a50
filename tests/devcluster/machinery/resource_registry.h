// What devcluster serves: the resource types (built-in and from CRDs), and the documents kubectl
// reads to learn them (aggregated discovery and OpenAPI v3).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/devcluster/machinery/object_meta.h"
#include "tests/support/structural_schema.h"

namespace ringleader::cel {
class CompiledSchemaRules;
}  // namespace ringleader::cel

namespace ringleader::devcluster {

// One Table column after Name (which every table has). A column reads `json_path`
// (".status.phase", ".status.conditions[?(@.type==\"Ready\")].status") unless it has `compute`.
struct PrinterColumn {
  std::string name, type, json_path, description;
  int priority = 0;
  std::string format;  // OpenAPI format shown in columnDefinitions, usually ""
  std::function<nlohmann::json(const nlohmann::json& object, Time now)> compute;
};

// A subresource as discovery lists it (/api/v1's APIResourceList and aggregated discovery), in
// kube-apiserver's words: pods/eviction takes a policy/v1 Eviction, pods/log answers for a Pod.
struct SubresourceInfo {
  std::string name;  // "eviction"
  // The kind's group and version when they are not the resource's own ("policy", "v1"); empty
  // otherwise, as the server leaves them (only a storage that names its kind sets them).
  std::string group, version;
  std::string kind;
  std::vector<std::string> verbs;
};

struct ResourceInfo {
  std::string group;  // "" for core
  std::string version, kind, list_kind, plural, singular;
  std::vector<std::string> short_names, categories;
  bool namespaced = true;
  bool has_status = false;
  // Subresources other than status that devcluster serves (pods/eviction, pods/log,
  // serviceaccounts/token), for discovery.
  std::vector<SubresourceInfo> subresources;
  // openAPIV3Schema. Built-ins get a permissive object schema (unknown fields preserved) with
  // the few typed, described fields kubectl explain shows.
  nlohmann::json schema;
  std::vector<PrinterColumn> columns;
  bool is_custom = false;
  // A custom resource version's x-kubernetes-validations, compiled once when the CRD is served;
  // null for built-ins.
  std::shared_ptr<const cel::CompiledSchemaRules> rules;

  std::string GroupVersion() const;   // "v1" or "apps/v1"
  std::string GroupResource() const;  // "pods" or "trainingjobs.ringleader.dev"
  std::string QualifiedKind() const;  // "Pod" or "TrainingJob.ringleader.dev" (for Invalid())
  // Every subresource discovery lists, status included, sorted by name as the server lists them.
  std::vector<SubresourceInfo> DiscoverySubresources() const;
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

  // One ResourceInfo per served version of a CRD (apiextensions.k8s.io/v1 JSON as received),
  // preferred version first. `old_crd` is the stored CRD on update (null on create): the server
  // then also checks immutable fields and relaxes rules the stored CRD already broke. The CRD is
  // defaulted first (DefaultCrd: singular, listKind, conversion, storedVersions). Throws ApiError
  // BadRequest when the server could not decode it, and Invalid (kind
  // CustomResourceDefinition.apiextensions.k8s.io) with every error of ValidateCrd in one 422.
  // Printer columns stop at the first jsonPath client-go cannot parse (the server then prints the
  // columns before it, and accepts the CRD). `new_cel_compiler` makes a CEL compiler per schema
  // that compiles x-kubernetes-validations rules where the server does (see
  // schema::CelCompileRequest); without it rules are not compiled.
  static std::vector<ResourceInfo> FromCrd(const nlohmann::json& crd,
                                           const nlohmann::json* old_crd = nullptr,
                                           const schema::CelCompilerFactory& new_cel_compiler = {});
  // The served versions of a CRD that was already validated and defaulted (a stored one), with
  // each version's CEL rules compiled; no validation.
  static std::vector<ResourceInfo> ServedVersions(const nlohmann::json& crd);

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
