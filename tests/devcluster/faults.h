// Fault injection for reliability tests: errors, latency, forced conflicts, cut and compacted
// watches. Thread-safe; the HTTP layer consults it on every request except the admin endpoint.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {

class Faults {
 public:
  Faults() = default;
  Faults(const Faults&) = delete;
  Faults& operator=(const Faults&) = delete;

  // Answer this fraction (0..1) of requests with `code`: 500 (InternalError) or 429
  // (TooManyRequests with Retry-After: 1). Rate 0 turns it off.
  void SetErrorRate(double rate, int code = 500);
  // Answer the next `n` writes (POST, PUT, PATCH, DELETE) with 409 Conflict.
  void ConflictNextWrites(int n);
  // Delay every request by this much before handling it.
  void SetLatency(std::chrono::milliseconds latency);
  // Close each watch after it has sent `n` events (0 turns it off).
  void CutWatchesEvery(int n);
  // Close every open watch now (clients see the stream end and must re-watch).
  void CutWatches();
  // Drop the watch history now, so a watch from any older resourceVersion gets 410 Expired.
  void Compact();
  // Everything back to normal.
  void Reset();

  // {"errorRate","errorCode","conflictNextWrites","latencyMs","cutWatchesEvery"}.
  nlohmann::json ToJson() const;
  // Applies the admin endpoint's body; unknown fields or wrong types throw ApiError BadRequest.
  // `cutWatches: true` and `compact: true` act once.
  void ApplyJson(const nlohmann::json& body);

  // --- used by the server ---
  // The error to answer this request with, if any (consumes a forced conflict for writes).
  std::optional<ApiError> Decide(bool is_write);
  std::chrono::milliseconds latency() const;
  int cut_watches_every() const;
  // Bumped by CutWatches(); a watch started under an older epoch ends.
  std::uint64_t cut_epoch() const;
  // Wired by the server: called for CutWatches() (to wake watches) and Compact().
  void SetHooksForServer(std::function<void()> on_cut, std::function<void()> on_compact);

 private:
  mutable std::mutex mu_;
  double error_rate_ = 0;
  int error_code_ = 500;
  int conflict_next_writes_ = 0;
  std::chrono::milliseconds latency_{0};
  int cut_watches_every_ = 0;
  std::uint64_t cut_epoch_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
  std::function<void()> on_cut_;
  std::function<void()> on_compact_;
};

}  // namespace ringleader::devcluster
