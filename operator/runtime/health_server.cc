// /healthz and /readyz on a cpprestsdk listener.
#include "operator/runtime/health_server.h"

#include <exception>
#include <utility>

#include "sidecar/service/plain_http_listener.h"

namespace ringleader::runtime {
namespace {

namespace http = web::http;
using plain_http::Reply;

}  // namespace

struct HealthServer::Impl {
  std::function<std::string()> ready;
  std::unique_ptr<plain_http::Listener> listener;

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
  const Impl* impl = impl_.get();
  impl_->listener = std::make_unique<plain_http::Listener>(
      "health server", host, port, [impl](const http::http_request& request) { impl->Handle(request); });
}

// The listener goes first: a request in flight may still call `ready`.
HealthServer::~HealthServer() { impl_->listener.reset(); }

int HealthServer::port() const { return impl_->listener->port(); }

}  // namespace ringleader::runtime
