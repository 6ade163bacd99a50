// The Helm chart on a cluster: the manifests `helm template` renders are applied with kubectl to
// devcluster, the operator runs with the rendered Deployment's arguments under the chart's
// ServiceAccount (a token from `kubectl create token`, kube-apiserver's RBAC authorizer deciding),
// jobs drive every path on which the operator calls the API, and the API server's audit log then
// shows that every call was allowed and that every permission the chart grants was used: nothing
// broader is granted.
// The chart's job default (jobDefaults.hostNetwork) is seen on the running jobs' Pods. With
// gangScheduling.kubernetes.enabled the suspended job is a Kubernetes gang: its PodGroup is made
// (under OwnerReferencesPermissionEnforcement, with blockOwnerDeletion) and, on resume, found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/kubelet/container_spec.h"
#include "tests/e2e/audit_log.h"
#include "tests/e2e/end_to_end.h"
#include "tests/e2e/job_status.h"
#include "tests/support/wait_until.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kNamespace[] = "ringleader-system";
constexpr char kRelease[] = "rl";
// How often the test polls for the Pods, the TTL deletion and the Events it waits on.
constexpr std::chrono::milliseconds kPoll(250);

void WriteFile(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<AuditedRequest> AuditedRequestsOf(const std::filesystem::path& log, const std::string& user) {
  std::vector<AuditedRequest> out;
  for (AuditedRequest& request : ReadAuditLog(log)) {
    if (request.user == user) {
      out.push_back(std::move(request));
    }
  }
  return out;
}

bool ListCovers(const json& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(), [&](const json& item) { return item == "*" || item == value; });
}

// Whether one PolicyRule (rbac.authorization.k8s.io/v1) covers the request, as the RBAC
// authorizer matches it: its apiGroups, resources (resource/subresource), verbs and, when it
// names any, resourceNames; "*" matches anything. A create carries no name to RBAC (the name is in
// the body), so a rule with resourceNames never covers one. Non-resource requests match
// nonResourceURLs (a trailing "*" is a prefix).
bool RuleCovers(const json& rule, const AuditedRequest& request) {
  if (!ListCovers(rule.value("verbs", json::array()), request.verb)) {
    return false;
  }
  if (!request.resource_request()) {
    const json urls = rule.value("nonResourceURLs", json::array());
    return std::any_of(urls.begin(), urls.end(), [&](const json& url) {
      const std::string pattern = url.get<std::string>();
      return pattern == request.path ||
             (pattern.ends_with("*") && request.path.starts_with(pattern.substr(0, pattern.size() - 1)));
    });
  }
  const std::string resource =
      request.resource + (request.subresource.empty() ? "" : "/" + request.subresource);
  if (!ListCovers(rule.value("apiGroups", json::array()), request.api_group) ||
      !ListCovers(rule.value("resources", json::array()), resource)) {
    return false;
  }
  const json names = rule.value("resourceNames", json::array());
  if (names.empty()) {
    return true;
  }
  return request.verb != "create" &&
         std::any_of(names.begin(), names.end(), [&](const json& name) { return name == request.name; });
}

// Each rule split into single grants: one API group, resource and verb (resourceNames kept).
std::vector<json> SingleGrants(const json& rules) {
  std::vector<json> out;
  for (const json& rule : rules) {
    for (const json& group : rule.value("apiGroups", json::array())) {
      for (const json& resource : rule.value("resources", json::array())) {
        for (const json& verb : rule.value("verbs", json::array())) {
          json single = {{"apiGroups", {group}}, {"resources", {resource}}, {"verbs", {verb}}};
          if (rule.contains("resourceNames")) {
            single["resourceNames"] = rule["resourceNames"];
          }
          out.push_back(std::move(single));
        }
      }
    }
    if (rule.contains("nonResourceURLs")) {
      out.push_back(rule);
    }
  }
  return out;
}

