// What both blocking store clients (the native protocol's StoreClient and the TCPStore
// protocol's TorchStoreClient) do with a socket before and between their requests: dial with a
// deadline, poll one descriptor with a deadline and a stop flag, and pause between tries.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <poll.h>

#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous::blocking {

using Clock = std::chrono::steady_clock;

// How often a blocked call looks at its stop flag.
inline constexpr std::chrono::milliseconds kStopCheckInterval{100};
// What a wait that a stop request cut short fails with.
inline constexpr std::string_view kStopped = "stopped";

// Owns a descriptor until released.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// strerror's text for `error`, lower-cased first letter ("connection refused").
std::string ErrnoText(int error);
// "host:port", "[v6]:port".
std::string HostPort(const std::string& host, std::uint16_t port);
bool Stopping(const std::atomic<bool>* stop);
// poll() on one descriptor until it is ready (> 0), `deadline` passes or a stop is requested
// (0; the caller tells the two apart with Stopping), or it fails (-1, errno set). With a stop
// to watch, it polls in slices of kStopCheckInterval, so a stop is seen within one.
int PollOne(pollfd& poll_fd, Clock::time_point deadline, const std::atomic<bool>* stop);
// Sleeps for `pause` unless a stop comes first; true when it did.
bool SleepUnlessStopped(Clock::duration pause, const std::atomic<bool>* stop);
// A connected non-blocking, close-on-exec TCP socket with TCP_NODELAY, trying each address of
// `host` in turn, or why not (kStopped once `stop` is set).
Result<int> Dial(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                 const std::atomic<bool>* stop);

}  // namespace ringleader::rendezvous::blocking
