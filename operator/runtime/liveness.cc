// The liveness rule: stuck workers, stopped informer loops, a queue that is not drained.
#include "operator/runtime/liveness.h"

#include <utility>

namespace ringleader::runtime {
namespace {

using Duration = kube::Clock::Duration;

bool Over(Duration elapsed, std::chrono::seconds limit) {
  return limit > std::chrono::seconds::zero() && elapsed > limit;
}

std::string Seconds(Duration duration) {
  return std::to_string(std::chrono::floor<std::chrono::seconds>(duration).count()) + "s";
}

std::string Limit(const char* flag, std::chrono::seconds limit) {
  return " (" + std::string(flag) + " " + std::to_string(limit.count()) + "s)";
}

}  // namespace

std::string LivenessCheck::Check(const ProgressSnapshot& snapshot) {
  const kube::Clock::TimePoint now = snapshot.now;
  std::vector<std::string> problems;

  for (std::size_t i = 0; i < snapshot.workers.size(); ++i) {
    const ProgressSnapshot::Worker& worker = snapshot.workers[i];
    if (!worker.reconciling.empty() && Over(now - worker.since, options_.reconcile_timeout)) {
      problems.push_back("worker " + std::to_string(i + 1) + " has been reconciling " +
                         worker.reconciling + " for " + Seconds(now - worker.since) +
                         Limit("--liveness-reconcile-timeout", options_.reconcile_timeout));
    }
  }

  if (snapshot.oldest_due && Over(now - *snapshot.oldest_due, options_.queue_timeout)) {
    // The worker that has waited longest for work; busy workers do not count.
    std::optional<std::size_t> idle;
    for (std::size_t i = 0; i < snapshot.workers.size(); ++i) {
      const ProgressSnapshot::Worker& worker = snapshot.workers[i];
      if (worker.reconciling.empty() &&
          (!idle || worker.since < snapshot.workers[*idle].since)) {
        idle = i;
      }
    }
    if (idle && Over(now - snapshot.workers[*idle].since, options_.queue_timeout)) {
      problems.push_back("the work queue is not drained: a key has been due for " +
                         Seconds(now - *snapshot.oldest_due) + " while worker " +
                         std::to_string(*idle + 1) + " has waited for work for " +
                         Seconds(now - snapshot.workers[*idle].since) +
                         Limit("--liveness-queue-timeout", options_.queue_timeout));
    }
  }

  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Seen> loops;
    for (const LoopProgress& loop : snapshot.loops) {
      Seen seen{loop.steps, now};
      if (auto it = loops_.find(loop.name); it != loops_.end() && it->second.steps == loop.steps) {
        seen.since = it->second.since;
      }
      if (Over(now - seen.since, options_.informer_timeout)) {
        problems.push_back("the informer for " + loop.name +
                           " has not listed, watched or retried for " +
                           Seconds(now - seen.since) +
                           Limit("--liveness-informer-timeout", options_.informer_timeout));
      }
      loops.emplace(loop.name, seen);
    }
    loops_ = std::move(loops);
  }

  std::string message;
  for (const std::string& problem : problems) {
    message += (message.empty() ? "" : "; ") + problem;
  }
  return message;
}

}  // namespace ringleader::runtime
