// devcluster's Nodes and scheduler: the pure pass (binds, FailedScheduling once, nothing more on
// an unchanged cluster), then over real HTTPS: Nodes listed, Pods bound, hostNetwork ports
// spread and a Pod left Pending until a port frees, nodeSelector and GPU requests.
#include "tests/devcluster/scheduling_controller.h"

// gtest first: cpprestsdk defines a U() macro that breaks gtest's templates.
#include <gtest/gtest.h>

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/devcluster/coscheduling.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/scheduling_gates.h"

namespace ringleader::devcluster {
namespace {

namespace http = web::http;
using nlohmann::json;

json HostNetworkPod(const std::string& name, int port, json resources = json::object()) {
  json container = {{"name", "main"}, {"image", "busybox"}, {"ports", json::array({{{"containerPort", port}}})}};
  if (!resources.empty()) {
    container["resources"] = resources;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"hostNetwork", true}, {"containers", json::array({container})}}}};
}

std::vector<json> DefaultNodeObjects() {
  std::vector<json> nodes;
  for (const NodeConfig& config : DefaultNodes()) {
    nodes.push_back(NodeObject(config, "2026-01-01T00:00:00Z"));
  }
  return nodes;
}

TEST(NodeObjectTest, AdvertisesGpusAndRdmaDevicesOnlyWhenConfigured) {
  const json plain = NodeObject(NodeConfig{.name = "node-a"}, "2026-01-01T00:00:00Z");
  EXPECT_EQ(plain["status"]["allocatable"]["nvidia.com/gpu"], "4");
  EXPECT_FALSE(plain["status"]["capacity"].contains(kRdmaResource));
  const json rdma = NodeObject(NodeConfig{.name = "node-a", .gpus = 0, .rdma = 2}, "2026-01-01T00:00:00Z");
  EXPECT_EQ(rdma["status"]["capacity"]["rdma/rdma_shared_device_a"], "2");
  EXPECT_EQ(rdma["status"]["allocatable"]["rdma/rdma_shared_device_a"], "2");
  EXPECT_FALSE(rdma["status"]["allocatable"].contains("nvidia.com/gpu"));
}

TEST(PlanSchedulingTest, BindsInOrderThenReportsOnceAndPlansNothingOnAnUnchangedCluster) {
  std::vector<json> pods = {HostNetworkPod("p3", 29500), HostNetworkPod("p1", 29500), HostNetworkPod("p2", 29500)};
  pods[0]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z";  // oldest, though listed first by name
  pods[1]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:02Z";
  pods[2]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:03Z";
  std::vector<SchedulingAction> actions = PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:01:00Z");
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(actions[0].pod["metadata"]["name"], "p3");
  EXPECT_EQ(actions[0].pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(actions[0].event["reason"], "Scheduled");
  EXPECT_EQ(actions[0].event["message"], "Successfully assigned default/p3 to node-a");
  EXPECT_EQ(actions[1].pod["metadata"]["name"], "p1");
  EXPECT_EQ(actions[1].pod["spec"]["nodeName"], "node-b");
  EXPECT_EQ(actions[2].pod["metadata"]["name"], "p2");
  EXPECT_FALSE(actions[2].pod["spec"].contains("nodeName"));
  const json& condition = actions[2].pod["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "PodScheduled");
  EXPECT_EQ(condition["status"], "False");
  EXPECT_EQ(condition["reason"], "Unschedulable");
  const std::string message =
      "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.";
  EXPECT_EQ(condition["message"], message);
  EXPECT_EQ(actions[2].event["type"], "Warning");
  EXPECT_EQ(actions[2].event["reason"], "FailedScheduling");
  EXPECT_EQ(actions[2].event["message"], message);

  std::vector<json> after;
  for (const SchedulingAction& action : actions) {
    after.push_back(action.pod);
  }
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), after, "2026-01-01T00:02:00Z").empty());

  after[1]["status"]["phase"] = "Succeeded";  // p1 is done: its port on node-b is free again
  actions = PlanScheduling(DefaultNodeObjects(), after, "2026-01-01T00:03:00Z");
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].pod["spec"]["nodeName"], "node-b");
  EXPECT_EQ(actions[0].pod["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(actions[0].pod["status"]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:03:00Z");
}

