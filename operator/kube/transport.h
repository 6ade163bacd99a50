// The HTTP layer under the Client: one request, one response, no retries and no Kubernetes
// knowledge. The cpprestsdk implementation talks TLS to the API server; tests substitute a
// scripted fake to drive the client's retry, rate-limit and error paths.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>

#include "operator/kube/config.h"

namespace ringleader::kube {

struct HttpRequest {
  std::string method;       // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string target;       // path and query, already encoded: "/api/v1/pods?limit=5"
  std::string bearer_token; // empty: no Authorization header
  std::string content_type; // for a body
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, "" when absent
};

// No HTTP response: the connection failed, TLS failed, or it timed out.
class TransportError : public std::runtime_error {
 public:
  enum class Kind { kRefused, kTls, kTimeout, kConnection, kCancelled };
  TransportError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends one request and returns whatever status came back. Throws TransportError when no
  // response arrived. Thread-safe.
  virtual HttpResponse Send(const HttpRequest& request) = 0;

  struct StreamResult {
    HttpResponse response;  // for non-2xx: the whole error body; for 2xx: body left empty
    bool cut = false;       // 2xx whose body ended by a connection error, not a clean end
  };
  // Sends a request whose 2xx body is a long stream (watch). For a 2xx status, calls
  // `on_data` with each piece of the body as it arrives until the body ends, `stop` is
  // requested, or the connection breaks (cut = true). `on_data` may throw to abandon the
  // stream; the exception propagates. Throws TransportError only when no response arrived.
  virtual StreamResult Stream(const HttpRequest& request,
                              const std::function<void(std::string_view)>& on_data,
                              std::stop_token stop) = 0;
};

struct TransportOptions {
  std::chrono::seconds request_timeout{30};
  // A watch with no bytes for this long is treated as cut (servers send bookmarks or close
  // within timeoutSeconds, so this only fires on a dead connection).
  std::chrono::seconds stream_idle_timeout{330};
  std::string user_agent = "ringleader-operator";
};

// HTTPS (or HTTP) to config.server with cpprestsdk: the server is verified against
// config.ca_pem only (the system roots when it is empty), unless insecure_skip_tls_verify;
// the client certificate is presented when set. Throws ConfigError for unusable PEM.
std::unique_ptr<Transport> MakeCpprestTransport(const Config& config,
                                                const TransportOptions& options = {});

}  // namespace ringleader::kube
