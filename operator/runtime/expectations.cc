// Expectations: per-job lists of writes not yet seen in the caches.
#include "operator/runtime/expectations.h"

#include <algorithm>

namespace ringleader::runtime {

Expectations::Expectations(kube::Clock& clock, std::chrono::seconds ttl) : clock_(clock), ttl_(ttl) {}

void Expectations::Expect(const std::string& job_key, Expectation expectation) {
  std::lock_guard lock(mutex_);
  pending_[job_key].push_back(Entry{std::move(expectation), clock_.Now() + ttl_});
}

bool Expectations::Satisfied(const std::string& job_key,
                             const std::function<bool(const Expectation&)>& met) {
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    const auto it = pending_.find(job_key);
    if (it == pending_.end()) {
      return true;
    }
    entries = std::move(it->second);
    pending_.erase(it);
  }
  // `met` reads the caches; it runs without our lock held.
  const auto now = clock_.Now();
  std::erase_if(entries, [&](const Entry& entry) { return now >= entry.deadline || met(entry.expectation); });
  if (entries.empty()) {
    return true;
  }
  std::lock_guard lock(mutex_);
  auto& slot = pending_[job_key];
  slot.insert(slot.begin(), entries.begin(), entries.end());
  return false;
}

void Expectations::Forget(const std::string& job_key) {
  std::lock_guard lock(mutex_);
  pending_.erase(job_key);
}

std::size_t Expectations::Pending() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [key, entries] : pending_) {
    count += entries.size();
  }
  return count;
}

}  // namespace ringleader::runtime
