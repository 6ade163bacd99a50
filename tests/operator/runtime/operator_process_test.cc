// The ringleader-operator binary as a process against devcluster's real API server: killed with
// SIGKILL again and again during a rollout it still converges with no duplicate Pod, no port
// collision and no job's ports ever changing; with two replicas under leader election only the
// leader writes, and when it is killed the standby takes over. One cluster serves both TESTs,
// each in a namespace of its own that its operators are limited to (--namespace, and the Lease
// there). Waits are on conditions, checked again at each change the test's own watches see.
#include <cpprest/http_client.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/shared_cluster.h"
#include "tests/operator/runtime/cluster_watch.h"
#include "tests/support/test_environment.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using ringleader::testing::ClusterWatch;
using ringleader::testing::FreePorts;
using std::chrono::milliseconds;
using std::chrono::seconds;

// One ringleader-operator process; its output goes to `log`.
class OperatorProcess {
 public:
  OperatorProcess(const std::vector<std::string>& args, const std::filesystem::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      static std::string binary = RINGLEADER_OPERATOR_PATH;
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (auto& arg : copy) {
        argv.push_back(arg.data());
      }
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~OperatorProcess() { Kill(SIGKILL); }
  void Kill(int signal) {
    if (pid_ > 0) {
      ::kill(pid_, signal);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }
  bool Alive() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

json Job(const std::string& name, const std::string& ns, int replicas) {
  return {{"apiVersion", "ringleader.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicas", replicas},
            {"template", {{"spec", {{"containers", json::array({{{"name", "trainer"}, {"image", "t:1"}}})}}}}}}}};
}

bool PodsCreated(const json& job) {
  for (const json& condition : job.value("status", json::object()).value("conditions", json::array())) {
    if (condition.value("type", "") == "Created" && condition.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

class OperatorProcessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_.Start(); }
  static void TearDownTestSuite() { cluster_.Stop(); }

  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.error();
    kube::ClientOptions options;
    options.qps = 0;
    client_ = kube::MakeClient(cluster_.config(), options);
    ns_ = testing::NamespaceForCurrentTest();
    testing::CreateNamespace(*client_, ns_);
    dir_ = cluster_.dir() / ns_;  // the operators' logs
    std::filesystem::create_directories(dir_);
    watch_ = std::make_unique<ClusterWatch>(
        *client_, std::vector{kube::TrainingJobs(), kube::Pods(), kube::Leases()}, ns_);
  }
  void TearDown() override {
    watch_.reset();
    if (client_) {
      testing::DeleteNamespace(*client_, ns_);
    }
  }

  std::vector<std::string> Args(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "--kubeconfig", cluster_->kubeconfig_path(),
                                     "--namespace", ns_, "--leader-election-namespace", ns_,
                                     "--workers", "4", "--kube-api-qps", "1000", "--kube-api-burst", "1000",
                                     "--port-range", "61000-64999",
                                     // The Pods stay Pending; a job's Unschedulable condition
                                     // would be one more status write, at a time set by the
                                     // machine's speed.
                                     "--unschedulable-after", "3600"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Waits until `predicate` holds, checking it again at each change of a TrainingJob, Pod or
  // Lease in the namespace (the leader renews its Lease every retry period).
  bool Eventually(const std::function<bool()>& predicate, seconds timeout) {
    return watch_->WaitFor(predicate, timeout);
  }

  std::size_t PodsOf(const std::string& job) {
    std::size_t count = 0;
    for (const json& pod : watch_->List(kube::Pods())) {
      count += pod["metadata"]["labels"].value("ringleader.dev/job-name", "") == job ? 1 : 0;
    }
    return count;
  }

  std::string Holder() {
    const std::optional<json> lease = watch_->Get(kube::Leases(), "ringleader-operator");
    return lease ? lease->value("spec", json::object()).value("holderIdentity", "") : "";
  }

  inline static testing::SharedCluster cluster_;
  std::string ns_;             // this TEST's namespace
  std::filesystem::path dir_;  // this TEST's files
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<ClusterWatch> watch_;  // through client_
};

TEST_F(OperatorProcessTest, SigkillDuringARolloutLosesNothingAndNeverChangesPorts) {
  constexpr int kJobs = 200;
  constexpr int kReplicas = 4;
  constexpr int kKills = 20;
  // Every status any job ever had, as watched: the first ports seen are the job's for good.
  std::mutex mutex;
  std::condition_variable seen_version;
  std::map<std::string, json> first_ports;      // uid -> ports
  std::map<std::string, std::set<std::string>> seen;  // uid -> every resourceVersion watched
  std::vector<std::string> changed;
  std::jthread watcher([&](std::stop_token stop) {
    std::string rv = "0";
    while (!stop.stop_requested()) {
      kube::WatchOptions options;
      options.resource_version = rv;
      client_->Watch(kube::TrainingJobs(), ns_, options, [&](const kube::WatchEvent& event) {
        rv = kube::ResourceVersionOf(event.object);
        const std::string uid = event.object["metadata"]["uid"];
        {
          std::lock_guard lock(mutex);
          seen[uid].insert(rv);
        }
        seen_version.notify_all();
        const json& status = event.object.value("status", json::object());
        if (!status.contains("ports")) {
          return true;
        }
        std::lock_guard lock(mutex);
        auto [it, inserted] = first_ports.emplace(uid, status["ports"]);
        if (!inserted && it->second != status["ports"]) {
          changed.push_back(event.object["metadata"]["name"].get<std::string>() + ": " +
                            it->second.dump() + " -> " + status["ports"].dump());
        }
        return true;
      }, stop);
    }
  });

  // Jobs arrive over the whole kill phase, a batch before each start, so that kills land
  // mid-rollout. Each operator is killed once it has created a random number of Pods (1 to 23,
  // so mostly between two Pods of one job), and always before it could finish.
  constexpr int kJobsPerStart = kJobs / kKills;
  std::mt19937 random(12345);
  std::uniform_int_distribution<std::size_t> pods_before_kill(1, 23);
  const auto log = dir_ / "operator.log";
  int kills = 0;
  int mid_rollout_kills = 0;  // with some but not all Pods created
  for (; kills < kKills; ++kills) {
    for (int i = kills * kJobsPerStart; i < (kills + 1) * kJobsPerStart; ++i) {
      client_->Create(kube::TrainingJobs(), ns_, Job("job-" + std::to_string(i), ns_, kReplicas));
    }
    const std::size_t target =
        kube::ListAll(*client_, kube::Pods(), ns_).items.size() + pods_before_kill(random);
    OperatorProcess op(Args({"--leader-elect", "false", "--metrics-bind-address", "0",
                             "--health-probe-bind-address", "0"}),
                       log);
    ASSERT_TRUE(Eventually([&] { return watch_->Count(kube::Pods()) >= target; }, seconds(60)))
        << "operator " << kills + 1 << " did not create its Pods; log: " << log;
    op.Kill(SIGKILL);
    const auto pods = kube::ListAll(*client_, kube::Pods(), ns_).items.size();
    mid_rollout_kills += pods > 0 && pods < kJobs * kReplicas ? 1 : 0;
  }
  OperatorProcess last(Args({"--leader-elect", "false", "--metrics-bind-address", "0",
                             "--health-probe-bind-address", "0"}),
                       log);

  ASSERT_TRUE(Eventually([&] {
    const auto jobs = watch_->List(kube::TrainingJobs());
    if (jobs.size() != kJobs) {
      return false;
    }
    for (const json& job : jobs) {
      if (!PodsCreated(job)) {
        return false;
      }
    }
    return watch_->Count(kube::Pods()) == kJobs * kReplicas;
  }, seconds(180))) << "did not converge; operator log: " << log;
  EXPECT_GE(kills, 20);
  EXPECT_GE(mid_rollout_kills, 15) << "the kills must land while the rollout is under way";

  // Zero duplicate Pods: each job has exactly ranks 0..R-1 of attempt 0, each once.
  std::map<std::string, std::set<std::string>> ranks;
  for (const json& pod : kube::ListAll(*client_, kube::Pods(), ns_).items) {
    const json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(labels["ringleader.dev/attempt"], "0") << pod["metadata"]["name"];
    EXPECT_TRUE(ranks[labels["ringleader.dev/job-name"]].insert(labels["ringleader.dev/rank"]).second)
        << "two Pods for rank " << labels["ringleader.dev/rank"] << " of " << labels["ringleader.dev/job-name"];
  }
  EXPECT_EQ(ranks.size(), static_cast<std::size_t>(kJobs));
  // Zero port collisions between jobs.
  std::set<int> ports;
  const std::vector<json> jobs = kube::ListAll(*client_, kube::TrainingJobs(), ns_).items;
  for (const json& job : jobs) {
    for (const auto& [role, port] : job["status"]["ports"].items()) {
      EXPECT_TRUE(ports.insert(port.get<int>()).second) << "port " << port << " given twice";
    }
  }
  EXPECT_EQ(ports.size(), static_cast<std::size_t>(kJobs) * 4);
  // No job's ports ever changed once assigned: once the watcher has seen every job as just listed
  // (or later: a version is opaque, so the check is that it was seen, not that it is the last).
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(seen_version.wait_for(lock, seconds(30), [&] {
      return std::all_of(jobs.begin(), jobs.end(), [&](const json& job) {
        const auto it = seen.find(job["metadata"]["uid"].get<std::string>());
        return it != seen.end() && it->second.contains(kube::ResourceVersionOf(job));
      });
    })) << "the watcher fell behind";
  }
  watcher.request_stop();  // ends its open watch too
  watcher.join();
  std::lock_guard lock(mutex);
  EXPECT_EQ(first_ports.size(), static_cast<std::size_t>(kJobs));
  EXPECT_TRUE(changed.empty()) << changed.size() << " port changes, first: " << changed.front();
}

// The value of `name{labels}` summed over matching series in a Prometheus text page.
// -1 while the endpoint does not answer.
double Scrape(int port, const std::string& name, const std::string& label_filter = "") {
  std::string text;
  try {
    web::http::client::http_client client("http://127.0.0.1:" + std::to_string(port));
    text = client.request(web::http::methods::GET, "/metrics").get().extract_string().get();
  } catch (const std::exception&) {
    return -1;
  }
  double total = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(name) && (line.size() > name.size() && (line[name.size()] == '{' || line[name.size()] == ' ')) &&
        line.find(label_filter) != std::string::npos) {
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return total;
}

double Writes(int port) {
  double writes = 0;
  for (const char* verb : {"create", "update", "patch", "delete"}) {
    writes += Scrape(port, "ringleader_kube_requests_total", std::string("verb=\"") + verb + "\"");
  }
  return writes;
}

TEST_F(OperatorProcessTest, OnlyTheLeaderWritesAndTheStandbyTakesOverWhenItIsKilled) {
  const std::vector<int> ports = FreePorts(2);
  const int port_a = ports[0];
  const int port_b = ports[1];
  const auto election = std::vector<std::string>{"--leader-elect", "true", "--lease-duration", "3",
                                                 "--renew-deadline", "2", "--retry-period", "1",
                                                 "--health-probe-bind-address", "0"};
  auto args = [&](const std::string& identity, int port) {
    std::vector<std::string> extra = election;
    extra.insert(extra.end(), {"--identity", identity, "--metrics-bind-address", "127.0.0.1:" + std::to_string(port)});
    return Args(extra);
  };
  auto a = std::make_unique<OperatorProcess>(args("replica-a", port_a), dir_ / "a.log");
  ASSERT_TRUE(Eventually([&] { return Holder() == "replica-a"; }, seconds(30)));
  OperatorProcess b(args("replica-b", port_b), dir_ / "b.log");
  ASSERT_TRUE(Eventually([&] { return Scrape(port_b, "ringleader_operator_leader") == 0 &&
                                      Scrape(port_a, "ringleader_operator_leader") == 1; }, seconds(30)));

  client_->Create(kube::TrainingJobs(), ns_, Job("led", ns_, 2));
  ASSERT_TRUE(Eventually([&] { return PodsOf("led") == 2; }, seconds(30)));
  EXPECT_GT(Writes(port_a), 0);
  EXPECT_EQ(Writes(port_b), 0) << "a standby must not write";

  const auto killed_at = std::chrono::steady_clock::now();
  a->Kill(SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Holder() == "replica-b"; }, seconds(30)));
  const double takeover = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(takeover, 3 + 2 + 2) << "lease 3 s plus a retry period and slack";
  client_->Create(kube::TrainingJobs(), ns_, Job("after-failover", ns_, 2));
  EXPECT_TRUE(Eventually([&] { return PodsOf("after-failover") == 2; }, seconds(30)));
  EXPECT_EQ(Scrape(port_b, "ringleader_operator_leader"), 1);
}

}  // namespace
}  // namespace ringleader::runtime
