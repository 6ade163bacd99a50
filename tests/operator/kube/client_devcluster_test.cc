// The client against a real kube-apiserver (devcluster): every verb on Pods and on TrainingJobs
// served from the real CRD, typed conflicts, token rotation and TLS trust; and, through the fault
// proxy in front of it, watch cuts resumed with no event missed or repeated, 410 relists,
// injected 500s/429s retried and forced conflicts typed. No mocks: real HTTPS, real watch
// streams. One cluster serves every TEST, each in a namespace of its own.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/watch_loop.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/tls.h"
#include "tests/operator/kube/fake_clock.h"
#include "tests/devcluster/shared_cluster.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

double MetricValue(prometheus::Registry& registry, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  double total = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) {
      continue;
    }
    for (const auto& metric : family.metric) {
      bool match = true;
      for (const auto& [key, value] : labels) {
        bool found = false;
        for (const auto& label : metric.label) {
          found = found || (label.name == key && label.value == value);
        }
        match = match && found;
      }
      if (match) {
        total += metric.counter.value;
      }
    }
  }
  return total;
}

// Waits for `predicate` under `mutex`, up to `deadline`; never a bare sleep.
template <typename Predicate>
bool WaitFor(std::mutex& mutex, std::condition_variable& cv, std::chrono::seconds deadline,
             Predicate predicate) {
  std::unique_lock lock(mutex);
  return cv.wait_for(lock, deadline, predicate);
}

json ConfigMap(const std::string& name, int seq) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"seq", std::to_string(seq)}}}}},
          {"data", {{"seq", std::to_string(seq)}}}};
}

// No scheduler by this name runs, so nothing but the test writes the Pod: kube-scheduler would
// mark it Unschedulable (there are no Nodes), moving its resourceVersion under the test.
json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}},
          {"spec",
           {{"schedulerName", "nobody"}, {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

class DevclusterClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_.Start(); }
  static void TearDownTestSuite() { cluster_.Stop(); }

  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.error();
    config_ = cluster_.config();
    client_ = MakeClient(config_, Options());
    proxied_ = MakeClient(cluster_.proxy_config(), Options());
    ns_ = ringleader::testing::NamespaceForCurrentTest();
    ringleader::testing::CreateNamespace(*client_, ns_);
  }
  void TearDown() override {
    if (client_) {
      cluster_->faults().Reset();
      ringleader::testing::DeleteNamespace(*client_, ns_);
    }
  }

  ClientOptions Options() {
    ClientOptions options;
    options.registry = &registry_;
    options.qps = 0;  // the tests below write hundreds of objects
    options.backoff = BackoffPolicy{.initial_delay = milliseconds(5), .multiplier = 2.0,
                                    .max_delay = milliseconds(200), .jitter = 0.2,
                                    .max_attempts = 20, .deadline = milliseconds(60'000)};
    return options;
  }

  inline static ringleader::testing::SharedCluster cluster_;
  Config config_;
  prometheus::Registry registry_;
  std::unique_ptr<Client> client_;   // to the API server
  std::unique_ptr<Client> proxied_;  // through the fault proxy, same registry
  std::string ns_;                   // this TEST's namespace
};

TEST_F(DevclusterClientTest, EveryVerbOnPods) {
  json created = client_->Create(Pods(), ns_, Pod("p1"));
  const std::string uid = created["metadata"]["uid"];
  const std::string rv1 = created["metadata"]["resourceVersion"];
  EXPECT_FALSE(rv1.empty());

  EXPECT_EQ(client_->Get(Pods(), ns_, "p1")["metadata"]["uid"], uid);
  ListOptions by_label;
  by_label.label_selector = "app=x";
  EXPECT_EQ(client_->List(Pods(), ns_, by_label).items.size(), 1u);
  by_label.label_selector = "app=y";
  EXPECT_TRUE(client_->List(Pods(), ns_, by_label).items.empty());
  ListOptions by_field;  // across namespaces
  by_field.field_selector = "metadata.name=p1,metadata.namespace=" + ns_;
  EXPECT_EQ(client_->List(Pods(), "", by_field).items.size(), 1u);

  json updated = created;
  updated["metadata"]["labels"]["tier"] = "a";
  updated = client_->Update(Pods(), ns_, updated);
  EXPECT_NE(updated["metadata"]["resourceVersion"], rv1);

  try {
    client_->Update(Pods(), ns_, created);  // still carries rv1
    FAIL() << "stale update succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
    EXPECT_EQ(e.code(), 409);
  }

  client_->Patch(Pods(), ns_, "p1", PatchType::kMerge, {{"metadata", {{"labels", {{"merged", "yes"}}}}}});
  client_->Patch(Pods(), ns_, "p1", PatchType::kJson,
                 json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"json", "yes"}}}}}));
  client_->Patch(Pods(), ns_, "p1", PatchType::kStrategicMerge,
                 {{"metadata", {{"labels", {{"strategic", "yes"}}}}}});
  json patched = client_->Get(Pods(), ns_, "p1");
  EXPECT_EQ(patched["metadata"]["labels"]["merged"], "yes");
  EXPECT_EQ(patched["metadata"]["labels"]["strategic"], "yes");
  EXPECT_EQ(patched["metadata"]["labels"]["tier"], "a");
  EXPECT_EQ(patched["metadata"]["annotations"]["json"], "yes");

  client_->PatchStatus(Pods(), ns_, "p1", PatchType::kMerge, {{"status", {{"phase", "Running"}}}});
  EXPECT_EQ(client_->Get(Pods(), ns_, "p1")["status"]["phase"], "Running");
  json with_status = client_->Get(Pods(), ns_, "p1");
  with_status["status"]["phase"] = "Succeeded";
  client_->UpdateStatus(Pods(), ns_, with_status);
  EXPECT_EQ(client_->Get(Pods(), ns_, "p1")["status"]["phase"], "Succeeded");

  try {
    client_->Create(Pods(), ns_, Pod("p1"));
    FAIL() << "duplicate create succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsAlreadyExists(e)) << e.what();
  }

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-" + uid;
  try {
    client_->Delete(Pods(), ns_, "p1", wrong_uid);
    FAIL() << "delete with a wrong uid precondition succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }
  // A Pod no Node runs is deleted at once (no grace period to wait out).
  DeleteOptions right_uid;
  right_uid.precondition_uid = uid;
  right_uid.propagation_policy = PropagationPolicy::kBackground;
  client_->Delete(Pods(), ns_, "p1", right_uid);
  try {
    client_->Get(Pods(), ns_, "p1");
    FAIL() << "deleted pod still there";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsNotFound(e)) << e.what();
  }
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "patch"}}), 0);
}

