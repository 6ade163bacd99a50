// The work queue: dedup, one worker per key, delays and backoff asserted exactly on a fake
// clock, the global bucket, wakeups on shutdown and stop, and a multi-threaded stress run.
#include "operator/runtime/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/operator/kube/fake_clock.h"

namespace ringleader::runtime {
namespace {

using kube::testing::FakeClock;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Get, but giving up after `timeout` of real time. With a frozen fake clock nothing can become
// ready meanwhile, so a short timeout is enough to show that nothing is ready.
std::optional<WorkItem> GetWithin(WorkQueue& queue, milliseconds timeout) {
  std::stop_source give_up;
  std::jthread timer([&give_up, timeout](std::stop_token cancel) {
    std::mutex mutex;
    std::condition_variable_any cv;
    std::unique_lock lock(mutex);
    cv.wait_for(lock, cancel, timeout, [] { return false; });
    if (!cancel.stop_requested()) {
      give_up.request_stop();
    }
  });
  return queue.Get(give_up.get_token());
}

constexpr milliseconds kNothingReady{100};
constexpr milliseconds kSomethingReady{10'000};

std::string GetKey(WorkQueue& queue) {
  auto item = GetWithin(queue, kSomethingReady);
  return item ? item->key : "<nothing>";
}

// A clock (the real one unless given another) telling the test when Get has looked at it: Get
// reads the clock with the queue's mutex held and releases it only by waiting, so whatever the
// test does next under that mutex (ShutDown, Add, a stop callback, a fake clock's move) happens
// while Get is blocked.
class WatchedClock final : public kube::Clock {
 public:
  explicit WatchedClock(kube::Clock& base = kube::RealClock()) : base_(base) {}

  TimePoint Now() override {
    std::lock_guard lock(mutex_);
    ++reads_;
    read_.notify_all();
    return base_.Now();
  }
  bool SleepFor(Duration duration, std::stop_token stop) override {
    return base_.SleepFor(duration, std::move(stop));
  }
  void AddWaiter(Waiter& waiter) override { base_.AddWaiter(waiter); }
  void RemoveWaiter(Waiter& waiter) override { base_.RemoveWaiter(waiter); }
  int reads() {
    std::lock_guard lock(mutex_);
    return reads_;
  }
  // True once the clock has been read more than `reads` times, false after `timeout`.
  bool WaitForReadAfter(int reads, milliseconds timeout = seconds(10)) {
    std::unique_lock lock(mutex_);
    return read_.wait_for(lock, timeout, [this, reads] { return reads_ > reads; });
  }

 private:
  kube::Clock& base_;
  std::mutex mutex_;
  std::condition_variable read_;
  int reads_ = 0;
};

WorkQueueOptions NoBucket() {
  WorkQueueOptions options;
  options.qps = 0;
  return options;
}

TEST(WorkQueueTest, AKeyAddedTwiceWhileWaitingIsQueuedOnce) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.Add("ns/a");
  queue.Add("ns/b");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Depth(), 2u);
  EXPECT_EQ(GetKey(queue), "ns/a");
  EXPECT_EQ(GetKey(queue), "ns/b");
  EXPECT_EQ(queue.Depth(), 0u);
  EXPECT_EQ(queue.Processing(), 2u);
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
}

TEST(WorkQueueTest, AKeyBeingProcessedIsNotHandedOutAgainUntilDone) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.Add("ns/a");
  ASSERT_EQ(GetKey(queue), "ns/a");

  queue.Add("ns/a");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Depth(), 0u);
  EXPECT_EQ(queue.Processing(), 1u);
  EXPECT_FALSE(GetWithin(queue, kNothingReady)) << "handed to a second worker";

  queue.Done("ns/a");
  EXPECT_EQ(queue.Depth(), 1u) << "the Add during processing was lost";
  EXPECT_EQ(queue.Processing(), 0u);
  ASSERT_EQ(GetKey(queue), "ns/a");
  queue.Done("ns/a");
  // Not added again since: nothing more to do.
  EXPECT_EQ(queue.Depth(), 0u);
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
}

