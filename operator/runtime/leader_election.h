// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection: only the
// replica holding the Lease reconciles; a standby takes over once the holder stops renewing
// for a whole lease duration.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "operator/kube/clock.h"

namespace ringleader::runtime {

struct LeaderElectionOptions {
  std::string lease_namespace = "default";
  std::string lease_name = "ringleader-operator";
  std::string identity;  // unique per replica: hostname + "_" + pid by default (see DefaultIdentity)
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  // Milliseconds, unlike the two above, so tests can retry faster than once a second.
  std::chrono::milliseconds retry_period{2000};
};

// hostname_pid, what a replica calls itself when no identity is configured.
std::string DefaultIdentity();

class LeaderElector {
 public:
  // `client` and `clock` must outlive the elector.
  LeaderElector(kube::Client& client, LeaderElectionOptions options,
                kube::Clock& clock = kube::RealClock());

  // Tries to acquire the Lease every retry_period until it holds it or `stop` is requested.
  // While leading it renews every retry_period; `on_started_leading` runs on its own thread with
  // a stop token that is requested when leadership is lost (a renewal could not succeed within
  // renew_deadline) or `stop` is requested. Run returns after on_started_leading returned.
  // On `stop` while leading it releases the Lease (empty holderIdentity, leaseDurationSeconds
  // 1) so a standby takes over at once. The Lease is created when missing.
  //
  // Expiry follows client-go: another holder's lease counts as expired only when this replica
  // has seen the same Lease record (same resourceVersion... or same holder+renewTime) unchanged
  // for lease_duration on its own clock, so clock skew between replicas does not matter.
  // Every write uses the Lease's resourceVersion, so two candidates never both win.
  void Run(std::stop_token stop, const std::function<void(std::stop_token)>& on_started_leading);

  bool IsLeader() const { return leader_.load(); }
  const std::string& identity() const { return options_.identity; }

 private:
  // Returns true when this replica holds the Lease after the attempt.
  bool TryAcquireOrRenew();
  void Release();

  kube::Client& client_;
  LeaderElectionOptions options_;
  kube::Clock& clock_;
  std::atomic<bool> leader_{false};
  // The last Lease record seen and when (on clock_) it was first seen unchanged.
  nlohmann::json observed_record_;
  kube::Clock::TimePoint observed_time_{};
};

}  // namespace ringleader::runtime