TEST_F(DevclusterClientTest, EveryVerbOnTrainingJobsFromTheCrd) {
  json job = yaml::LoadYamlFile("examples/trainingjob.yaml");
  job["metadata"]["namespace"] = ns_;
  json created = client_->Create(TrainingJobs(), "", job);  // namespace from the object
  EXPECT_EQ(created["metadata"]["namespace"], ns_);
  const std::string name = created["metadata"]["name"];

  EXPECT_EQ(client_->Get(TrainingJobs(), ns_, name)["spec"]["replicas"], 4);
  EXPECT_EQ(ListAll(*client_, TrainingJobs(), ns_).items.size(), 1u);

  // backoffLimit may change while the job runs (replicas may not: a CRD rule).
  json updated = created;
  updated["spec"]["runPolicy"]["backoffLimit"] = 4;
  updated = client_->Update(TrainingJobs(), ns_, updated);
  EXPECT_EQ(updated["spec"]["runPolicy"]["backoffLimit"], 4);
  try {
    client_->Update(TrainingJobs(), ns_, created);
    FAIL() << "stale update succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }

  json status_write = updated;
  status_write["status"] = {{"state", "Pending"}, {"observedGeneration", 1}};
  status_write["spec"]["runPolicy"]["backoffLimit"] = 8;  // ignored by the status subresource
  client_->UpdateStatus(TrainingJobs(), ns_, status_write);
  client_->PatchStatus(TrainingJobs(), ns_, name, PatchType::kMerge, {{"status", {{"state", "Running"}}}});
  json got = client_->Get(TrainingJobs(), ns_, name);
  EXPECT_EQ(got["status"]["state"], "Running");
  EXPECT_EQ(got["status"]["observedGeneration"], 1);
  EXPECT_EQ(got["spec"]["runPolicy"]["backoffLimit"], 4);

  client_->Patch(TrainingJobs(), ns_, name, PatchType::kMerge, {{"spec", {{"runPolicy", {{"backoffLimit", 5}}}}}});
  EXPECT_EQ(client_->Get(TrainingJobs(), ns_, name)["spec"]["runPolicy"]["backoffLimit"], 5);
  client_->Patch(TrainingJobs(), ns_, name, PatchType::kJson,
                 json::array({{{"op", "replace"}, {"path", "/spec/runPolicy/backoffLimit"}, {"value", 6}}}));
  EXPECT_EQ(client_->Get(TrainingJobs(), ns_, name)["spec"]["runPolicy"]["backoffLimit"], 6);
  try {
    client_->Patch(TrainingJobs(), ns_, name, PatchType::kStrategicMerge, {{"spec", {{"replicas", 1}}}});
    FAIL() << "strategic merge on a custom resource succeeded";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupportedMediaType) << e.what();
  }

  client_->Delete(TrainingJobs(), ns_, name);
  try {
    client_->Get(TrainingJobs(), ns_, name);
    FAIL() << "deleted job still there";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsNotFound(e));
  }
}