TEST(WorkQueueTest, DelayedKeysComeOutInDueOrderAndTheEarlierDelayWins) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.AddAfter("ns/b", seconds(3));
  queue.AddAfter("ns/a", seconds(5));
  queue.AddAfter("ns/c", seconds(1));
  queue.AddAfter("ns/a", seconds(2));   // earlier: replaces 5 s
  queue.AddAfter("ns/c", seconds(10));  // later: ignored
  EXPECT_EQ(queue.Delayed(), 3u);
  EXPECT_EQ(queue.Depth(), 0u);
  EXPECT_FALSE(GetWithin(queue, kNothingReady));

  clock.Advance(seconds(10));
  auto c = GetWithin(queue, kSomethingReady);
  auto a = GetWithin(queue, kSomethingReady);
  auto b = GetWithin(queue, kSomethingReady);
  ASSERT_TRUE(c && a && b);
  EXPECT_EQ(c->key, "ns/c");
  EXPECT_EQ(a->key, "ns/a");
  EXPECT_EQ(b->key, "ns/b");
  // Waited from when each delay ran out.
  EXPECT_EQ(c->waited, seconds(9));
  EXPECT_EQ(a->waited, seconds(8));
  EXPECT_EQ(b->waited, seconds(7));
  EXPECT_EQ(queue.Delayed(), 0u);
}

TEST(WorkQueueTest, ADelayedKeyIsReadyExactlyWhenItsDelayRunsOut) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.AddAfter("ns/a", seconds(2));
  clock.Advance(seconds(2) - nanoseconds(1));
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
  clock.Advance(nanoseconds(1));
  EXPECT_EQ(GetKey(queue), "ns/a");
}

TEST(WorkQueueTest, AddNowOverridesAPendingDelay) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.AddAfter("ns/a", hours(1));
  queue.Add("ns/a");
  EXPECT_EQ(queue.Delayed(), 0u);
  EXPECT_EQ(queue.Depth(), 1u);
  EXPECT_EQ(GetKey(queue), "ns/a");
  queue.AddAfter("ns/b", seconds(0));  // no delay: at once
  EXPECT_EQ(queue.Depth(), 1u);
}

TEST(WorkQueueTest, WaitedCountsFromWhenTheKeyBecameReady) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.Add("ns/a");
  clock.Advance(seconds(3));
  auto first = GetWithin(queue, kSomethingReady);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->waited, seconds(3));

  // Added while processing: ready only when the worker is done with it.
  queue.Add("ns/a");
  clock.Advance(seconds(4));
  queue.Done("ns/a");
  clock.Advance(seconds(1));
  auto second = GetWithin(queue, kSomethingReady);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->waited, seconds(1));
}

TEST(WorkQueueTest, BackoffDoublesPerFailureUpToTheMaxAndForgetResetsIt) {
  FakeClock clock;
  WorkQueueOptions options = NoBucket();
  options.base_delay = milliseconds(10);
  options.max_delay = milliseconds(80);
  WorkQueue queue(options, clock);

  const std::vector<milliseconds> expected = {milliseconds(10), milliseconds(20), milliseconds(40),
                                              milliseconds(80), milliseconds(80)};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("failure " + std::to_string(i + 1));
    queue.AddRateLimited("ns/a");
    EXPECT_EQ(queue.Failures("ns/a"), static_cast<int>(i + 1));
    EXPECT_EQ(queue.Delayed(), 1u);
    clock.Advance(expected[i] - nanoseconds(1));
    EXPECT_FALSE(GetWithin(queue, kNothingReady));
    clock.Advance(nanoseconds(1));
    ASSERT_EQ(GetKey(queue), "ns/a");
    queue.Done("ns/a");
  }

  EXPECT_EQ(queue.Failures("ns/other"), 0);
  queue.Forget("ns/a");
  EXPECT_EQ(queue.Failures("ns/a"), 0);
  queue.AddRateLimited("ns/a");
  clock.Advance(milliseconds(10) - nanoseconds(1));
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
  clock.Advance(nanoseconds(1));
  EXPECT_EQ(GetKey(queue), "ns/a");
}

TEST(WorkQueueTest, TheGlobalBucketSpacesOutRetriesOnceTheBurstIsSpent) {
  FakeClock clock;
  WorkQueueOptions options;
  options.base_delay = milliseconds(1);
  options.max_delay = milliseconds(1);
  options.qps = 10;
  options.burst = 2;
  WorkQueue queue(options, clock);
  // Two tokens: 1 ms backoff each. Then the bucket: 100 ms, 200 ms.
  for (const char* key : {"ns/a", "ns/b", "ns/c", "ns/d"}) {
    queue.AddRateLimited(key);
  }
  EXPECT_EQ(queue.Delayed(), 4u);

  clock.Advance(milliseconds(1));
  EXPECT_EQ(GetKey(queue), "ns/a");
  EXPECT_EQ(GetKey(queue), "ns/b");
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
  clock.Advance(milliseconds(98));  // 99 ms
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
  clock.Advance(milliseconds(1));  // 100 ms
  EXPECT_EQ(GetKey(queue), "ns/c");
  EXPECT_FALSE(GetWithin(queue, kNothingReady));
  clock.Advance(milliseconds(100));  // 200 ms
  EXPECT_EQ(GetKey(queue), "ns/d");
}

