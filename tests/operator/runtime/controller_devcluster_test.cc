// The controller against devcluster's real API server (real HTTPS, real watches, no mocks): a
// TrainingJob's Service, Secret and Pods appear with the exact contract; its ports reach status
// before any Pod exists; Pod phases driven here as a kubelet would (there are no Nodes, so the
// Pods stay Pending until the test writes their status) move it to Running and Succeeded; a
// failed Pod restarts the gang; backoffLimit ends it; suspend/resume; deletion frees its ports;
// hostile objects are reported and the operator keeps running; it converges through the fault
// proxy's cut watches, 500s, 410s and conflicts; /healthz names a wedged reconcile or informer
// and an idle operator stays live. One cluster serves every TEST, each with its own namespace
// and a controller that watches only that namespace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

// After gtest: cpprestsdk defines a U() macro that clashes with gtest's template parameters.
#include <cpprest/http_client.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/runtime/controller.h"
#include "operator/runtime/health_server.h"
#include "operator/runtime/operator_metrics.h"
#include "tests/devcluster/devcluster.h"
#include "tests/operator/kube/fake_clock.h"
#include "tests/devcluster/shared_cluster.h"
#include "tests/support/metric_series.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Env(const json& container, const std::string& name) {
  for (const json& entry : container.value("env", json::array())) {
    if (entry.value("name", "") == name) {
      return entry.value("value", "<from>");
    }
  }
  return "<unset>";
}

const json* Condition(const json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) {
    return nullptr;
  }
  for (const json& condition : job["status"]["conditions"]) {
    if (condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool ConditionTrue(const json& job, const std::string& type) {
  const json* condition = Condition(job, type);
  return condition != nullptr && condition->value("status", "") == "True";
}

// The operator's client, counting the watches each resource's informer starts, and able to hold
// every Pod create (a wedged reconcile) or one resource's watches (a wedged informer) until
// released. WaitFor re-checks its condition after every call the operator makes.
class RecordingClient final : public kube::Client {
 public:
  explicit RecordingClient(std::unique_ptr<kube::Client> inner) : inner_(std::move(inner)) {}

  void HoldPodCreates() {
    std::lock_guard lock(mutex_);
    hold_pod_creates_ = true;
  }
  void HoldWatchesOf(const std::string& plural) {
    std::lock_guard lock(mutex_);
    held_watches_of_ = plural;
  }
  void ReleaseAll() {
    std::lock_guard lock(mutex_);
    hold_pod_creates_ = false;
    held_watches_of_.clear();
    changed_.notify_all();
  }
  int PodCreatesHeld() {
    std::lock_guard lock(mutex_);
    return pod_creates_held_;
  }
  // Pod creates the operator sent, whatever the answer.
  int PodCreates() {
    std::lock_guard lock(mutex_);
    return pod_creates_;
  }
  std::map<std::string, int> WatchesStarted() {
    std::lock_guard lock(mutex_);
    return watches_started_;
  }

  // Waits until `condition` holds, checking it again after each call the operator makes.
  bool WaitFor(const std::function<bool()>& condition, seconds timeout = seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    while (true) {
      const std::uint64_t calls = calls_;
      lock.unlock();
      if (condition()) {
        return true;
      }
      lock.lock();
      if (!changed_.wait_until(lock, deadline, [&] { return calls_ != calls; })) {
        return false;
      }
    }
  }

  json Get(const kube::Resource& resource, const std::string& ns, const std::string& name) override {
    Record();
    return inner_->Get(resource, ns, name);
  }
  kube::ListResult List(const kube::Resource& resource, const std::string& ns,
                        const kube::ListOptions& options) override {
    Record();
    return inner_->List(resource, ns, options);
  }
  json Create(const kube::Resource& resource, const std::string& ns, const json& object) override {
    if (resource == kube::Pods()) {
      std::unique_lock lock(mutex_);
      ++pod_creates_;
      if (hold_pod_creates_) {
        ++pod_creates_held_;
        ++calls_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !hold_pod_creates_; });
      }
    }
    Record();
    return inner_->Create(resource, ns, object);
  }
  json Update(const kube::Resource& resource, const std::string& ns, const json& object) override {
    Record();
    return inner_->Update(resource, ns, object);
  }
  json UpdateStatus(const kube::Resource& resource, const std::string& ns, const json& object) override {
    Record();
    return inner_->UpdateStatus(resource, ns, object);
  }
  json Patch(const kube::Resource& resource, const std::string& ns, const std::string& name,
             kube::PatchType type, const json& patch) override {
    Record();
    return inner_->Patch(resource, ns, name, type, patch);
  }
  json PatchStatus(const kube::Resource& resource, const std::string& ns, const std::string& name,
                   kube::PatchType type, const json& patch) override {
    Record();
    return inner_->PatchStatus(resource, ns, name, type, patch);
  }
  json Delete(const kube::Resource& resource, const std::string& ns, const std::string& name,
              const kube::DeleteOptions& options) override {
    Record();
    return inner_->Delete(resource, ns, name, options);
  }
  kube::WatchEnd Watch(const kube::Resource& resource, const std::string& ns,
                       const kube::WatchOptions& options, const kube::WatchCallback& callback,
                       std::stop_token stop) override {
    {
      std::unique_lock lock(mutex_);
      ++watches_started_[resource.plural];
      ++calls_;
      changed_.notify_all();
      if (!changed_.wait(lock, stop, [&] { return held_watches_of_ != resource.plural; })) {
        return kube::WatchEnd::kStopped;  // held until the informer stopped
      }
    }
    return inner_->Watch(resource, ns, options, callback, stop);
  }

 private:
  void Record() {
    std::lock_guard lock(mutex_);
    ++calls_;
    changed_.notify_all();
  }

  std::unique_ptr<kube::Client> inner_;
  std::mutex mutex_;
  std::condition_variable_any changed_;  // any: a held watch also ends on its stop token
  std::uint64_t calls_ = 0;
  bool hold_pod_creates_ = false;
  int pod_creates_held_ = 0;
  int pod_creates_ = 0;
  std::string held_watches_of_;
  std::map<std::string, int> watches_started_;
};

