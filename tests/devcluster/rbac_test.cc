// RBAC: request attributes from paths, rule matching, and the binding walk over
// fixed objects.
#include "tests/devcluster/rbac.h"

#include <gtest/gtest.h>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

RequestAttributes Attributes(const std::string& method, const std::vector<std::string>& segments,
                             const std::map<std::string, std::string>& query = {}) {
  return AttributesOf(method, segments, query);
}

TEST(RbacAttributesTest, VerbsFollowMethodNameAndWatch) {
  EXPECT_EQ(Attributes("GET", {"api", "v1", "namespaces", "a", "pods"}).verb, "list");
  EXPECT_EQ(Attributes("GET", {"api", "v1", "namespaces", "a", "pods"}, {{"watch", "true"}}).verb, "watch");
  EXPECT_EQ(Attributes("GET", {"api", "v1", "namespaces", "a", "pods"}, {{"watch", "1"}}).verb, "watch");
  EXPECT_EQ(Attributes("GET", {"api", "v1", "namespaces", "a", "pods", "p"}).verb, "get");
  EXPECT_EQ(Attributes("POST", {"api", "v1", "namespaces", "a", "pods"}).verb, "create");
  EXPECT_EQ(Attributes("PUT", {"api", "v1", "namespaces", "a", "pods", "p"}).verb, "update");
  EXPECT_EQ(Attributes("PATCH", {"api", "v1", "namespaces", "a", "pods", "p"}).verb, "patch");
  EXPECT_EQ(Attributes("DELETE", {"api", "v1", "namespaces", "a", "pods", "p"}).verb, "delete");
  EXPECT_EQ(Attributes("DELETE", {"api", "v1", "namespaces", "a", "pods"}).verb, "deletecollection");
}

TEST(RbacAttributesTest, GroupResourceSubresourceNamespaceAndName) {
  const RequestAttributes status =
      Attributes("PUT", {"apis", "ringleader.dev", "v1alpha1", "namespaces", "team", "trainingjobs", "j", "status"});
  EXPECT_TRUE(status.resource_request);
  EXPECT_EQ(status.api_group, "ringleader.dev");
  EXPECT_EQ(status.resource, "trainingjobs");
  EXPECT_EQ(status.subresource, "status");
  EXPECT_EQ(status.namespace_, "team");
  EXPECT_EQ(status.name, "j");

  const RequestAttributes cluster = Attributes("GET", {"apis", "rbac.authorization.k8s.io", "v1", "clusterroles"});
  EXPECT_EQ(cluster.namespace_, "");
  EXPECT_EQ(cluster.resource, "clusterroles");

  // A Namespace object is both the resource's name and its namespace, as in
  // Kubernetes.
  const RequestAttributes ns = Attributes("GET", {"api", "v1", "namespaces", "team"});
  EXPECT_EQ(ns.resource, "namespaces");
  EXPECT_EQ(ns.name, "team");
  EXPECT_EQ(ns.namespace_, "team");
}

TEST(RbacAttributesTest, DiscoveryAndOtherPathsAreNonResourceRequests) {
  for (const std::vector<std::string>& segments : std::vector<std::vector<std::string>>{
           {"api"}, {"api", "v1"}, {"apis"}, {"apis", "apps", "v1"}, {"version"}, {}}) {
    const RequestAttributes request = Attributes("GET", segments);
    EXPECT_FALSE(request.resource_request) << request.path;
    EXPECT_EQ(request.verb, "get");
  }
  EXPECT_EQ(Attributes("GET", {"apis", "apps", "v1"}).path, "/apis/apps/v1");
  EXPECT_EQ(Attributes("GET", {}).path, "/");
}

