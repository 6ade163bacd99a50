// Backoff arithmetic and the retry decision table.
#include "operator/kube/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>

namespace ringleader::kube {

UniformRandom DefaultUniformRandom() {
  struct State {
    std::mutex mutex;
    std::mt19937_64 engine{std::random_device{}()};
    std::uniform_real_distribution<double> dist{0.0, 1.0};
  };
  auto state = std::make_shared<State>();
  return [state] {
    std::lock_guard lock(state->mutex);
    return state->dist(state->engine);
  };
}

Clock::Duration BackoffDelay(const BackoffPolicy& policy, int retry, double u) {
  using Seconds = std::chrono::duration<double>;
  const double max_s = std::chrono::duration_cast<Seconds>(policy.max_delay).count();
  double delay_s = std::chrono::duration_cast<Seconds>(policy.initial_delay).count() *
                   std::pow(policy.multiplier, std::max(retry, 0));
  delay_s = std::min(delay_s, max_s);
  delay_s *= 1.0 + policy.jitter * std::clamp(u, 0.0, 1.0);
  delay_s = std::min(delay_s, max_s);
  return std::chrono::round<Clock::Duration>(Seconds(delay_s));
}

Backoff::Backoff(BackoffPolicy policy, UniformRandom random)
    : policy_(policy), random_(std::move(random)) {}

Clock::Duration Backoff::Next() {
  Clock::Duration delay = BackoffDelay(policy_, retries_, random_ ? random_() : 0.0);
  ++retries_;
  return delay;
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  long long seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(std::min<long long>(seconds, 3600));
}

std::string_view RetryReasonLabel(RetryReason reason) {
  switch (reason) {
    case RetryReason::kConnection:
      return "connection";
    case RetryReason::kTooManyRequests:
      return "too_many_requests";
    case RetryReason::kServerError:
      return "server_error";
  }
  return "connection";
}

std::optional<RetryReason> RetryReasonFor(bool idempotent, const AttemptOutcome& outcome) {
  if (outcome.http_code == 0) {
    if (outcome.tls_failure) {
      return std::nullopt;
    }
    if (outcome.connection_refused || idempotent) {
      return RetryReason::kConnection;
    }
    return std::nullopt;
  }
  if (!idempotent) {
    return std::nullopt;
  }
  if (outcome.http_code == 429) {
    return RetryReason::kTooManyRequests;
  }
  if (outcome.http_code >= 500 && outcome.http_code <= 599 && outcome.http_code != 501) {
    return RetryReason::kServerError;
  }
  return std::nullopt;
}

}  // namespace ringleader::kube
