// The HTTPS front of devcluster: cpprestsdk's listener with the generated certificate, bearer
// authentication (its admin token and issued ServiceAccount tokens), RBAC authorization with an
// audit log, body limits, fault injection, and dispatch to discovery, resources and watches.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "tests/devcluster/api.h"
#include "tests/devcluster/audit_log.h"
#include "tests/devcluster/auth.h"
#include "tests/devcluster/catalog.h"
#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/faults.h"
#include "tests/devcluster/http_util.h"
#include "tests/devcluster/kubelet/kubelet.h"
#include "tests/devcluster/request.h"
#include "tests/devcluster/rbac.h"
#include "tests/devcluster/resource_handler.h"
#include "tests/devcluster/scheduling_controller.h"
#include "tests/devcluster/store.h"
#include "tests/devcluster/tls.h"
#include "tests/devcluster/watch.h"

namespace web::http {
class http_request;
}  // namespace web::http

namespace web::http::experimental::listener {
class http_listener;
}  // namespace web::http::experimental::listener

namespace ringleader::devcluster {

struct PendingReplies;

class Server {
 public:
  // Starts listening; throws std::runtime_error naming what failed.
  explicit Server(const Options& options);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  const std::string& url() const { return url_; }
  const std::string& kubeconfig_path() const { return kubeconfig_path_; }
  const std::string& ca_pem() const { return certs_.ca_cert_pem; }
  const std::string& token() const { return token_; }
  Faults& faults() { return faults_; }
  kubelet::PodNetwork* pod_network() { return kubelet_ ? kubelet_->network() : nullptr; }
  void Stop();

 private:
  void Handle(web::http::http_request request);
  // Everything after authentication and body reading; nullopt when a watch took the response.
  std::optional<Response> Dispatch(const Request& request, web::http::http_request& raw);
  void StartWatch(web::http::http_request& raw, WatchSpec spec);
  // Authorizes the request for `user` and writes the audit line; throws ApiError 403 if denied.
  void Authorize(const UserInfo& user, const Request& request);

  Options options_;
  Certificates certs_;
  std::string token_;
  std::string url_;
  std::string address_;
  std::string kubeconfig_path_;
  Faults faults_;
  Store store_;
  Catalog catalog_;
  Api api_;
  Authenticator authenticator_;
  std::unique_ptr<AuditLog> audit_;  // with Options::audit_log
  ResourceHandler resources_;
  Watches watches_;
  std::unique_ptr<SchedulingController> scheduler_;  // with Options::schedule_pods
  std::unique_ptr<kubelet::Kubelet> kubelet_;        // with Options::run_pods
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  // Replies still being written (server.cc). Shared: a reply's completion may run after Stop.
  std::shared_ptr<PendingReplies> pending_replies_;

  std::mutex mu_;
  std::condition_variable idle_;
  int in_flight_ = 0;
  bool stopped_ = false;
};

}  // namespace ringleader::devcluster