TEST(RbacRuleTest, GroupsResourcesVerbsAndWildcards) {
  const RequestAttributes list_pods = Attributes("GET", {"api", "v1", "namespaces", "a", "pods"});
  EXPECT_TRUE(RuleAllows(json::parse(R"({"apiGroups":[""],"resources":["pods"],"verbs":["list"]})"), list_pods));
  EXPECT_FALSE(RuleAllows(json::parse(R"({"apiGroups":["apps"],"resources":["pods"],"verbs":["list"]})"), list_pods));
  EXPECT_FALSE(RuleAllows(json::parse(R"({"apiGroups":[""],"resources":["services"],"verbs":["list"]})"), list_pods));
  EXPECT_FALSE(RuleAllows(json::parse(R"({"apiGroups":[""],"resources":["pods"],"verbs":["get"]})"), list_pods));
  EXPECT_TRUE(RuleAllows(json::parse(R"({"apiGroups":["*"],"resources":["*"],"verbs":["*"]})"), list_pods));
}

TEST(RbacRuleTest, ASubresourceIsItsOwnResource) {
  const RequestAttributes status =
      Attributes("PUT", {"apis", "ringleader.dev", "v1alpha1", "namespaces", "a", "trainingjobs", "j", "status"});
  const json main = json::parse(R"({"apiGroups":["ringleader.dev"],"resources":["trainingjobs"],"verbs":["update"]})");
  EXPECT_FALSE(RuleAllows(main, status));
  EXPECT_TRUE(RuleAllows(
      json::parse(R"({"apiGroups":["ringleader.dev"],"resources":["trainingjobs/status"],"verbs":["update"]})"),
      status));
  EXPECT_TRUE(RuleAllows(json::parse(R"({"apiGroups":["ringleader.dev"],"resources":["*/status"],"verbs":["update"]})"),
                         status));
}

TEST(RbacRuleTest, ResourceNamesNarrowNamedRequestsAndNeverCoverCreate) {
  const json rule = json::parse(
      R"({"apiGroups":["coordination.k8s.io"],"resources":["leases"],"resourceNames":["leader"],"verbs":["get","create"]})");
  EXPECT_TRUE(RuleAllows(
      rule, Attributes("GET", {"apis", "coordination.k8s.io", "v1", "namespaces", "a", "leases", "leader"})));
  EXPECT_FALSE(
      RuleAllows(rule, Attributes("GET", {"apis", "coordination.k8s.io", "v1", "namespaces", "a", "leases", "other"})));
  EXPECT_FALSE(
      RuleAllows(rule, Attributes("POST", {"apis", "coordination.k8s.io", "v1", "namespaces", "a", "leases"})));
}

