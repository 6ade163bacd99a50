// A Clock for tests: time moves only when someone sleeps on it or calls Advance(), and every
// sleep is recorded, so backoff and rate-limit schedules are asserted exactly. Each move wakes
// the clock's waiters (a work queue blocked until a due time).
#pragma once

#include <mutex>
#include <set>
#include <vector>

#include "operator/kube/clock.h"

namespace ringleader::kube::testing {

class FakeClock final : public Clock {
 public:
  TimePoint Now() override {
    std::lock_guard lock(mutex_);
    return now_;
  }

  bool SleepFor(Duration duration, std::stop_token stop) override {
    {
      std::lock_guard lock(mutex_);
      if (stop.stop_requested()) {
        return false;
      }
      if (duration <= Duration::zero()) {
        return true;
      }
      sleeps_.push_back(duration);
      now_ += duration;
    }
    WakeWaiters();
    return true;
  }

  void Advance(Duration duration) {
    {
      std::lock_guard lock(mutex_);
      now_ += duration;
    }
    WakeWaiters();
  }

  void AddWaiter(Waiter& waiter) override {
    std::lock_guard lock(waiters_mutex_);
    waiters_.insert(&waiter);
  }
  void RemoveWaiter(Waiter& waiter) override {
    std::lock_guard lock(waiters_mutex_);
    waiters_.erase(&waiter);
  }

  std::vector<Duration> sleeps() const {
    std::lock_guard lock(mutex_);
    return sleeps_;
  }

 private:
  // Outside mutex_: a waiter's Wake takes its own lock, under which it may read Now().
  void WakeWaiters() {
    std::lock_guard lock(waiters_mutex_);
    for (Waiter* waiter : waiters_) {
      waiter->Wake();
    }
  }

  mutable std::mutex mutex_;
  TimePoint now_{std::chrono::hours(1)};
  std::vector<Duration> sleeps_;
  std::mutex waiters_mutex_;  // held while waking, so RemoveWaiter waits for a Wake under way
  std::set<Waiter*> waiters_;
};

}  // namespace ringleader::kube::testing
