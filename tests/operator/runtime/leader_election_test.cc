// Leader election on a real kube-apiserver (devcluster), on the real clock with short durations:
// acquire, one leader of two, release and fast handover, stepping down when renewals fail (the
// candidates reach the server through its fault proxy) or the Lease is taken, and taking over a
// crashed holder only after the lease duration. One cluster serves every TEST, each with its
// Lease in a namespace of its own. Tests wait on conditions, checked again at each change of the
// Lease or of a candidate.
#include "operator/runtime/leader_election.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <regex>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/shared_cluster.h"
#include "tests/operator/runtime/cluster_watch.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

bool IsMicroTime(const json& value) {
  static const std::regex kMicroTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  return value.is_string() && std::regex_match(value.get<std::string>(), kMicroTime);
}

// One replica: its own client, an elector running on its own thread, and a leading callback
// that records when it starts and when its stop token is requested, calling `changed` after
// each of those.
class Candidate {
 public:
  Candidate(std::unique_ptr<kube::Client> client, LeaderElectionOptions options, std::function<void()> changed)
      : client_(std::move(client)), elector_(*client_, std::move(options)), changed_(std::move(changed)) {}

  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) {
      elector_.Run(stop, [this](std::stop_token leading) {
        ++started_;
        active_ = true;
        changed_();
        std::mutex mutex;
        std::condition_variable_any cv;
        std::unique_lock lock(mutex);
        cv.wait(lock, leading, [] { return false; });
        active_ = false;
        ++ended_;
        changed_();
      });
      returned_ = true;
      changed_();
    });
  }
  void Stop() { thread_.request_stop(); }

  LeaderElector& elector() { return elector_; }
  const std::string& identity() const { return elector_.identity(); }
  bool active() const { return active_; }  // inside on_started_leading, not yet told to stop
  int started() const { return started_; }
  int ended() const { return ended_; }  // on_started_leading's token was requested
  bool returned() const { return returned_; }

 private:
  std::unique_ptr<kube::Client> client_;
  LeaderElector elector_;
  std::function<void()> changed_;
  std::atomic<int> started_{0};
  std::atomic<int> ended_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> returned_{false};
  std::jthread thread_;  // last: joined before the elector and client go
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_.Start(); }
  static void TearDownTestSuite() { cluster_.Stop(); }

  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.error();
    observer_ = NewClient(cluster_.config());
    ns_ = testing::NamespaceForCurrentTest();
    testing::CreateNamespace(*observer_, ns_);
    lease_watch_ = std::make_unique<testing::ClusterWatch>(*observer_, std::vector{kube::Leases()}, ns_);
  }
  void TearDown() override {
    if (!observer_) {
      return;
    }
    cluster_->faults().Reset();
    candidates_.clear();
    lease_watch_.reset();
    testing::DeleteNamespace(*observer_, ns_);
    observer_.reset();
  }

  LeaderElectionOptions Fast(const std::string& identity) const {
    LeaderElectionOptions options;
    options.lease_namespace = ns_;
    options.lease_name = "ringleader-test";
    options.identity = identity;
    options.lease_duration = seconds(2);
    options.renew_deadline = seconds(1);
    options.retry_period = milliseconds(200);
    return options;
  }

  static std::unique_ptr<kube::Client> NewClient(const kube::Config& config) {
    kube::ClientOptions options;
    options.qps = 0;
    // Short retries, so one attempt never outlasts the renew deadline by much.
    options.backoff = kube::BackoffPolicy{.initial_delay = milliseconds(5), .multiplier = 2.0,
                                          .max_delay = milliseconds(50), .jitter = 0.2,
                                          .max_attempts = 3, .deadline = milliseconds(500)};
    return kube::MakeClient(config, options);
  }

  // A candidate reaches the server through the fault proxy; the observer goes direct.
  Candidate& AddCandidate(LeaderElectionOptions options) {
    candidates_.push_back(std::make_unique<Candidate>(NewClient(cluster_.proxy_config()), std::move(options),
                                                      [this] { lease_watch_->Notify(); }));
    return *candidates_.back();
  }

  json Lease() { return observer_->Get(kube::Leases(), ns_, "ringleader-test"); }

  // Waits until `condition` holds, checking it again at each change of the Lease or of a
  // candidate; true when it held within `timeout`.
  bool Eventually(const std::function<bool()>& condition, Steady::duration timeout = seconds(30)) {
    return lease_watch_->WaitFor(condition, std::chrono::duration_cast<milliseconds>(timeout));
  }

  inline static testing::SharedCluster cluster_;
  std::string ns_;  // this TEST's namespace, where its Lease is
  std::unique_ptr<kube::Client> observer_;
  std::unique_ptr<testing::ClusterWatch> lease_watch_;  // through observer_
  std::vector<std::unique_ptr<Candidate>> candidates_;
};

