// Kubernetes container probes for devcluster's kubelet: one attempt of an httpGet, tcpSocket or
// exec probe, and the thresholds and timing that turn attempts into a verdict.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/devcluster/kubelet/container_process.h"
#include "tests/devcluster/kubelet/container_spec.h"

namespace ringleader::devcluster::kubelet {

enum class ProbeOutcome { kSuccess, kFailure };

struct ProbeAttempt {
  ProbeOutcome outcome;
  std::string message;  // why it failed, in the kubelet's words; exec output on failure
};

// One attempt, bounded by the probe's timeoutSeconds (default 1).
//  - httpGet: GET scheme://host:port/path (host defaults to `pod_ip`, path to "/"), with
//    httpHeaders; a status of 200..399 succeeds. Only HTTP; HTTPS fails as unsupported.
//  - tcpSocket: the connection opens.
//  - exec: `command` runs with the container's env, working dir, mounts and network namespace
//    (command[0] looked up in the container's PATH) and exits 0, isolated as the container is
//    (`isolation`: without a mount namespace its mount paths are host paths, and no mount point
//    is made on the host for it).
// A port is a number or the name of one of the container's ports (container.named_ports).
// Sockets are opened from network namespace `netns` (a name under /run/netns; "" = here) on a
// short-lived thread, as setns changes only the calling thread's network namespace.
ProbeAttempt RunProbeOnce(const nlohmann::json& probe, const std::string& pod_ip, const std::string& netns,
                          const LaunchSpec& container, Isolation isolation = Isolation::kAuto);

// When to probe and what the attempts add up to. initialDelaySeconds, periodSeconds,
// timeoutSeconds, successThreshold and failureThreshold with Kubernetes' defaults (0, 10, 1, 1,
// 3); 0 means the default, as the API server's defaulting does. Negative values throw
// std::invalid_argument. Not thread-safe.
class ProbeTracker {
 public:
  // The first attempt is due initialDelaySeconds after `started` (the container's start).
  explicit ProbeTracker(const nlohmann::json& probe,
                        std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());

  bool Due(std::chrono::steady_clock::time_point now) const;
  // Counts the attempt; the next one is due periodSeconds after `now`.
  void Record(const ProbeAttempt& attempt, std::chrono::steady_clock::time_point now);
  // successThreshold consecutive successes, or failureThreshold consecutive failures.
  bool Succeeded() const;
  bool Failed() const;
  // The last failure's message ("" after a success).
  const std::string& LastMessage() const { return last_message_; }
  std::chrono::seconds Timeout() const { return timeout_; }

 private:
  std::chrono::seconds period_;
  std::chrono::seconds timeout_;
  std::int64_t success_threshold_;
  std::int64_t failure_threshold_;
  std::chrono::steady_clock::time_point next_due_;
  std::int64_t consecutive_successes_ = 0;
  std::int64_t consecutive_failures_ = 0;
  std::string last_message_;
};

}  // namespace ringleader::devcluster::kubelet
