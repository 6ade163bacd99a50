// devcluster over real HTTPS: authentication, discovery, CRUD semantics, the status subresource,
// CRDs and custom-resource schemas, watch resume and expiry, garbage collection, bad requests
// and fault injection, through cpprestsdk's client trusting the generated CA.
#include "tests/devcluster/devcluster.h"

// gtest first: cpprestsdk defines a U() macro that breaks gtest's templates.
#include <gtest/gtest.h>

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::devcluster {
namespace {

namespace http = web::http;
using nlohmann::json;

struct Reply {
  int code = 0;
  json body;
  std::string raw;
  std::string content_type;
  http::http_headers headers;
};

class Client {
 public:
  explicit Client(const DevCluster& cluster, bool with_token = true)
      : token_(with_token ? cluster.token() : ""), client_(cluster.url(), Config(cluster.ca_pem())) {}

  Reply Call(const std::string& method, const std::string& path, const std::optional<json>& body = std::nullopt,
             const std::string& content_type = "application/json", const std::string& accept = "application/json") {
    return Raw(method, path, body ? body->dump() : "", content_type, accept);
  }

  Reply Raw(const std::string& method, const std::string& path, const std::string& body,
            const std::string& content_type = "application/json", const std::string& accept = "application/json") {
    http::http_request request(method);
    request.set_request_uri(path);
    if (!token_.empty()) {
      request.headers().add("Authorization", "Bearer " + token_);
    }
    request.headers().add("Accept", accept);
    if (!body.empty()) {
      request.set_body(body, content_type);
      request.headers().set_content_type(content_type);
    }
    http::http_response response = client_.request(request).get();
    Reply reply;
    reply.code = response.status_code();
    reply.headers = response.headers();
    reply.content_type = response.headers().content_type();
    reply.raw = response.extract_utf8string(true).get();
    reply.body = json::parse(reply.raw, nullptr, false);
    return reply;
  }

  // A whole watch stream (the server ends it at timeoutSeconds), one parsed event per line.
  std::vector<json> Watch(const std::string& path) {
    http::http_request request(http::methods::GET);
    request.set_request_uri(path);
    request.headers().add("Authorization", "Bearer " + token_);
    http::http_response response = client_.request(request).get();
    EXPECT_EQ(response.status_code(), 200);
    std::vector<json> events;
    std::istringstream lines(response.extract_utf8string(true).get());
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) {
        events.push_back(json::parse(line));
      }
    }
    return events;
  }

  // A watch stream read line by line as it arrives, calling `on_first_event` once the first
  // event is in; returns the events when the stream ends (cleanly or cut).
  std::vector<json> WatchLive(const std::string& path, const std::function<void()>& on_first_event) {
    http::http_request request(http::methods::GET);
    request.set_request_uri(path);
    request.headers().add("Authorization", "Bearer " + token_);
    std::vector<json> events;
    try {
      http::http_response response = client_.request(request).get();
      EXPECT_EQ(response.status_code(), 200);
      concurrency::streams::istream body = response.body();
      while (true) {
        concurrency::streams::container_buffer<std::string> line;
        body.read_line(line).get();
        if (line.collection().empty()) {
          if (body.is_eof()) {
            break;
          }
          continue;
        }
        events.push_back(json::parse(line.collection()));
        if (events.size() == 1) {
          on_first_event();
        }
      }
    } catch (const std::exception&) {
      // cut: the events so far
    }
    return events;
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

json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", value}}}};
}

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"].get<std::string>(); }

class DevClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = std::filesystem::temp_directory_path() /
                ("devcluster-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Options options;
    options.data_dir = data_dir_.string();
    options.max_body_bytes = 64 << 10;
    options.watch_history = 1000;
    cluster_ = DevCluster::Start(options);
    client_ = std::make_unique<Client>(*cluster_);
  }
  void TearDown() override {
    client_.reset();
    cluster_->Stop();
    std::filesystem::remove_all(data_dir_);
  }

  json InstallCrd() {
    json crd = yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml");
    Reply created = client_->Call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    EXPECT_EQ(created.code, 201) << created.raw;
    return created.body;
  }

  std::filesystem::path data_dir_;
  std::unique_ptr<DevCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(DevClusterTest, RejectsRequestsWithoutTheTokenWithAStatus) {
  Client anonymous(*cluster_, false);
  Reply reply = anonymous.Call("GET", "/api/v1/namespaces/default/configmaps");
  EXPECT_EQ(reply.code, 401);
  EXPECT_EQ(reply.body["kind"], "Status");
  EXPECT_EQ(reply.body["reason"], "Unauthorized");
  EXPECT_EQ(anonymous.Call("GET", "/devcluster/faults").code, 401);
}

TEST_F(DevClusterTest, WritesClientFilesWithTheRealPort) {
  std::ifstream in(cluster_->kubeconfig_path());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("server: " + cluster_->url()), std::string::npos);
  EXPECT_NE(text.str().find("token: " + cluster_->token()), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(data_dir_ / "ca.crt"));
  EXPECT_TRUE(std::filesystem::exists(data_dir_ / "token"));
}

