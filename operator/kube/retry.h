// When and how long the client waits before retrying a request: exponential backoff with
// jitter, Retry-After, and which failures are safe to retry for which verbs.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

#include "operator/kube/clock.h"

namespace ringleader::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial_delay{100};
  double multiplier = 2.0;
  std::chrono::milliseconds max_delay{10'000};
  // Each delay is stretched by a random fraction in [0, jitter) of itself (client-go's
  // wait.Jitter), then capped at max_delay.
  double jitter = 0.2;
  // Total tries of one request, the first included.
  int max_attempts = 5;
  // No retry is started whose wait would end later than this after the first try.
  std::chrono::milliseconds deadline{60'000};
};

// Uniform numbers in [0, 1) for jitter; injectable so tests get exact delays.
using UniformRandom = std::function<double()>;

// A thread-safe Mersenne Twister seeded from std::random_device.
UniformRandom DefaultUniformRandom();

// The delay before retry number `retry` (0 for the first retry) for a jitter draw `u` in [0,1):
// min(initial * multiplier^retry * (1 + jitter * u), max_delay).
Clock::Duration BackoffDelay(const BackoffPolicy& policy, int retry, double u);

// Successive delays of one backoff sequence; Reset() starts it over after a success.
class Backoff {
 public:
  Backoff(BackoffPolicy policy, UniformRandom random);
  Clock::Duration Next();
  void Reset() { retries_ = 0; }
  int retries() const { return retries_; }

 private:
  BackoffPolicy policy_;
  UniformRandom random_;
  int retries_ = 0;
};

// Retry-After in delta-seconds ("3"). The API server never sends the HTTP-date form; that and
// anything unparsable give nullopt. Values are capped at one hour.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value);

// Why a request was retried; the metric label is bounded to these.
enum class RetryReason { kConnection, kTooManyRequests, kServerError };
std::string_view RetryReasonLabel(RetryReason reason);

// What one attempt ended with.
struct AttemptOutcome {
  int http_code = 0;                // 0 when no HTTP response arrived
  bool connection_refused = false;  // the request was certainly never sent
  bool tls_failure = false;         // certificate or handshake failure: retrying cannot help
};

// Whether to retry: idempotent requests on connection errors, 429 and 5xx (but not 501);
// non-idempotent ones (POST, JSON patch) only when the connection was refused, since the
// server may have acted on anything else.
std::optional<RetryReason> RetryReasonFor(bool idempotent, const AttemptOutcome& outcome);

}  // namespace ringleader::kube
