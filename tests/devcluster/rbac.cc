// Request attributes and the RBAC rule walk: bindings that name the user, their
// roles, rules.
#include "tests/devcluster/rbac.h"

#include <algorithm>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

bool Contains(const json& list, const std::string& value) {
  if (!list.is_array()) {
    return false;
  }
  return std::any_of(list.begin(), list.end(),
                     [&](const json& item) { return item.is_string() && (item.get<std::string>() == value); });
}

bool ContainsOrAll(const json& list, const std::string& value) { return Contains(list, "*") || Contains(list, value); }

bool ResourceMatches(const json& resources, const RequestAttributes& request) {
  if (!resources.is_array()) {
    return false;
  }
  const std::string combined =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  for (const json& item : resources) {
    if (!item.is_string()) {
      continue;
    }
    const std::string rule = item.get<std::string>();
    if (rule == "*" || rule == combined) {
      return true;
    }
    // "*/status" is every resource's status subresource.
    if (!request.subresource.empty() && rule == "*/" + request.subresource) {
      return true;
    }
  }
  return false;
}

bool NonResourceMatches(const json& urls, const std::string& path) {
  if (!urls.is_array()) {
    return false;
  }
  return std::any_of(urls.begin(), urls.end(), [&](const json& item) {
    if (!item.is_string()) {
      return false;
    }
    const std::string rule = item.get<std::string>();
    if (rule == "*" || rule == path) {
      return true;
    }
    return rule.ends_with("*") && path.starts_with(rule.substr(0, rule.size() - 1));
  });
}

// Whether a binding's subjects include the user.
bool BindsUser(const json& binding, const UserInfo& user) {
  const json subjects = binding.value("subjects", json::array());
  const std::string binding_ns = binding.value("/metadata/namespace"_json_pointer, std::string());
  for (const json& subject : subjects) {
    const std::string kind = subject.value("kind", "");
    const std::string name = subject.value("name", "");
    if (kind == "ServiceAccount") {
      const std::string ns = subject.value("namespace", binding_ns);
      if (!user.service_account_name.empty() && name == user.service_account_name &&
          ns == user.service_account_namespace) {
        return true;
      }
    } else if (kind == "User" && name == user.name) {
      return true;
    } else if (kind == "Group" && std::find(user.groups.begin(), user.groups.end(), name) != user.groups.end()) {
      return true;
    }
  }
  return false;
}

// The discovery paths every authenticated user may read (system:discovery and
// system:public-info-viewer in a real cluster).
bool IsPublicPath(const std::string& path) {
  for (const char* exact : {"/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2"}) {
    if (path == exact) {
      return true;
    }
  }
  return path.starts_with("/api/") || path.starts_with("/apis/") || path.starts_with("/openapi/");
}

}  // namespace

RequestAttributes AttributesOf(const std::string& method, const std::vector<std::string>& segments,
                               const std::map<std::string, std::string>& query) {
  RequestAttributes out;
  for (const std::string& segment : segments) {
    out.path += "/" + segment;
  }
  if (out.path.empty()) {
    out.path = "/";
  }
  std::string verb = method;
  std::transform(verb.begin(), verb.end(), verb.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  out.verb = verb == "post" ? "create" : verb == "put" ? "update" : verb == "head" ? "get" : verb;

  std::size_t first = 0;
  if (segments.size() >= 3 && segments[0] == "api") {
    first = 2;
  } else if (segments.size() >= 4 && segments[0] == "apis") {
    out.api_group = segments[1];
    first = 3;
  } else {
    out.api_group.clear();
    return out;  // a non-resource path: discovery, /version, /devcluster/faults,
                 // ...
  }
  out.resource_request = true;
  std::vector<std::string> parts(segments.begin() + static_cast<std::ptrdiff_t>(first), segments.end());
  if (parts[0] == "namespaces" && parts.size() >= 2) {
    out.namespace_ = parts[1];
    if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize") {
      parts.erase(parts.begin(), parts.begin() + 2);
    }
  }
  out.resource = parts[0];
  if (parts.size() >= 2) {
    out.name = parts[1];
  }
  if (parts.size() >= 3) {
    out.subresource = parts[2];
  }
  const auto watch = query.find("watch");
  const bool watching = watch != query.end() && (watch->second == "true" || watch->second == "1");
  if (out.verb == "get" && out.name.empty()) {
    out.verb = watching ? "watch" : "list";
  } else if (out.verb == "get" && watching) {
    out.verb = "watch";
  } else if (out.verb == "delete" && out.name.empty()) {
    out.verb = "deletecollection";
  }
  return out;
}

