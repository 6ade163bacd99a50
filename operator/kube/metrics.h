// Prometheus metrics of the Kubernetes client. Depends only on the registry; whoever owns the
// registry exposes it.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string_view>

#include "operator/kube/retry.h"

namespace ringleader::kube {

class ClientMetrics {
 public:
  // Registers ringleader_kube_requests_total{verb,code},
  // ringleader_kube_request_duration_seconds{verb} and ringleader_kube_retries_total{reason}.
  // The registry must outlive this object.
  explicit ClientMetrics(prometheus::Registry& registry);

  // One finished attempt. `verb` is one of get, list, create, update, patch, delete, watch;
  // `http_code` 0 (no response) is recorded as code="error".
  void ObserveRequest(std::string_view verb, int http_code, double seconds);
  void ObserveRetry(RetryReason reason);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Counter>& retries_;
};

}  // namespace ringleader::kube
