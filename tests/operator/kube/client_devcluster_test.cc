// The client against the project's in-process API server (devcluster): every verb on Pods and
// on TrainingJobs served from the real CRD, typed conflicts, watch cuts resumed with no event
// missed or repeated, 410 relists, injected 500s/429s retried, token rotation and TLS trust.
// No mocks: real HTTPS, real watch streams.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/watch_loop.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/devcluster.h"
#include "tests/operator/kube/fake_clock.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

std::filesystem::path MakeTempDir() {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() /
             ("ringleader-kube-it-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir;
}

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

json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}},
          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

class DevclusterClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    cluster_ = devcluster::DevCluster::Start(devcluster::Options{.data_dir = (dir_ / "dc").string()});
    config_ = LoadKubeconfig(cluster_->kubeconfig_path());
    client_ = MakeClient(config_, Options());
  }
  void TearDown() override {
    client_.reset();
    cluster_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
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

  void ApplyTrainingJobCrd() {
    json crd = yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml");
    client_->Create(CustomResourceDefinitions(), "", crd);
    json got = client_->Get(CustomResourceDefinitions(), "", "trainingjobs.ringleader.dev");
    ASSERT_EQ(got["spec"]["group"], "ringleader.dev");
  }

  std::filesystem::path dir_;
  std::unique_ptr<devcluster::DevCluster> cluster_;
  Config config_;
  prometheus::Registry registry_;
  std::unique_ptr<Client> client_;
};

TEST_F(DevclusterClientTest, EveryVerbOnPods) {
  json created = client_->Create(Pods(), "default", Pod("p1"));
  const std::string uid = created["metadata"]["uid"];
  const std::string rv1 = created["metadata"]["resourceVersion"];
  EXPECT_FALSE(rv1.empty());

  EXPECT_EQ(client_->Get(Pods(), "default", "p1")["metadata"]["uid"], uid);
  ListOptions by_label;
  by_label.label_selector = "app=x";
  EXPECT_EQ(client_->List(Pods(), "default", by_label).items.size(), 1u);
  by_label.label_selector = "app=y";
  EXPECT_TRUE(client_->List(Pods(), "default", by_label).items.empty());
  ListOptions by_field;
  by_field.field_selector = "metadata.name=p1";
  EXPECT_EQ(client_->List(Pods(), "", by_field).items.size(), 1u);

  json updated = created;
  updated["metadata"]["labels"]["tier"] = "a";
  updated = client_->Update(Pods(), "default", updated);
  EXPECT_NE(updated["metadata"]["resourceVersion"], rv1);

  try {
    client_->Update(Pods(), "default", created);  // still carries rv1
    FAIL() << "stale update succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
    EXPECT_EQ(e.code(), 409);
  }

  client_->Patch(Pods(), "default", "p1", PatchType::kMerge,
                 {{"metadata", {{"labels", {{"merged", "yes"}}}}}});
  client_->Patch(Pods(), "default", "p1", PatchType::kJson,
                 json::array({{{"op", "add"}, {"path", "/metadata/annotations"},
                               {"value", {{"json", "yes"}}}}}));
  client_->Patch(Pods(), "default", "p1", PatchType::kStrategicMerge,
                 {{"metadata", {{"labels", {{"strategic", "yes"}}}}}});
  json patched = client_->Get(Pods(), "default", "p1");
  EXPECT_EQ(patched["metadata"]["labels"]["merged"], "yes");
  EXPECT_EQ(patched["metadata"]["labels"]["strategic"], "yes");
  EXPECT_EQ(patched["metadata"]["labels"]["tier"], "a");
  EXPECT_EQ(patched["metadata"]["annotations"]["json"], "yes");

  client_->PatchStatus(Pods(), "default", "p1", PatchType::kMerge,
                       {{"status", {{"phase", "Running"}}}});
  EXPECT_EQ(client_->Get(Pods(), "default", "p1")["status"]["phase"], "Running");
  json with_status = client_->Get(Pods(), "default", "p1");
  with_status["status"]["phase"] = "Succeeded";
  client_->UpdateStatus(Pods(), "default", with_status);
  EXPECT_EQ(client_->Get(Pods(), "default", "p1")["status"]["phase"], "Succeeded");

  try {
    client_->Create(Pods(), "default", Pod("p1"));
    FAIL() << "duplicate create succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsAlreadyExists(e)) << e.what();
  }

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-" + uid;
  try {
    client_->Delete(Pods(), "default", "p1", wrong_uid);
    FAIL() << "delete with a wrong uid precondition succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }
  DeleteOptions right_uid;
  right_uid.precondition_uid = uid;
  right_uid.propagation_policy = PropagationPolicy::kBackground;
  client_->Delete(Pods(), "default", "p1", right_uid);
  try {
    client_->Get(Pods(), "default", "p1");
    FAIL() << "deleted pod still there";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsNotFound(e)) << e.what();
  }
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "patch"}}), 0);
}