TEST(PlanSchedulingTest, LeavesBoundDeletingAndOtherSchedulersPodsAlone) {
  json bound = HostNetworkPod("p1", 1);
  bound["spec"]["nodeName"] = "node-a";
  json deleting = HostNetworkPod("p2", 2);
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  json other = HostNetworkPod("p3", 3);
  other["spec"]["schedulerName"] = "volcano";
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {bound, deleting, other}, "2026-01-01T00:01:00Z").empty());
}

json GangPod(const std::string& name, const std::string& group, const std::string& created, int gpus = 2) {
  json pod = HostNetworkPod(name, 0, {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}});
  pod["spec"]["hostNetwork"] = false;
  pod["spec"]["containers"][0].erase("ports");
  pod["spec"]["schedulerName"] = kSchedulerPluginsName;
  pod["metadata"]["labels"][kPodGroupLabel] = group;
  pod["metadata"]["creationTimestamp"] = created;
  return pod;
}

json PodGroupObject(const std::string& name, int min_member, const std::string& created) {
  return {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"creationTimestamp", created}}},
          {"spec", {{"minMember", min_member}}}};
}

// The Pods after a pass: each action's Pod replaces the one of the same name.
std::vector<json> Apply(std::vector<json> pods, const std::vector<SchedulingAction>& actions) {
  for (const SchedulingAction& action : actions) {
    for (json& pod : pods) {
      if (pod["metadata"]["name"] == action.pod["metadata"]["name"]) {
        pod = action.pod;
      }
    }
  }
  return pods;
}

std::string Scheduled(const json& pod) {
  for (const json& condition : pod["status"].value("conditions", json::array())) {
    if (condition["type"] == "PodScheduled") {
      return condition["status"].get<std::string>() + "/" + condition.value("reason", "") + ": " +
             condition.value("message", "");
    }
  }
  return "";
}

// The SchedulingGated condition is kube-apiserver's, written at create (scheduling_gates.h): the
// scheduler neither writes nor rewrites it, so the two never fight over it.
TEST(PlanSchedulingTest, AGatedPodIsLeftAsCreatedAndBoundOnceItsGatesAreGone) {
  json gated = HostNetworkPod("p1", 1);
  gated["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}, {{"name", "example.com/b"}}});
  AddSchedulingGatedCondition(gated);
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {gated}, "2026-01-01T00:01:00Z").empty());
  json without_condition = gated;
  without_condition["status"].erase("conditions");
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {without_condition}, "2026-01-01T00:01:00Z").empty());

  gated["spec"]["schedulingGates"] = json::array({{{"name", "example.com/b"}}});  // one gate left
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {gated}, "2026-01-01T00:03:00Z").empty());
  gated["spec"]["schedulingGates"] = json::array();
  std::vector<SchedulingAction> actions = PlanScheduling(DefaultNodeObjects(), {gated}, "2026-01-01T00:04:00Z");
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(Scheduled(actions[0].pod), "True/: ");
  EXPECT_EQ(actions[0].pod["status"]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:04:00Z");
  EXPECT_EQ(actions[0].event["reason"], "Scheduled");
}

