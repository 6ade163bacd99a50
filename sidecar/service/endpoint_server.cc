// /metrics, /healthz, /readyz and /summary on a cpprestsdk listener.
#include "sidecar/service/endpoint_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

// Before cpprestsdk: pplx/threadpool.h uses std::move without including <utility>.
#include <utility>

#include <cpprest/http_listener.h>

#include <exception>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <prometheus/text_serializer.h>

#include "sidecar/contract/contract.h"

namespace ringleader::sidecar {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;

constexpr int kFreePortAttempts = 20;
constexpr std::string_view kTextType = "text/plain; charset=utf-8";
constexpr std::string_view kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kJsonType = "application/json";

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
    throw std::runtime_error("cannot bind " + Address(host, 0));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The body goes in as bytes: cpprestsdk's std::string overload reads a char buffer through an
// unsigned-char stream, a type pun that UBSan reports.
void Reply(const http::http_request& request, http::status_code code, const std::string& body,
           std::string_view content_type, bool allow_get_only = false) {
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
        // The scraper hung up before reading the answer.
      }
    });
  } catch (const std::exception&) {
    // Nothing more can be said on this connection.
  }
}

}  // namespace

struct EndpointServer::Impl {
  const prometheus::Collectable* metrics = nullptr;
  SummaryFunction summary;
  std::unique_ptr<http_listener> listener;
  int port = 0;

  mutable std::mutex mutex;
  bool ready = false;          // guarded by mutex
  std::string not_ready_reason = "starting";  // guarded by mutex

  void Handle(const http::http_request& request) const {
    const std::string path = request.relative_uri().path();
    if (path != contract::endpoint::kMetrics && path != contract::endpoint::kHealthz &&
        path != contract::endpoint::kReadyz && path != contract::endpoint::kSummary) {
      Reply(request, http::status_codes::NotFound, "not found", kTextType);
      return;
    }
    if (request.method() != http::methods::GET) {
      Reply(request, http::status_codes::MethodNotAllowed, "method not allowed", kTextType, true);
      return;
    }
    if (path == contract::endpoint::kHealthz) {
      Reply(request, http::status_codes::OK, "ok", kTextType);
    } else if (path == contract::endpoint::kReadyz) {
      ServeReadyz(request);
    } else if (path == contract::endpoint::kMetrics) {
      ServeMetrics(request);
    } else {
      ServeSummary(request);
    }
  }

  void ServeReadyz(const http::http_request& request) const {
    std::string reason;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!ready) {
        reason = not_ready_reason.empty() ? "not ready" : not_ready_reason;
      }
    }
    if (reason.empty()) {
      Reply(request, http::status_codes::OK, "ok", kTextType);
    } else {
      Reply(request, http::status_codes::ServiceUnavailable, reason, kTextType);
    }
  }

  void ServeMetrics(const http::http_request& request) const {
    std::string text;
    try {
      std::ostringstream out;
      prometheus::TextSerializer().Serialize(out, metrics->Collect());
      text = out.str();
    } catch (const std::exception& e) {
      Reply(request, http::status_codes::InternalError, std::string("metrics failed: ") + e.what(),
            kTextType);
      return;
    }
    Reply(request, http::status_codes::OK, text, kPrometheusType);
  }

  void ServeSummary(const http::http_request& request) const {
    std::string body;
    try {
      if (!summary) {
        Reply(request, http::status_codes::ServiceUnavailable, "no summary yet", kTextType);
        return;
      }
      body = contract::SummaryToJson(summary()).dump();
    } catch (const std::exception& e) {
      Reply(request, http::status_codes::InternalError, std::string("summary failed: ") + e.what(),
            kTextType);
      return;
    }
    Reply(request, http::status_codes::OK, body, kJsonType);
  }
};

EndpointServer::EndpointServer(const std::string& host, int port,
                               const prometheus::Collectable& metrics, SummaryFunction summary)
    : impl_(std::make_unique<Impl>()) {
  impl_->metrics = &metrics;
  impl_->summary = std::move(summary);
  if (port < 0 || port > 65535) {
    throw std::runtime_error("endpoint server: cannot listen on " + Address(host, port) +
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
      const Impl* impl = impl_.get();
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
    throw std::runtime_error("endpoint server: cannot listen on " + Address(host, port) + ": " +
                             last_error);
  }
}

EndpointServer::~EndpointServer() {
  try {
    impl_->listener->close().wait();
  } catch (const std::exception&) {
    // Closing is best effort; the process is usually exiting.
  }
}

int EndpointServer::port() const { return impl_->port; }

void EndpointServer::SetReady(bool ready, const std::string& reason) {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ready = ready;
  impl_->not_ready_reason = ready ? std::string() : reason;
}

}  // namespace ringleader::sidecar
