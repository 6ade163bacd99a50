// The sidecar's listeners' accept helpers: a Boost.Asio accept loop, which the profiler plugin's
// Unix socket uses (sidecar/service/profiler_listener.cc), and the close-on-exec and
// resource-exhaustion handling that the stores' TCP listeners, which accept with accept4
// themselves (store_server.cc, torch_store_server.cc), share with it.
#pragma once

#include <cerrno>
#include <chrono>
#include <utility>

#include <fcntl.h>

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace ringleader::rendezvous {

// How long accepting pauses when the process is out of descriptors, buffers or memory.
inline constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

// An accept failed for want of descriptors (EMFILE, ENFILE), buffers or memory: retrying at once
// would fail again, so it is worth a pause.
inline bool IsResourceExhaustion(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  return ec == error::no_descriptors || ec == error::no_buffer_space || ec == error::no_memory ||
         ec.value() == ENFILE;
}

// Marks `fd` close-on-exec. Asio opens and accepts sockets inheritable, and a process started by
// the listener's host (the example trainer's rank 0 hosts the native store) would otherwise hold
// the port and every connection open after the server closed them.
inline void KeepFromChildren(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) {
    ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// Accepts on `acceptor` until it is closed (operation_aborted) or `stopping` is true, handing each
// socket, close-on-exec, to on_accepted(socket). On resource exhaustion it waits kAcceptRetryDelay on `retry` (a
// timer on the same event loop) rather than spin, since closing connections will free some; any
// other failed accept is simply re-armed. To stop: on the loop's thread set `stopping`, close the
// acceptor and cancel `retry`. All three must outlive the loop's pending handlers.
template <typename Acceptor, typename OnAccepted>
void AcceptUntilStopped(Acceptor& acceptor, boost::asio::steady_timer& retry, const bool& stopping,
                        OnAccepted on_accepted) {
  using Socket = typename Acceptor::protocol_type::socket;
  acceptor.async_accept([&acceptor, &retry, &stopping, on_accepted = std::move(on_accepted)](
                            const boost::system::error_code& ec, Socket socket) mutable {
    if (stopping || ec == boost::asio::error::operation_aborted) {
      return;
    }
    if (ec && IsResourceExhaustion(ec)) {
      retry.expires_after(kAcceptRetryDelay);
      retry.async_wait([&acceptor, &retry, &stopping, on_accepted = std::move(on_accepted)](
                           const boost::system::error_code& wait_ec) mutable {
        if (!wait_ec && !stopping) {
          AcceptUntilStopped(acceptor, retry, stopping, std::move(on_accepted));
        }
      });
      return;
    }
    if (!ec) {
      KeepFromChildren(socket.native_handle());
      on_accepted(std::move(socket));
    }
    AcceptUntilStopped(acceptor, retry, stopping, std::move(on_accepted));
  });
}

}  // namespace ringleader::rendezvous
