#include "sidecar/service/plain_http_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>
#include <vector>

namespace ringleader::plain_http {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;

constexpr int kFreePortAttempts = 20;

// cpprestsdk binds the first address its resolver returns; 0.0.0.0 is every IPv4 address.
std::string ListenHost(const std::string& host) { return host.empty() ? "0.0.0.0" : host; }

// Asks the kernel for a free port (the listener cannot report the one it bound). A host that
// is not an IPv4 literal is probed on every IPv4 address; the listen that follows may still
// lose a race for the port, which the caller retries.
int PickFreePort(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::runtime_error("socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind " + FormatAddress(host, 0));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

std::string FormatAddress(const std::string& host, int port) {
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return shown + ":" + std::to_string(port);
}

Listener::Listener(std::string_view what, const std::string& host, int port, Handler handler) {
  if (port < 0 || port > 65535) {
    throw std::runtime_error(std::string(what) + ": cannot listen on " + FormatAddress(host, port) +
                             ": port must lie within 0-65535");
  }
  const std::string listen_host = ListenHost(host);
  std::string last_error;
  for (int attempt = 0; attempt < kFreePortAttempts && !listener_; ++attempt) {
    try {
      const int chosen = port == 0 ? PickFreePort(listen_host) : port;
      auto listener = std::make_unique<http_listener>(
          web::uri("http://" + FormatAddress(listen_host, chosen) + "/"));
      listener->support(handler);
      listener->open().wait();
      listener_ = std::move(listener);
      port_ = chosen;
    } catch (const std::exception& e) {
      last_error = e.what();
      if (port != 0) {
        break;
      }
    }
  }
  if (!listener_) {
    throw std::runtime_error(std::string(what) + ": cannot listen on " + FormatAddress(host, port) +
                             ": " + last_error);
  }
}

Listener::~Listener() {
  try {
    listener_->close().wait();
  } catch (const std::exception&) {
    // Closing is best effort; the process is usually exiting.
  }
}

void Reply(const http::http_request& request, http::status_code code, std::string_view body,
           std::string_view content_type, bool allow_get_only) {
  try {
    http::http_response response(code);
    if (allow_get_only) {
      response.headers().add("Allow", "GET");
    }
    std::vector<unsigned char> bytes(body.begin(), body.end());
    const std::size_t length = bytes.size();
    response.set_body(concurrency::streams::bytestream::open_istream(std::move(bytes)), length,
                      std::string(content_type));
    request.reply(response).then([](pplx::task<void> sent) {
      try {
        sent.get();
      } catch (const std::exception&) {
        // The client hung up before reading the answer.
      }
    });
  } catch (const std::exception&) {
    // Nothing more can be said on this connection.
  }
}

}  // namespace ringleader::plain_http
