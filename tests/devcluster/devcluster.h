// devcluster: an in-process Kubernetes API server over HTTPS for tests and the demo. Real
// kubectl and the operator's client talk to it as to a cluster: discovery, OpenAPI, CRDs and
// custom resources, CRUD, patches, watch, Tables, garbage collection and fault injection.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "tests/devcluster/faults.h"

namespace ringleader::devcluster {

struct Options {
  std::string listen_host = "127.0.0.1";
  int port = 0;                              // 0 picks a free port
  std::string data_dir;                      // where ca.crt, token and kubeconfig are written ("" = none)
  std::size_t max_body_bytes = 3 << 20;      // larger request bodies get 413
  std::size_t watch_history = 10000;         // events kept for watch resume; older RVs get 410
  std::chrono::milliseconds bookmark_interval{10000};  // for watches with allowWatchBookmarks
};

class Server;

class DevCluster {
 public:
  // Generates the CA and token, starts serving and writes the client files. Throws
  // std::runtime_error naming the problem (port in use, unwritable data dir, TLS failure).
  static std::unique_ptr<DevCluster> Start(const Options& options);

  DevCluster(const DevCluster&) = delete;
  DevCluster& operator=(const DevCluster&) = delete;
  ~DevCluster();

  std::string url() const;              // https://127.0.0.1:PORT
  std::string kubeconfig_path() const;  // "" when Options::data_dir was empty
  std::string ca_pem() const;
  std::string token() const;
  Faults& faults();

  // Ends every watch, stops listening and waits for handlers to finish. Idempotent.
  void Stop();

 private:
  explicit DevCluster(std::unique_ptr<Server> server);
  std::unique_ptr<Server> server_;
};

}  // namespace ringleader::devcluster
