// Fault injection for reliability tests: errors, latency, forced conflicts, cut and compacted
// watches. Thread-safe; the fault proxy (fault_proxy.h) consults it on every request it forwards.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace ringleader::devcluster {

// An answer given instead of the API server's: a Kubernetes Status with its HTTP code.
struct InjectedError {
  int code = 500;
  std::string reason;            // metav1.StatusReason: InternalError, TooManyRequests, ...
  std::string message;
  nlohmann::json details = nlohmann::json::object();  // metav1.StatusDetails; may be empty
  int retry_after_seconds = 0;   // > 0: also sent as a Retry-After header

  // {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message",...,"code"}.
  nlohmann::json StatusBody() const;
};

class Faults {
 public:
  Faults() = default;
  Faults(const Faults&) = delete;
  Faults& operator=(const Faults&) = delete;

  // Answer this fraction (0..1) of requests with `code`: 500 (InternalError) or 429
  // (TooManyRequests with Retry-After: 1). Rate 0 turns it off. Throws std::invalid_argument.
  void SetErrorRate(double rate, int code = 500);
  // Answer the next `n` writes (POST, PUT, PATCH, DELETE) with 409 Conflict.
  void ConflictNextWrites(int n);
  // Delay every request by this much before handling it.
  void SetLatency(std::chrono::milliseconds latency);
  // Close each watch after it has sent `n` events (0 turns it off).
  void CutWatchesEvery(int n);
  // Close every open watch now (clients see the stream end and must re-watch).
  void CutWatches();
  // Expire the watch history now: a watch from a resourceVersion older than the newest one seen
  // so far gets 410 Expired.
  void Compact();
  // Everything back to normal (a compaction, as a real one, stays).
  void Reset();

  // {"errorRate","errorCode","conflictNextWrites","latencyMs","cutWatchesEvery"}.
  nlohmann::json ToJson() const;
  // Applies the admin endpoint's body; unknown fields or wrong types throw std::invalid_argument.
  // `cutWatches: true` and `compact: true` act once; `reset: true` acts first.
  void ApplyJson(const nlohmann::json& body);

  // --- used by the proxy ---
  // The error to answer this request with, if any (consumes a forced conflict for writes).
  // `group_resource` ("configmaps", "trainingjobs.ringleader.dev") and `name` word the conflict.
  std::optional<InjectedError> Decide(bool is_write, std::string_view group_resource,
                                      std::string_view name);
  std::chrono::milliseconds latency() const;
  int cut_watches_every() const;
  // Bumped by CutWatches(); a watch started under an older epoch ends.
  std::uint64_t cut_epoch() const;
  // A resourceVersion the API server answered with (objects, lists, watch events).
  void ObserveResourceVersion(std::uint64_t rv);
  // The 410 Expired a watch from `resource_version` gets after Compact(), if it does.
  std::optional<InjectedError> ExpiredWatch(std::string_view resource_version) const;
  // Called (outside the lock) after each CutWatches(), to wake the open watches; may be empty.
  void SetCutListener(std::function<void()> on_cut);

 private:
  mutable std::mutex mu_;
  double error_rate_ = 0;
  int error_code_ = 500;
  int conflict_next_writes_ = 0;
  std::chrono::milliseconds latency_{0};
  int cut_watches_every_ = 0;
  std::uint64_t cut_epoch_ = 0;
  std::uint64_t newest_rv_seen_ = 0;
  std::uint64_t compacted_rv_ = 0;  // watches from below this are expired; 0: never compacted
  std::mt19937_64 rng_{std::random_device{}()};
  std::function<void()> on_cut_;
};

}  // namespace ringleader::devcluster