struct HttpAnswer {
  int code = 0;
  std::string body;
};

HttpAnswer Healthz(const HealthServer& server) {
  web::http::client::http_client client("http://127.0.0.1:" + std::to_string(server.port()));
  const web::http::http_response response = client.request(web::http::methods::GET, "/healthz").get();
  return {response.status_code(), response.extract_string(true).get()};
}

class ControllerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_.Start(); }
  static void TearDownTestSuite() { cluster_.Stop(); }

  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.error();
    client_ = OperatorClient();
    ns_ = testing::NamespaceForCurrentTest();
    CreateNamespace(ns_);
  }

  // Creates a namespace for this TEST (ready for Pods); TearDown deletes it.
  void CreateNamespace(const std::string& name) {
    testing::CreateNamespace(*client_, name);
    namespaces_.push_back(name);
  }

  json Job(const std::string& name, int replicas) const {
    return {{"apiVersion", "ringleader.dev/v1alpha1"},
            {"kind", "TrainingJob"},
            {"metadata", {{"name", name}, {"namespace", ns_}}},
            {"spec",
             {{"replicas", replicas},
              {"template",
               {{"spec", {{"containers", json::array({{{"name", "trainer"}, {"image", "example/trainer:1"}}})}}}}}}}};
  }

  // `namespaces` empty: this TEST's own (the cluster holds the jobs of the TESTs before it).
  void StartController(ports::PortRange range = {61000, 61099}, std::vector<std::string> namespaces = {},
                       const std::function<void(ControllerOptions&)>& adjust = nullptr) {
    ControllerOptions options;
    options.namespaces = namespaces.empty() ? std::vector<std::string>{ns_} : std::move(namespaces);
    options.port_range = range;
    options.planner.validation.port_range_first = range.first;
    options.planner.validation.port_range_last = range.last;
    options.workers = 2;
    options.queue.base_delay = milliseconds(5);
    options.queue.max_delay = milliseconds(500);
    if (adjust) {
      adjust(options);
    }
    if (!operator_client_) {
      operator_client_ = OperatorClient();
    }
    metrics_ = std::make_unique<OperatorMetrics>(registry_);
    controller_ = std::make_unique<Controller>(*operator_client_, options, logger_, metrics_.get(), nullptr);
    thread_ = std::jthread([this](std::stop_token stop) { controller_->Run(stop); });
  }

  static std::unique_ptr<kube::Client> OperatorClient(bool through_fault_proxy = false) {
    kube::ClientOptions client_options;
    client_options.qps = 0;
    return kube::MakeClient(through_fault_proxy ? cluster_.proxy_config() : cluster_.config(), client_options);
  }

  // Makes the next StartController's client reach the API server through the fault proxy.
  void OperatorThroughFaultProxy() { operator_client_ = OperatorClient(true); }

  // Makes the next StartController's client a RecordingClient, returned to set its holds.
  RecordingClient& RecordOperatorCalls() {
    auto recording = std::make_unique<RecordingClient>(OperatorClient());
    recording_ = recording.get();
    operator_client_ = std::move(recording);
    return *recording_;
  }

  // The controller on clock_ with a health server, its watches reopened every second so that
  // informers that work keep stepping while the test moves the clock.
  void StartLiveController(LivenessOptions liveness) {
    StartController({61000, 61099}, {}, [&](ControllerOptions& options) {
      options.clock = &clock_;
      options.liveness = liveness;
      options.watch_timeout_seconds = 1;
    });
    health_ = std::make_unique<HealthServer>("127.0.0.1", 0, [this] { return controller_->NotReadyReason(); },
                                             [this] { return controller_->NotLiveReason(); });
  }

  // Waits until every informer has opened a watch since `before` (RecordingClient::WatchesStarted).
  bool WaitForNewWatches(const std::map<std::string, int>& before, const std::vector<std::string>& plurals) {
    return recording_->WaitFor([&] {
      const std::map<std::string, int> now = recording_->WatchesStarted();
      return std::all_of(plurals.begin(), plurals.end(), [&](const std::string& plural) {
        const auto was = before.find(plural);
        const auto is = now.find(plural);
        return is != now.end() && (was == before.end() || is->second > was->second);
      });
    });
  }

  void TearDown() override {
    if (recording_ != nullptr) {
      recording_->ReleaseAll();  // a held Pod create would keep a worker from stopping
    }
    health_.reset();
    thread_.request_stop();
    if (thread_.joinable()) {
      thread_.join();
    }
    if (HasFailure()) {
      const std::string log = log_stream_.str();
      std::cerr << "operator log (last 6000 bytes):\n" << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
    }
    controller_.reset();
    if (client_) {
      cluster_->faults().Reset();
      for (const std::string& name : namespaces_) {
        testing::DeleteNamespace(*client_, name);
      }
    }
  }

  // Polls the API (not the operator's caches) until `predicate` holds.
  bool Eventually(const std::function<bool()>& predicate, seconds timeout = seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        if (predicate()) {
          return true;
        }
      } catch (const kube::ApiError&) {
        // not there yet
      }
      std::this_thread::sleep_for(milliseconds(25));
    }
    return false;
  }

  json GetJob(const std::string& name) { return client_->Get(kube::TrainingJobs(), ns_, name); }

  std::vector<json> Pods(const std::string& job) {
    kube::ListOptions options;
    options.label_selector = "ringleader.dev/job-name=" + job;
    return client_->List(kube::Pods(), ns_, options).items;
  }

  // Sets a Pod's status as the kubelet would: phase, the init containers (a Pod whose trainers
  // run or ran has its sidecar started and its preflight exited 0), Ready.
  void SetPodStatus(const std::string& name, const std::string& phase, int exit_code = 0) {
    json status = {{"phase", phase},
                   {"initContainerStatuses", InitStatuses(phase != "Pending")},
                   {"conditions", json::array({{{"type", "Ready"}, {"status", phase == "Running" ? "True" : "False"}}})}};
    if (phase == "Failed") {
      status["containerStatuses"] = json::array(
          {{{"name", "trainer"}, {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}}}}}}});
    }
    client_->PatchStatus(kube::Pods(), ns_, name, kube::PatchType::kMerge, {{"status", status}});
  }

  // Flips a running Pod's Ready condition, as a failing readiness probe would: a status change
  // that leaves the phase and the container states alone.
  void SetPodReady(const std::string& name, bool ready) {
    client_->PatchStatus(
        kube::Pods(), ns_, name, kube::PatchType::kMerge,
        {{"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}});
  }

  static json InitStatuses(bool trainers_started) {
    json preflight = {{"name", "ringleader-preflight"}, {"ready", false}};
    preflight["state"] = trainers_started ? json{{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}
                                          : json{{"waiting", {{"reason", "PodInitializing"}}}};
    return json::array({{{"name", "ringleader-sidecar"}, {"started", trainers_started}, {"ready", trainers_started}},
                        preflight});
  }

  // Finished Pods stay as they are, as a kubelet leaves them (a restart's kept Pod among them).
  void SetAllPods(const std::string& job, const std::string& phase) {
    for (const json& pod : Pods(job)) {
      const std::string current = pod.value("status", json::object()).value("phase", "");
      if (current != "Failed" && current != "Succeeded") {
        SetPodStatus(pod["metadata"]["name"], phase);
      }
    }
  }

  std::vector<json> Events(const std::string& reason) {
    std::vector<json> found;
    for (const json& event : client_->List(kube::Events(), ns_).items) {
      if (event.value("reason", "") == reason) {
        found.push_back(event);
      }
    }
    return found;
  }

  inline static testing::SharedCluster cluster_;
  std::string ns_;                       // this TEST's namespace
  std::vector<std::string> namespaces_;  // every namespace it made, ns_ first
  std::unique_ptr<kube::Client> client_;  // the test's own, to the API server
  std::unique_ptr<kube::Client> operator_client_;
  std::ostringstream log_stream_;
  Logger logger_{LogFormat::kJson, &log_stream_};
  prometheus::Registry registry_;
  std::unique_ptr<OperatorMetrics> metrics_;
  kube::testing::FakeClock clock_;          // only with StartLiveController
  RecordingClient* recording_ = nullptr;     // only with RecordOperatorCalls; operator_client_
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<HealthServer> health_;     // only with StartLiveController
  std::jthread thread_;
};

TEST_F(ControllerTest, CreatesChildrenWithTheContractAndPortsBeforePods) {
  // Every TrainingJob and Pod change, in resourceVersion order (the versions are etcd's revision,
  // one counter for the whole store), so "ports in status before any Pod" is checked on the
  // server's own order.
  std::mutex mutex;
  std::int64_t ports_rv = 0;
  std::int64_t first_pod_rv = 0;
  std::jthread job_watch([&](std::stop_token stop) {
    kube::WatchOptions options;
    options.resource_version = "0";
    client_->Watch(kube::TrainingJobs(), ns_, options, [&](const kube::WatchEvent& event) {
      if (event.object.contains("status") && event.object["status"].contains("ports")) {
        std::lock_guard lock(mutex);
        const std::int64_t rv = std::stoll(kube::ResourceVersionOf(event.object));
        ports_rv = ports_rv == 0 ? rv : std::min(ports_rv, rv);
      }
      return true;
    }, stop);
  });
  std::jthread pod_watch([&](std::stop_token stop) {
    kube::WatchOptions options;
    options.resource_version = "0";
    client_->Watch(kube::Pods(), ns_, options, [&](const kube::WatchEvent& event) {
      std::lock_guard lock(mutex);
      const std::int64_t rv = std::stoll(kube::ResourceVersionOf(event.object));
      first_pod_rv = first_pod_rv == 0 ? rv : std::min(first_pod_rv, rv);
      return true;
    }, stop);
  });
  StartController();
  client_->Create(kube::TrainingJobs(), ns_, Job("demo", 4));
  ASSERT_TRUE(Eventually([&] { return Pods("demo").size() == 4; }));

  const json job = GetJob("demo");
  const json& ports = job["status"]["ports"];
  ASSERT_TRUE(ports.is_object()) << job.dump();
  EXPECT_GE(ports["master"].get<int>(), 61000);
  EXPECT_EQ(ports["rendezvous"].get<int>(), ports["master"].get<int>() + 1);
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mutex);
    return ports_rv > 0 && first_pod_rv > 0;
  }));
  {
    std::lock_guard lock(mutex);
    EXPECT_LT(ports_rv, first_pod_rv) << "the ports must be in status before the first Pod exists";
  }

  const json service = client_->Get(kube::Services(), ns_, "demo");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  const json secret = client_->Get(kube::Secrets(), ns_, "demo-ringleader-token");
  EXPECT_FALSE(secret["data"]["token"].get<std::string>().empty());

  const json pod = client_->Get(kube::Pods(), ns_, "demo-1");
  const json& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(Env(trainer, "RANK"), "1");
  EXPECT_EQ(Env(trainer, "WORLD_SIZE"), "4");
  EXPECT_EQ(Env(trainer, "MASTER_PORT"), std::to_string(ports["master"].get<int>()));
  EXPECT_EQ(Env(trainer, "MASTER_ADDR"), "demo-0.demo." + ns_ + ".svc.cluster.local");
  const json& sidecar = pod["spec"]["initContainers"].front();
  EXPECT_EQ(sidecar["name"], "ringleader-sidecar");
  EXPECT_EQ(sidecar["restartPolicy"], "Always");
  EXPECT_EQ(Env(sidecar, "RINGLEADER_RENDEZVOUS_PORT"), std::to_string(ports["rendezvous"].get<int>()));
  EXPECT_EQ(Env(sidecar, "RINGLEADER_MODE"), "sidecar");
  const json& preflight = pod["spec"]["initContainers"].back();
  EXPECT_EQ(preflight["name"], "ringleader-preflight");
  EXPECT_FALSE(preflight.contains("restartPolicy"));
  EXPECT_EQ(Env(preflight, "RINGLEADER_MODE"), "pod-preflight");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_TRUE(Eventually([&] { return !Events("PortsAssigned").empty() && !Events("PodsCreated").empty(); }));
}

