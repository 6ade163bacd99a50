// TcpRelay: one thread accepts; one thread per connection polls both sockets and copies what
// arrives, passing each side's end of stream on as a half-close, so a request/response protocol
// and a long watch both behave as on a direct connection.
#include "tests/devcluster/tcp_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ringleader::devcluster {
namespace {

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1) {
    throw std::runtime_error("tcp relay: \"" + ip + "\" is not an IPv4 address");
  }
  return address;
}

// Writes all of data; false once the peer is gone.
bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

TcpRelay::TcpRelay(const std::string& listen_ip, std::string target_ip, int target_port)
    : target_ip_(std::move(target_ip)), target_port_(target_port) {
  Address(target_ip_, target_port_);  // refuses a bad target now rather than per connection
  const sockaddr_in address = Address(listen_ip, 0);
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener_, 64) != 0) {
    const std::string why = std::strerror(errno);
    if (listener_ >= 0) {
      close(listener_);
    }
    throw std::runtime_error("tcp relay: cannot listen on " + listen_ip + ": " + why);
  }
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.sin_port);
  wake_ = eventfd(0, EFD_CLOEXEC);
  acceptor_ = std::jthread([this](std::stop_token stop) { Accept(stop); });
}

TcpRelay::~TcpRelay() { Stop(); }

void TcpRelay::Stop() {
  if (!acceptor_.joinable()) {
    return;
  }
  acceptor_.request_stop();
  const std::uint64_t one = 1;
  (void)!write(wake_, &one, sizeof one);  // the eventfd stays readable: every poll returns
  acceptor_.join();
  std::list<Connection> connections;
  {
    std::lock_guard lock(mu_);
    connections.swap(connections_);
  }
  connections.clear();  // each jthread is asked to stop, and joined
  close(listener_);
  close(wake_);
}

void TcpRelay::Accept(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd fds[] = {{listener_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 || (fds[1].revents & POLLIN) != 0) {
      if (errno == EINTR && (fds[1].revents & POLLIN) == 0) {
        continue;
      }
      return;
    }
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      continue;
    }
    std::lock_guard lock(mu_);
    connections_.remove_if([](const Connection& connection) { return connection.done.load(); });
    Connection& connection = connections_.emplace_back();
    connection.thread = std::jthread([this, client, &connection](std::stop_token connection_stop) {
      Relay(client, connection_stop);
      connection.done = true;
    });
  }
}

void TcpRelay::Relay(int client, std::stop_token stop) {
  const sockaddr_in target = Address(target_ip_, target_port_);
  const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (upstream < 0 || connect(upstream, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
    // The client sees its connection close, as when nothing listens behind a Service.
    if (upstream >= 0) {
      close(upstream);
    }
    close(client);
    return;
  }
  const int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // open[i]: whether fds[i] may still send; its end of stream is passed on to the other side.
  bool open[2] = {true, true};
  char buffer[64 * 1024];
  while (!stop.stop_requested() && (open[0] || open[1])) {
    pollfd fds[] = {{client, static_cast<short>(open[0] ? POLLIN : 0), 0},
                    {upstream, static_cast<short>(open[1] ? POLLIN : 0), 0},
                    {wake_, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if ((fds[2].revents & POLLIN) != 0) {
      break;
    }
    bool failed = false;
    for (int side = 0; side < 2 && !failed; ++side) {
      if (!open[side] || (fds[side].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const int from = fds[side].fd;
      const int to = side == 0 ? upstream : client;
      const ssize_t n = recv(from, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        failed = true;  // a reset: the other side gets one too, by the close below
      } else if (n == 0) {
        open[side] = false;
        shutdown(to, SHUT_WR);
      } else if (!WriteAll(to, buffer, static_cast<std::size_t>(n))) {
        failed = true;
      }
    }
    if (failed) {
      break;
    }
  }
  close(client);
  close(upstream);
}

}  // namespace ringleader::devcluster
