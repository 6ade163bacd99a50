// Metric families and their bounded labels.
#include "operator/kube/metrics.h"

#include <string>

namespace ringleader::kube {

ClientMetrics::ClientMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("ringleader_kube_requests_total")
                    .Help("Kubernetes API requests by verb and HTTP status code")
                    .Register(registry)),
      durations_(prometheus::BuildHistogram()
                     .Name("ringleader_kube_request_duration_seconds")
                     .Help("Kubernetes API request latency by verb (watch: the whole stream)")
                     .Register(registry)),
      retries_(prometheus::BuildCounter()
                   .Name("ringleader_kube_retries_total")
                   .Help("Kubernetes API request retries by reason")
                   .Register(registry)) {
  // Every reason from the start at 0, so rate() and the dashboard see a series before the first.
  for (const RetryReason reason : {RetryReason::kConnection, RetryReason::kTooManyRequests, RetryReason::kServerError}) {
    retries_.Add({{"reason", std::string(RetryReasonLabel(reason))}});
  }
}

void ClientMetrics::ObserveRequest(std::string_view verb, int http_code, double seconds) {
  const std::string code = http_code == 0 ? "error" : std::to_string(http_code);
  requests_.Add({{"verb", std::string(verb)}, {"code", code}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  durations_.Add({{"verb", std::string(verb)}}, kBuckets).Observe(seconds);
}

void ClientMetrics::ObserveRetry(RetryReason reason) {
  retries_.Add({{"reason", std::string(RetryReasonLabel(reason))}}).Increment();
}

}  // namespace ringleader::kube
