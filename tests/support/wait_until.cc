#include "tests/support/wait_until.h"

#include <thread>

namespace ringleader::testing {

bool WaitUntil(const std::function<bool()>& done, std::chrono::steady_clock::duration timeout,
               std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace ringleader::testing
