// The rate-limited work queue: a FIFO of ready keys, a due-time index of delayed ones, and the
// processing/dirty sets that keep one key on at most one worker.
#include "operator/runtime/work_queue.h"

#include <algorithm>
#include <cmath>

namespace ringleader::runtime {

WorkQueue::WorkQueue(WorkQueueOptions options, kube::Clock& clock)
    : options_(options), clock_(clock), bucket_(options.qps, options.burst, clock) {
  clock_.AddWaiter(*this);
}

WorkQueue::~WorkQueue() {
  clock_.RemoveWaiter(*this);
  ShutDown();
}

void WorkQueue::Wake() {
  std::lock_guard lock(mutex_);
  cv_.notify_all();
}

void WorkQueue::Add(const std::string& key) { AddAfter(key, kube::Clock::Duration::zero()); }

void WorkQueue::AddAfter(const std::string& key, kube::Clock::Duration delay) {
  std::lock_guard lock(mutex_);
  if (!shutting_down_) {
    AddAfterLocked(key, delay, clock_.Now());
  }
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (shutting_down_) {
    return;
  }
  const int failures = failures_[key]++;
  const double base_ns = std::chrono::duration<double, std::nano>(options_.base_delay).count();
  const double max_ns = std::chrono::duration<double, std::nano>(options_.max_delay).count();
  // 2^62 already exceeds any cap; stopping there keeps the product finite.
  const double backoff_ns = std::min(base_ns * std::ldexp(1.0, std::min(failures, 62)), max_ns);
  const auto backoff = std::chrono::round<kube::Clock::Duration>(
      std::chrono::duration<double, std::nano>(backoff_ns));
  AddAfterLocked(key, std::max(backoff, bucket_.Reserve()), clock_.Now());
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<WorkItem> WorkQueue::Get(std::stop_token stop) {
  // Declared before the lock so it is destroyed after the lock is released: its callback takes
  // the mutex, and destroying it waits for a callback already running on another thread.
  std::stop_callback wake_on_stop(stop, [this] {
    std::lock_guard lock(mutex_);
    cv_.notify_all();
  });
  std::unique_lock lock(mutex_);
  while (true) {
    if (shutting_down_ || stop.stop_requested()) {
      return std::nullopt;
    }
    const kube::Clock::TimePoint now = clock_.Now();
    PromoteDueLocked(now);
    if (!ready_.empty()) {
      WorkItem item{std::move(ready_.front()), {}};
      ready_.pop_front();
      auto since = ready_since_.find(item.key);
      item.waited = std::max(kube::Clock::Duration::zero(), now - since->second);
      ready_since_.erase(since);
      processing_.insert(item.key);
      return item;
    }
    // Until the next due time, or a notify: an Add, ShutDown, stop, or a fake clock's move
    // (clock_'s time may not be real time; Wake() covers that).
    if (by_due_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, by_due_.begin()->first - now);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mutex_);
  processing_.erase(key);
  if (dirty_.erase(key) > 0 && !shutting_down_) {
    EnqueueReadyLocked(key, clock_.Now());
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

std::size_t WorkQueue::Depth() const {
  std::lock_guard lock(mutex_);
  return ready_.size();
}

std::size_t WorkQueue::Delayed() const {
  std::lock_guard lock(mutex_);
  return delayed_.size();
}

std::size_t WorkQueue::Processing() const {
  std::lock_guard lock(mutex_);
  return processing_.size();
}

std::optional<kube::Clock::TimePoint> WorkQueue::OldestDue(kube::Clock::TimePoint now) const {
  std::lock_guard lock(mutex_);
  std::optional<kube::Clock::TimePoint> oldest;
  for (const auto& [key, since] : ready_since_) {
    oldest = oldest ? std::min(*oldest, since) : since;
  }
  if (!by_due_.empty() && by_due_.begin()->first <= now) {
    oldest = oldest ? std::min(*oldest, by_due_.begin()->first) : by_due_.begin()->first;
  }
  return oldest;
}

void WorkQueue::AddAfterLocked(const std::string& key, kube::Clock::Duration delay,
                               kube::Clock::TimePoint now) {
  if (delay <= kube::Clock::Duration::zero()) {
    // Queued now beats any later due time.
    EraseDelayedLocked(key);
    EnqueueReadyLocked(key, now);
    return;
  }
  if (ready_since_.contains(key) || dirty_.contains(key)) {
    return;  // already due sooner
  }
  const kube::Clock::TimePoint due = now + delay;
  if (auto it = delayed_.find(key); it != delayed_.end()) {
    if (it->second <= due) {
      return;
    }
    by_due_.erase({it->second, key});
    it->second = due;
  } else {
    delayed_.emplace(key, due);
  }
  by_due_.emplace(due, key);
  cv_.notify_all();  // a waiting Get may need to wake sooner
}

void WorkQueue::PromoteDueLocked(kube::Clock::TimePoint now) {
  while (!by_due_.empty() && by_due_.begin()->first <= now) {
    auto [due, key] = *by_due_.begin();
    by_due_.erase(by_due_.begin());
    delayed_.erase(key);
    // Ready from when the delay ran out, not from when Get noticed.
    EnqueueReadyLocked(key, due);
  }
}

void WorkQueue::EnqueueReadyLocked(const std::string& key, kube::Clock::TimePoint now) {
  if (processing_.contains(key)) {
    dirty_.insert(key);
    return;
  }
  if (ready_since_.contains(key)) {
    return;
  }
  ready_.push_back(key);
  ready_since_.emplace(key, now);
  cv_.notify_one();
}

void WorkQueue::EraseDelayedLocked(const std::string& key) {
  if (auto it = delayed_.find(key); it != delayed_.end()) {
    by_due_.erase({it->second, key});
    delayed_.erase(it);
  }
}

}  // namespace ringleader::runtime