TEST(RbacRuleTest, NonResourceUrlsMatchExactlyOrByStarredPrefix) {
  const json rule = json::parse(R"({"nonResourceURLs":["/metrics","/logs/*"],"verbs":["get"]})");
  EXPECT_TRUE(RuleAllows(rule, Attributes("GET", {"metrics"})));
  EXPECT_TRUE(RuleAllows(rule, Attributes("GET", {"logs", "kubelet.log"})));
  EXPECT_FALSE(RuleAllows(rule, Attributes("GET", {"metricsx"})));
  // A resource rule never covers a path, nor a path rule a resource.
  EXPECT_FALSE(RuleAllows(json::parse(R"({"apiGroups":["*"],"resources":["*"],"verbs":["*"]})"),
                          Attributes("GET", {"metrics"})));
  EXPECT_FALSE(RuleAllows(rule, Attributes("GET", {"api", "v1", "namespaces", "a", "pods"})));
}

// Fixed RBAC objects: kind -> namespace -> objects.
struct Objects {
  std::map<std::string, std::map<std::string, std::vector<json>>> by_kind;

  RbacObjects View() const {
    return {[this](const std::string& kind, const std::string& ns) {
              const auto kind_it = by_kind.find(kind);
              if (kind_it == by_kind.end() || !kind_it->second.contains(ns)) {
                return std::vector<json>{};
              }
              return kind_it->second.at(ns);
            },
            [this](const std::string& kind, const std::string& ns, const std::string& name) -> std::optional<json> {
              const auto kind_it = by_kind.find(kind);
              if (kind_it == by_kind.end() || !kind_it->second.contains(ns)) {
                return std::nullopt;
              }
              for (const json& object : kind_it->second.at(ns)) {
                if (object["metadata"]["name"] == name) {
                  return object;
                }
              }
              return std::nullopt;
            }};
  }
};

UserInfo ServiceAccount(const std::string& ns, const std::string& name) {
  return {"system:serviceaccount:" + ns + ":" + name,
          {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
          ns,
          name};
}

json Binding(const std::string& kind, const std::string& ns, const std::string& name, const std::string& role_kind,
             const std::string& role, const json& subjects) {
  json binding = {{"kind", kind},
                  {"metadata", {{"name", name}}},
                  {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", role}}},
                  {"subjects", subjects}};
  if (!ns.empty()) {
    binding["metadata"]["namespace"] = ns;
  }
  return binding;
}

json Role(const std::string& name, const json& rules) { return {{"metadata", {{"name", name}}}, {"rules", rules}}; }

const json kListPods = json::parse(R"([{"apiGroups":[""],"resources":["pods"],"verbs":["list"]}])");

TEST(RbacAuthorizeTest, ARoleBindingGrantsItsRoleInItsNamespaceOnly) {
  Objects objects;
  objects.by_kind["Role"]["team"] = {Role("pod-lister", kListPods)};
  objects.by_kind["RoleBinding"]["team"] = {
      Binding("RoleBinding", "team", "op-lists", "Role", "pod-lister",
              json::parse(R"([{"kind":"ServiceAccount","name":"op","namespace":"system"}])"))};
  const UserInfo op = ServiceAccount("system", "op");
  const Decision allowed =
      Authorize(op, Attributes("GET", {"api", "v1", "namespaces", "team", "pods"}), objects.View());
  EXPECT_TRUE(allowed.allowed);
  EXPECT_EQ(allowed.reason, "RoleBinding team/op-lists of Role pod-lister");
  EXPECT_FALSE(Authorize(op, Attributes("GET", {"api", "v1", "namespaces", "other", "pods"}), objects.View()).allowed);
  EXPECT_FALSE(Authorize(op, Attributes("GET", {"api", "v1", "pods"}), objects.View()).allowed);
  // Another ServiceAccount of the same name elsewhere is another subject.
  EXPECT_FALSE(Authorize(ServiceAccount("elsewhere", "op"),
                         Attributes("GET", {"api", "v1", "namespaces", "team", "pods"}), objects.View())
                   .allowed);
}

TEST(RbacAuthorizeTest, AClusterRoleBindingGrantsEverywhereAndGroupsAreSubjects) {
  Objects objects;
  objects.by_kind["ClusterRole"][""] = {Role("pod-lister", kListPods)};
  objects.by_kind["ClusterRoleBinding"][""] = {
      Binding("ClusterRoleBinding", "", "all-sas-list", "ClusterRole", "pod-lister",
              json::parse(R"([{"kind":"Group","name":"system:serviceaccounts"}])"))};
  const UserInfo op = ServiceAccount("system", "op");
  EXPECT_TRUE(Authorize(op, Attributes("GET", {"api", "v1", "namespaces", "x", "pods"}), objects.View()).allowed);
  EXPECT_TRUE(Authorize(op, Attributes("GET", {"api", "v1", "pods"}), objects.View()).allowed);
  EXPECT_FALSE(Authorize(op, Attributes("POST", {"api", "v1", "namespaces", "x", "pods"}), objects.View()).allowed);
  EXPECT_FALSE(
      Authorize(UserInfo{"alice", {"system:authenticated"}}, Attributes("GET", {"api", "v1", "pods"}), objects.View())
          .allowed);
}

TEST(RbacAuthorizeTest, ARoleBindingMayBindAClusterRoleIntoItsNamespace) {
  Objects objects;
  objects.by_kind["ClusterRole"][""] = {Role("pod-lister", kListPods)};
  objects.by_kind["RoleBinding"]["team"] = {Binding("RoleBinding", "team", "b", "ClusterRole", "pod-lister",
                                                    json::parse(R"([{"kind":"User","name":"alice"}])"))};
  const UserInfo alice{"alice", {"system:authenticated"}};
  EXPECT_TRUE(Authorize(alice, Attributes("GET", {"api", "v1", "namespaces", "team", "pods"}), objects.View()).allowed);
  EXPECT_FALSE(Authorize(alice, Attributes("GET", {"api", "v1", "pods"}), objects.View()).allowed);
}

TEST(RbacAuthorizeTest, ABindingToAMissingRoleGrantsNothing) {
  Objects objects;
  objects.by_kind["ClusterRoleBinding"][""] = {Binding("ClusterRoleBinding", "", "b", "ClusterRole", "gone",
                                                       json::parse(R"([{"kind":"User","name":"alice"}])"))};
  EXPECT_FALSE(Authorize(UserInfo{"alice", {}}, Attributes("GET", {"api", "v1", "pods"}), objects.View()).allowed);
}

TEST(RbacAuthorizeTest, MastersMayDoAnythingAndEveryoneMayDiscover) {
  const Objects none;
  EXPECT_TRUE(
      Authorize(UserInfo{"admin", {"system:masters"}}, Attributes("DELETE", {"api", "v1", "nodes", "n"}), none.View())
          .allowed);
  const UserInfo op = ServiceAccount("system", "op");
  EXPECT_TRUE(Authorize(op, Attributes("GET", {"apis"}), none.View()).allowed);
  EXPECT_TRUE(Authorize(op, Attributes("GET", {"api", "v1"}), none.View()).allowed);
  EXPECT_TRUE(Authorize(op, Attributes("GET", {"version"}), none.View()).allowed);
  EXPECT_FALSE(Authorize(op, Attributes("GET", {"devcluster", "faults"}), none.View()).allowed);
  EXPECT_FALSE(Authorize(op, Attributes("POST", {"apis"}), none.View()).allowed);
}

TEST(RbacForbiddenTest, MessagesReadAsKubeApiserversDo) {
  const UserInfo op = ServiceAccount("system", "op");
  const ApiError namespaced = ForbiddenError(op, Attributes("GET", {"api", "v1", "namespaces", "team", "secrets"}));
  EXPECT_EQ(namespaced.code, 403);
  EXPECT_EQ(namespaced.reason, "Forbidden");
  EXPECT_EQ(namespaced.message,
            "secrets is forbidden: User \"system:serviceaccount:system:op\" "
            "cannot list resource \"secrets\" in API "
            "group \"\" in the namespace \"team\"");
  const ApiError status = ForbiddenError(
      op, Attributes("PUT", {"apis", "ringleader.dev", "v1alpha1", "namespaces", "t", "trainingjobs", "j", "status"}));
  EXPECT_EQ(status.message,
            "trainingjobs.ringleader.dev \"j\" is forbidden: User "
            "\"system:serviceaccount:system:op\" cannot update "
            "resource \"trainingjobs/status\" in API group \"ringleader.dev\" "
            "in the namespace \"t\"");
  EXPECT_EQ(ForbiddenError(op, Attributes("GET", {"api", "v1", "nodes"})).message,
            "nodes is forbidden: User \"system:serviceaccount:system:op\" cannot "
            "list resource \"nodes\" in API group "
            "\"\" at the cluster scope");
  EXPECT_EQ(ForbiddenError(op, Attributes("GET", {"devcluster", "faults"})).message,
            "forbidden: User \"system:serviceaccount:system:op\" cannot get path "
            "\"/devcluster/faults\"");
}

}  // namespace
}  // namespace ringleader::devcluster
