// Writes the operator made that its caches have not shown yet (client-go's
// ControllerExpectations). Planning a job before its cache caught up would repeat a create
// (409 AlreadyExists) or a status write (409 Conflict): wasted API writes. A job with unmet
// expectations waits for the watch event that meets them, or for them to expire.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "operator/kube/clock.h"

namespace ringleader::runtime {

struct Expectation {
  enum class Kind {
    kJobVersionGone,  // the cached job must no longer be at `resource_version` (we wrote past it)
    kCreated,         // an object `object_kind`/`name` must be in the cache
    kDeleted,         // the object with `uid` must be gone from the cache or be terminating
  };
  Kind kind;
  std::string object_kind;  // "TrainingJob", "Pod", "Service", "Secret"
  std::string name;
  std::string uid;
  std::string resource_version;
};

class Expectations {
 public:
  explicit Expectations(kube::Clock& clock = kube::RealClock(),
                        std::chrono::seconds ttl = std::chrono::seconds(30));

  void Expect(const std::string& job_key, Expectation expectation);

  // Drops the expectations of `job_key` that `met` says the cache shows, and those older than
  // the ttl (a lost watch event must not stall a job forever). True when none remain.
  bool Satisfied(const std::string& job_key, const std::function<bool(const Expectation&)>& met);

  void Forget(const std::string& job_key);
  std::size_t Pending() const;

 private:
  struct Entry {
    Expectation expectation;
    kube::Clock::TimePoint deadline;
  };
  kube::Clock& clock_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<Entry>> pending_;
};

}  // namespace ringleader::runtime
