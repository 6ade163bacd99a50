// The node agent's own HTTPS server on 127.0.0.1 at a free port, with a certificate of its own,
// behind kubelet-streaming (tests/controlplane/kubelet-streaming), which holds the Node's kubelet
// port (daemonEndpoints.kubeletEndpoint.Port), serves port-forward itself and passes the rest
// here: GET /containerLogs/<namespace>/<pod>/<container>, which kube-apiserver proxies pods/log
// to, and devcluster's GET /devcluster/podAddress/<namespace>/<pod>, the Pod's uid and address
// as JSON ({"uid": ..., "ip": ...}; 404 for a Pod the agent does not run), which port-forward
// dials. kube-apiserver does not verify the kubelet endpoint (no
// --kubelet-certificate-authority), and this stand-in does not authenticate kube-apiserver as a
// kubelet would: it answers anyone on the machine.
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

struct PodAddress {
  std::string uid;
  std::string ip;  // "" before the Pod has its network
};
// (namespace, pod) -> the Pod's uid and address, nullopt when the agent runs no such Pod.
using PodAddressHandler = std::function<std::optional<PodAddress>(const std::string& ns, const std::string& pod)>;

class LogServer {
 public:
  // Listens at once. Throws std::runtime_error when it cannot.
  LogServer(LogHandler handler, PodAddressHandler pod_address);
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
  PodAddressHandler pod_address_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  int port_ = 0;
  std::mutex mu_;  // guards followers_ and stopped_
  bool stopped_ = false;
  std::vector<std::unique_ptr<Follower>> followers_;
};

}  // namespace ringleader::devcluster::kubelet
