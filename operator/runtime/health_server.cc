// /healthz and /readyz on a cpprestsdk listener.
#include "operator/runtime/health_server.h"

#include <exception>
#include <utility>

#include "sidecar/service/plain_http_listener.h"

namespace ringleader::runtime {
namespace {

namespace http = web::http;
using plain_http::Reply;

// 200 "ok" when `check` finds nothing wrong, else 503 with what it found.
void Answer(const http::http_request& request, const std::function<std::string()>& check,
            const char* what) {
  std::string reason;
  if (check) {
    try {
      reason = check();
    } catch (const std::exception& e) {
      reason = std::string(what) + " check failed: " + e.what();
    }
  }
  if (reason.empty()) {
    Reply(request, http::status_codes::OK, "ok");
  } else {
    Reply(request, http::status_codes::ServiceUnavailable, reason);
  }
}

}  // namespace

struct HealthServer::Impl {
  std::function<std::string()> ready;
  std::function<std::string()> live;
  std::unique_ptr<plain_http::Listener> listener;

  void Handle(const http::http_request& request) const {
    const std::string path = request.relative_uri().path();
    if (path == "/healthz") {
      Answer(request, live, "liveness");
    } else if (path == "/readyz") {
      Answer(request, ready, "readiness");
    } else {
      Reply(request, http::status_codes::NotFound, "not found");
    }
  }
};

HealthServer::HealthServer(const std::string& host, int port, std::function<std::string()> ready,
                           std::function<std::string()> live)
    : impl_(std::make_unique<Impl>()) {
  impl_->ready = std::move(ready);
  impl_->live = std::move(live);
  const Impl* impl = impl_.get();
  impl_->listener = std::make_unique<plain_http::Listener>(
      "health server", host, port, [impl](const http::http_request& request) { impl->Handle(request); });
}

// The listener goes first: a request in flight may still call `ready`.
HealthServer::~HealthServer() { impl_->listener.reset(); }

int HealthServer::port() const { return impl_->listener->port(); }

}  // namespace ringleader::runtime
