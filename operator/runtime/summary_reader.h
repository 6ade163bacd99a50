// Reads the rank-0 sidecar's communication summary (GET http://POD_IP:METRICS_PORT/summary) so
// the operator can put it in the job's status: Pods never need write access to the API.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "operator/api/trainingjob.h"

namespace ringleader::runtime {

class SummaryReader {
 public:
  virtual ~SummaryReader() = default;
  // The summary, or nullopt when the sidecar cannot be reached or answers something that is
  // not a valid summary (the reason goes to *error when given). Never throws.
  virtual std::optional<api::CommunicationStatus> Read(const std::string& pod_ip, int port,
                                                       std::string* error = nullptr) = 0;
};

// Plain HTTP with cpprestsdk and a short timeout.
std::unique_ptr<SummaryReader> MakeHttpSummaryReader(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

}  // namespace ringleader::runtime
