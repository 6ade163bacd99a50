// `ringleader-operator run`: wiring of config, client, leader election, controller, metrics
// and probes; signal handling.
#include "operator/run_command.h"

#include <utility>  // before pplx/threadpool.h: Boost.Asio uses std::exchange without it

#include <pplx/threadpool.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <pthread.h>
#include <stop_token>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/runtime/controller.h"
#include "operator/runtime/health_server.h"
#include "operator/runtime/leader_election.h"
#include "operator/runtime/logger.h"
#include "operator/runtime/operator_config.h"
#include "operator/runtime/operator_metrics.h"
#include "operator/runtime/summary_reader.h"

namespace ringleader::cli {

namespace {

using runtime::OperatorConfig;

constexpr std::size_t kIoThreads = 8;

kube::Config KubeConfigFor(const OperatorConfig& config) {
  std::string path = config.kubeconfig;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
      path = env;
    }
  }
  return path.empty() ? kube::LoadInCluster() : kube::LoadKubeconfig(path, config.kube_context);
}

// SIGTERM and SIGINT are blocked in every thread and taken by one waiter, which turns them into
// a stop request (a handler could not safely do that).
class SignalWaiter {
 public:
  explicit SignalWaiter(std::stop_source& source) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGUSR1);  // only used to wake the waiter at shutdown
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    thread_ = std::thread([this, &source] {
      int signal = 0;
      while (sigwait(&signals_, &signal) == 0) {
        if (signal == SIGUSR1 && done_) {
          return;
        }
        if (signal == SIGTERM || signal == SIGINT) {
          source.request_stop();
          return;
        }
      }
    });
  }
  ~SignalWaiter() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
  }

 private:
  sigset_t signals_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

int RunOperator(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << "ringleader-operator run [FLAGS]\n\n" << runtime::OperatorConfigUsage();
      return 0;
    }
  }
  OperatorConfig config;
  try {
    config = runtime::ParseOperatorConfig(args);
  } catch (const runtime::OperatorConfigError& e) {
    std::cerr << "ringleader-operator run: " << e.what() << "\n\n" << runtime::OperatorConfigUsage();
    return 2;
  }
  runtime::Logger logger(config.json_logs ? runtime::LogFormat::kJson : runtime::LogFormat::kText);
  std::stop_source stop;
  SignalWaiter signals(stop);
  try {
    // cpprestsdk's I/O pool defaults to 40 threads, each with its own stack and malloc arena;
    // the operator's blocking calls run on its own threads, so a few I/O threads suffice.
    crossplat::threadpool::initialize_with_threads(kIoThreads);
    auto registry = std::make_shared<prometheus::Registry>();
    kube::ClientOptions client_options;
    client_options.qps = config.kube_api_qps;
    client_options.burst = config.kube_api_burst;
    client_options.registry = registry.get();
    auto client = kube::MakeClient(KubeConfigFor(config), client_options);
    runtime::OperatorMetrics metrics(*registry);

    std::unique_ptr<prometheus::Exposer> exposer;
    if (config.metrics_bind_address != "0") {
      const auto bind = runtime::ParseBindAddress(config.metrics_bind_address, "--metrics-bind-address");
      exposer = std::make_unique<prometheus::Exposer>(
          (bind.host.empty() ? "0.0.0.0" : bind.host) + ":" + std::to_string(bind.port));
      exposer->RegisterCollectable(registry);
    }

    runtime::ControllerOptions options;
    options.planner.sidecar_image = config.sidecar_image;
    options.planner.cluster_domain = config.cluster_domain;
    options.planner.default_host_network = config.default_host_network;
    options.planner.network_policy = config.network_policies;
    options.planner.validation.port_range_first = config.port_range.first;
    options.planner.validation.port_range_last = config.port_range.last;
    options.port_range = config.port_range;
    options.namespaces = config.namespaces;
    options.workers = config.workers;
    options.resync_period = config.resync_period;
    options.summary_interval = config.summary_interval;
    options.planner.unschedulable_after = config.unschedulable_after;
    options.provider_discovery_interval = config.provider_discovery_interval;
    options.liveness = {.reconcile_timeout = config.liveness_reconcile_timeout,
                        .informer_timeout = config.liveness_informer_timeout,
                        .queue_timeout = config.liveness_queue_timeout};
    options.identity = config.identity.empty() ? runtime::DefaultIdentity() : config.identity;
    auto summary_reader = runtime::MakeHttpSummaryReader();
    runtime::Controller controller(*client, options, logger, &metrics, summary_reader.get());

    std::optional<runtime::LeaderElector> elector;
    std::unique_ptr<kube::Client> election_client;
    if (config.leader_election) {
      // Its own client, with no retries and a short timeout: one renewal must never outlast
      // the renew deadline inside the client, or a standby could take over while this replica
      // still believes it leads.
      kube::ClientOptions election_options = client_options;
      election_options.backoff.max_attempts = 1;
      kube::TransportOptions election_transport;
      election_transport.request_timeout =
          std::max(std::chrono::seconds(1), config.renew_deadline / 2);
      election_client = kube::MakeClient(KubeConfigFor(config), election_options, election_transport);
      elector.emplace(*election_client, runtime::LeaderElectionOptions{
                                   .lease_namespace = config.leader_election_namespace,
                                   .lease_name = config.leader_election_id,
                                   .identity = options.identity,
                                   .lease_duration = config.lease_duration,
                                   .renew_deadline = config.renew_deadline,
                                   .retry_period = config.retry_period});
    }
    std::unique_ptr<runtime::HealthServer> health;
    if (config.health_bind_address != "0") {
      const auto bind = runtime::ParseBindAddress(config.health_bind_address, "--health-probe-bind-address");
      health = std::make_unique<runtime::HealthServer>(
          bind.host, bind.port,
          [&]() -> std::string {
            // A standby is ready: it is up and can take over.
            if (elector && !elector->IsLeader()) {
              return "";
            }
            return controller.NotReadyReason();
          },
          [&] { return controller.NotLiveReason(); });
    }
    logger.Info("starting", {{"identity", options.identity},
                             {"namespaces", config.namespaces},
                             {"portRange", config.port_range.ToString()},
                             {"leaderElection", config.leader_election}});

    if (elector) {
      elector->Run(stop.get_token(), [&](std::stop_token leading) {
        logger.Info("leading", {{"lease", config.leader_election_id}});
        metrics.SetLeader(true);
        controller.Run(leading);
        metrics.SetLeader(false);
      });
    } else {
      metrics.SetLeader(true);
      controller.Run(stop.get_token());
    }
    const auto& writes = controller.writes();
    logger.Info("stopped", {{"reconciles", controller.reconciles()},
                            {"writes", {{"status", writes.status.load()},
                                        {"creates", writes.creates.load()},
                                        {"deletes", writes.deletes.load()},
                                        {"events", writes.events.load()},
                                        {"failed", writes.failed.load()}}}});
    if (!stop.stop_requested()) {
      logger.Error("lost leadership; exiting so that a fresh process campaigns again");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    logger.Error("cannot run", {{"error", e.what()}});
    return 1;
  }
}

}  // namespace ringleader::cli
