// The liveness rule behind /healthz: the controller's loops must keep moving. It fails when a
// worker is stuck in one reconcile, an informer's list/watch loop has stopped, or the work queue
// holds due keys that an idle worker does not take. An idle operator (empty queue, idle workers,
// quiet watches that roll over) is live. Pure apart from remembering when each loop last moved.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/clock.h"

namespace ringleader::runtime {

struct LivenessOptions {
  // Each limit turns its check off when zero.
  // A worker inside one reconcile for longer than this is stuck. A reconcile takes milliseconds;
  // with the client's retries (5 tries of up to 30 s) a few API calls can take minutes.
  std::chrono::seconds reconcile_timeout{600};
  // An informer loop that has not started a list or watch, received an event or failed an
  // attempt for longer than this has stopped. A quiet watch ends and is reopened every 300 s
  // (its timeoutSeconds), or is cut after 330 s without a byte, so keep this above 330 s.
  std::chrono::seconds informer_timeout{600};
  // A key due for longer than this while a worker has waited for work for longer than this
  // means the queue is not handing keys out. A free worker normally takes a key at once.
  std::chrono::seconds queue_timeout{60};
};

// A loop that should keep moving (an informer's list/watch loop for one namespace): its name for
// messages and a count that grows with every step it takes.
struct LoopProgress {
  std::string name;  // "pods in all namespaces"

  std::uint64_t steps = 0;
};

// What the controller's moving parts show at one instant, on the controller's clock.
struct ProgressSnapshot {
  kube::Clock::TimePoint now{};
  struct Worker {
    std::string reconciling;         // the key being reconciled; "" while waiting for one
    kube::Clock::TimePoint since{};  // when the reconcile or the wait began
  };
  std::vector<Worker> workers;  // empty while the workers are not running
  // When the longest-waiting due key became due (WorkQueue::OldestDue); nullopt: none is due.
  std::optional<kube::Clock::TimePoint> oldest_due;
  std::vector<LoopProgress> loops;  // empty while the informers are not running
};

class LivenessCheck {
 public:
  explicit LivenessCheck(LivenessOptions options) : options_(options) {}

  // "" when live; otherwise every problem found, joined by "; ", each naming what is stuck and
  // for how long. A loop counts as moving since the first Check that saw its present step
  // count, so call this regularly (the probe does, every 10 s). Thread-safe.
  std::string Check(const ProgressSnapshot& snapshot);

  const LivenessOptions& options() const { return options_; }

 private:
  struct Seen {
    std::uint64_t steps = 0;
    kube::Clock::TimePoint since{};
  };

  const LivenessOptions options_;
  std::mutex mutex_;
  std::map<std::string, Seen> loops_;  // by name
};

}  // namespace ringleader::runtime