TEST(WorkQueueTest, ShutDownWakesABlockedGet) {
  WatchedClock clock;
  WorkQueue queue(NoBucket(), clock);
  std::promise<std::optional<WorkItem>> result;
  auto got = result.get_future();
  const int reads = clock.reads();  // the queue's bucket reads the clock when built
  // On failure the jthread's stop request ends the Get, so the test reports instead of hanging.
  std::jthread worker([&](std::stop_token stop) { result.set_value(queue.Get(stop)); });
  ASSERT_TRUE(clock.WaitForReadAfter(reads));
  queue.ShutDown();
  ASSERT_EQ(got.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_FALSE(got.get());
  EXPECT_TRUE(queue.shutting_down());

  queue.Add("ns/a");
  EXPECT_EQ(queue.Depth(), 0u) << "Add after shutdown was queued";
  EXPECT_FALSE(queue.Get());
}

TEST(WorkQueueTest, ShutDownReturnsAtOnceEvenWithKeysReady) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.Add("ns/a");
  queue.ShutDown();
  EXPECT_FALSE(queue.Get());
}

TEST(WorkQueueTest, AStopRequestWakesABlockedGet) {
  WatchedClock clock;
  WorkQueue queue(NoBucket(), clock);
  std::stop_source stop;
  std::promise<std::optional<WorkItem>> result;
  auto got = result.get_future();
  const int reads = clock.reads();
  std::jthread worker([&] { result.set_value(queue.Get(stop.get_token())); });
  ASSERT_TRUE(clock.WaitForReadAfter(reads));
  stop.request_stop();
  const bool woke = got.wait_for(seconds(10)) == std::future_status::ready;
  if (!woke) {
    queue.ShutDown();  // let the worker end so the failure is reported instead of hanging
  }
  ASSERT_TRUE(woke);
  EXPECT_FALSE(got.get());

  // Only that worker stopped; the queue still works.
  EXPECT_FALSE(queue.shutting_down());
  queue.Add("ns/a");
  EXPECT_EQ(GetKey(queue), "ns/a");
}

TEST(WorkQueueTest, AnAddWakesABlockedGetWithoutPolling) {
  WatchedClock clock;
  WorkQueue queue(NoBucket(), clock);
  std::promise<std::optional<WorkItem>> result;
  auto got = result.get_future();
  const int reads = clock.reads();  // the queue's bucket reads the clock when built
  // On failure the jthread's stop request ends the Get, so the test reports instead of hanging.
  std::jthread worker([&](std::stop_token stop) { result.set_value(queue.Get(stop)); });
  ASSERT_TRUE(clock.WaitForReadAfter(reads));
  queue.Add("ns/a");
  ASSERT_EQ(got.wait_for(seconds(10)), std::future_status::ready);
  auto item = got.get();
  ASSERT_TRUE(item);
  EXPECT_EQ(item->key, "ns/a");
}

// Regression for the 50 ms poll: a Get waiting for a key due later sleeps until it is due; it
// does not wake to look at the clock again meanwhile.
TEST(WorkQueueTest, AGetWaitingForALaterKeyDoesNotPoll) {
  WatchedClock clock;
  WorkQueue queue(NoBucket(), clock);
  queue.AddAfter("ns/later", hours(1));
  const int reads = clock.reads();
  std::jthread worker([&](std::stop_token stop) { EXPECT_FALSE(queue.Get(stop)); });
  ASSERT_TRUE(clock.WaitForReadAfter(reads));  // Get found nothing due and waits
  // Nothing wakes it until the key is due: no second look at the clock (a 50 ms poll would
  // read it again within this window).
  EXPECT_FALSE(clock.WaitForReadAfter(reads + 1, milliseconds(300)));
  EXPECT_EQ(queue.Delayed(), 1u);
}

// A Get blocked until a due time an hour away on a fake clock returns as soon as the test moves
// the clock there: the move wakes it, not real time passing.
TEST(WorkQueueTest, MovingAFakeClockWakesAGetBlockedUntilALaterDueTime) {
  FakeClock fake;
  WatchedClock clock(fake);
  WorkQueue queue(NoBucket(), clock);
  queue.AddAfter("ns/a", hours(1));
  std::promise<std::optional<WorkItem>> result;
  auto got = result.get_future();
  const int reads = clock.reads();
  std::jthread worker([&](std::stop_token stop) { result.set_value(queue.Get(stop)); });
  ASSERT_TRUE(clock.WaitForReadAfter(reads));  // Get found nothing due and waits
  fake.Advance(hours(1));
  ASSERT_EQ(got.wait_for(seconds(10)), std::future_status::ready);
  auto item = got.get();
  ASSERT_TRUE(item);
  EXPECT_EQ(item->key, "ns/a");
  EXPECT_EQ(item->waited, nanoseconds(0));
}