// The selector keeps the namespace's kube-root-ca.crt ConfigMap out of the count.
TEST_F(DevclusterClientTest, ListAllFollowsContinueTokens) {
  for (int i = 0; i < 7; ++i) {
    client_->Create(ConfigMaps(), ns_, ConfigMap("cm-" + std::to_string(i), i));
  }
  ListOptions options;
  options.limit = 3;
  options.label_selector = "seq";
  ListResult first = client_->List(ConfigMaps(), ns_, options);
  EXPECT_EQ(first.items.size(), 3u);
  EXPECT_FALSE(first.continue_token.empty());
  ListResult all = ListAll(*client_, ConfigMaps(), ns_, options);
  std::set<std::string> names;
  for (const json& item : all.items) {
    names.insert(item["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 7u);
  EXPECT_FALSE(all.resource_version.empty());
}

// Collects reflector output and lets the test wait on it.
class Collector final : public ReflectorHandler {
 public:
  std::function<void(int replaces)> on_replace;

  void OnReplace(const std::vector<json>& items, const std::string&) override {
    int count = 0;
    {
      std::lock_guard lock(mutex);
      replaces.push_back(items);
      count = static_cast<int>(replaces.size());
    }
    if (on_replace) {
      on_replace(count);
    }
    changed.notify_all();
  }
  void OnEvent(const WatchEvent& event) override {
    {
      std::lock_guard lock(mutex);
      events.push_back(event);
    }
    changed.notify_all();
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<json>> replaces;
  std::vector<WatchEvent> events;
};

TEST_F(DevclusterClientTest, CutWatchesResumeWithNoEventMissedOrRepeated) {
  cluster_->faults().CutWatchesEvery(7);
  Collector collector;
  ReflectorOptions options;
  options.resource = ConfigMaps();
  options.ns = ns_;
  options.label_selector = "seq";
  options.backoff.initial_delay = milliseconds(5);
  Reflector reflector(*proxied_, options, collector);
  std::jthread runner([&](std::stop_token stop) { reflector.Run(stop); });
  ASSERT_TRUE(WaitFor(collector.mutex, collector.changed, std::chrono::seconds(30),
                      [&] { return !collector.replaces.empty(); }));

  constexpr int kCount = 200;
  for (int seq = 1; seq <= kCount; ++seq) {
    client_->Create(ConfigMaps(), ns_, ConfigMap("seq-" + std::to_string(seq), seq));
    if (seq % 50 == 0) {
      cluster_->faults().CutWatches();  // also cut between the every-7 cuts
    }
  }
  ASSERT_TRUE(WaitFor(collector.mutex, collector.changed, std::chrono::seconds(60),
                      [&] { return collector.events.size() >= kCount; }))
      << "got " << collector.events.size() << " events";
  runner.request_stop();
  runner.join();

  std::vector<int> seqs;
  for (const WatchEvent& event : collector.events) {
    EXPECT_EQ(event.type, WatchEventType::kAdded);
    seqs.push_back(std::stoi(event.object["data"]["seq"].get<std::string>()));
  }
  std::vector<int> expected(kCount);
  for (int i = 0; i < kCount; ++i) {
    expected[i] = i + 1;
  }
  EXPECT_EQ(seqs, expected) << "events missed, repeated or out of order";
  EXPECT_EQ(reflector.stats().lists, 1) << "a cut must resume, not relist";
  EXPECT_GT(reflector.stats().watches, kCount / 7);
}

TEST_F(DevclusterClientTest, ExpiredVersionRelists) {
  Collector collector;
  // On the first list, make that list's version expire before the watch starts. A write after
  // the compaction (one the reflector's selector leaves out) makes the relist's version newer
  // than the compacted one, so the watch from it is not expired too.
  collector.on_replace = [&](int replaces) {
    if (replaces == 1) {
      proxied_->Create(ConfigMaps(), ns_, ConfigMap("after-list", 1));
      cluster_->faults().Compact();
      client_->Create(ConfigMaps(), ns_, {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "bump"}}}});
    }
  };
  ReflectorOptions options;
  options.resource = ConfigMaps();
  options.ns = ns_;
  options.label_selector = "seq";
  Reflector reflector(*proxied_, options, collector);
  std::jthread runner([&](std::stop_token stop) { reflector.Run(stop); });
  ASSERT_TRUE(WaitFor(collector.mutex, collector.changed, std::chrono::seconds(30),
                      [&] { return collector.replaces.size() >= 2; }));
  runner.request_stop();
  runner.join();
  std::lock_guard lock(collector.mutex);
  EXPECT_TRUE(collector.replaces[0].empty());
  ASSERT_EQ(collector.replaces[1].size(), 1u);
  EXPECT_EQ(collector.replaces[1][0]["metadata"]["name"], "after-list");
  EXPECT_EQ(reflector.stats().relists_on_gone, 1);
}

TEST_F(DevclusterClientTest, WatchFromACompactedVersionIsGone) {
  const std::string old_rv = proxied_->List(ConfigMaps(), ns_).resource_version;
  proxied_->Create(ConfigMaps(), ns_, ConfigMap("x", 1));
  cluster_->faults().Compact();
  WatchOptions options;
  options.resource_version = old_rv;
  bool gone = false;
  try {
    proxied_->Watch(ConfigMaps(), ns_, options, [&](const WatchEvent& event) {
      gone = event.type == WatchEventType::kError && event.object.value("code", 0) == 410;
      return false;
    });
  } catch (const ApiError& e) {
    gone = IsGone(e);
  }
  EXPECT_TRUE(gone);
}

TEST_F(DevclusterClientTest, ServerErrorsAndThrottlingAreRetried) {
  client_->Create(ConfigMaps(), ns_, ConfigMap("target", 1));
  cluster_->faults().SetErrorRate(0.5, 500);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(proxied_->Get(ConfigMaps(), ns_, "target")["metadata"]["name"], "target");
  }
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_retries_total", {{"reason", "server_error"}}), 0);
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "get"}, {"code", "500"}}), 0);

  cluster_->faults().SetErrorRate(0.3, 429);  // with Retry-After: 1
  ListOptions ours;
  ours.label_selector = "seq";  // not the namespace's kube-root-ca.crt
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(proxied_->List(ConfigMaps(), ns_, ours).items.size(), 1u);
  }

  // Always throttled: one retry, after the server's Retry-After, then a typed error.
  cluster_->faults().SetErrorRate(1.0, 429);
  ClientOptions two_tries = Options();
  prometheus::Registry two_tries_registry;
  two_tries.registry = &two_tries_registry;
  two_tries.backoff.max_attempts = 2;
  auto throttled = MakeClient(cluster_.proxy_config(), two_tries);
  const auto started = std::chrono::steady_clock::now();
  try {
    throttled->List(ConfigMaps(), ns_);
    FAIL() << "list succeeded under a 100% 429 rate";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsTooManyRequests(e)) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(950)) << "Retry-After: 1 was not honoured";
  EXPECT_EQ(MetricValue(two_tries_registry, "ringleader_kube_retries_total", {{"reason", "too_many_requests"}}), 1);

  cluster_->faults().SetErrorRate(1.0, 500);
  const double creates_before = MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "create"}});
  try {
    proxied_->Create(ConfigMaps(), ns_, ConfigMap("never", 2));
    FAIL() << "create succeeded under a 100% error rate";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsServerError(e)) << e.what();
  }
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "create"}}), creates_before + 1)
      << "a POST that reached the server must not be retried";
}

