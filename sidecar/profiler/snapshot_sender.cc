// The plugin's non-blocking Unix socket client (snapshot_sender.h).
#include "sidecar/profiler/snapshot_sender.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ringleader::profiler {
namespace {

// How often a wait looks at its cancel flag.
constexpr std::int64_t kCancelCheckMs = 20;

// Waits until fd is writable or the deadline passes (or *cancel turns true); false on timeout
// or error.
bool WaitWritable(int fd, std::int64_t deadline_ms, const std::atomic<bool>* cancel) {
  for (;;) {
    const std::int64_t left = deadline_ms - MonotonicMs();
    if (left <= 0 || (cancel != nullptr && cancel->load(std::memory_order_relaxed))) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd entry{fd, POLLOUT, 0};
    const int ready = poll(&entry, 1, static_cast<int>(std::min(left, kCancelCheckMs)));
    if (ready > 0) {
      if ((entry.revents & POLLOUT) != 0) {
        return true;
      }
      errno = EPIPE;  // POLLERR or POLLHUP alone: the peer is gone
      return false;
    }
    if (ready < 0 && errno != EINTR) {
      return false;
    }
  }
}

}  // namespace

std::int64_t MonotonicMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

bool SnapshotSender::Configure(const char* path) {
  Close();
  address_ = {};
  address_.sun_family = AF_UNIX;
  const std::size_t length = path == nullptr ? 0 : std::strlen(path);
  configured_ = length > 0 && length < sizeof(address_.sun_path);
  if (configured_) {
    std::memcpy(address_.sun_path, path, length);
  }
  return configured_;
}

void SnapshotSender::Close() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

SnapshotSender::Outcome SnapshotSender::Fail(Outcome outcome, int error) {
  last_errno_ = error;
  Close();
  return outcome;
}

bool SnapshotSender::Connect(std::int64_t deadline_ms, const std::atomic<bool>* cancel) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    return false;
  }
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&address_), sizeof(address_)) == 0) {
    return true;
  }
  if (errno != EINPROGRESS) {
    return false;  // ENOENT, ECONNREFUSED: no sidecar; EAGAIN: its backlog is full
  }
  if (!WaitWritable(fd_, deadline_ms, cancel)) {
    return false;
  }
  int error = 0;
  socklen_t length = sizeof(error);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
    errno = error;
    return false;
  }
  return true;
}

SnapshotSender::Outcome SnapshotSender::Send(std::span<const std::uint8_t> frame, int timeout_ms,
                                             const std::atomic<bool>* cancel) {
  if (!configured_) {
    return Fail(Outcome::kFailed, ENAMETOOLONG);
  }
  const std::int64_t deadline = MonotonicMs() + timeout_ms;
  if (fd_ < 0 && !Connect(deadline, cancel)) {
    return Fail(Outcome::kNoSidecar, errno);
  }
  std::size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n =
        send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitWritable(fd_, deadline, cancel)) {
        return Fail(errno == ETIMEDOUT ? Outcome::kTimedOut : Outcome::kFailed, errno);
      }
      continue;
    }
    return Fail(Outcome::kNoSidecar, n < 0 ? errno : EPIPE);  // EPIPE, ECONNRESET: it went away
  }
  last_errno_ = 0;
  return Outcome::kSent;
}

}  // namespace ringleader::profiler