// Regression: the gated condition's null lastTransitionTime stays null while PodScheduled stays
// False (kube-scheduler's UpdatePodCondition keeps it), instead of failing the pass.
TEST(PlanSchedulingTest, AnUngatedPodThatFitsNowhereKeepsTheNullTransitionTime) {
  json pod = HostNetworkPod("p1", 1, {{"limits", {{"nvidia.com/gpu", "9"}}}});
  pod["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}});
  AddSchedulingGatedCondition(pod);
  pod["spec"].erase("schedulingGates");
  std::vector<SchedulingAction> actions = PlanScheduling(DefaultNodeObjects(), {pod}, "2026-01-01T00:04:00Z");
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(Scheduled(actions[0].pod), "False/Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  EXPECT_TRUE(actions[0].pod["status"]["conditions"][0]["lastTransitionTime"].is_null());
  EXPECT_EQ(actions[0].event["reason"], "FailedScheduling");
}

TEST(PlanSchedulingTest, TwoGangsWithRoomForOneTheOlderPodGroupBindsWholeAndTheOtherWaitsUntilAllOfItFits) {
  // 2 nodes x 4 GPUs, 2 GPUs a Pod: room for one group of 4. Group b's Pods are older, but the
  // plugin orders by the PodGroup's creationTimestamp, and a's PodGroup is older.
  std::vector<json> pods;
  for (int i = 0; i < 4; ++i) {
    pods.push_back(GangPod("b-" + std::to_string(i), "b", "2026-01-01T00:00:01Z"));
  }
  for (int i = 0; i < 4; ++i) {
    pods.push_back(GangPod("a-" + std::to_string(i), "a", "2026-01-01T00:00:05Z"));
  }
  const std::vector<json> groups = {PodGroupObject("a", 4, "2026-01-01T00:00:00Z"),
                                    PodGroupObject("b", 4, "2026-01-01T00:00:01Z")};
  std::vector<SchedulingAction> actions = PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:01:00Z", &groups);
  ASSERT_EQ(actions.size(), 8u);
  pods = Apply(pods, actions);
  const std::string b_waits =
      "False/Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
      "PodGroup default/b gets rejected due to Pod b-0 is unschedulable even after PostFilter.";
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(pods[i]["spec"].value("nodeName", ""), "") << i;
    EXPECT_EQ(Scheduled(pods[i]), b_waits);
    EXPECT_FALSE(pods[4 + i]["spec"].value("nodeName", "").empty()) << i;
    EXPECT_EQ(Scheduled(pods[4 + i]), "True/: ");
  }
  for (const SchedulingAction& action : actions) {
    EXPECT_EQ(action.event["reportingComponent"], kSchedulerPluginsName);
  }
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:02:00Z", &groups).empty());

  // a's Pods finish one by one: room for one, two, three of b's - still none of b is bound, and the
  // message names the first of b that no longer fits.
  for (int finished = 1; finished < 4; ++finished) {
    pods[4 + finished - 1]["status"]["phase"] = "Succeeded";
    actions = PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:03:00Z", &groups);
    pods = Apply(pods, actions);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(pods[i]["spec"].value("nodeName", ""), "") << finished << " finished, b-" << i;
      EXPECT_EQ(Scheduled(pods[i]).rfind("False/Unschedulable: ", 0), 0u);
    }
  }
  EXPECT_EQ(Scheduled(pods[0]),
            "False/Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
            "PodGroup default/b gets rejected due to Pod b-3 is unschedulable even after PostFilter.");

  pods[7]["status"]["phase"] = "Succeeded";  // the last of a: b fits whole
  actions = PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:04:00Z", &groups);
  ASSERT_EQ(actions.size(), 4u);
  for (const SchedulingAction& action : actions) {
    EXPECT_EQ(action.pod["metadata"]["labels"][kPodGroupLabel], "b");
    EXPECT_FALSE(action.pod["spec"].value("nodeName", "").empty());
    EXPECT_EQ(action.event["reason"], "Scheduled");
  }
}

TEST(PlanSchedulingTest, APodOfAMissingPodGroupIsNeverBound) {
  const std::vector<json> groups;  // the CRD is served, the PodGroup was never created
  std::vector<SchedulingAction> actions =
      PlanScheduling(DefaultNodeObjects(), {GangPod("g-0", "g", "2026-01-01T00:00:00Z")}, "2026-01-01T00:01:00Z", &groups);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_FALSE(actions[0].pod["spec"].contains("nodeName"));
  EXPECT_EQ(Scheduled(actions[0].pod), "False/Unschedulable: PodGroup not found");
  EXPECT_EQ(actions[0].event["reason"], "FailedScheduling");

  actions = PlanScheduling(DefaultNodeObjects(), {GangPod("g-0", "g", "2026-01-01T00:00:00Z", 5)},
                           "2026-01-01T00:01:00Z", &groups);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(Scheduled(actions[0].pod),
            "False/Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu. can not find pod group.");
}

TEST(PlanSchedulingTest, TheSecondSchedulersPodsWaitForTheCrdAndDefaultSchedulerPodsIgnoreTheLabel) {
  json plugins_pod = GangPod("g-0", "g", "2026-01-01T00:00:00Z");
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {plugins_pod}, "2026-01-01T00:01:00Z").empty());

  json default_pod = GangPod("d-0", "g", "2026-01-01T00:00:00Z");
  default_pod["spec"].erase("schedulerName");  // kube-scheduler has no Coscheduling: the label means nothing
  const std::vector<json> groups = {PodGroupObject("g", 4, "2026-01-01T00:00:00Z")};
  std::vector<SchedulingAction> actions =
      PlanScheduling(DefaultNodeObjects(), {default_pod}, "2026-01-01T00:01:00Z", &groups);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(actions[0].event["reportingComponent"], "default-scheduler");

  json unlabelled = GangPod("u-0", "", "2026-01-01T00:00:00Z");  // the second scheduler, no group
  unlabelled["metadata"].erase("labels");
  actions = PlanScheduling(DefaultNodeObjects(), {unlabelled}, "2026-01-01T00:01:00Z", &groups);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].pod["spec"]["nodeName"], "node-a");

  json volcano = GangPod("v-0", "g", "2026-01-01T00:00:00Z");
  volcano["spec"]["schedulerName"] = "volcano";
  EXPECT_TRUE(PlanScheduling(DefaultNodeObjects(), {volcano}, "2026-01-01T00:01:00Z", &groups).empty());
}

