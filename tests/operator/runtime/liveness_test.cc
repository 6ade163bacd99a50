// The liveness rule, table-style on hand-made snapshots: what counts as stuck for workers, the
// work queue and informer loops, what an idle operator looks like, and the messages.
#include "operator/runtime/liveness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::runtime {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using testing::HasSubstr;
using TimePoint = kube::Clock::TimePoint;

const TimePoint kStart = TimePoint(hours(1));

ProgressSnapshot::Worker Idle(TimePoint since) { return {"", since}; }
ProgressSnapshot::Worker Busy(const std::string& key, TimePoint since) { return {key, since}; }

ProgressSnapshot At(TimePoint now) {
  ProgressSnapshot snapshot;
  snapshot.now = now;
  return snapshot;
}

TEST(LivenessTest, AnIdleOperatorIsLiveHoweverLongItIdles) {
  LivenessCheck check({});
  ProgressSnapshot snapshot = At(kStart);
  snapshot.workers = {Idle(kStart), Idle(kStart)};
  snapshot.loops = {{"trainingjobs in all namespaces", 2}, {"pods in all namespaces", 2}};
  EXPECT_EQ(check.Check(snapshot), "");
  // Days later: workers still waiting, nothing due, each watch reopened every 300 s.
  for (int i = 1; i <= 1000; ++i) {
    snapshot.now = kStart + seconds(300) * i;
    snapshot.loops = {{"trainingjobs in all namespaces", 2u + i}, {"pods in all namespaces", 2u + i}};
    ASSERT_EQ(check.Check(snapshot), "") << "at " << 300 * i << " s";
  }
}

TEST(LivenessTest, AWorkerInOneReconcilePastTheLimitIsNamedWithItsKey) {
  struct Case {
    seconds busy_for;
    bool live;
  };
  for (const Case& c : std::vector<Case>{{seconds(0), true}, {seconds(600), true}, {seconds(601), false}}) {
    SCOPED_TRACE(c.busy_for.count());
    LivenessCheck check({});
    ProgressSnapshot snapshot = At(kStart + c.busy_for);
    snapshot.workers = {Idle(kStart), Busy("default/wedged", kStart)};
    const std::string reason = check.Check(snapshot);
    if (c.live) {
      EXPECT_EQ(reason, "");
    } else {
      EXPECT_EQ(reason, "worker 2 has been reconciling default/wedged for 601s "
                        "(--liveness-reconcile-timeout 600s)");
    }
  }
}

TEST(LivenessTest, ADueKeyIsAProblemOnlyWhileAWorkerHasWaitedForWorkAsLong) {
  struct Case {
    std::string name;
    std::vector<ProgressSnapshot::Worker> workers;
    std::optional<TimePoint> oldest_due;
    std::string reason;
  };
  const TimePoint now = kStart + hours(1);
  const std::vector<Case> cases = {
      {"nothing due", {Idle(kStart)}, std::nullopt, ""},
      {"due for the limit exactly", {Idle(kStart)}, now - seconds(60), ""},
      {"due and a worker idle past the limit", {Busy("ns/a", now - seconds(5)), Idle(kStart)},
       now - seconds(61),
       "the work queue is not drained: a key has been due for 61s while worker 2 has waited for "
       "work for 3600s (--liveness-queue-timeout 60s)"},
      // Under load every worker is busy and keys wait their turn: that is progress.
      {"due long, every worker busy", {Busy("ns/a", now - seconds(30)), Busy("ns/b", now - seconds(1))},
       now - seconds(500), ""},
      // A worker that just finished takes the key on its next Get.
      {"due long, the idle worker just finished", {Idle(now - seconds(2))}, now - seconds(500), ""},
      {"due, but the workers are not running", {}, now - seconds(500), ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LivenessCheck check({});
    ProgressSnapshot snapshot = At(now);
    snapshot.workers = c.workers;
    snapshot.oldest_due = c.oldest_due;
    EXPECT_EQ(check.Check(snapshot), c.reason);
  }
}

TEST(LivenessTest, AnInformerLoopThatStopsSteppingIsNamedOnceItHasBeenStillPastTheLimit) {
  LivenessCheck check({});
  ProgressSnapshot snapshot = At(kStart);
  snapshot.loops = {{"pods in namespace ml", 7}, {"secrets in namespace ml", 3}};
  EXPECT_EQ(check.Check(snapshot), "");

  // The pods loop moves at +300 s; the secrets loop never does.
  snapshot.now = kStart + seconds(300);
  snapshot.loops = {{"pods in namespace ml", 9}, {"secrets in namespace ml", 3}};
  EXPECT_EQ(check.Check(snapshot), "");
  snapshot.now = kStart + seconds(600);
  EXPECT_EQ(check.Check(snapshot), "") << "still for the limit exactly";
  snapshot.now = kStart + seconds(850);
  EXPECT_EQ(check.Check(snapshot),
            "the informer for secrets in namespace ml has not listed, watched or retried for 850s "
            "(--liveness-informer-timeout 600s)");

  // One step and it is live again.
  snapshot.loops = {{"pods in namespace ml", 9}, {"secrets in namespace ml", 4}};
  EXPECT_EQ(check.Check(snapshot), "");
}

TEST(LivenessTest, ALoopFirstSeenLateIsGivenTheWholeLimit) {
  LivenessCheck check({});
  ProgressSnapshot snapshot = At(kStart);
  EXPECT_EQ(check.Check(snapshot), "");
  snapshot.now = kStart + hours(2);
  snapshot.loops = {{"pods in all namespaces", 1}};
  EXPECT_EQ(check.Check(snapshot), "") << "the informers just started";
  snapshot.now += seconds(601);
  EXPECT_THAT(check.Check(snapshot), HasSubstr("pods in all namespaces"));
}

TEST(LivenessTest, EveryProblemIsReportedAndAZeroLimitTurnsItsCheckOff) {
  ProgressSnapshot snapshot = At(kStart);
  snapshot.workers = {Busy("ns/stuck", kStart), Idle(kStart)};
  snapshot.loops = {{"services in all namespaces", 1}};
  LivenessCheck all({});
  LivenessCheck none({.reconcile_timeout = seconds(0), .informer_timeout = seconds(0), .queue_timeout = seconds(0)});
  EXPECT_EQ(all.Check(snapshot), "");
  EXPECT_EQ(none.Check(snapshot), "");

  snapshot.now = kStart + hours(1);
  snapshot.oldest_due = kStart;
  const std::string reason = all.Check(snapshot);
  EXPECT_THAT(reason, HasSubstr("worker 1 has been reconciling ns/stuck for 3600s"));
  EXPECT_THAT(reason, HasSubstr("; the work queue is not drained: a key has been due for 3600s while worker 2"));
  EXPECT_THAT(reason, HasSubstr("; the informer for services in all namespaces has not"));
  EXPECT_EQ(none.Check(snapshot), "");
}

}  // namespace
}  // namespace ringleader::runtime
