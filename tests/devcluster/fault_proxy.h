// An HTTPS proxy in front of a real kube-apiserver that injects the API faults reliability tests
// need (errors, throttling, conflicts, latency, cut and expired watches; see faults.h).
//
// Every request is forwarded as it came (method, path and query, headers including
// Authorization, body) over a new upstream connection, and the response streams back as it
// arrives: a watch event reaches the client as soon as the upstream sends it. Bodies of unknown
// length go to the client chunked; client connections are kept alive. Requests under
// /devcluster/faults are the proxy's own admin endpoint: GET answers Faults::ToJson(), PUT or
// POST applies Faults::ApplyJson() to the JSON body. A dead upstream is answered with 502 and a
// Status naming it; bytes that are not HTTP get 400 and a closed connection.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tests/devcluster/faults.h"

namespace ringleader::devcluster {

struct FaultProxyOptions {
  std::string upstream_url;     // "https://127.0.0.1:6443" (no path)
  std::string upstream_ca_pem;  // verifies the upstream's certificate, and its host or IP
  std::string server_cert_pem;  // the proxy's own certificate (chain), e.g. signed by that CA
  std::string server_key_pem;
  std::string listen_host = "127.0.0.1";  // an IPv4 address
  int port = 0;                           // 0: a free port, see url()
  // How long Stop() lets requests in flight finish before it cuts their connections.
  std::chrono::milliseconds stop_grace{2000};
};

class FaultProxy {
  struct Impl;
  class Key {  // only Start() makes a FaultProxy
    friend class FaultProxy;
    Key() = default;
  };

 public:
  // Listens before it returns. Throws std::runtime_error for an unusable URL, PEM or address.
  static std::unique_ptr<FaultProxy> Start(const FaultProxyOptions& options);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // "https://127.0.0.1:PORT", what clients use instead of the upstream's URL.
  const std::string& url() const;
  int port() const;
  Faults& faults();

  // Stops listening, ends open watches cleanly and idle connections at once, waits up to
  // stop_grace for other requests in flight, then cuts what is left. Idempotent.
  void Stop();

  FaultProxy(Key, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringleader::devcluster