TEST_F(DevClusterTest, ServesAggregatedDiscoveryWithItsContentType) {
  const std::string accept =
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
  Reply apis = client_->Call("GET", "/apis", std::nullopt, "", accept);
  ASSERT_EQ(apis.code, 200);
  EXPECT_EQ(apis.content_type, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_EQ(apis.body["kind"], "APIGroupDiscoveryList");
  Reply legacy = client_->Call("GET", "/apis");
  EXPECT_EQ(legacy.body["kind"], "APIGroupList");
  Reply version = client_->Call("GET", "/version");
  EXPECT_EQ(version.body["gitVersion"], "v1.32.4");
  EXPECT_EQ(client_->Call("GET", "/openapi/v2").code, 404);
}

TEST_F(DevClusterTest, CreateGetUpdateWithConflictsAndNoOpPatches) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply created = client_->Call("POST", base, ConfigMap("cm", "1"));
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_FALSE(created.body["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(client_->Call("POST", base, ConfigMap("cm", "1")).body["reason"], "AlreadyExists");

  json update = created.body;
  update["data"]["k"] = "2";
  Reply updated = client_->Call("PUT", base + "/cm", update);
  ASSERT_EQ(updated.code, 200) << updated.raw;
  EXPECT_GT(std::stoll(Rv(updated.body)), std::stoll(Rv(created.body)));

  update["data"]["k"] = "3";  // still carries the first resourceVersion
  Reply stale = client_->Call("PUT", base + "/cm", update);
  EXPECT_EQ(stale.code, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");

  Reply noop = client_->Call("PATCH", base + "/cm", json{{"data", {{"k", "2"}}}}, "application/merge-patch+json");
  ASSERT_EQ(noop.code, 200);
  EXPECT_EQ(Rv(noop.body), Rv(updated.body));

  Reply json_patch = client_->Call("PATCH", base + "/cm", json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "4"}}}),
                                   "application/json-patch+json");
  EXPECT_EQ(json_patch.body["data"]["k"], "4");
  EXPECT_EQ(client_->Call("GET", base + "/cm").body["data"]["k"], "4");

  Reply generated = client_->Call("POST", base, json{{"metadata", {{"generateName", "gen-"}}}});
  ASSERT_EQ(generated.code, 201) << generated.raw;
  EXPECT_EQ(generated.body["metadata"]["name"].get<std::string>().rfind("gen-", 0), 0u);
}

TEST_F(DevClusterTest, GenerationMovesOnlyWhenTheSpecChanges) {
  InstallCrd();
  const std::string base = "/apis/ringleader.dev/v1alpha1/namespaces/default/trainingjobs";
  json tj = yaml::LoadYamlFile("examples/trainingjob.yaml");
  Reply created = client_->Call("POST", base, tj);
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(created.body["metadata"]["generation"], 1);
  Reply labelled = client_->Call("PATCH", base + "/demo", json{{"metadata", {{"labels", {{"a", "b"}}}}}},
                                 "application/merge-patch+json");
  EXPECT_EQ(labelled.body["metadata"]["generation"], 1);
  Reply respec = client_->Call("PATCH", base + "/demo", json{{"spec", {{"runPolicy", {{"backoffLimit", 5}}}}}},
                               "application/merge-patch+json");
  EXPECT_EQ(respec.body["metadata"]["generation"], 2);
}

TEST_F(DevClusterTest, StatusSubresourceSeparatesSpecAndStatus) {
  InstallCrd();
  const std::string base = "/apis/ringleader.dev/v1alpha1/namespaces/default/trainingjobs";
  ASSERT_EQ(client_->Call("POST", base, yaml::LoadYamlFile("examples/trainingjob.yaml")).code, 201);

  Reply main = client_->Call("PATCH", base + "/demo", json{{"status", {{"state", "Running"}}}},
                             "application/merge-patch+json");
  ASSERT_EQ(main.code, 200) << main.raw;
  EXPECT_FALSE(main.body.contains("status"));

  Reply status = client_->Call("PATCH", base + "/demo/status",
                               json{{"status", {{"state", "Running"}}}, {"spec", {{"replicas", 9}}}},
                               "application/merge-patch+json");
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(status.body["status"]["state"], "Running");
  EXPECT_EQ(status.body["spec"]["replicas"], 4);
  EXPECT_EQ(status.body["metadata"]["generation"], 1);
  EXPECT_EQ(client_->Call("GET", base + "/demo/status").body["status"]["state"], "Running");
}

