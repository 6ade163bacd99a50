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

  // Something blocked in real time until a time on this clock (a work queue waiting for its
  // next due key). Wake() is called from the thread that moved the clock and must not block.
  class Waiter {
   public:
    virtual ~Waiter() = default;
    virtual void Wake() = 0;
  };
  // A clock whose time can jump (a test's fake clock) calls Wake() on each waiter after every
  // move, so a wait computed from an earlier Now() ends at once. Real time never jumps, so the
  // real clock keeps no waiters. Once RemoveWaiter returns, `waiter` is not called again.
  virtual void AddWaiter(Waiter& /*waiter*/) {}
  virtual void RemoveWaiter(Waiter& /*waiter*/) {}
};

// The process-wide real clock (std::chrono::steady_clock and a condition-variable sleep).
Clock& RealClock();

}  // namespace ringleader::kube
