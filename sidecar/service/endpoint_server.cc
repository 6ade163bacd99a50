// /metrics, /healthz, /readyz and /summary on a cpprestsdk listener.
#include "sidecar/service/endpoint_server.h"

#include <exception>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <prometheus/text_serializer.h>

#include "sidecar/contract/contract.h"
#include "sidecar/service/plain_http_listener.h"

namespace ringleader::sidecar {
namespace {

namespace http = web::http;
using plain_http::Reply;

constexpr std::string_view kTextType = "text/plain; charset=utf-8";
constexpr std::string_view kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kJsonType = "application/json";

}  // namespace

struct EndpointServer::Impl {
  const prometheus::Collectable* metrics = nullptr;
  SummaryFunction summary;
  std::unique_ptr<plain_http::Listener> listener;

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
  const Impl* impl = impl_.get();
  impl_->listener = std::make_unique<plain_http::Listener>(
      "endpoint server", host, port, [impl](const http::http_request& request) { impl->Handle(request); });
}

// The listener goes first: a request in flight may still read the state below it.
EndpointServer::~EndpointServer() { impl_->listener.reset(); }

int EndpointServer::port() const { return impl_->listener->port(); }

void EndpointServer::SetReady(bool ready, const std::string& reason) {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ready = ready;
  impl_->not_ready_reason = ready ? std::string() : reason;
}

}  // namespace ringleader::sidecar