TEST_F(DevClusterTest, CrdServesItsResourceWithDefaultsAndValidation) {
  InstallCrd();
  Reply discovery = client_->Call("GET", "/apis/ringleader.dev/v1alpha1");
  ASSERT_EQ(discovery.code, 200);
  EXPECT_EQ(discovery.body["resources"][0]["name"], "trainingjobs");
  Reply index = client_->Call("GET", "/openapi/v3");
  EXPECT_TRUE(index.body["paths"].contains("apis/ringleader.dev/v1alpha1")) << index.raw;

  const std::string base = "/apis/ringleader.dev/v1alpha1/namespaces/default/trainingjobs";
  Reply created = client_->Call("POST", base, yaml::LoadYamlFile("examples/trainingjob.yaml"));
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(created.body["spec"]["gpusPerReplica"], 0);
  // networking defaults to {}; hostNetwork has no default (the operator's --default-host-network).
  EXPECT_EQ(created.body["spec"]["networking"], json::object());

  json bad = yaml::LoadYamlFile("examples/trainingjob.yaml");
  bad["metadata"]["name"] = "bad";
  bad["spec"]["replicas"] = 0;
  Reply invalid = client_->Call("POST", base, bad);
  EXPECT_EQ(invalid.code, 422);
  EXPECT_EQ(invalid.body["reason"], "Invalid");
  EXPECT_NE(invalid.body["message"].get<std::string>().find("spec.replicas"), std::string::npos) << invalid.raw;

  json unknown = yaml::LoadYamlFile("examples/trainingjob.yaml");
  unknown["metadata"]["name"] = "unknown";
  unknown["spec"]["colour"] = "blue";
  Reply strict = client_->Call("POST", base + "?fieldValidation=Strict", unknown);
  EXPECT_EQ(strict.code, 400);
  EXPECT_NE(strict.body["message"].get<std::string>().find("unknown field \"spec.colour\""), std::string::npos);
  Reply pruned = client_->Call("POST", base, unknown);
  ASSERT_EQ(pruned.code, 201);
  EXPECT_FALSE(pruned.body["spec"].contains("colour"));

  Reply strategic = client_->Call("PATCH", base + "/demo", json{{"spec", {{"replicas", 2}}}},
                                  "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic.code, 415);
}

TEST_F(DevClusterTest, WatchFromAResourceVersionSeesExactlyTheLaterEventsInOrder) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply first = client_->Call("POST", base, ConfigMap("a", "1"));
  client_->Call("POST", base, ConfigMap("b", "1"));
  client_->Call("PATCH", base + "/a", json{{"data", {{"k", "2"}}}}, "application/merge-patch+json");
  client_->Call("POST", "/api/v1/namespaces/default/secrets", json{{"metadata", {{"name", "s"}}}});
  client_->Call("DELETE", base + "/b");

  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Client writer(*cluster_);
    writer.Call("POST", base, ConfigMap("c", "1"));
  });
  std::vector<json> events = client_->Watch(base + "?watch=true&timeoutSeconds=2&resourceVersion=" + Rv(first.body));
  later.join();

  std::vector<std::string> seen;
  for (const json& event : events) {
    seen.push_back(event["type"].get<std::string>() + " " + event["object"]["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED b", "MODIFIED a", "DELETED b", "ADDED c"}));

  std::vector<json> initial = client_->Watch(base + "?watch=true&timeoutSeconds=1&labelSelector=none%3Dmatch");
  EXPECT_TRUE(initial.empty());
  std::vector<json> current = client_->Watch(base + "?watch=true&timeoutSeconds=1");
  ASSERT_EQ(current.size(), 2u);
  EXPECT_EQ(current[0]["type"], "ADDED");
}

TEST_F(DevClusterTest, WatchFromACompactedVersionGetsGone) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply first = client_->Call("POST", base, ConfigMap("a", "1"));
  client_->Call("POST", base, ConfigMap("b", "1"));
  Reply compact = client_->Call("POST", "/devcluster/faults", json{{"compact", true}});
  ASSERT_EQ(compact.code, 200) << compact.raw;
  std::vector<json> events = client_->Watch(base + "?watch=true&timeoutSeconds=2&resourceVersion=" + Rv(first.body));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  EXPECT_EQ(events[0]["object"]["reason"], "Expired");
}

