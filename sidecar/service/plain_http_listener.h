// A plain-HTTP cpprestsdk listener for probe and metrics endpoints, shared by the operator's
// health server and the sidecar's endpoints: listens on host:port (a free port when 0) and
// replies with byte bodies.
#pragma once

// Before cpprestsdk: pplx/threadpool.h uses std::move without including <utility>.
#include <utility>

#include <cpprest/http_listener.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ringleader::plain_http {

using Handler = std::function<void(const web::http::http_request&)>;

class Listener {
 public:
  // `what` names the server in errors ("health server: cannot listen on 0.0.0.0:8081: ...").
  // `host` "" listens on every IPv4 address. Port 0 picks a free port (retried when another
  // process takes it first). Throws std::runtime_error naming the address when it cannot listen.
  Listener(std::string_view what, const std::string& host, int port, Handler handler);
  // Closes the listener; requests in flight are answered or dropped first.
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }

 private:
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  int port_ = 0;
};

// Replies with `body` as bytes: cpprestsdk's std::string overload reads a char buffer through an
// unsigned-char stream, a type pun that UBSan reports. With allow_get_only, adds "Allow: GET"
// (for 405 answers). Never throws; a client that hung up is ignored.
void Reply(const web::http::http_request& request, web::http::status_code code,
           std::string_view body, std::string_view content_type = "text/plain; charset=utf-8",
           bool allow_get_only = false);

// "host:port", with brackets around an IPv6 host.
std::string FormatAddress(const std::string& host, int port);

}  // namespace ringleader::plain_http