TEST_F(ControllerTest, DrivenPhasesMoveTheJobToRunningThenSucceeded) {
  StartController();
  client_->Create(kube::TrainingJobs(), ns_, Job("phases", 3));
  ASSERT_TRUE(Eventually([&] { return Pods("phases").size() == 3; }));
  SetAllPods("phases", "Running");
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("phases"), "Running"); }))
      << GetJob("phases")["status"].dump();
  EXPECT_EQ(GetJob("phases")["status"]["state"], "Running");
  SetAllPods("phases", "Succeeded");
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("phases"), "Succeeded"); }));
  const json job = GetJob("phases");
  EXPECT_EQ(job["status"]["state"], "Succeeded");
  EXPECT_FALSE(ConditionTrue(job, "Running"));
}

TEST_F(ControllerTest, AFailedPodRestartsTheGangAndBackoffLimitFailsTheJob) {
  StartController();
  json spec = Job("gang", 3);
  spec["spec"]["runPolicy"]["backoffLimit"] = 1;
  client_->Create(kube::TrainingJobs(), ns_, spec);
  ASSERT_TRUE(Eventually([&] { return Pods("gang").size() == 3; }));
  SetAllPods("gang", "Running");
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("gang"), "Running"); }));
  SetPodStatus("gang-2", "Failed", 137);
  // Every rank restarts, not only the failed one, under its attempt's name; the failed rank's
  // Pod of attempt 0 stays for kubectl logs.
  ASSERT_TRUE(Eventually([&] {
    std::set<std::string> names;
    for (const json& pod : Pods("gang")) {
      names.insert(pod["metadata"]["name"].get<std::string>() + "@" +
                   pod["metadata"]["labels"]["ringleader.dev/attempt"].get<std::string>());
    }
    return names == std::set<std::string>{"gang-0-attempt-1@1", "gang-1-attempt-1@1", "gang-2-attempt-1@1",
                                          "gang-2@0"};
  }));
  json job = GetJob("gang");
  EXPECT_EQ(job["status"]["restarts"], 1);
  // The Event follows the status write that announced the restart.
  ASSERT_TRUE(Eventually([&] { return Events("Restarting").size() == 1; }));
  const auto restarting = Events("Restarting");
  EXPECT_EQ(restarting[0]["type"], "Warning");
  EXPECT_NE(restarting[0]["message"].get<std::string>().find("gang-2"), std::string::npos)
      << restarting[0]["message"];
  const json* condition = Condition(job, "Restarting");
  ASSERT_NE(condition, nullptr);
  EXPECT_NE(condition->value("message", "").find("gang-2"), std::string::npos) << condition->dump();
  EXPECT_NE(condition->value("message", "").find("137"), std::string::npos) << condition->dump();

  SetAllPods("gang", "Running");
  SetPodStatus("gang-1-attempt-1", "Failed", 1);
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("gang"), "Failed"); }));
  job = GetJob("gang");
  EXPECT_EQ(job["status"]["state"], "Failed");
  EXPECT_EQ(Condition(job, "Failed")->value("reason", ""), "BackoffLimitExceeded");
  EXPECT_NE(Condition(job, "Failed")->value("message", "").find("gang-1"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return Events("Failed").size() == 1; }));
  const auto failed_events = Events("Failed");
  EXPECT_TRUE(failed_events[0]["message"].get<std::string>().starts_with("BackoffLimitExceeded: "))
      << failed_events[0]["message"];
}