// The liveness check's view: keys due by now, whether or not a Get has noticed them yet.
TEST(WorkQueueTest, OldestDueIsTheEarliestTimeAWaitingKeyBecameDue) {
  FakeClock clock;
  WorkQueue queue(NoBucket(), clock);
  const auto start = clock.Now();
  EXPECT_FALSE(queue.OldestDue(start));
  queue.AddAfter("ns/delayed", seconds(5));
  EXPECT_FALSE(queue.OldestDue(start)) << "not due yet";
  clock.Advance(seconds(2));
  queue.Add("ns/ready");
  EXPECT_EQ(queue.OldestDue(clock.Now()), start + seconds(2));
  // The delayed key ran out at start + 5 s, though no Get has promoted it.
  clock.Advance(seconds(10));
  EXPECT_EQ(queue.OldestDue(clock.Now()), start + seconds(2));
  ASSERT_EQ(GetKey(queue), "ns/ready");
  EXPECT_EQ(queue.OldestDue(clock.Now()), start + seconds(5));
  ASSERT_EQ(GetKey(queue), "ns/delayed");
  EXPECT_FALSE(queue.OldestDue(clock.Now())) << "keys being processed are not waiting";
}

// Four workers, two writers changing state and re-adding `keys` keys (some delayed): no key is
// ever on two workers at once, and each key's last processing saw its last state (level-based:
// a write followed by an Add is never missed).
void StressWithKeys(int keys) {
  constexpr int kRounds = 200;
  constexpr int kWorkers = 4;
  WorkQueue queue(NoBucket(), kube::RealClock());

  std::vector<std::atomic<int>> state(keys);
  std::vector<std::atomic<int>> seen(keys);
  for (int k = 0; k < keys; ++k) {
    state[k] = 0;
    seen[k] = -1;
  }
  auto key_of = [](int k) { return "ns/job-" + std::to_string(k); };

  std::mutex in_flight_mutex;
  std::condition_variable reconciled;  // after each reconcile
  std::set<std::string> in_flight;
  std::atomic<int> overlaps{0};
  std::atomic<long> processed{0};

  std::vector<std::jthread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto item = queue.Get()) {
        {
          std::lock_guard lock(in_flight_mutex);
          if (!in_flight.insert(item->key).second) {
            ++overlaps;
          }
        }
        const int k = std::stoi(item->key.substr(std::string("ns/job-").size()));
        seen[k] = state[k].load();  // the "reconcile" reads current state
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // overlap with other workers
        {
          std::lock_guard lock(in_flight_mutex);
          in_flight.erase(item->key);
          ++processed;
        }
        reconciled.notify_all();
        queue.Done(item->key);
      }
    });
  }

  std::vector<std::jthread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (int k = 0; k < keys; ++k) {
          ++state[k];
          if ((round + k + t) % 7 == 0) {
            queue.AddAfter(key_of(k), milliseconds(1));
          } else {
            queue.Add(key_of(k));
          }
        }
        // Spread the writes over the workers' run so keys are re-added while being processed.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }

  auto all_caught_up = [&] {
    for (int k = 0; k < keys; ++k) {
      if (seen[k].load() != state[k].load()) {
        return false;
      }
    }
    return true;
  };
  {
    std::unique_lock lock(in_flight_mutex);
    reconciled.wait_for(lock, seconds(60), all_caught_up);
  }
  queue.ShutDown();
  for (auto& worker : workers) {
    worker.join();
  }

  EXPECT_EQ(overlaps.load(), 0) << "of " << processed.load() << " reconciles";
  for (int k = 0; k < keys; ++k) {
    EXPECT_EQ(seen[k].load(), 2 * kRounds) << key_of(k) << "'s last Add was never processed";
  }
  // Every processing answers at least one Add.
  EXPECT_LE(processed.load(), 2L * kRounds * keys);
  EXPECT_GE(processed.load(), keys);
}

// Fewer keys than workers: a key re-added while processing is what the idle workers would grab.
TEST(WorkQueueTest, UnderConcurrentAddsToFewKeysNoKeyIsProcessedTwiceAtOnceAndNoAddIsLost) {
  StressWithKeys(3);
}

TEST(WorkQueueTest, UnderConcurrentAddsToManyKeysNoKeyIsProcessedTwiceAtOnceAndNoAddIsLost) {
  StressWithKeys(200);
}

}  // namespace
}  // namespace ringleader::runtime