TEST_F(DevclusterClientTest, EveryVerbOnTrainingJobsFromTheCrd) {
  ApplyTrainingJobCrd();
  json job = yaml::LoadYamlFile("examples/trainingjob.yaml");
  json created = client_->Create(TrainingJobs(), "", job);  // namespace from the object
  EXPECT_EQ(created["metadata"]["namespace"], "default");
  const std::string name = created["metadata"]["name"];

  EXPECT_EQ(client_->Get(TrainingJobs(), "default", name)["spec"]["replicas"], 4);
  EXPECT_EQ(ListAll(*client_, TrainingJobs(), "default").items.size(), 1u);

  // backoffLimit may change while the job runs (replicas may not: a CRD rule).
  json updated = created;
  updated["spec"]["runPolicy"]["backoffLimit"] = 4;
  updated = client_->Update(TrainingJobs(), "default", updated);
  EXPECT_EQ(updated["spec"]["runPolicy"]["backoffLimit"], 4);
  try {
    client_->Update(TrainingJobs(), "default", created);
    FAIL() << "stale update succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }

  json status_write = updated;
  status_write["status"] = {{"state", "Pending"}, {"observedGeneration", 1}};
  status_write["spec"]["runPolicy"]["backoffLimit"] = 8;  // ignored by the status subresource
  client_->UpdateStatus(TrainingJobs(), "default", status_write);
  client_->PatchStatus(TrainingJobs(), "default", name, PatchType::kMerge,
                       {{"status", {{"state", "Running"}}}});
  json got = client_->Get(TrainingJobs(), "default", name);
  EXPECT_EQ(got["status"]["state"], "Running");
  EXPECT_EQ(got["status"]["observedGeneration"], 1);
  EXPECT_EQ(got["spec"]["runPolicy"]["backoffLimit"], 4);

  client_->Patch(TrainingJobs(), "default", name, PatchType::kMerge,
                 {{"spec", {{"runPolicy", {{"backoffLimit", 5}}}}}});
  EXPECT_EQ(client_->Get(TrainingJobs(), "default", name)["spec"]["runPolicy"]["backoffLimit"], 5);
  client_->Patch(TrainingJobs(), "default", name, PatchType::kJson,
                 json::array({{{"op", "replace"}, {"path", "/spec/runPolicy/backoffLimit"}, {"value", 6}}}));
  EXPECT_EQ(client_->Get(TrainingJobs(), "default", name)["spec"]["runPolicy"]["backoffLimit"], 6);
  try {
    client_->Patch(TrainingJobs(), "default", name, PatchType::kStrategicMerge,
                   {{"spec", {{"replicas", 1}}}});
    FAIL() << "strategic merge on a custom resource succeeded";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupportedMediaType) << e.what();
  }

  client_->Delete(TrainingJobs(), "default", name);
  try {
    client_->Get(TrainingJobs(), "default", name);
    FAIL() << "deleted job still there";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsNotFound(e));
  }
}

