// The settings of `ringleader-operator run`: an optional YAML file (--config) overridden by
// flags. Every bad value is reported with the flag or the file's field that holds it.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "operator/ports/port_ledger.h"

namespace ringleader::runtime {

class OperatorConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct OperatorConfig {
  // Where the API server is: a kubeconfig path; empty means $KUBECONFIG when set, else
  // in-cluster (service account).
  std::string kubeconfig;
  std::string kube_context;
  // Namespaces whose TrainingJobs are reconciled; empty: all namespaces.
  std::vector<std::string> namespaces;
  ports::PortRange port_range{61000, 65535};
  std::string sidecar_image = "ringleader/sidecar:0.1.0";
  std::string cluster_domain = "cluster.local";
  bool default_host_network = false;  // for jobs that leave spec.networking.hostNetwork unset
  // A NetworkPolicy per job admitting its store and rendezvous ports only from its own Pods.
  bool network_policies = true;
  bool leader_election = true;
  std::string leader_election_namespace = "default";
  std::string leader_election_id = "ringleader-operator";  // the Lease's name
  std::string identity;                                   // empty: hostname_pid
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  std::string metrics_bind_address = ":8080";  // "host:port", ":port", "0" disables
  std::string health_bind_address = ":8081";
  int workers = 4;
  double kube_api_qps = 20;
  int kube_api_burst = 30;
  std::chrono::seconds resync_period{300};
  // How often rank 0's /summary of a running job is read into status.communication.
  std::chrono::seconds summary_interval{60};
  // A current Pod unscheduled this long turns its job's Scheduled condition False.
  std::chrono::seconds unschedulable_after{60};
  // How often API discovery is asked which gang-scheduling providers the cluster serves.
  std::chrono::seconds provider_discovery_interval{60};
  bool json_logs = true;  // JSON lines on stderr; false: plain text
  // /healthz fails past these (0 turns a check off); see LivenessOptions.
  std::chrono::seconds liveness_reconcile_timeout{600};
  std::chrono::seconds liveness_informer_timeout{600};
  std::chrono::seconds liveness_queue_timeout{60};
};

// Parses the arguments after `run`. Flags (each also accepted as --flag=value):
//   --config FILE  --kubeconfig PATH  --context NAME  --namespace NS (repeatable, or a comma list)
//   --port-range FIRST-LAST  --sidecar-image IMAGE  --cluster-domain DOMAIN
//   --default-host-network true|false  --network-policies true|false
//   --leader-elect true|false  --leader-election-namespace NS  --leader-election-id NAME
//   --identity NAME  --lease-duration SECONDS  --renew-deadline SECONDS  --retry-period SECONDS
//   --metrics-bind-address ADDR  --health-probe-bind-address ADDR  --workers N
//   --kube-api-qps Q  --kube-api-burst N  --resync-period SECONDS  --summary-interval SECONDS
//   --unschedulable-after SECONDS  --provider-discovery-interval SECONDS
//   --log-format json|text
//   --liveness-reconcile-timeout SECONDS  --liveness-informer-timeout SECONDS
//   --liveness-queue-timeout SECONDS  (0 turns that liveness check off)
// The YAML file uses the flag names in camelCase (portRange, sidecarImage, namespaces: [a, b],
// leaderElect, metricsBindAddress, ...); flags given on the command line win over the file.
// Unknown flags or fields, missing values, bad numbers, renew-deadline >= lease-duration and
// workers < 1 throw OperatorConfigError naming the flag or field.
OperatorConfig ParseOperatorConfig(const std::vector<std::string>& args);

// The flags above, one per line with their defaults, for --help.
std::string OperatorConfigUsage();

// "host:port" / ":port" / "port" into host ("" for any) and port; throws OperatorConfigError
// naming `what` for anything else (port outside 0-65535).
struct BindAddress {
  std::string host;
  int port = 0;
};
BindAddress ParseBindAddress(const std::string& text, const std::string& what);

}  // namespace ringleader::runtime