TEST_F(ControllerTest, SuspendDeletesPodsAndResumeBringsThemBackOnTheSamePorts) {
  StartController();
  client_->Create(kube::TrainingJobs(), ns_, Job("pause", 2));
  ASSERT_TRUE(Eventually([&] { return Pods("pause").size() == 2; }));
  const json ports = GetJob("pause")["status"]["ports"];
  client_->Patch(kube::TrainingJobs(), ns_, "pause", kube::PatchType::kMerge,
                 {{"spec", {{"runPolicy", {{"suspend", true}}}}}});
  ASSERT_TRUE(Eventually([&] { return Pods("pause").empty() && ConditionTrue(GetJob("pause"), "Suspended"); }));
  EXPECT_EQ(GetJob("pause")["status"]["state"], "Suspended");
  client_->Patch(kube::TrainingJobs(), ns_, "pause", kube::PatchType::kMerge,
                 {{"spec", {{"runPolicy", {{"suspend", false}}}}}});
  ASSERT_TRUE(Eventually([&] { return Pods("pause").size() == 2; }));
  EXPECT_EQ(GetJob("pause")["status"]["ports"], ports);
}

TEST_F(ControllerTest, DeletingAJobRemovesItsChildrenAndFreesItsPortsForTheNextJob) {
  StartController({61000, 61003});  // room for exactly one job
  client_->Create(kube::TrainingJobs(), ns_, Job("first", 2));
  ASSERT_TRUE(Eventually([&] { return Pods("first").size() == 2; }));
  client_->Create(kube::TrainingJobs(), ns_, Job("second", 2));
  ASSERT_TRUE(Eventually([&] {
    const json second = GetJob("second");
    const json* created = Condition(second, "Created");
    return created != nullptr && created->value("reason", "") == "PortsExhausted";
  }));
  EXPECT_TRUE(Pods("second").empty());

  // kube-controller-manager's garbage collector removes the children by their ownerReferences;
  // it learns a new CRD's kind at its next discovery sync, up to 30 s after the CRD appeared.
  client_->Delete(kube::TrainingJobs(), ns_, "first");
  ASSERT_TRUE(Eventually([&] { return Pods("first").empty(); }, seconds(60)));
  EXPECT_TRUE(Eventually([&] {
    try {
      client_->Get(kube::Services(), ns_, "first");
      return false;
    } catch (const kube::ApiError& e) {
      return kube::IsNotFound(e);
    }
  }, seconds(60)));
  // The freed block goes to the waiting job at once (the release requeues jobs waiting for
  // ports; their own retry is 30 s).
  ASSERT_TRUE(Eventually([&] { return Pods("second").size() == 2; }, seconds(20)));
  EXPECT_EQ(GetJob("second")["status"]["ports"]["master"], 61000);
}