TEST_F(DevclusterClientTest, ListAllFollowsContinueTokens) {
  for (int i = 0; i < 7; ++i) {
    client_->Create(ConfigMaps(), "default", ConfigMap("cm-" + std::to_string(i), i));
  }
  ListOptions options;
  options.limit = 3;
  ListResult first = client_->List(ConfigMaps(), "default", options);
  EXPECT_EQ(first.items.size(), 3u);
  EXPECT_FALSE(first.continue_token.empty());
  ListResult all = ListAll(*client_, ConfigMaps(), "default", options);
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
  options.ns = "default";
  options.label_selector = "seq";
  options.backoff.initial_delay = milliseconds(5);
  Reflector reflector(*client_, options, collector);
  std::jthread runner([&](std::stop_token stop) { reflector.Run(stop); });
  ASSERT_TRUE(WaitFor(collector.mutex, collector.changed, std::chrono::seconds(30),
                      [&] { return !collector.replaces.empty(); }));

  constexpr int kCount = 200;
  for (int seq = 1; seq <= kCount; ++seq) {
    client_->Create(ConfigMaps(), "default", ConfigMap("seq-" + std::to_string(seq), seq));
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
  // On the first list, make that list's version expire before the watch starts.
  collector.on_replace = [&](int replaces) {
    if (replaces == 1) {
      client_->Create(ConfigMaps(), "default", ConfigMap("after-list", 1));
      cluster_->faults().Compact();
    }
  };
  ReflectorOptions options;
  options.resource = ConfigMaps();
  options.ns = "default";
  Reflector reflector(*client_, options, collector);
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
  const std::string old_rv = client_->List(ConfigMaps(), "default").resource_version;
  client_->Create(ConfigMaps(), "default", ConfigMap("x", 1));
  cluster_->faults().Compact();
  WatchOptions options;
  options.resource_version = old_rv;
  bool gone = false;
  try {
    client_->Watch(ConfigMaps(), "default", options, [&](const WatchEvent& event) {
      gone = event.type == WatchEventType::kError && event.object.value("code", 0) == 410;
      return false;
    });
  } catch (const ApiError& e) {
    gone = IsGone(e);
  }
  EXPECT_TRUE(gone);
}

TEST_F(DevclusterClientTest, ServerErrorsAndThrottlingAreRetried) {
  client_->Create(ConfigMaps(), "default", ConfigMap("target", 1));
  cluster_->faults().SetErrorRate(0.5, 500);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(client_->Get(ConfigMaps(), "default", "target")["metadata"]["name"], "target");
  }
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_retries_total", {{"reason", "server_error"}}),
            0);
  EXPECT_GT(MetricValue(registry_, "ringleader_kube_requests_total",
                        {{"verb", "get"}, {"code", "500"}}),
            0);

  cluster_->faults().SetErrorRate(0.3, 429);  // with Retry-After: 1
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(client_->List(ConfigMaps(), "default").items.size(), 1u);
  }

  // Always throttled: one retry, after the server's Retry-After, then a typed error.
  cluster_->faults().SetErrorRate(1.0, 429);
  ClientOptions two_tries = Options();
  prometheus::Registry two_tries_registry;
  two_tries.registry = &two_tries_registry;
  two_tries.backoff.max_attempts = 2;
  auto throttled = MakeClient(config_, two_tries);
  const auto started = std::chrono::steady_clock::now();
  try {
    throttled->List(ConfigMaps(), "default");
    FAIL() << "list succeeded under a 100% 429 rate";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsTooManyRequests(e)) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(950))
      << "Retry-After: 1 was not honoured";
  EXPECT_EQ(MetricValue(two_tries_registry, "ringleader_kube_retries_total",
                        {{"reason", "too_many_requests"}}),
            1);

  cluster_->faults().SetErrorRate(1.0, 500);
  const double creates_before =
      MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "create"}});
  try {
    client_->Create(ConfigMaps(), "default", ConfigMap("never", 2));
    FAIL() << "create succeeded under a 100% error rate";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsServerError(e)) << e.what();
  }
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"verb", "create"}}),
            creates_before + 1)
      << "a POST that reached the server must not be retried";
  cluster_->faults().Reset();
}