TEST_F(DevclusterClientTest, ForcedConflictIsTyped) {
  json cm = proxied_->Create(ConfigMaps(), ns_, ConfigMap("c", 1));
  cluster_->faults().ConflictNextWrites(1);
  cm["data"]["seq"] = "2";
  try {
    proxied_->Update(ConfigMaps(), ns_, cm);
    FAIL() << "forced conflict not reported";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }
  EXPECT_EQ(proxied_->Update(ConfigMaps(), ns_, cm)["data"]["seq"], "2");
}

TEST_F(DevclusterClientTest, RotatedTokenFileIsReread) {
  const auto token_file = cluster_.dir() / (ns_ + "-token");
  std::ofstream(token_file) << "expired-token\n";
  testing::FakeClock clock;
  Config config = config_;
  config.token = std::make_shared<FileTokenSource>(token_file, clock);
  auto client = MakeClient(config, Options());
  try {
    client->List(ConfigMaps(), ns_);
    FAIL() << "a wrong token was accepted";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsUnauthorized(e)) << e.what();
  }

  // Rotation noticed by the once-a-second check, with no 401 on the way.
  std::ofstream(token_file) << cluster_->token() << "\n";
  std::filesystem::last_write_time(token_file,
                                   std::filesystem::last_write_time(token_file) + std::chrono::seconds(2));
  clock.Advance(std::chrono::seconds(1));
  const double unauthorized_before = MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "401"}});
  client->List(ConfigMaps(), ns_);
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "401"}}), unauthorized_before);

  // Rotation noticed at once through a 401, before the next once-a-second check.
  std::ofstream(token_file) << "rotated-away\n";
  std::filesystem::last_write_time(token_file,
                                   std::filesystem::last_write_time(token_file) + std::chrono::seconds(4));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_THROW(client->List(ConfigMaps(), ns_), ApiError);  // now holds a bad token
  std::ofstream(token_file) << cluster_->token() << "\n";
  std::filesystem::last_write_time(token_file,
                                   std::filesystem::last_write_time(token_file) + std::chrono::seconds(6));
  EXPECT_NO_THROW(client->List(ConfigMaps(), ns_));
}

