// /healthz and /readyz on a cpprestsdk listener.
#include "operator/runtime/health_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cpprest/http_listener.h>

#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ringleader::runtime {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;

constexpr int kFreePortAttempts = 20;

// cpprestsdk binds the first address its resolver returns; 0.0.0.0 is every IPv4 address.
std::string ListenHost(const std::string& host) { return host.empty() ? "0.0.0.0" : host; }

std::string Address(const std::string& host, int port) {
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return shown + ":" + std::to_string(port);
}

// Asks the kernel for a free port (the listener cannot report the one it bound). A host that
// is not an IPv4 literal is probed on every IPv4 address; the listen that follows may still
// lose a race for the port, which the caller retries.
int PickFreePort(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error("health server: socket() failed");
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
    throw std::runtime_error("health server: cannot bind " + Address(host, 0));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The body goes in as bytes: cpprestsdk's std::string overload reads a char buffer through an
// unsigned-char stream, a type pun that UBSan reports.
void Reply(const http::http_request& request, http::status_code code, const std::string& body) {
  try {
    http::http_response response(code);
    response.headers().set_content_type("text/plain; charset=utf-8");
    response.set_body(std::vector<unsigned char>(body.begin(), body.end()));
    request.reply(response).then([](pplx::task<void> sent) {
      try {
        sent.get();
      } catch (const std::exception&) {
        // The prober hung up before reading the answer.
      }
    });
  } catch (const std::exception&) {
    // Nothing more can be said on this connection.
  }
}

}  // namespace

struct HealthServer::Impl {
  std::function<std::string()> ready;
  std::unique_ptr<http_listener> listener;
  int port = 0;

  void Handle(const http::http_request& request) const {
    const std::string path = request.relative_uri().path();
    if (path == "/healthz") {
      Reply(request, http::status_codes::OK, "ok");
    } else if (path == "/readyz") {
      std::string reason;
      try {
        reason = ready();
      } catch (const std::exception& e) {
        reason = std::string("readiness check failed: ") + e.what();
      }
      if (reason.empty()) {
        Reply(request, http::status_codes::OK, "ok");
      } else {
        Reply(request, http::status_codes::ServiceUnavailable, reason);
      }
    } else {
      Reply(request, http::status_codes::NotFound, "not found");
    }
  }
};

HealthServer::HealthServer(const std::string& host, int port, std::function<std::string()> ready)
    : impl_(std::make_unique<Impl>()) {
  impl_->ready = std::move(ready);
  if (port < 0 || port > 65535) {
    throw std::runtime_error("health server: cannot listen on " + Address(host, port) +
                             ": port must lie within 0-65535");
  }
  const std::string listen_host = ListenHost(host);
  std::string last_error;
  for (int attempt = 0; attempt < kFreePortAttempts && !impl_->listener; ++attempt) {
    int chosen = port;
    try {
      if (port == 0) {
        chosen = PickFreePort(listen_host);
      }
      auto listener = std::make_unique<http_listener>(
          web::uri("http://" + Address(listen_host, chosen) + "/"));
      Impl* impl = impl_.get();
      listener->support([impl](const http::http_request& request) { impl->Handle(request); });
      listener->open().wait();
      impl_->listener = std::move(listener);
      impl_->port = chosen;
    } catch (const std::exception& e) {
      last_error = e.what();
      if (port != 0) {
        break;
      }
    }
  }
  if (!impl_->listener) {
    throw std::runtime_error("health server: cannot listen on " + Address(host, port) + ": " +
                             last_error);
  }
}

HealthServer::~HealthServer() {
  try {
    impl_->listener->close().wait();
  } catch (const std::exception&) {
    // Closing is best effort; the process is usually exiting.
  }
}

int HealthServer::port() const { return impl_->port; }

}  // namespace ringleader::runtime