bool RuleAllows(const json& rule, const RequestAttributes& request) {
  if (!ContainsOrAll(rule.value("verbs", json::array()), request.verb)) {
    return false;
  }
  if (!request.resource_request) {
    return NonResourceMatches(rule.value("nonResourceURLs", json::array()), request.path);
  }
  if (!ContainsOrAll(rule.value("apiGroups", json::array()), request.api_group) ||
      !ResourceMatches(rule.value("resources", json::array()), request)) {
    return false;
  }
  const json names = rule.value("resourceNames", json::array());
  // A rule narrowed to names never covers a request without one (create, list,
  // watch).
  return names.empty() || (!request.name.empty() && Contains(names, request.name));
}

Decision Authorize(const UserInfo& user, const RequestAttributes& request, const RbacObjects& objects) {
  if (std::find(user.groups.begin(), user.groups.end(), "system:masters") != user.groups.end()) {
    return {true, "member of system:masters"};
  }
  if (!request.resource_request && request.verb == "get" && IsPublicPath(request.path)) {
    return {true, "discovery is open to every authenticated user"};
  }
  auto role_allows = [&](const std::optional<json>& role) {
    if (!role) {
      return false;
    }
    const json rules = role->value("rules", json::array());
    return std::any_of(rules.begin(), rules.end(), [&](const json& rule) { return RuleAllows(rule, request); });
  };
  for (const json& binding : objects.list("ClusterRoleBinding", "")) {
    const std::string role = binding.value("/roleRef/name"_json_pointer, std::string());
    if (binding.value("/roleRef/kind"_json_pointer, std::string()) == "ClusterRole" && BindsUser(binding, user) &&
        role_allows(objects.get("ClusterRole", "", role))) {
      return {true, "ClusterRoleBinding " + binding.value("/metadata/name"_json_pointer, std::string()) +
                        " of ClusterRole " + role};
    }
  }
  if (!request.namespace_.empty()) {
    for (const json& binding : objects.list("RoleBinding", request.namespace_)) {
      const std::string kind = binding.value("/roleRef/kind"_json_pointer, std::string());
      const std::string role = binding.value("/roleRef/name"_json_pointer, std::string());
      if (!BindsUser(binding, user)) {
        continue;
      }
      const std::optional<json> found = kind == "Role"          ? objects.get("Role", request.namespace_, role)
                                        : kind == "ClusterRole" ? objects.get("ClusterRole", "", role)
                                                                : std::nullopt;
      if (role_allows(found)) {
        return {true, "RoleBinding " + request.namespace_ + "/" +
                          binding.value("/metadata/name"_json_pointer, std::string()) + " of " + kind + " " + role};
      }
    }
  }
  return {false, "no RBAC rule allows it"};
}

ApiError ForbiddenError(const UserInfo& user, const RequestAttributes& request) {
  if (!request.resource_request) {
    return ApiError(403, "Forbidden",
                    "forbidden: User \"" + user.name + "\" cannot " + request.verb + " path \"" + request.path + "\"");
  }
  const std::string resource =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  std::string why = "User \"" + user.name + "\" cannot " + request.verb + " resource \"" + resource +
                    "\" in API group \"" + request.api_group + "\"";
  why += request.namespace_.empty() ? " at the cluster scope" : " in the namespace \"" + request.namespace_ + "\"";
  const std::string group_resource = request.api_group.empty() ? resource : request.resource + "." + request.api_group;
  return Forbidden(group_resource, request.name, why);
}

}  // namespace ringleader::devcluster