TEST_F(ControllerTest, HostileObjectsAreReportedAndTheOperatorKeepsRunning) {
  StartController();
  // Passes the CRD's schema and rules but not the operator's validation: RANK is ringleader's.
  json bad = Job("bad", 2);
  bad["spec"]["template"]["spec"]["containers"][0]["env"] = json::array({{{"name", "RANK"}, {"value", "1"}}});
  client_->Create(kube::TrainingJobs(), ns_, bad);
  // A Pod that carries a job's labels but that the operator does not own.
  client_->Create(kube::TrainingJobs(), ns_, Job("good", 2));
  ASSERT_TRUE(Eventually([&] { return Pods("good").size() == 2; }));
  json intruder = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata",
                    {{"name", "intruder"},
                     {"labels", {{"ringleader.dev/job-name", "good"}, {"ringleader.dev/rank", "0"},
                                 {"ringleader.dev/attempt", "0"}, {"app.kubernetes.io/managed-by", "ringleader"}}}}},
                   {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}};
  client_->Create(kube::Pods(), ns_, intruder);
  client_->PatchStatus(kube::Pods(), ns_, "intruder", kube::PatchType::kMerge,
                       {{"status", {{"phase", "Failed"}}}});
  // A Secret deleted under a running job comes back.
  SetAllPods("good", "Running");
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("good"), "Running"); }));
  const std::string old_secret_uid =
      client_->Get(kube::Secrets(), ns_, "good-ringleader-token")["metadata"]["uid"];
  client_->Delete(kube::Secrets(), ns_, "good-ringleader-token");

  ASSERT_TRUE(Eventually([&] { return ConditionTrue(GetJob("bad"), "Failed"); }));
  const json bad_job = GetJob("bad");
  const json* failed = Condition(bad_job, "Failed");
  EXPECT_EQ(failed->value("reason", ""), "InvalidSpec");
  EXPECT_NE(failed->value("message", "").find("spec."), std::string::npos) << failed->dump();
  EXPECT_TRUE(Pods("bad").empty());

  EXPECT_TRUE(Eventually([&] {
    return client_->Get(kube::Secrets(), ns_, "good-ringleader-token")["metadata"]["uid"] != old_secret_uid;
  }));
  // The intruder neither restarted the gang nor was deleted.
  EXPECT_EQ(GetJob("good")["status"].value("restarts", 0), 0);
  EXPECT_EQ(client_->Get(kube::Pods(), ns_, "intruder")["metadata"]["name"], "intruder");
  EXPECT_TRUE(ConditionTrue(GetJob("good"), "Running"));

  // And the operator still serves new jobs.
  client_->Create(kube::TrainingJobs(), ns_, Job("after", 1));
  EXPECT_TRUE(Eventually([&] { return Pods("after").size() == 1; }));
}

TEST_F(ControllerTest, WatchesOnlyItsNamespacesAndKeepsPortsUniqueAcrossThem) {
  const std::string team_a = ns_ + "-a";
  const std::string team_b = ns_ + "-b";
  const std::string elsewhere = ns_ + "-else";
  StartController({61000, 61099}, {team_a, team_b});
  for (const std::string& ns : {team_a, team_b, elsewhere}) {
    CreateNamespace(ns);
    json job = Job("same-name", 2);
    job["metadata"]["namespace"] = ns;
    client_->Create(kube::TrainingJobs(), ns, job);
  }
  auto pods_in = [&](const std::string& ns) { return client_->List(kube::Pods(), ns).items.size(); };
  ASSERT_TRUE(Eventually([&] { return pods_in(team_a) == 2 && pods_in(team_b) == 2; }));
  const json a = client_->Get(kube::TrainingJobs(), team_a, "same-name");
  const json b = client_->Get(kube::TrainingJobs(), team_b, "same-name");
  EXPECT_NE(a["status"]["ports"]["master"], b["status"]["ports"]["master"])
      << "hostPorts collide across namespaces, so the ledger is cluster-wide";
  EXPECT_EQ(pods_in(elsewhere), 0u);
  EXPECT_FALSE(client_->Get(kube::TrainingJobs(), elsewhere, "same-name").contains("status"));
}

