// RBAC authorization as kube-apiserver does it: a request's attributes (verb,
// API group, resource, subresource, namespace, name, or a non-resource path)
// are allowed when a RoleBinding in the namespace or a ClusterRoleBinding binds
// the user (or one of its groups) to a Role or ClusterRole with a matching
// rule. There is no deny; "system:masters" may do anything, and every
// authenticated user may read the discovery paths (the default system:discovery
// binding).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/devcluster/auth.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {

struct RequestAttributes {
  bool resource_request = false;
  std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection
  std::string api_group;
  std::string resource;     // plural: "pods"
  std::string subresource;  // "status", "token", or ""
  std::string namespace_;
  std::string name;
  std::string path;  // the request path, e.g. "/apis" (what non-resource rules match)
};

// The attributes of a request, from its method, decoded path segments and
// query, as Kubernetes' RequestInfoFactory derives them (GET of a collection is
// list, ?watch=true is watch, ...).
RequestAttributes AttributesOf(const std::string& method, const std::vector<std::string>& segments,
                               const std::map<std::string, std::string>& query);

// The RBAC objects a decision reads. `list(kind, ns)` returns every object of a
// kind ("Role", "RoleBinding" in ns; "ClusterRole", "ClusterRoleBinding" with
// ns ""); `get` one by name.
struct RbacObjects {
  std::function<std::vector<nlohmann::json>(const std::string& kind, const std::string& ns)> list;
  std::function<std::optional<nlohmann::json>(const std::string& kind, const std::string& ns, const std::string& name)>
      get;
};

struct Decision {
  bool allowed = false;
  // What allowed it ("RoleBinding team-a/x of Role y"), or why not.
  std::string reason;
};

Decision Authorize(const UserInfo& user, const RequestAttributes& request, const RbacObjects& objects);

// Whether one PolicyRule (JSON, rbac.authorization.k8s.io/v1) covers the
// request.
bool RuleAllows(const nlohmann::json& rule, const RequestAttributes& request);

// 403 as kube-apiserver words it: `pods is forbidden: User
// "system:serviceaccount:a:b" cannot list resource "pods" in API group "" in
// the namespace "a"`.
ApiError ForbiddenError(const UserInfo& user, const RequestAttributes& request);

}  // namespace ringleader::devcluster
