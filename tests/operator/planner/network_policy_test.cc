// The job's NetworkPolicy: what it admits, judged by NetworkPolicy's own rules (an ingress rule
// admits a connection when a `from` peer matches, or it has none, and a port matches, or it has
// none, a port without `port` matching every port of its protocol; a selected Pod admits what any
// rule admits, and nothing else), and when the planner creates and deletes it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "operator/planner/children_builder.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::At;
using testing::FakeCluster;
using testing::MinimalJob;

const api::JobPorts kPorts = {.master = 61040, .rendezvous = 61041, .metrics = 61042, .spare = 61043};

api::TrainingJob Job(const std::string& name = "train", const std::string& uid = "uid-a") {
  json object = MinimalJob(name, 2);
  object["metadata"]["uid"] = uid;
  api::FieldErrors errors;
  api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  EXPECT_TRUE(errors.empty()) << api::JoinErrors(errors);
  return job;
}

// One ingress rule, read once so that a sweep over every port stays cheap.
struct Rule {
  bool any_peer = true;
  std::vector<std::map<std::string, std::string>> pod_selectors;  // matchLabels
  bool any_port = true;
  struct Ports {
    std::string protocol;
    std::int32_t first = 0;  // 0: every port
    std::int32_t last = 0;
  };
  std::vector<Ports> ports;
};

std::vector<Rule> ReadRules(const json& policy) {
  std::vector<Rule> rules;
  for (const json& ingress : policy["spec"]["ingress"]) {
    Rule rule;
    if (ingress.contains("from")) {
      rule.any_peer = false;
      for (const json& from : ingress["from"]) {
        // The operator names only Pods of the job's namespace.
        EXPECT_FALSE(from.contains("namespaceSelector") || from.contains("ipBlock")) << from;
        EXPECT_FALSE(from["podSelector"].contains("matchExpressions")) << from;
        rule.pod_selectors.push_back(from["podSelector"]["matchLabels"].get<std::map<std::string, std::string>>());
      }
    }
    if (ingress.contains("ports")) {
      rule.any_port = false;
      for (const json& entry : ingress["ports"]) {
        Rule::Ports ports{.protocol = entry.value("protocol", "TCP")};
        if (entry.contains("port")) {
          ports.first = entry["port"];
          ports.last = entry.value("endPort", ports.first);
        }
        rule.ports.push_back(ports);
      }
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

bool Selects(const std::map<std::string, std::string>& match, const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : match) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) {
      return false;
    }
  }
  return true;
}

// Whether the rules let a Pod of this namespace with `labels` (or, when null, something that is
// no Pod of the cluster) reach a Pod the policy selects, on `protocol` `port`.
bool Admits(const std::vector<Rule>& rules, const std::map<std::string, std::string>* labels,
            const std::string& protocol, std::int32_t port) {
  for (const Rule& rule : rules) {
    bool peer = rule.any_peer;
    for (const auto& selector : rule.pod_selectors) {
      peer = peer || (labels != nullptr && Selects(selector, *labels));
    }
    bool port_ok = rule.any_port;
    for (const Rule::Ports& ports : rule.ports) {
      port_ok = port_ok || (ports.protocol == protocol &&
                            (ports.first == 0 || (port >= ports.first && port <= ports.last)));
    }
    if (peer && port_ok) {
      return true;
    }
  }
  return false;
}

bool Admits(const json& policy, const std::map<std::string, std::string>* labels, const std::string& protocol,
            std::int32_t port) {
  return Admits(ReadRules(policy), labels, protocol, port);
}

// The labels BuildPod gives a rank's Pod of the job (ChildMetadata's, plus rank and attempt).
std::map<std::string, std::string> PodLabels(const api::TrainingJob& job) {
  return {{"ringleader.dev/job-name", job.metadata.name},
          {"ringleader.dev/job-uid", job.metadata.uid},
          {"app.kubernetes.io/managed-by", "ringleader"},
          {"ringleader.dev/rank", "1"},
          {"ringleader.dev/attempt", "0"}};
}