TEST_F(ControllerTest, ConvergesThroughCutWatches500s410sAndConflicts) {
  constexpr int kJobs = 30;
  constexpr int kReplicas = 3;
  // The faults hit the operator, whose client goes through the fault proxy; the test's own
  // writes go to the API server directly.
  auto& faults = cluster_->faults();
  faults.CutWatchesEvery(50);
  faults.SetErrorRate(0.05, 500);
  faults.ConflictNextWrites(20);
  OperatorThroughFaultProxy();
  StartController({61000, 61999});
  for (int i = 0; i < kJobs; ++i) {
    client_->Create(kube::TrainingJobs(), ns_, Job("f" + std::to_string(i), kReplicas));
    if (i % 10 == 5) {
      faults.Compact();  // every resuming watch now gets 410 Gone and must relist
      faults.ConflictNextWrites(10);
    }
  }
  auto all_pods = [&] { return kube::ListAll(*client_, kube::Pods(), ns_).items; };
  ASSERT_TRUE(Eventually([&] { return all_pods().size() == kJobs * kReplicas; }, seconds(90)));
  for (const json& pod : all_pods()) {
    client_->PatchStatus(kube::Pods(), ns_, pod["metadata"]["name"], kube::PatchType::kMerge,
                         {{"status", {{"phase", "Running"}, {"initContainerStatuses", InitStatuses(true)}}}});
  }
  faults.Compact();
  ASSERT_TRUE(Eventually([&] {
    for (const json& job : kube::ListAll(*client_, kube::TrainingJobs(), ns_).items) {
      if (!ConditionTrue(job, "Running")) {
        return false;
      }
    }
    return true;
  }, seconds(90)));
  faults.Reset();
  std::set<int> ports;
  for (const json& job : kube::ListAll(*client_, kube::TrainingJobs(), ns_).items) {
    EXPECT_TRUE(ports.insert(job["status"]["ports"]["master"].get<int>()).second);
    EXPECT_EQ(job["status"].value("restarts", 0), 0) << job["metadata"]["name"];
  }
  EXPECT_EQ(ports.size(), static_cast<std::size_t>(kJobs));
  EXPECT_EQ(all_pods().size(), static_cast<std::size_t>(kJobs * kReplicas)) << "no Pod created twice";
}

// Regression: /healthz answered "ok" while a worker was wedged in a reconcile.
TEST_F(ControllerTest, HealthzNamesAReconcileStuckPastTheLimitAndRecoversWhenItEnds) {
  RecordingClient& recording = RecordOperatorCalls();
  recording.HoldPodCreates();
  // Only the reconcile limit is in play: the informers' quiet spells on the moved clock and the
  // other worker's wait do not count here.
  StartLiveController({.reconcile_timeout = seconds(600), .informer_timeout = seconds(0),
                       .queue_timeout = seconds(0)});
  client_->Create(kube::TrainingJobs(), ns_, Job("wedged", 2));
  ASSERT_TRUE(recording.WaitFor([&] { return recording.PodCreatesHeld() == 1; }));

  HttpAnswer answer = Healthz(*health_);
  EXPECT_EQ(answer.code, 200) << answer.body;
  clock_.Advance(seconds(600));
  answer = Healthz(*health_);
  EXPECT_EQ(answer.code, 200) << "at the limit exactly: " << answer.body;
  clock_.Advance(seconds(1));
  answer = Healthz(*health_);
  EXPECT_EQ(answer.code, 503);
  EXPECT_THAT(answer.body, ::testing::MatchesRegex("worker [12] has been reconciling " + ns_ + "/wedged for 601s "
                                                   "\\(--liveness-reconcile-timeout 600s\\)"));

  recording.ReleaseAll();
  // Checked again after each call the operator makes (its watches reopen every second).
  EXPECT_TRUE(recording.WaitFor([&] { return Healthz(*health_).code == 200; })) << Healthz(*health_).body;
  EXPECT_EQ(Pods("wedged").size(), 2u);
}

// An idle queue and idle workers are progress, and so are quiet watches that keep reopening.
TEST_F(ControllerTest, AnIdleOperatorStaysLiveLongPastEveryLimit) {
  RecordingClient& recording = RecordOperatorCalls();
  StartLiveController({.reconcile_timeout = seconds(60), .informer_timeout = seconds(600),
                       .queue_timeout = seconds(60)});
  ASSERT_TRUE(recording.WaitFor([&] { return controller_->NotReadyReason().empty(); }));
  HttpAnswer answer = Healthz(*health_);
  ASSERT_EQ(answer.code, 200) << answer.body;
  // 1500 s in all, past every limit; each informer reopens its watch between two moves.
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(WaitForNewWatches(recording.WatchesStarted(),
                                  {"trainingjobs", "pods", "services", "secrets", "networkpolicies"}));
    clock_.Advance(seconds(500));
    answer = Healthz(*health_);
    EXPECT_EQ(answer.code, 200) << "after " << 500 * step << " s: " << answer.body;
  }
}

TEST_F(ControllerTest, HealthzNamesAnInformerWhoseWatchNeverReturns) {
  RecordingClient& recording = RecordOperatorCalls();
  recording.HoldWatchesOf("secrets");  // listed, then its first watch never returns
  StartLiveController({.reconcile_timeout = seconds(60), .informer_timeout = seconds(600),
                       .queue_timeout = seconds(60)});
  ASSERT_TRUE(recording.WaitFor([&] { return controller_->NotReadyReason().empty(); }));
  ASSERT_EQ(Healthz(*health_).code, 200);
  for (int step = 1; step <= 2; ++step) {
    // Every informer but the held one reopens its watch between two moves (networkpolicies too:
    // a CI run moved the clock before it had, and healthz named it beside secrets).
    ASSERT_TRUE(WaitForNewWatches(recording.WatchesStarted(),
                                  {"trainingjobs", "pods", "services", "networkpolicies"}));
    clock_.Advance(seconds(500));
  }
  const HttpAnswer answer = Healthz(*health_);
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "the informer for secrets in namespace " + ns_ +
                             " has not listed, watched or retried for 1000s (--liveness-informer-timeout 600s)");
  EXPECT_EQ(recording.WatchesStarted()["secrets"], 1);
}

