// What the trainers' TCPStore holds and how each query changes it: one in-memory map of byte
// strings for the job (PyTorch separates attempts with its own key prefix), queues, and the
// waits and barriers still open. Single-threaded, no I/O; replies are encoded wire bytes
// (torch_store_protocol.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sidecar/rendezvous/torch_store_protocol.h"

namespace ringleader::rendezvous::torch_store {

// Whoever a WAIT or BARRIER that could not be answered at once is answered through (a client
// connection). OnWaitDone is called once per such request, when it completes, and must not call
// back into the TorchStoreState.
class Waiter {
 public:
  virtual void OnWaitDone() = 0;

 protected:
  ~Waiter() = default;
};

// Semantics, as PyTorch's own servers answer (TCPStoreLibUvBackend.cpp):
//   SET, APPEND, MULTI_SET store; a key written while requests wait for it counts for them.
//   GET of a missing key answers ""; MULTI_GET answers each key so.
//   ADD keeps the value as decimal text; a missing key counts as 0.
//   COMPARE_SET: a missing key with empty `expected`, or a value equal to `expected`, becomes
//     `desired`; the answer is the value now stored, or `expected` when the key is missing.
//   CHECK and WAIT count a key as present when it is stored, or is a queue that is not empty.
//   WAIT is answered STOP_WAITING once all its keys are present; until then it is pending.
//   BARRIER adds 1 to the key's count; the entry that brings it to world_size answers every
//     request pending on the key, and itself, STOP_WAITING.
//   CANCEL_WAIT drops the client's pending requests and answers WAIT_CANCELED.
//   QUEUE_PUSH appends and lets the oldest request pending on that key count it as present;
//     QUEUE_POP answers the length before the pop, then the oldest value.
class TorchStoreState {
 public:
  // A client may hold this many WAITs and BARRIERs pending at once (a real client holds one; a
  // 1.13 client whose wait timed out leaves it pending and may start another).
  static constexpr std::size_t kMaxPendingPerWaiter = 64;

  // Why a request could not be applied (the connection is then closed, as PyTorch's server
  // does): e.g. "add: the value of key /x is not a decimal integer".
  struct Refusal {
    std::string message;
  };

  // Applies `request` for `waiter`, appending its reply (if the query has one now) to `reply`.
  std::optional<Refusal> Apply(Request request, Waiter& waiter, std::string& reply);

  // The waiter's connection is gone: its pending requests are dropped (a barrier entry stays).
  void Forget(Waiter& waiter);

  std::size_t PendingFor(const Waiter& waiter) const;
  std::size_t PendingTotal() const { return registrations_.size(); }
  std::size_t KeyCount() const { return data_.size(); }

 private:
  using WaitId = std::uint64_t;
  struct Registration {
    Waiter* waiter = nullptr;
    std::size_t remaining = 0;      // keys still missing
    std::vector<std::string> keys;  // the keys it was registered on
  };

  bool Present(const std::string& key) const;
  void Store(std::string key, std::string value);
  // Every request pending on `key` counts it as present.
  void Notify(const std::string& key);
  // The oldest request pending on `key` counts it as present (a queue push).
  void NotifyOne(const std::string& key);
  void CountDown(WaitId id);
  std::optional<Refusal> Register(Waiter& waiter, std::vector<std::string> keys);
  void Drop(WaitId id);
  void CancelAll(Waiter& waiter);
  std::optional<Refusal> Add(const std::string& key, std::int64_t delta, bool notify,
                              std::int64_t* result);

  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;  // never holds an empty one
  WaitId next_id_ = 1;
  std::unordered_map<WaitId, Registration> registrations_;
  std::unordered_map<std::string, std::set<WaitId>> key_waiters_;  // ids ascend: oldest first
  std::unordered_map<const Waiter*, std::vector<WaitId>> by_waiter_;
};

}  // namespace ringleader::rendezvous::torch_store
