// A Clock for tests: time moves only when someone sleeps on it or calls Advance(), and every
// sleep is recorded, so backoff and rate-limit schedules are asserted exactly.
#pragma once

#include <mutex>
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
    std::lock_guard lock(mutex_);
    if (stop.stop_requested()) {
      return false;
    }
    if (duration > Duration::zero()) {
      sleeps_.push_back(duration);
      now_ += duration;
    }
    return true;
  }

  void Advance(Duration duration) {
    std::lock_guard lock(mutex_);
    now_ += duration;
  }

  std::vector<Duration> sleeps() const {
    std::lock_guard lock(mutex_);
    return sleeps_;
  }

 private:
  mutable std::mutex mutex_;
  TimePoint now_{std::chrono::hours(1)};
  std::vector<Duration> sleeps_;
};

}  // namespace ringleader::kube::testing