TEST_F(DevClusterTest, BookmarksAndTablesOnWatches) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  client_->Call("POST", base, ConfigMap("a", "1"));
  std::vector<json> events = client_->Watch(base + "?watch=true&timeoutSeconds=1&allowWatchBookmarks=true");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events.back()["type"], "BOOKMARK");
  Reply table = client_->Call("GET", base, std::nullopt, "",
                              "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  EXPECT_EQ(table.body["kind"], "Table");
  EXPECT_EQ(table.body["rows"][0]["cells"][0], "a");
}

TEST_F(DevClusterTest, DeletingAnOwnerCollectsItsDependents) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply owner = client_->Call("POST", base, ConfigMap("owner", "1"));
  json child = ConfigMap("child", "1");
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                           {"kind", "ConfigMap"},
                                           {"name", "owner"},
                                           {"uid", owner.body["metadata"]["uid"]}}};
  ASSERT_EQ(client_->Call("POST", base, child).code, 201);
  json orphan = ConfigMap("orphan", "1");
  orphan["metadata"]["ownerReferences"] = child["metadata"]["ownerReferences"];
  ASSERT_EQ(client_->Call("POST", base, orphan).code, 201);

  // Foreground: the owner waits (deletionTimestamp + finalizer) only while dependents exist.
  Reply deleted = client_->Call("DELETE", base + "/owner", json{{"propagationPolicy", "Foreground"}});
  EXPECT_EQ(deleted.code, 200) << deleted.raw;
  EXPECT_EQ(client_->Call("GET", base + "/owner").code, 404);
  EXPECT_EQ(client_->Call("GET", base + "/child").code, 404);
  EXPECT_EQ(client_->Call("GET", base + "/orphan").code, 404);

  Reply owner2 = client_->Call("POST", base, ConfigMap("owner2", "1"));
  json kept = ConfigMap("kept", "1");
  kept["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                          {"kind", "ConfigMap"},
                                          {"name", "owner2"},
                                          {"uid", owner2.body["metadata"]["uid"]}}};
  ASSERT_EQ(client_->Call("POST", base, kept).code, 201);
  EXPECT_EQ(client_->Call("DELETE", base + "/owner2", json{{"propagationPolicy", "Orphan"}}).code, 200);
  Reply survivor = client_->Call("GET", base + "/kept");
  EXPECT_EQ(survivor.code, 200);
  EXPECT_TRUE(survivor.body["metadata"]["ownerReferences"].empty());
}

TEST_F(DevClusterTest, ADependentCreatedAfterItsOwnerWasDeletedIsCollected) {
  // A controller with a stale cache may create a child for an owner that is already gone; the
  // create succeeds and garbage collection removes the child, as in Kubernetes.
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply owner = client_->Call("POST", base, ConfigMap("gone-owner", "1"));
  ASSERT_EQ(client_->Call("DELETE", base + "/gone-owner").code, 200);
  json late = ConfigMap("late-child", "1");
  late["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                          {"kind", "ConfigMap"},
                                          {"name", "gone-owner"},
                                          {"uid", owner.body["metadata"]["uid"]}}};
  EXPECT_EQ(client_->Call("POST", base, late).code, 201);
  EXPECT_EQ(client_->Call("GET", base + "/late-child").code, 404);
  // A new owner of the same name is another incarnation: the child still goes.
  client_->Call("POST", base, ConfigMap("gone-owner", "2"));
  EXPECT_EQ(client_->Call("POST", base, late).code, 201);
  EXPECT_EQ(client_->Call("GET", base + "/late-child").code, 404);
  // With a live owner it stays.
  late["metadata"]["ownerReferences"][0]["uid"] = client_->Call("GET", base + "/gone-owner").body["metadata"]["uid"];
  EXPECT_EQ(client_->Call("POST", base, late).code, 201);
  EXPECT_EQ(client_->Call("GET", base + "/late-child").code, 200);
}

TEST_F(DevClusterTest, FinalizersHoldDeletionUntilRemoved) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  json held = ConfigMap("held", "1");
  held["metadata"]["finalizers"] = {"example.com/cleanup"};
  ASSERT_EQ(client_->Call("POST", base, held).code, 201);
  Reply pending = client_->Call("DELETE", base + "/held");
  EXPECT_EQ(pending.code, 202);
  EXPECT_TRUE(pending.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(client_->Call("GET", base + "/held").code, 200);
  Reply released = client_->Call("PATCH", base + "/held", json{{"metadata", {{"finalizers", nullptr}}}},
                                 "application/merge-patch+json");
  EXPECT_EQ(released.code, 200) << released.raw;
  EXPECT_EQ(client_->Call("GET", base + "/held").code, 404);
}

