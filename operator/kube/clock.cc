// The real Clock: steady_clock and a sleep that wakes on a stop request.
#include "operator/kube/clock.h"

#include <condition_variable>
#include <mutex>

namespace ringleader::kube {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }

  bool SleepFor(Duration duration, std::stop_token stop) override {
    if (duration <= Duration::zero()) {
      return !stop.stop_requested();
    }
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    // The predicate is only the stop request, so this returns after the full duration unless
    // stopped.
    return !wake.wait_for(lock, stop, duration, [] { return false; }) && !stop.stop_requested();
  }
};

}  // namespace

Clock& RealClock() {
  static SteadyClock clock;
  return clock;
}

}  // namespace ringleader::kube
