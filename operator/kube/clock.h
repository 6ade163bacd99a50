// Time for the Kubernetes client: a steady clock plus an interruptible sleep, injectable so
// backoff, rate limiting and token re-reads are tested without waiting.
#pragma once

#include <chrono>
#include <stop_token>

namespace ringleader::kube {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;

  // Monotonic now.
  virtual TimePoint Now() = 0;

  // Sleeps for `duration` (nothing when <= 0) or until `stop` is requested, whichever comes
  // first. Returns false when it returned early because of `stop`.
  virtual bool SleepFor(Duration duration, std::stop_token stop = {}) = 0;
};

// The process-wide real clock (std::chrono::steady_clock and a condition-variable sleep).
Clock& RealClock();

}  // namespace ringleader::kube
