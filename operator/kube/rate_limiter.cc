// Token bucket with reservations: tokens may go negative, and the debt is the wait.
#include "operator/kube/rate_limiter.h"

#include <algorithm>

namespace ringleader::kube {

TokenBucketRateLimiter::TokenBucketRateLimiter(double qps, int burst, Clock& clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(clock),
      tokens_(std::max(burst, 1)),
      last_(clock.Now()) {}

Clock::Duration TokenBucketRateLimiter::Reserve() {
  if (qps_ <= 0) {
    return Clock::Duration::zero();
  }
  using Seconds = std::chrono::duration<double>;
  std::lock_guard lock(mutex_);
  const Clock::TimePoint now = clock_.Now();
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + Seconds(now - last_).count() * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) {
    return Clock::Duration::zero();
  }
  return std::chrono::round<Clock::Duration>(Seconds(-tokens_ / qps_));
}

bool TokenBucketRateLimiter::Acquire(std::stop_token stop) {
  return clock_.SleepFor(Reserve(), std::move(stop));
}

}  // namespace ringleader::kube
