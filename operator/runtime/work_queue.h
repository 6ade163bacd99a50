// The operator's work queue (client-go's rate-limited workqueue): keys of jobs to reconcile,
// each queued at most once, never handed to two workers at once, retried with per-key
// exponential backoff under a global rate limit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "operator/kube/clock.h"
#include "operator/kube/rate_limiter.h"

namespace ringleader::runtime {

struct WorkQueueOptions {
  // Per-key backoff for AddRateLimited: base_delay * 2^(failures), capped at max_delay.
  std::chrono::milliseconds base_delay{5};
  std::chrono::milliseconds max_delay{300'000};
  // Global token bucket shared by every AddRateLimited (client-go: 10 qps, burst 100).
  double qps = 10;
  int burst = 100;
};

struct WorkItem {
  std::string key;
  // From the moment the key became ready (added, or its delay ran out) until Get returned it.
  std::chrono::steady_clock::duration waited{};
};

class WorkQueue final : private kube::Clock::Waiter {
 public:
  // `clock` must outlive the queue. Delays are measured on it; a blocked Get sleeps in real time
  // until the next due key (or an Add, ShutDown or stop), and is woken when a clock whose time
  // jumps (a test's fake clock) moves.
  explicit WorkQueue(WorkQueueOptions options = {}, kube::Clock& clock = kube::RealClock());
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` now. A key already waiting is not queued twice; a key being processed is
  // marked dirty and queued again when its worker calls Done.
  void Add(const std::string& key);
  // Queues `key` after `delay` (now when <= 0). An earlier pending delay for the key wins.
  void AddAfter(const std::string& key, kube::Clock::Duration delay);
  // Queues `key` after the larger of its own backoff (which this doubles) and the global
  // bucket's wait. Use after a failed reconcile.
  void AddRateLimited(const std::string& key);
  // The key succeeded: its failure count (and so its backoff) starts again at zero.
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;

  // Blocks until a key is ready, then marks it processing and returns it. nullopt once the
  // queue is shut down (and drained of ready keys is NOT required: shutdown returns at once)
  // or `stop` is requested.
  std::optional<WorkItem> Get(std::stop_token stop = {});
  // The worker finished `key`; if it was added meanwhile it is queued again.
  void Done(const std::string& key);

  // Wakes every Get with nullopt; later Adds are ignored.
  void ShutDown();
  bool shutting_down() const;

  std::size_t Depth() const;    // keys ready and waiting for a worker
  std::size_t Delayed() const;  // keys waiting for their delay to run out
  std::size_t Processing() const;
  // When the longest-waiting key that is due by `now` became due (added, or its delay ran out,
  // even if no Get has noticed yet); nullopt when no key is due. For the liveness check.
  std::optional<kube::Clock::TimePoint> OldestDue(kube::Clock::TimePoint now) const;

 private:
  void Wake() override;  // the clock moved
  // Implementation's choice; keep it all behind mutex_.
  void AddAfterLocked(const std::string& key, kube::Clock::Duration delay,
                      kube::Clock::TimePoint now);
  void PromoteDueLocked(kube::Clock::TimePoint now);
  void EnqueueReadyLocked(const std::string& key, kube::Clock::TimePoint now);
  void EraseDelayedLocked(const std::string& key);

  const WorkQueueOptions options_;
  kube::Clock& clock_;
  kube::TokenBucketRateLimiter bucket_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;
  std::unordered_map<std::string, kube::Clock::TimePoint> ready_since_;  // keys in ready_
  std::unordered_set<std::string> processing_;
  std::unordered_set<std::string> dirty_;  // added while processing
  std::map<std::string, kube::Clock::TimePoint> delayed_;  // key -> due time
  std::set<std::pair<kube::Clock::TimePoint, std::string>> by_due_;  // delayed_, soonest first
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace ringleader::runtime