TEST_F(DevclusterClientTest, ForcedConflictIsTyped) {
  json cm = client_->Create(ConfigMaps(), "default", ConfigMap("c", 1));
  cluster_->faults().ConflictNextWrites(1);
  cm["data"]["seq"] = "2";
  try {
    client_->Update(ConfigMaps(), "default", cm);
    FAIL() << "forced conflict not reported";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }
  EXPECT_EQ(client_->Update(ConfigMaps(), "default", cm)["data"]["seq"], "2");
}

TEST_F(DevclusterClientTest, RotatedTokenFileIsReread) {
  const auto token_file = dir_ / "rotating-token";
  std::ofstream(token_file) << "expired-token\n";
  testing::FakeClock clock;
  Config config = config_;
  config.token = std::make_shared<FileTokenSource>(token_file, clock);
  auto client = MakeClient(config, Options());
  try {
    client->List(ConfigMaps(), "default");
    FAIL() << "a wrong token was accepted";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsUnauthorized(e)) << e.what();
  }

  // Rotation noticed by the once-a-second check, with no 401 on the way.
  std::ofstream(token_file) << cluster_->token() << "\n";
  std::filesystem::last_write_time(
      token_file, std::filesystem::last_write_time(token_file) + std::chrono::seconds(2));
  clock.Advance(std::chrono::seconds(1));
  const double unauthorized_before =
      MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "401"}});
  client->List(ConfigMaps(), "default");
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "401"}}),
            unauthorized_before);

  // Rotation noticed at once through a 401, before the next once-a-second check.
  std::ofstream(token_file) << "rotated-away\n";
  std::filesystem::last_write_time(
      token_file, std::filesystem::last_write_time(token_file) + std::chrono::seconds(4));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_THROW(client->List(ConfigMaps(), "default"), ApiError);  // now holds a bad token
  std::ofstream(token_file) << cluster_->token() << "\n";
  std::filesystem::last_write_time(
      token_file, std::filesystem::last_write_time(token_file) + std::chrono::seconds(6));
  EXPECT_NO_THROW(client->List(ConfigMaps(), "default"));
}

TEST_F(DevclusterClientTest, TlsTrustsOnlyTheConfiguredCa) {
  auto other = devcluster::DevCluster::Start(
      devcluster::Options{.data_dir = (dir_ / "other").string()});
  Config wrong_ca = config_;
  wrong_ca.ca_pem = other->ca_pem();
  auto client = MakeClient(wrong_ca, Options());
  try {
    client->Get(ConfigMaps(), "default", "x");
    FAIL() << "a server signed by another CA was trusted";
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConnection(e)) << e.what();
  }
  EXPECT_EQ(MetricValue(registry_, "ringleader_kube_requests_total", {{"code", "error"}}), 1)
      << "a certificate failure must not be retried";

  Config insecure = wrong_ca;
  insecure.insecure_skip_tls_verify = true;
  EXPECT_NO_THROW(MakeClient(insecure, Options())->List(ConfigMaps(), "default"));
  other->Stop();
}

TEST_F(DevclusterClientTest, InClusterConfigReachesTheCluster) {
  const std::string url = cluster_->url();
  const std::string port = url.substr(url.rfind(':') + 1);
  InClusterOptions options;
  options.service_account_dir = dir_ / "dc";  // holds ca.crt and token
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
  EXPECT_NO_THROW(MakeClient(config, Options())->List(Pods(), "default"));
}

}  // namespace
}  // namespace ringleader::kube