// The two shapes of the chart's RBAC: a ClusterRole (every namespace), or one Role per watched
// namespace.
struct RbacShape {
  std::string name;
  std::string values;         // extra --set values ("" for the defaults)
  bool cluster_wide = false;  // the job rules are a ClusterRole (else Roles, nothing cluster-wide)
  bool host_network = false;  // jobDefaults.hostNetwork, which the jobs here leave to the default
  // The suspended job's spec.runPolicy.schedulingPolicy.provider ("" for none); Kubernetes needs
  // gangScheduling.kubernetes.enabled in `values`.
  std::string provider = "";
};

void PrintTo(const RbacShape& shape, std::ostream* out) { *out << shape.name; }

class ChartInstallTest : public ::testing::TestWithParam<RbacShape> {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    helm_ = FindProgram("helm");
    if (helm_.empty()) {
      GTEST_SKIP() << "no helm in .deps/bin or on PATH (scripts/install-kube-tools installs one)";
    }
    bed_ = std::make_unique<EndToEnd>(std::function<void(devcluster::Options&)>{}, EndToEnd::Operator::kLater);
  }
  void TearDown() override {
    if (HasFailure() && bed_) {
      std::cerr << bed_->Diagnostics();
    }
    bed_.reset();
  }

  // kubectl must succeed; its output otherwise fails the test.
  std::string MustKubectl(const std::vector<std::string>& args) {
    const CommandOutput out = bed_->Kubectl(args);
    if (out.exit_code != 0) {
      ADD_FAILURE() << "kubectl " << ::testing::PrintToString(args) << " failed:\n" << out.output;
    }
    return out.output;
  }

  std::filesystem::path helm_;
  std::unique_ptr<EndToEnd> bed_;
};

