// The nonces of the early proofs a store server has welcomed, remembered while their Hello's
// sent_at_ms is still inside kEarlyProofWindow of the server's clock, so that a recorded Hello
// cannot be welcomed twice (auth.h). Single-threaded: the server's event loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <queue>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous {

class EarlyProofNonces {
 public:
  // Only a token holder adds a nonce, one per connection; past this many within one window the
  // server stops welcoming early proofs (the clients fall back to the challenge) rather than grow.
  static constexpr std::size_t kDefaultCapacity = 1 << 20;

  explicit EarlyProofNonces(std::int64_t window_ms, std::size_t capacity = kDefaultCapacity)
      : window_ms_(window_ms), capacity_(capacity) {}

  // True, and the nonce remembered, when sent_at_ms is within the window of now_ms and the nonce
  // is new; false for a stale Hello, a nonce seen before, or a full memory.
  bool Admit(const Nonce& nonce, std::int64_t sent_at_ms, std::int64_t now_ms) {
    Forget(now_ms);
    if (sent_at_ms < now_ms - window_ms_ || sent_at_ms > now_ms + window_ms_ ||
        seen_.size() >= capacity_ || !seen_.insert(nonce).second) {
      return false;
    }
    // A Hello stays admissible until its sent_at_ms leaves the window.
    expiries_.emplace(sent_at_ms + window_ms_, nonce);
    return true;
  }

  std::size_t size() const { return seen_.size(); }

 private:
  struct NonceHash {
    std::size_t operator()(const Nonce& nonce) const {
      std::size_t hash = 0;  // the nonce is uniformly random: any 8 of its bytes will do
      std::memcpy(&hash, nonce.data(), sizeof(hash));
      return hash;
    }
  };
  using Expiry = std::pair<std::int64_t, Nonce>;

  void Forget(std::int64_t now_ms) {
    while (!expiries_.empty() && expiries_.top().first < now_ms) {
      seen_.erase(expiries_.top().second);
      expiries_.pop();
    }
  }

  std::int64_t window_ms_;
  std::size_t capacity_;
  std::unordered_set<Nonce, NonceHash> seen_;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiries_;  // soonest first
};

}  // namespace ringleader::rendezvous