// Refused creates: the API's message in a Created=False condition, one Event, a bounded number
// of tries under the backoff whatever enqueues the job, and the condition gone once they succeed.
TEST_F(ControllerTest, AQuotaRefusalShowsTheQuotasMessageRetriesWithBackoffAndClears) {
  const kube::Resource quotas{"", "v1", "resourcequotas", true};
  client_->Create(quotas, ns_,
                  {{"apiVersion", "v1"}, {"kind", "ResourceQuota"}, {"metadata", {{"name", "pods-2"}}},
                   {"spec", {{"hard", {{"pods", "2"}}}}}});
  // Until the quota controller has counted the namespace, admission refuses every Pod ("status
  // unknown for quota").
  ASSERT_TRUE(Eventually([&] {
    return client_->Get(quotas, ns_, "pods-2").value("status", json::object()).value("hard", json::object()).contains("pods");
  }));
  RecordingClient& recording = RecordOperatorCalls();
  StartController({61000, 61099}, {}, [](ControllerOptions& options) {
    options.refused_create_backoff = milliseconds(200);
    options.refused_create_backoff_max = milliseconds(800);
  });
  client_->Create(kube::TrainingJobs(), ns_, Job("quota", 4));
  const std::string expected =
      "the API server refused to create Pod quota-2 (Forbidden): pods \"quota-2\" is forbidden: exceeded quota: "
      "pods-2, requested: pods=1, used: pods=2, limited: pods=2; retrying with backoff";
  ASSERT_TRUE(Eventually([&] {
    const json job = GetJob("quota");
    const json* created = Condition(job, "Created");
    return created != nullptr && created->value("reason", "") == "CreateRefused";
  })) << GetJob("quota")["status"].dump();
  const json job = GetJob("quota");
  EXPECT_EQ((*Condition(job, "Created"))["status"], "False");
  EXPECT_EQ((*Condition(job, "Created"))["message"], expected);
  EXPECT_EQ(job["status"]["state"], "Pending");

  // Pod status changes enqueue the job over and over; the creates still wait out the backoff
  // (0.2, 0.4, 0.8, 0.8 ... s): about 6 tries in 3 s where a tight loop would make thousands. The
  // Pods run and their Ready condition flips (the API server refuses a Pod whose preflight has
  // exited going back to Pending).
  const int before = recording.PodCreates();
  SetAllPods("quota", "Running");
  const auto window_end = std::chrono::steady_clock::now() + seconds(3);
  for (int step = 0; std::chrono::steady_clock::now() < window_end; ++step) {
    for (const json& pod : Pods("quota")) {
      SetPodReady(pod["metadata"]["name"], step % 2 == 1);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  const int tries = recording.PodCreates() - before;
  EXPECT_GE(tries, 2);
  EXPECT_LE(tries, 6);
  EXPECT_EQ(Events("CreateRefused").size(), 1u) << "one Event per refusal, not per try";
  const json later = GetJob("quota");
  EXPECT_EQ((*Condition(later, "Created"))["lastTransitionTime"], (*Condition(job, "Created"))["lastTransitionTime"])
      << "a refused try is not a transition";
  EXPECT_EQ(Pods("quota").size(), 2u);

  client_->Delete(quotas, ns_, "pods-2", {});
  ASSERT_TRUE(Eventually([&] { return Pods("quota").size() == 4 && ConditionTrue(GetJob("quota"), "Created"); }))
      << GetJob("quota")["status"].dump();
  const json after = GetJob("quota");
  EXPECT_EQ((*Condition(after, "Created"))["reason"], "PodsCreated");
  const auto refused = testing::SeriesByLabels(registry_, "ringleader_operator_creates_refused_total");
  ASSERT_TRUE(refused.has_value());
  EXPECT_GE((refused->at({{"kind", "Pod"}, {"reason", "Forbidden"}}).counter.value), 2);
}

TEST_F(ControllerTest, ANameTakenByAnotherPodIsANameConflictConditionWithBackoff) {
  client_->Create(kube::Pods(), ns_,
                  {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "taken-1"}}},
                   {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}});
  RecordingClient& recording = RecordOperatorCalls();
  StartController({61000, 61099}, {}, [](ControllerOptions& options) {
    options.refused_create_backoff = milliseconds(200);
    options.refused_create_backoff_max = milliseconds(800);
  });
  client_->Create(kube::TrainingJobs(), ns_, Job("taken", 3));
  ASSERT_TRUE(Eventually([&] {
    const json job = GetJob("taken");
    const json* created = Condition(job, "Created");
    return created != nullptr && created->value("reason", "") == "NameConflict";
  })) << GetJob("taken")["status"].dump();
  const json conflict = GetJob("taken");
  EXPECT_EQ((*Condition(conflict, "Created"))["message"],
            "Pod taken-1 already exists and is not owned by this TrainingJob; delete or rename it; retrying with "
            "backoff");
  const int before = recording.PodCreates();
  std::this_thread::sleep_for(seconds(3));  // the observation window: how many tries in 3 s
  const int tries = recording.PodCreates() - before;
  EXPECT_GE(tries, 2);
  EXPECT_LE(tries, 6);
  EXPECT_EQ(Events("NameConflict").size(), 1u);

  client_->Delete(kube::Pods(), ns_, "taken-1", {});
  ASSERT_TRUE(Eventually([&] { return Pods("taken").size() == 3 && ConditionTrue(GetJob("taken"), "Created"); }))
      << GetJob("taken")["status"].dump();
}

}  // namespace
}  // namespace ringleader::runtime