TEST(DefaultIdentityTest, IsHostnameUnderscorePid) {
  const std::string identity = DefaultIdentity();
  const std::string suffix = "_" + std::to_string(getpid());
  ASSERT_GT(identity.size(), suffix.size());
  EXPECT_EQ(identity.substr(identity.size() - suffix.size()), suffix);
}

TEST_F(LeaderElectionTest, AnEmptyIdentityBecomesTheDefault) {
  LeaderElectionOptions options = Fast("");
  LeaderElector elector(*observer_, options);
  EXPECT_EQ(elector.identity(), DefaultIdentity());
}

TEST_F(LeaderElectionTest, ALoneCandidateCreatesTheLeaseRenewsItAndReleasesItOnStop) {
  Candidate& a = AddCandidate(Fast("replica-a"));
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.active(); }));
  EXPECT_TRUE(a.elector().IsLeader());

  json lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 2);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  EXPECT_TRUE(IsMicroTime(lease["spec"]["acquireTime"])) << lease.dump();
  EXPECT_TRUE(IsMicroTime(lease["spec"]["renewTime"])) << lease.dump();

  // Renewals move renewTime and keep acquireTime.
  const json first = lease["spec"];
  ASSERT_TRUE(Eventually([&] { return Lease()["spec"]["renewTime"] != first["renewTime"]; }));
  json renewed = Lease();
  EXPECT_EQ(renewed["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(renewed["spec"]["acquireTime"], first["acquireTime"]);
  EXPECT_EQ(renewed["spec"]["leaseTransitions"], 0);

  a.Stop();
  ASSERT_TRUE(Eventually([&] { return a.returned(); }));
  EXPECT_EQ(a.ended(), 1);
  EXPECT_FALSE(a.elector().IsLeader());
  json released = Lease();
  EXPECT_EQ(released["spec"]["holderIdentity"], "");
  EXPECT_EQ(released["spec"]["leaseDurationSeconds"], 1);
}

TEST_F(LeaderElectionTest, OfTwoCandidatesExactlyOneLeads) {
  // A renew deadline of 2 s, so a loaded machine does not make the leader miss it.
  auto patient = [this](const std::string& identity) {
    LeaderElectionOptions options = Fast(identity);
    options.lease_duration = seconds(3);
    options.renew_deadline = seconds(2);
    return options;
  };
  Candidate& a = AddCandidate(patient("replica-a"));
  Candidate& b = AddCandidate(patient("replica-b"));
  a.Start();
  b.Start();
  ASSERT_TRUE(Eventually([&] { return a.active() || b.active(); }));
  Candidate& leader = a.active() ? a : b;
  Candidate& standby = a.active() ? b : a;

  // Well past the lease duration: the standby keeps seeing renewals and never takes over. Twenty
  // renewals a retry period (200 ms) apart span at least 3.8 s; each state is checked as the
  // Lease changes.
  const auto standby_since = Steady::now();
  json renewed_at = Lease()["spec"]["renewTime"];
  int renewals = 0;
  bool two_leaders = false;
  bool standby_led = false;
  ASSERT_TRUE(Eventually([&] {
    two_leaders = two_leaders || (a.active() && b.active());
    standby_led = standby_led || standby.elector().IsLeader();
    const json renew_time = Lease()["spec"]["renewTime"];
    if (renew_time != renewed_at) {
      renewed_at = renew_time;
      ++renewals;
    }
    return renewals >= 20;
  }));
  EXPECT_GE(Steady::now() - standby_since, seconds(3)) << "the lease duration";
  EXPECT_FALSE(two_leaders);
  EXPECT_FALSE(standby_led);
  EXPECT_EQ(leader.started(), 1);
  EXPECT_EQ(leader.ended(), 0);
  EXPECT_EQ(standby.started(), 0);
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], leader.identity());

  // A standby told to stop just returns, leaving the leader's Lease alone.
  standby.Stop();
  ASSERT_TRUE(Eventually([&] { return standby.returned(); }));
  EXPECT_EQ(standby.started(), 0);
  EXPECT_TRUE(leader.active());
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], leader.identity());
}