TEST(NetworkPolicyTest, SelectsTheJobsPodsOnlyAndLeavesEgressAlone) {
  const api::TrainingJob job = Job();
  const json policy = BuildNetworkPolicy(job, kPorts);
  EXPECT_EQ(policy["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(policy["kind"], "NetworkPolicy");
  EXPECT_EQ(policy["metadata"]["name"], "train-ringleader");
  EXPECT_EQ(policy["metadata"]["namespace"], "default");
  // Owned like the Service and Secret: garbage-collected with the job.
  const json& owner = policy["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["uid"], "uid-a");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_TRUE(IsControlledBy(policy, job));
  EXPECT_EQ(policy["spec"]["policyTypes"], json::array({"Ingress"}));
  const auto selector = policy["spec"]["podSelector"]["matchLabels"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(policy["spec"]["podSelector"].size(), 1u);  // matchLabels only
  EXPECT_TRUE(Selects(selector, PodLabels(job)));
  // Another job of the same name (deleted and created again) is another uid.
  EXPECT_FALSE(Selects(selector, PodLabels(Job("train", "uid-b"))));
  EXPECT_FALSE(Selects(selector, PodLabels(Job("other", "uid-a"))));
}

TEST(NetworkPolicyTest, TheStoreAndRendezvousPortsAdmitOnlyTheJobsOwnPods) {
  const api::TrainingJob job = Job();
  const json policy = BuildNetworkPolicy(job, kPorts);
  const auto own = PodLabels(job);
  const auto other_job = PodLabels(Job("other", "uid-b"));
  const std::map<std::string, std::string> unlabelled = {{"app", "prometheus"}};
  for (const std::int32_t port : {kPorts.master, kPorts.rendezvous}) {
    SCOPED_TRACE("port " + std::to_string(port));
    EXPECT_TRUE(Admits(policy, &own, "TCP", port));
    EXPECT_FALSE(Admits(policy, &other_job, "TCP", port));
    EXPECT_FALSE(Admits(policy, &unlabelled, "TCP", port));
    EXPECT_FALSE(Admits(policy, nullptr, "TCP", port));
  }
}

// A policy that selects a Pod denies all ingress it does not admit, so everything else must be
// admitted as if there were no policy: Prometheus and the operator on the metrics port, the
// trainers' own ports, NCCL's and Gloo's connections on ports the kernel picks.
TEST(NetworkPolicyTest, EveryOtherPortStaysOpenToAnyoneAndEveryPortToTheJob) {
  const api::TrainingJob job = Job();
  const json policy = BuildNetworkPolicy(job, kPorts);
  const std::vector<Rule> rules = ReadRules(policy);
  const auto own = PodLabels(job);
  const std::map<std::string, std::string> unlabelled = {{"app", "prometheus"}};
  int closed = 0;
  for (std::int32_t port = 1; port <= 65535; ++port) {
    const bool shielded = port == kPorts.master || port == kPorts.rendezvous;
    ASSERT_EQ(Admits(rules, nullptr, "TCP", port), !shielded) << "TCP " << port;
    ASSERT_EQ(Admits(rules, &unlabelled, "TCP", port), !shielded) << "TCP " << port;
    ASSERT_TRUE(Admits(rules, &own, "TCP", port)) << "TCP " << port;
    for (const char* protocol : {"UDP", "SCTP"}) {
      ASSERT_TRUE(Admits(rules, nullptr, protocol, port)) << protocol << " " << port;
    }
    closed += shielded ? 1 : 0;
  }
  EXPECT_EQ(closed, 2);
  // As few entries as that takes: two TCP ranges, all of UDP, all of SCTP.
  EXPECT_EQ(policy["spec"]["ingress"][1]["ports"],
            json::parse(R"([{"protocol": "TCP", "port": 1, "endPort": 61039},
                            {"protocol": "TCP", "port": 61042, "endPort": 65535},
                            {"protocol": "UDP"}, {"protocol": "SCTP"}])"));
}

TEST(NetworkPolicyTest, BlocksAtTheEdgesOfThePortSpaceLeaveNoEmptyRange) {
  const api::TrainingJob job = Job();
  const json top = BuildNetworkPolicy(job, {.master = 65532, .rendezvous = 65533, .metrics = 65534, .spare = 65535});
  EXPECT_EQ(top["spec"]["ingress"][1]["ports"][1], json({{"protocol", "TCP"}, {"port", 65534}, {"endPort", 65535}}));
  const json last = BuildNetworkPolicy(job, {.master = 65534, .rendezvous = 65535, .metrics = 0, .spare = 0});
  EXPECT_EQ(last["spec"]["ingress"][1]["ports"][0], json({{"protocol", "TCP"}, {"port", 1}, {"endPort", 65533}}));
  EXPECT_EQ(last["spec"]["ingress"][1]["ports"][1], json({{"protocol", "UDP"}}));
  const json low = BuildNetworkPolicy(job, {.master = 2, .rendezvous = 3, .metrics = 4, .spare = 5});
  // A single port needs no endPort.
  EXPECT_EQ(low["spec"]["ingress"][1]["ports"][0], json({{"protocol", "TCP"}, {"port", 1}}));
  for (const json* policy : {&top, &last, &low}) {
    for (const json& entry : (*policy)["spec"]["ingress"][1]["ports"]) {
      if (entry.contains("endPort")) {
        EXPECT_LT(entry["port"], entry["endPort"]) << entry;
      }
    }
  }
}

std::vector<std::string> CreatedKinds(const Plan& plan) {
  std::vector<std::string> kinds;
  for (const Action& action : plan.actions) {
    if (const auto* create = std::get_if<CreateObject>(&action)) {
      kinds.push_back(create->object["kind"]);
    }
  }
  return kinds;
}

TEST(NetworkPolicyTest, ThePlannerCreatesItOnceBeforeAnyPodWithTheJobsPorts) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.Reconcile(At(0));  // ports
  const Plan second = cluster.Reconcile(At(1));
  EXPECT_THAT(CreatedKinds(second), ::testing::ElementsAre("Secret", "Service", "NetworkPolicy", "Pod", "Pod"));
  ASSERT_TRUE(cluster.network_policy().has_value());
  const json& policy = *cluster.network_policy();
  EXPECT_EQ(policy["metadata"]["name"], "demo-ringleader");
  EXPECT_EQ(policy["spec"]["ingress"][1]["ports"][0]["endPort"], 60999);  // master 61000
  EXPECT_EQ(policy["spec"]["ingress"][1]["ports"][1]["port"], 61002);     // after rendezvous 61001
  cluster.ReconcileUntilStable(At(2));
  cluster.StartRunning(At(3));
  EXPECT_THAT(CreatedKinds(cluster.PlanNow(At(4))), ::testing::IsEmpty());
}

TEST(NetworkPolicyTest, ARunningJobWithoutOneGetsIt) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.config().network_policy = false;
  cluster.StartRunning(At(0));
  EXPECT_FALSE(cluster.network_policy().has_value());
  // The operator restarted with --network-policies true (an upgrade): the job's Pods stay.
  cluster.config().network_policy = true;
  const Plan plan = cluster.Reconcile(At(1));
  EXPECT_THAT(CreatedKinds(plan), ::testing::ElementsAre("NetworkPolicy"));
  EXPECT_EQ(cluster.pods().size(), 2u);
}

TEST(NetworkPolicyTest, SwitchedOffTheOperatorCreatesNone) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.config().network_policy = false;
  cluster.StartRunning(At(0));
  EXPECT_FALSE(cluster.network_policy().has_value());
  EXPECT_TRUE(cluster.has_service());
  EXPECT_EQ(cluster.pods().size(), 2u);
}

TEST(NetworkPolicyTest, ASuspendedJobsPolicyGoesWithItsPortsAndResumeMakesOneForTheNewBlock) {
  FakeCluster cluster(MinimalJob("demo", 2));
  cluster.StartRunning(At(0));
  ASSERT_TRUE(cluster.network_policy().has_value());
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = true; });
  cluster.ReconcileUntilStable(At(10));
  EXPECT_FALSE(cluster.job_json()["status"].contains("ports"));
  EXPECT_FALSE(cluster.network_policy().has_value());
  ASSERT_TRUE(cluster.ledger().Reserve("other-job", ports::PortBlock{61000}));
  cluster.EditSpec([](json& spec) { spec["runPolicy"]["suspend"] = false; });
  cluster.ReconcileUntilStable(At(20));
  ASSERT_TRUE(cluster.network_policy().has_value());
  const json& policy = *cluster.network_policy();
  EXPECT_FALSE(Admits(policy, nullptr, "TCP", 61004));
  EXPECT_FALSE(Admits(policy, nullptr, "TCP", 61005));
  EXPECT_TRUE(Admits(policy, nullptr, "TCP", 61000));  // the old block's master is no longer ours
}

}  // namespace
}  // namespace ringleader::planner
