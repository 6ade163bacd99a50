// Client-side request rate limit: a token bucket (client-go's flowcontrol), so a busy operator
// does not flood the API server.
#pragma once

#include <mutex>
#include <stop_token>

#include "operator/kube/clock.h"

namespace ringleader::kube {

class TokenBucketRateLimiter {
 public:
  // `qps` tokens per second refill a bucket of `burst` tokens, full at the start. qps <= 0
  // disables the limit. `clock` must outlive the limiter.
  TokenBucketRateLimiter(double qps, int burst, Clock& clock);

  // Takes one token and returns how long the caller must wait before using it (zero when one
  // was available). Reservations queue: each later caller waits one more 1/qps.
  Clock::Duration Reserve();

  // Reserve() and then sleep it off on the clock. False when `stop` interrupted the wait (the
  // token stays spent, as in client-go).
  bool Acquire(std::stop_token stop = {});

 private:
  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mutex_;
  double tokens_;
  Clock::TimePoint last_;
};

}  // namespace ringleader::kube