TEST_F(LeaderElectionTest, RunReleasesTheLeaseWhenTheLeadingCallbackReturnsByItself) {
  LeaderElector elector(*observer_, Fast("replica-a"));
  std::atomic<int> calls{0};
  std::atomic<bool> returned{false};
  std::jthread run([&](std::stop_token stop) {
    elector.Run(stop, [&](std::stop_token) { ++calls; });
    returned = true;
    lease_watch_->Notify();
  });
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "");
}

TEST_F(LeaderElectionTest, StoppingTheLeaderHandsTheLeaseToTheStandbyWellBeforeItWouldExpire) {
  // A long lease, so a handover that waited for expiry would take 10 s.
  auto slow_expiry = [this](const std::string& identity) {
    LeaderElectionOptions options = Fast(identity);
    options.lease_duration = seconds(10);
    options.renew_deadline = seconds(5);
    return options;
  };
  Candidate& a = AddCandidate(slow_expiry("replica-a"));
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.active(); }));
  Candidate& b = AddCandidate(slow_expiry("replica-b"));
  b.Start();

  const auto stopped_at = Steady::now();
  a.Stop();
  ASSERT_TRUE(Eventually([&] { return b.active(); }));
  EXPECT_LT(Steady::now() - stopped_at, seconds(5));
  ASSERT_TRUE(a.returned());
  EXPECT_EQ(a.ended(), 1);

  json lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 10);
}

TEST_F(LeaderElectionTest, ALeaderThatCannotRenewStepsDownAfterTheRenewDeadline) {
  Candidate& a = AddCandidate(Fast("replica-a"));
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.active(); }));

  const auto failing_since = Steady::now();
  cluster_->faults().SetErrorRate(1.0, 500);
  ASSERT_TRUE(Eventually([&] { return a.ended() == 1; })) << "the leading token was never requested";
  // The last renewal was about one retry period before the faults at most: 1 s - 200 ms, less
  // slack for an attempt that was half done.
  EXPECT_GE(Steady::now() - failing_since, milliseconds(500));
  EXPECT_FALSE(a.elector().IsLeader());
  ASSERT_TRUE(Eventually([&] { return a.returned(); })) << "Run kept going after losing the Lease";
  EXPECT_EQ(a.started(), 1);

  cluster_->faults().Reset();
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "replica-a") << "a lost Lease is not released";
}

TEST_F(LeaderElectionTest, ALeaderWhoseLeaseIsTakenOverStepsDown) {
  Candidate& a = AddCandidate(Fast("replica-a"));
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.active(); }));

  // Another writer puts itself in as holder (guarded by resourceVersion, retried at once on a
  // conflict with a renewal).
  bool written = false;
  for (int attempt = 0; attempt < 50 && !written; ++attempt) {
    json lease = Lease();
    lease["spec"]["holderIdentity"] = "intruder";
    try {
      observer_->Update(kube::Leases(), ns_, lease);
      written = true;
    } catch (const kube::ApiError& e) {
      if (!kube::IsConflict(e)) {
        throw;
      }
    }
  }
  ASSERT_TRUE(written);
  ASSERT_TRUE(Eventually([&] { return a.returned(); })) << "Run kept going without the Lease";
  EXPECT_EQ(a.ended(), 1);
  EXPECT_FALSE(a.elector().IsLeader());
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "intruder");
}

TEST_F(LeaderElectionTest, AStandbyTakesACrashedHoldersLeaseOnlyAfterTheLeaseDuration) {
  // A holder that stopped renewing without releasing. Its renewTime is an hour old on its own
  // clock: expiry must be judged on the standby's clock, not by comparing timestamps.
  const std::string long_ago = "2020-01-01T00:00:00.000000Z";
  observer_->Create(kube::Leases(), ns_,
                    {{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", {{"name", "ringleader-test"}}},
                     {"spec",
                      {{"holderIdentity", "crashed"},
                       {"leaseDurationSeconds", 2},
                       {"acquireTime", long_ago},
                       {"renewTime", long_ago},
                       {"leaseTransitions", 3}}}});

  Candidate& b = AddCandidate(Fast("replica-b"));
  const auto started_at = Steady::now();
  b.Start();
  ASSERT_TRUE(Eventually([&] { return b.active(); }));
  EXPECT_GE(Steady::now() - started_at, seconds(2));

  json lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 4);
  EXPECT_NE(lease["spec"]["acquireTime"], long_ago);
  EXPECT_TRUE(IsMicroTime(lease["spec"]["acquireTime"]));
}

}  // namespace
}  // namespace ringleader::runtime