namespace ringleader::runtime {
namespace {

// Volcano's PodGroup CRD as far as the operator needs it: what makes discovery serve it. The
// cluster is the program's, so a TEST that needs it present installs it (and waits until it is
// Established) and one that needs it absent removes it.
constexpr char kVolcanoPodGroupCrd[] = "podgroups.scheduling.volcano.sh";
json VolcanoPodGroupCrd() {
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", kVolcanoPodGroupCrd}}},
          {"spec",
           {{"group", "scheduling.volcano.sh"},
            {"scope", "Namespaced"},
            {"names", {{"kind", "PodGroup"}, {"listKind", "PodGroupList"}, {"plural", "podgroups"}, {"singular", "podgroup"}}},
            {"versions",
             json::array({{{"name", "v1beta1"},
                           {"served", true},
                           {"storage", true},
                           {"schema",
                            {{"openAPIV3Schema",
                              {{"type", "object"},
                               {"properties",
                                {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
                                 {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}})}}}};
}

TEST_F(ControllerTest, AMissingProviderHoldsThePodsUntilDiscoveryFindsItsCrd) {
  testing::RemoveCrd(*client_, kVolcanoPodGroupCrd);
  StartController({61000, 61099}, {}, [](ControllerOptions& options) {
    options.provider_discovery_interval = seconds(1);
  });
  json job = Job("gang", 2);
  job["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Volcano"}, {"queue", "research"}};
  client_->Create(kube::TrainingJobs(), ns_, job);
  ASSERT_TRUE(Eventually([&] {
    const json current = GetJob("gang");
    const json* scheduled = Condition(current, "Scheduled");
    return scheduled != nullptr && scheduled->value("reason", "") == "SchedulerNotInstalled";
  })) << GetJob("gang")["status"].dump();
  EXPECT_EQ((*Condition(GetJob("gang"), "Scheduled"))["status"], "False");
  EXPECT_THAT((*Condition(GetJob("gang"), "Scheduled"))["message"].get<std::string>(),
              ::testing::HasSubstr("does not serve podgroups.scheduling.volcano.sh"));
  EXPECT_TRUE(Pods("gang").empty());

  client_->Create(kube::CustomResourceDefinitions(), "", VolcanoPodGroupCrd());
  ASSERT_TRUE(Eventually([&] { return Pods("gang").size() == 2; })) << GetJob("gang")["status"].dump();
  const json group = client_->Get(kube::VolcanoPodGroups(), ns_, "gang");
  EXPECT_EQ(group["spec"], json({{"minMember", 2}, {"queue", "research"}}));
  EXPECT_EQ(group["metadata"]["ownerReferences"][0]["uid"], GetJob("gang")["metadata"]["uid"]);
  for (const json& pod : Pods("gang")) {
    EXPECT_EQ(pod["spec"]["schedulerName"], "volcano");
    EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "gang");
  }
  ASSERT_TRUE(Eventually([&] { return Condition(GetJob("gang"), "Scheduled") == nullptr; }))
      << GetJob("gang")["status"].dump();
  EXPECT_EQ(Events("SchedulerNotInstalled").size(), 1u);
}

TEST_F(ControllerTest, AnExistingPodGroupOfTheJobIsKeptAndBroughtToItsSpec) {
  testing::InstallCrd(*client_, VolcanoPodGroupCrd());
  // The job exists first so its PodGroup can name it; it stays suspended until the group is there.
  json job = Job("regroup", 3);
  job["spec"]["runPolicy"]["suspend"] = true;
  job["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Volcano"}};
  const json created = client_->Create(kube::TrainingJobs(), ns_, job);
  json group = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                {"kind", "PodGroup"},
                {"metadata",
                 {{"name", "regroup"},
                  {"ownerReferences",
                   json::array({{{"apiVersion", "ringleader.dev/v1alpha1"},
                                 {"kind", "TrainingJob"},
                                 {"name", "regroup"},
                                 {"uid", created["metadata"]["uid"]},
                                 {"controller", true}}})}}},
                {"spec", {{"minMember", 1}, {"queue", "default"}}}};
  const std::string group_uid = client_->Create(kube::VolcanoPodGroups(), ns_, group)["metadata"]["uid"];
  StartController();
  client_->Patch(kube::TrainingJobs(), ns_, "regroup", kube::PatchType::kMerge,
                 {{"spec", {{"runPolicy", {{"suspend", false}}}}}});
  ASSERT_TRUE(Eventually([&] { return Pods("regroup").size() == 3; })) << GetJob("regroup")["status"].dump();
  const json updated = client_->Get(kube::VolcanoPodGroups(), ns_, "regroup");
  EXPECT_EQ(updated["metadata"]["uid"], group_uid);  // kept, not replaced
  EXPECT_EQ(updated["spec"], json({{"minMember", 3}, {"queue", "default"}}));  // Volcano's queue stays
  const json regrouped = GetJob("regroup");
  EXPECT_FALSE(Condition(regrouped, "Created") != nullptr && (*Condition(regrouped, "Created"))["reason"] == "NameConflict");
}

TEST_F(ControllerTest, APodGroupOwnedBySomeoneElseIsANameConflict) {
  testing::InstallCrd(*client_, VolcanoPodGroupCrd());
  client_->Create(kube::VolcanoPodGroups(), ns_,
                  {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                   {"kind", "PodGroup"},
                   {"metadata", {{"name", "taken"}}},
                   {"spec", {{"minMember", 1}}}});
  StartController();
  json job = Job("taken", 2);
  job["spec"]["runPolicy"]["schedulingPolicy"] = {{"provider", "Volcano"}};
  client_->Create(kube::TrainingJobs(), ns_, job);
  ASSERT_TRUE(Eventually([&] {
    const json current = GetJob("taken");
    const json* created = Condition(current, "Created");
    return created != nullptr && created->value("reason", "") == "NameConflict";
  })) << GetJob("taken")["status"].dump();
  EXPECT_THAT((*Condition(GetJob("taken"), "Created"))["message"].get<std::string>(),
              ::testing::HasSubstr("PodGroup taken already exists and is not owned by this TrainingJob"));
  EXPECT_TRUE(Pods("taken").empty());
}

}  // namespace
}  // namespace ringleader::runtime
