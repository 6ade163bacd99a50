// The node agent's kubelet endpoint: HTTPS on 127.0.0.1 at a free port (the Node's
// daemonEndpoints.kubeletEndpoint.Port), with a certificate of its own, serving the one path the
// tests need, GET /containerLogs/<namespace>/<pod>/<container>, which kube-apiserver proxies
// pods/log to. kube-apiserver does not verify it (no --kubelet-certificate-authority), and this
// stand-in does not authenticate kube-apiserver as a kubelet would: it answers anyone on the
// machine.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace web::http {
class http_request;
namespace experimental::listener {
class http_listener;
}  // namespace experimental::listener
}  // namespace web::http

namespace ringleader::devcluster::kubelet {

struct LogReply {
  int code = 200;
  std::string body;  // plain text: the log, or the error as the kubelet words it
  // A followed log (follow=true): called again and again on a thread of the server's for what the
  // container wrote since; nullopt ends the stream. Each call returns within about a second,
  // sooner once `stop` is requested. A client that hangs up is not noticed: the stream ends with
  // the container's run or when the server stops.
  std::function<std::optional<std::string>(std::stop_token stop)> more;
};

// (namespace, pod, container, query) -> the reply. Runs on the listener's threads.
using LogHandler = std::function<LogReply(const std::string& ns, const std::string& pod, const std::string& container,
                                          const std::map<std::string, std::string>& query)>;

class LogServer {
 public:
  // Listens at once. Throws std::runtime_error when it cannot.
  explicit LogServer(LogHandler handler);
  LogServer(const LogServer&) = delete;
  LogServer& operator=(const LogServer&) = delete;
  ~LogServer();

  // Ends followed streams and closes the listener. Idempotent.
  void Stop();
  int port() const { return port_; }

 private:
  struct Follower;

  void Handle(const web::http::http_request& request);
  void Follow(const web::http::http_request& request, LogReply reply);

  LogHandler handler_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  int port_ = 0;
  std::mutex mu_;  // guards followers_ and stopped_
  bool stopped_ = false;
  std::vector<std::unique_ptr<Follower>> followers_;
};

}  // namespace ringleader::devcluster::kubelet