TEST(PlanSchedulingTest, AGangAndLonePodsTakeTheirTurnsInQueueOrder) {
  // The lone Pod is older than the PodGroup, so it goes first and leaves room for 3 of the 4.
  json lone = HostNetworkPod("lone", 0, {{"limits", {{"nvidia.com/gpu", "2"}}}});
  lone["spec"]["hostNetwork"] = false;
  lone["spec"]["containers"][0].erase("ports");
  lone["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  json late = lone;
  late["metadata"]["name"] = "late";
  late["metadata"]["creationTimestamp"] = "2026-01-01T00:00:09Z";
  std::vector<json> pods = {lone, late};
  for (int i = 0; i < 4; ++i) {
    pods.push_back(GangPod("g-" + std::to_string(i), "g", "2026-01-01T00:00:02Z"));
  }
  const std::vector<json> groups = {PodGroupObject("g", 4, "2026-01-01T00:00:01Z")};
  const std::vector<SchedulingAction> actions =
      PlanScheduling(DefaultNodeObjects(), pods, "2026-01-01T00:01:00Z", &groups);
  pods = Apply(pods, actions);
  EXPECT_FALSE(pods[0]["spec"].value("nodeName", "").empty());
  EXPECT_FALSE(pods[1]["spec"].value("nodeName", "").empty());  // the gang's refusal holds nothing
  for (int i = 2; i < 6; ++i) {
    EXPECT_EQ(pods[i]["spec"].value("nodeName", ""), "");
  }
}

struct Reply {
  int code = 0;
  json body;
};

class Client {
 public:
  explicit Client(const DevCluster& cluster)
      : token_(cluster.token()), client_(cluster.url(), Config(cluster.ca_pem())) {}

  Reply Call(const std::string& method, const std::string& path, const std::optional<json>& body = std::nullopt) {
    http::http_request request(method);
    request.set_request_uri(path);
    request.headers().add("Authorization", "Bearer " + token_);
    request.headers().add("Accept", "application/json");
    if (body) {
      request.set_body(body->dump(), "application/json");
    }
    http::http_response response = client_.request(request).get();
    return {response.status_code(), json::parse(response.extract_utf8string(true).get(), nullptr, false)};
  }

 private:
  static http::client::http_client_config Config(const std::string& ca) {
    http::client::http_client_config config;
    config.set_ssl_context_callback(
        [ca](boost::asio::ssl::context& ctx) { ctx.add_certificate_authority(boost::asio::buffer(ca)); });
    config.set_timeout(std::chrono::seconds(30));
    return config;
  }

  std::string token_;
  http::client::http_client client_;
};

class SchedulingTest : public ::testing::Test {
 protected:
  void Start(std::vector<NodeConfig> nodes = DefaultNodes()) {
    Options options;
    options.nodes = std::move(nodes);
    options.schedule_pods = true;
    cluster_ = DevCluster::Start(options);
    client_ = std::make_unique<Client>(*cluster_);
  }
  void TearDown() override {
    client_.reset();
    if (cluster_) {
      cluster_->Stop();
    }
  }

  void Create(const json& pod) {
    const Reply created = client_->Call("POST", "/api/v1/namespaces/default/pods", pod);
    ASSERT_EQ(created.code, 201) << created.body.dump();
  }

  json GetPod(const std::string& name) { return client_->Call("GET", "/api/v1/namespaces/default/pods/" + name).body; }

  // Waits (with a deadline, not a sleep) for the Pod's spec.nodeName; "" if it never comes.
  std::string NodeOf(const std::string& name) {
    std::string node;
    Eventually([&] {
      node = GetPod(name)["spec"].value("nodeName", "");
      return !node.empty();
    });
    return node;
  }

  // The message of the Pod's PodScheduled=False condition once it has one.
  std::string UnschedulableMessage(const std::string& name) {
    std::string message;
    Eventually([&] {
      json pod = GetPod(name);  // not const: status may still be missing
      for (const json& condition : pod["status"].value("conditions", json::array())) {
        if (condition["type"] == "PodScheduled" && condition["status"] == "False") {
          message = condition.value("message", "");
        }
      }
      return !message.empty();
    });
    return message;
  }

  std::vector<json> EventsAbout(const std::string& name, const std::string& reason) {
    std::vector<json> out;
    const Reply events = client_->Call("GET", "/api/v1/namespaces/default/events");
    for (const json& event : events.body["items"]) {
      if (event["involvedObject"]["name"] == name && event["reason"] == reason) {
        out.push_back(event);
      }
    }
    return out;
  }

  static bool Eventually(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return condition();
  }

  std::unique_ptr<DevCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(SchedulingTest, NodesAreListedReadyWithTheirResources) {
  Start();
  const Reply nodes = client_->Call("GET", "/api/v1/nodes");
  ASSERT_EQ(nodes.code, 200);
  ASSERT_EQ(nodes.body["items"].size(), 2u);
  const json& node = nodes.body["items"][0];
  EXPECT_EQ(node["metadata"]["name"], "node-a");
  EXPECT_EQ(node["metadata"]["labels"]["kubernetes.io/hostname"], "node-a");
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "8");
  EXPECT_EQ(node["status"]["allocatable"]["memory"], "32Gi");
  EXPECT_EQ(node["status"]["capacity"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(node["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(nodes.body["items"][1]["metadata"]["name"], "node-b");
}

TEST_F(SchedulingTest, APodIsBoundAndMarkedScheduled) {
  Start();
  Create(HostNetworkPod("p1", 8080));
  EXPECT_EQ(NodeOf("p1"), "node-a");
  const json pod = GetPod("p1");
  EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(pod["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(EventsAbout("p1", "Scheduled").size(), 1u);
}

TEST_F(SchedulingTest, HostNetworkPodsWithOnePortSpreadAndTheThirdWaitsForAPortToFree) {
  Start();
  Create(HostNetworkPod("p1", 29500));
  Create(HostNetworkPod("p2", 29500));
  const std::string first = NodeOf("p1");
  const std::string second = NodeOf("p2");
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  EXPECT_NE(first, second);

  Create(HostNetworkPod("p3", 29500));
  const std::string message = "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.";
  EXPECT_EQ(UnschedulableMessage("p3"), message);
  const std::vector<json> failed = EventsAbout("p3", "FailedScheduling");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["type"], "Warning");
  EXPECT_EQ(failed[0]["message"], message);
  EXPECT_EQ(GetPod("p3")["spec"].value("nodeName", ""), "");

  // Forced: no kubelet runs here to finish a graceful deletion, and a terminating Pod keeps its port.
  ASSERT_EQ(client_->Call("DELETE", "/api/v1/namespaces/default/pods/p2?gracePeriodSeconds=0").code, 200);
  EXPECT_EQ(NodeOf("p3"), second);
}

TEST_F(SchedulingTest, NodeSelectorPicksTheLabelledNode) {
  Start({NodeConfig{.name = "cpu-1", .labels = {{"pool", "cpu"}}},
         NodeConfig{.name = "gpu-1", .labels = {{"pool", "gpu"}}}});
  json pod = HostNetworkPod("p1", 1);
  pod["spec"]["nodeSelector"] = {{"pool", "gpu"}};
  Create(pod);
  EXPECT_EQ(NodeOf("p1"), "gpu-1");
  json nowhere = HostNetworkPod("p2", 2);
  nowhere["spec"]["nodeSelector"] = {{"pool", "tpu"}};
  Create(nowhere);
  EXPECT_EQ(UnschedulableMessage("p2"),
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.");
}

TEST_F(SchedulingTest, GpuRequestsAreHonoured) {
  Start();
  const json three_gpus = {{"limits", {{"nvidia.com/gpu", "3"}}}};
  Create(HostNetworkPod("p1", 1, three_gpus));
  Create(HostNetworkPod("p2", 2, three_gpus));
  const std::string first = NodeOf("p1");
  const std::string second = NodeOf("p2");
  EXPECT_FALSE(first.empty());
  EXPECT_NE(first, second);
  Create(HostNetworkPod("p3", 3, three_gpus));
  EXPECT_EQ(UnschedulableMessage("p3"), "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  Create(HostNetworkPod("p4", 4, {{"limits", {{"nvidia.com/gpu", "1"}}}}));
  EXPECT_FALSE(NodeOf("p4").empty());
}

}  // namespace
}  // namespace ringleader::devcluster