TEST_F(DevClusterTest, ListsPageWithContinueTokensAndSelectors) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  for (const char* name : {"a", "b", "c"}) {
    json cm = ConfigMap(name, "1");
    cm["metadata"]["labels"] = {{"tier", std::string(name) == "b" ? "back" : "front"}};
    client_->Call("POST", base, cm);
  }
  Reply page1 = client_->Call("GET", base + "?limit=2");
  EXPECT_EQ(page1.body["kind"], "ConfigMapList");
  ASSERT_EQ(page1.body["items"].size(), 2u);
  const std::string token = page1.body["metadata"]["continue"];
  Reply page2 = client_->Call("GET", base + "?limit=2&continue=" + web::uri::encode_data_string(token));
  ASSERT_EQ(page2.body["items"].size(), 1u) << page2.raw;
  EXPECT_EQ(page2.body["items"][0]["metadata"]["name"], "c");
  Reply front = client_->Call("GET", base + "?labelSelector=tier%3Dfront");
  EXPECT_EQ(front.body["items"].size(), 2u);
  Reply named = client_->Call("GET", base + "?fieldSelector=metadata.name%3Db");
  ASSERT_EQ(named.body["items"].size(), 1u);
  EXPECT_EQ(named.body["items"][0]["metadata"]["name"], "b");
}

TEST_F(DevClusterTest, BadRequestsGetStatusErrorsAndTheServerKeepsServing) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  Reply malformed = client_->Raw("POST", base, "{not json");
  EXPECT_EQ(malformed.code, 400);
  EXPECT_EQ(malformed.body["kind"], "Status");
  Reply oversized = client_->Raw("POST", base, std::string(100 << 10, 'x'));
  EXPECT_EQ(oversized.code, 413);
  EXPECT_EQ(oversized.body["kind"], "Status");
  Reply unknown = client_->Call("GET", "/apis/example.com/v1/widgets");
  EXPECT_EQ(unknown.code, 404);
  EXPECT_EQ(unknown.body["kind"], "Status");
  Reply wrong_type = client_->Raw("POST", base, ConfigMap("x", "1").dump(), "text/plain");
  EXPECT_EQ(wrong_type.code, 415);
  EXPECT_EQ(wrong_type.body["kind"], "Status");
  Reply missing = client_->Call("GET", base + "/nope");
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(missing.body["message"], "configmaps \"nope\" not found");
  EXPECT_EQ(client_->Call("POST", base, ConfigMap("still-serving", "1")).code, 201);
}

TEST_F(DevClusterTest, FaultInjectionConflictsErrorsAndCutWatches) {
  const std::string base = "/api/v1/namespaces/default/configmaps";
  cluster_->faults().ConflictNextWrites(1);
  EXPECT_EQ(client_->Call("POST", base, ConfigMap("a", "1")).code, 409);
  EXPECT_EQ(client_->Call("POST", base, ConfigMap("a", "1")).code, 201);

  ASSERT_EQ(client_->Call("POST", "/devcluster/faults", json{{"errorRate", 1.0}, {"errorCode", 429}}).code, 200);
  Reply throttled = client_->Call("GET", base);
  EXPECT_EQ(throttled.code, 429);
  EXPECT_EQ(throttled.headers["Retry-After"], "1");
  Reply settings = client_->Call("GET", "/devcluster/faults");
  EXPECT_EQ(settings.body["errorRate"], 1.0);
  cluster_->faults().Reset();
  EXPECT_EQ(client_->Call("GET", base).code, 200);

  // Cut once the watch has delivered "a" (so it is open), not after a guessed delay.
  const auto start = std::chrono::steady_clock::now();
  std::vector<json> events =
      client_->WatchLive(base + "?watch=true&timeoutSeconds=20", [&] { cluster_->faults().CutWatches(); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(events.size(), 1u);
}

TEST_F(DevClusterTest, StopEndsOpenWatches) {
  // A watch from "now" starts with the present objects: its first event says the stream is open.
  ASSERT_EQ(client_->Call("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("present", "1")).code, 201);
  std::promise<void> opened;
  std::vector<json> events;
  std::thread watcher([&] {
    Client own(*cluster_);
    events = own.WatchLive("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=60",
                           [&] { opened.set_value(); });
  });
  const bool open = opened.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const auto start = std::chrono::steady_clock::now();
  cluster_->Stop();
  watcher.join();
  ASSERT_TRUE(open) << "the watch never delivered its first event";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "present");
}

}  // namespace
}  // namespace ringleader::devcluster