TEST_P(ChartInstallTest, TheRenderedChartRunsJobsAndItsOperatorUsesExactlyThePermissionsGranted) {
  // 1. Render with monitoring on (every template), the operator's own ports free on this machine.
  const std::vector<int> ports = FreePorts(2);
  const int metrics_port = ports[0];
  const int health_port = ports[1];
  std::vector<std::string> helm_args = {"template",
                                        kRelease,
                                        "charts/ringleader",
                                        "--namespace",
                                        kNamespace,
                                        "--set",
                                        "monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true,"
                                        "monitoring.prometheusRule.enabled=true,operator.metricsPort=" +
                                            std::to_string(metrics_port) +
                                            ",operator.healthPort=" + std::to_string(health_port)};
  if (!GetParam().values.empty()) {
    helm_args.insert(helm_args.end(), {"--set", GetParam().values});
  }
  const CommandOutput rendered = bed_->Run(helm_, helm_args);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  const std::filesystem::path manifests = bed_->dir() / "rendered.yaml";
  WriteFile(manifests, rendered.output);

  // 2. The manifests are accepted as a cluster would (the release namespace first, as
  // `helm install --create-namespace` does; the Prometheus Operator's CRDs stand in for that
  // operator), and every rendered object is then there.
  WriteFile(bed_->dir() / "namespace.yaml",
            std::string("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ") + kNamespace + "\n");
  MustKubectl({"apply", "-f", (bed_->dir() / "namespace.yaml").string()});
  MustKubectl({"apply", "-f", "tests/e2e/testdata/prometheus-operator-crds.yaml"});
  const CommandOutput applied = bed_->Kubectl({"apply", "-f", manifests.string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  std::size_t documents = 0;
  std::istringstream lines(rendered.output);
  for (std::string line; std::getline(lines, line);) {
    documents += line.starts_with("kind: ") ? 1 : 0;
  }
  const std::string names = MustKubectl({"get", "-f", manifests.string(), "-o", "name"});
  EXPECT_EQ(static_cast<std::size_t>(std::count(names.begin(), names.end(), '\n')), documents) << names;
  for (const char* kind :
       {"serviceaccount/", "configmap/", "role.rbac.authorization.k8s.io/", "rolebinding.rbac.authorization.k8s.io/",
        "service/", "deployment.apps/", "podmonitor.monitoring.coreos.com/", "prometheusrule.monitoring.coreos.com/",
        "servicemonitor.monitoring.coreos.com/"}) {
    EXPECT_THAT(names, ::testing::HasSubstr(kind));
  }
  for (const char* kind : {"clusterrole.rbac.authorization.k8s.io/", "clusterrolebinding.rbac.authorization.k8s.io/"}) {
    if (GetParam().cluster_wide) {
      EXPECT_THAT(names, ::testing::HasSubstr(kind));
    } else {
      EXPECT_THAT(names, ::testing::Not(::testing::HasSubstr(kind))) << "granted cluster-wide";
    }
  }

  // 3. The operator as the Deployment would run it: the stored Deployment's args with $(POD_NAME)
  // expanded, as its ServiceAccount.
  const json deployment = json::parse(
      MustKubectl({"get", "deployment", std::string(kRelease) + "-ringleader", "-n", kNamespace, "-o", "json"}));
  const json& pod_spec = deployment["spec"]["template"]["spec"];
  const std::string service_account = pod_spec["serviceAccountName"];
  const json& container = pod_spec["containers"][0];
  std::vector<std::string> args;
  for (const json& arg : container["args"]) {
    args.push_back(devcluster::kubelet::ExpandVariables(arg.get<std::string>(), {{"POD_NAME", "rl-ringleader-0"}}));
  }
  ASSERT_FALSE(args.empty());
  ASSERT_EQ(args[0], "run");
  std::string token = MustKubectl({"create", "token", service_account, "-n", kNamespace});
  token.erase(token.find_last_not_of("\n") + 1);
  // A signed JWT: header, claims and signature.
  ASSERT_EQ(std::count(token.begin(), token.end(), '.'), 2) << token;
  const std::filesystem::path kubeconfig = bed_->dir() / "operator.kubeconfig";
  WriteFile(kubeconfig, devcluster::KubeconfigYaml(bed_->cluster().url(), bed_->cluster().ca_pem(), token));
  args.push_back("--kubeconfig=" + kubeconfig.string());
  bed_->StartOperator(args);

  // 4. Jobs that drive every API call the operator makes: one runs to success and is deleted by
  // its TTL; one is suspended while running (its Pods, Service and NetworkPolicy deleted); four
  // find a name their child needs already taken by someone else's Secret, Service, Pod or
  // NetworkPolicy (read back, then refused).
  JobSpec ttl{.name = "chart-ttl", .replicas = 2, .steps = 10, .ttl_seconds_after_finished = 0};
  JobSpec suspended{.name = "chart-suspend", .replicas = 2, .steps = 100000, .step_delay_ms = 50};
  ASSERT_EQ(bed_->Apply(ttl.name, JobYaml(ttl)).exit_code, 0);
  std::string suspended_yaml = JobYaml(suspended);
  if (!GetParam().provider.empty()) {
    const std::string run_policy = "  runPolicy:\n";
    suspended_yaml.replace(suspended_yaml.find(run_policy), run_policy.size(),
                           run_policy + "    schedulingPolicy: {provider: " + GetParam().provider + "}\n");
  }
  ASSERT_EQ(bed_->Apply(suspended.name, suspended_yaml).exit_code, 0);
  const std::string taken =
      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: chart-secret-ringleader-token\n  namespace: default\n"
      "stringData:\n  owner: someone-else\n---\n"
      "apiVersion: v1\nkind: Service\nmetadata:\n  name: chart-service\n  namespace: default\nspec:\n"
      "  clusterIP: None\n  ports:\n    - port: 80\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: chart-pod-0\n  namespace: default\nspec:\n"
      "  nodeName: a-node-elsewhere\n  containers:\n    - name: other\n      image: someone/else\n---\n"
      "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: chart-netpol-ringleader\n"
      "  namespace: default\nspec:\n  podSelector: {matchLabels: {app: someone-else}}\n  policyTypes: [Ingress]\n";
  ASSERT_EQ(bed_->Apply("taken-names", taken).exit_code, 0);
  for (const char* name : {"chart-secret", "chart-service", "chart-pod", "chart-netpol"}) {
    const JobSpec conflicted{.name = name, .replicas = 1};
    ASSERT_EQ(bed_->Apply(name, JobYaml(conflicted)).exit_code, 0);
  }

  ASSERT_FALSE(bed_->WaitForJob(suspended.name, JobRunning, seconds(120)).is_null());
  // The chart's job default reached the operator: the running job's Pods follow it.
  const json pod = bed_->Get("pod", suspended.name + "-0");
  ASSERT_TRUE(pod.is_object());
  EXPECT_EQ(pod["spec"].value("hostNetwork", false), GetParam().host_network);
  // The children block their owner's foreground deletion, which admission checks (step 5).
  EXPECT_TRUE(pod["metadata"]["ownerReferences"][0].value("blockOwnerDeletion", false)) << pod.dump(2);
  MustKubectl(
      {"patch", "trainingjob", suspended.name, "--type", "merge", "-p", R"({"spec":{"runPolicy":{"suspend":true}}})"});
  EXPECT_FALSE(
      bed_->WaitForJob(
              suspended.name, [](const json& job) { return JobConditionIs(job, "Suspended", "True"); }, seconds(60))
          .is_null());
  EXPECT_TRUE(WaitUntil([&] { return bed_->Get("pod", suspended.name + "-0").is_null(); }, seconds(60), kPoll))
      << "the suspended job's Pods were not deleted";
  if (GetParam().provider == "Kubernetes") {
    // Resumed, the same attempt's Pods come back into the PodGroup the operator finds is its own.
    MustKubectl({"patch", "trainingjob", suspended.name, "--type", "merge", "-p",
                 R"({"spec":{"runPolicy":{"suspend":false}}})"});
    EXPECT_TRUE(WaitUntil([&] { return bed_->Get("pod", suspended.name + "-0").is_object(); }, seconds(60), kPoll))
        << "the resumed job's Pods were not made again";
    const json groups = json::parse(MustKubectl({"get", "podgroups.scheduling.k8s.io", "-o", "json"}));
    ASSERT_EQ(groups["items"].size(), 1u) << groups.dump(2);
    EXPECT_TRUE(groups["items"][0]["metadata"]["ownerReferences"][0].value("blockOwnerDeletion", false));
    EXPECT_EQ(bed_->Get("pod", suspended.name + "-0")["spec"]["schedulingGroup"]["podGroupName"],
              groups["items"][0]["metadata"]["name"]);
  }
  EXPECT_TRUE(WaitUntil([&] { return bed_->Get("trainingjob", ttl.name).is_null(); }, seconds(120), kPoll))
      << "the finished job was not deleted after its TTL";
  for (const char* name : {"chart-secret", "chart-service", "chart-pod", "chart-netpol"}) {
    EXPECT_TRUE(
        WaitUntil([&] { return !JobEventMessages(*bed_, name, "NameConflict").empty(); }, seconds(60), kPoll))
        << name << " recorded no NameConflict Event";
  }

  // 5. The audit: the operator's ServiceAccount was never refused, and every single grant the
  // chart binds to it covers at least one request it made.
  const std::string user = "system:serviceaccount:" + std::string(kNamespace) + ":" + service_account;
  const std::vector<AuditedRequest> requests = AuditedRequestsOf(bed_->cluster().audit_log(), user);
  ASSERT_FALSE(requests.empty()) << "no request from " << user << " in the audit log";
  std::set<std::string> refused;
  for (const AuditedRequest& request : requests) {
    if (!request.allowed) {
      refused.insert(Describe(request));
    }
  }
  EXPECT_THAT(refused, ::testing::IsEmpty()) << "the chart's RBAC refused the operator these requests";
  // Admission authorizes more than the request: for a child created with blockOwnerDeletion,
  // OwnerReferencesPermissionEnforcement asks RBAC whether the user may update the owner's
  // finalizers, which the audit log shows only as the create's success.
  std::vector<AuditedRequest> authorized = requests;
  for (const AuditedRequest& request : requests) {
    const bool child = (request.api_group.empty() && (request.resource == "pods" || request.resource == "services" ||
                                                      request.resource == "secrets")) ||
                       (request.api_group == "networking.k8s.io" && request.resource == "networkpolicies") ||
                       (request.api_group == "scheduling.k8s.io" && request.resource == "podgroups");
    if (request.verb == "create" && request.code == 201 && child) {
      AuditedRequest finalizers = request;
      finalizers.verb = "update";
      finalizers.api_group = "ringleader.dev";
      finalizers.resource = "trainingjobs";
      finalizers.subresource = "finalizers";
      finalizers.name.clear();  // the owner's name is not in the audit record
      authorized.push_back(std::move(finalizers));
    }
  }

  std::vector<json> rules;
  const json cluster_bindings = json::parse(MustKubectl({"get", "clusterrolebindings", "-o", "json"}));
  const json role_bindings = json::parse(MustKubectl({"get", "rolebindings", "-A", "-o", "json"}));
  auto binds_operator = [&](const json& binding) {
    for (const json& subject : binding.value("subjects", json::array())) {
      if (subject.value("kind", "") == "ServiceAccount" && subject.value("name", "") == service_account &&
          subject.value("namespace", "") == kNamespace) {
        return true;
      }
    }
    return false;
  };
  for (const json& binding : cluster_bindings["items"]) {
    if (binds_operator(binding)) {
      const json role = json::parse(MustKubectl({"get", "clusterrole", binding["roleRef"]["name"], "-o", "json"}));
      rules.push_back(role["rules"]);
    }
  }
  for (const json& binding : role_bindings["items"]) {
    if (binds_operator(binding)) {
      const std::string kind = binding["roleRef"]["kind"] == "Role" ? "role" : "clusterrole";
      std::vector<std::string> get = {"get", kind, binding["roleRef"]["name"], "-o", "json"};
      if (kind == "role") {
        get.insert(get.end(), {"-n", binding["metadata"]["namespace"]});
      }
      rules.push_back(json::parse(MustKubectl(get))["rules"]);
    }
  }
  ASSERT_EQ(rules.size(), 2u) << "the chart binds the operator's ServiceAccount the job rules (a ClusterRole, "
                                 "or a Role in the one watched namespace) and the leader-election Role";
  std::vector<std::string> unused;
  std::size_t grants = 0;
  for (const json& role_rules : rules) {
    for (const json& grant : SingleGrants(role_rules)) {
      ++grants;
      const bool used = std::any_of(authorized.begin(), authorized.end(), [&](const AuditedRequest& request) {
        return request.allowed && RuleCovers(grant, request);
      });
      if (!used) {
        unused.push_back(grant.dump());
      }
      EXPECT_THAT(grant.dump(), ::testing::Not(::testing::HasSubstr("\"*\""))) << "a wildcard grant";
    }
  }
  EXPECT_GT(grants, 10u);
  EXPECT_THAT(unused, ::testing::IsEmpty()) << "granted to the operator but never used in the run";
}

INSTANTIATE_TEST_SUITE_P(RbacShapes, ChartInstallTest,
                         ::testing::Values(RbacShape{"ClusterRole", "", true, false},
                                           RbacShape{"RolePerNamespace",
                                                     "operator.watchNamespaces={default},jobDefaults.hostNetwork=true,"
                                                     "gangScheduling.kubernetes.enabled=true",
                                                     false, true, "Kubernetes"}),
                         [](const ::testing::TestParamInfo<RbacShape>& shape) { return shape.param.name; });

}  // namespace
}  // namespace ringleader::testing
