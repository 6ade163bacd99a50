// Polling a condition the tests cannot be told about (a Pod gone, an Event recorded, a process
// ended): one loop with a deadline instead of one per test.
#pragma once

#include <chrono>
#include <functional>

namespace ringleader::testing {

// Calls `done` every `poll` until it holds or `timeout` has passed; whether it held (checked once
// more at the deadline, so a timeout of zero still asks once).
bool WaitUntil(const std::function<bool()>& done, std::chrono::steady_clock::duration timeout,
               std::chrono::milliseconds poll = std::chrono::milliseconds(500));

}  // namespace ringleader::testing
