// The plugin's connection to the sidecar's Unix socket. It never waits long and never raises
// SIGPIPE: connect is non-blocking, a write gives up at its deadline, and a frame cut short
// closes the connection (the stream would be corrupt), so the next snapshot reconnects.
#pragma once

#include <sys/un.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ringleader::profiler {

class SnapshotSender {
 public:
  enum class Outcome { kSent, kNoSidecar, kTimedOut, kFailed };

  // False when the path does not fit a Unix socket address; every Send then fails.
  bool Configure(const char* path);
  // Writes the whole frame within timeout_ms, connecting first if needed. A wait for the socket
  // also ends (kTimedOut) within a few milliseconds of *cancel turning true.
  Outcome Send(std::span<const std::uint8_t> frame, int timeout_ms,
               const std::atomic<bool>* cancel = nullptr);
  void Close();
  // errno of the last failure (0: none).
  int last_errno() const { return last_errno_; }
  const char* path() const { return address_.sun_path; }

 private:
  bool Connect(std::int64_t deadline_ms, const std::atomic<bool>* cancel);
  Outcome Fail(Outcome outcome, int error);

  sockaddr_un address_{};
  bool configured_ = false;
  int fd_ = -1;
  int last_errno_ = 0;
};

// Milliseconds on CLOCK_MONOTONIC.
std::int64_t MonotonicMs();

}  // namespace ringleader::profiler