TEST_F(DevclusterClientTest, TlsTrustsOnlyTheConfiguredCa) {
  Config wrong_ca = config_;
  wrong_ca.ca_pem = devcluster::GenerateCertificates({"127.0.0.1"}).ca_cert_pem;
  auto client = MakeClient(wrong_ca, Options());
  try {
    client->Get(ConfigMaps(), ns_, "x");
    FAIL() << "a server signed by another CA was trusted";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConnection(e)) << e.what();
  }
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "error"}}), 1)
      << "a certificate failure must not be retried";

  Config insecure = wrong_ca;
  insecure.insecure_skip_tls_verify = true;
  EXPECT_NO_THROW(MakeClient(insecure, Options())->List(ConfigMaps(), ns_));
}

TEST_F(DevclusterClientTest, InClusterConfigReachesTheCluster) {
  const std::string url = cluster_->url();
  const std::string port = url.substr(url.rfind(':') + 1);
  InClusterOptions options;
  options.service_account_dir = cluster_.dir() / "dc";  // holds ca.crt and token
  options.getenv = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") {
      return "127.0.0.1";
    }
    if (name == "KUBERNETES_SERVICE_PORT") {
      return port;
    }
    return std::nullopt;
  };
  Config config = LoadInCluster(options);
  EXPECT_EQ(config.ns, "default");
  EXPECT_NO_THROW(MakeClient(config, Options())->List(Pods(), ns_));
}

}  // namespace
}  // namespace ringleader::kube
