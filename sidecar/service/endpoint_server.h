// The sidecar's HTTP endpoints on the metrics port (contract::endpoint): /metrics (Prometheus
// text), /healthz (200 while the process serves), /readyz (200 once marked ready, else 503 with
// the reason: the Pod's startup probe) and /summary (the JSON the operator reads from rank 0).
// Plain HTTP, served by one cpprestsdk listener; only GET is allowed.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <prometheus/collectable.h>

#include "sidecar/contract/summary.h"

namespace ringleader::sidecar {

class EndpointServer {
 public:
  using SummaryFunction = std::function<contract::Summary()>;

  // Serves `metrics` (which must outlive this) and `summary` (called per request, from the
  // listener's threads; a throw answers 500). `host` "" listens on every address; port 0 picks
  // a free port (see port()). Starts not ready with the reason "starting". Throws
  // std::runtime_error naming the address when it cannot listen.
  EndpointServer(const std::string& host, int port, const prometheus::Collectable& metrics,
                 SummaryFunction summary);
  ~EndpointServer();
  EndpointServer(const EndpointServer&) = delete;
  EndpointServer& operator=(const EndpointServer&) = delete;

  int port() const;

  // Thread-safe. `reason` is what /readyz answers with its 503 while not ready (e.g.
  // "preflight running", "preflight failed: ..."); ignored when ready.
  void SetReady(bool ready, const std::string& reason = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringleader::sidecar
