// Dialing and polling for the blocking store clients: POSIX sockets, non-blocking, every wait a
// poll() with a deadline.
#include "sidecar/rendezvous/blocking_socket.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ringleader::rendezvous::blocking {
namespace {

// Milliseconds until deadline for poll(): at least 0, rounded up, at most INT_MAX.
int PollMillis(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    return 0;
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::string ErrnoText(int error) {
  std::string text = std::generic_category().message(error);
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

std::string HostPort(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool Stopping(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

int PollOne(pollfd& poll_fd, Clock::time_point deadline, const std::atomic<bool>* stop) {
  while (true) {
    if (Stopping(stop) || Clock::now() >= deadline) {
      return 0;
    }
    int wait_ms = PollMillis(deadline);
    if (stop != nullptr) {
      wait_ms = std::min<int>(wait_ms, static_cast<int>(kStopCheckInterval.count()));
    }
    const int ready = ::poll(&poll_fd, 1, wait_ms);
    if (ready != 0 && !(ready < 0 && errno == EINTR)) {
      return ready;
    }
  }
}

bool SleepUnlessStopped(Clock::duration pause, const std::atomic<bool>* stop) {
  const Clock::time_point until = Clock::now() + pause;
  while (!Stopping(stop)) {
    const Clock::time_point now = Clock::now();
    if (now >= until) {
      return false;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, kStopCheckInterval));
  }
  return true;
}

Result<int> Dial(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                 const std::atomic<bool>* stop) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); gai != 0) {
    return Result<int>::Failure("cannot resolve " + host + ": " + ::gai_strerror(gai));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  std::string error = "no address";
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                         ai->ai_protocol));
    if (fd.get() < 0) {
      error = ErrnoText(errno);
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        error = ErrnoText(errno);
        continue;
      }
      pollfd poll_fd{};
      poll_fd.fd = fd.get();
      poll_fd.events = POLLOUT;
      const int ready = PollOne(poll_fd, deadline, stop);
      if (ready < 0) {
        error = ErrnoText(errno);
        continue;
      }
      if (ready == 0) {
        if (Stopping(stop)) {
          error = kStopped;
          break;  // the other addresses would be stopped too
        }
        error = "connect timed out";
        continue;
      }
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &length);
      if (so_error != 0) {
        error = ErrnoText(so_error);
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd.release();
  }
  return Result<int>::Failure(error);
}

}  // namespace ringleader::rendezvous::blocking
