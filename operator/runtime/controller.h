// The TrainingJob controller: informers for jobs and the Pods, Services, Secrets and
// NetworkPolicies the operator owns, a work queue of job keys, workers that plan each job (planner::MakePlan) and
// apply the plan, and the port ledger rebuilt from every job's status before any job is
// planned. Run it only while leading.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "operator/kube/client.h"
#include "operator/planner/plan.h"
#include "operator/ports/port_ledger.h"
#include "operator/runtime/applier.h"
#include "operator/runtime/expectations.h"
#include "operator/runtime/informer.h"
#include "operator/runtime/liveness.h"
#include "operator/runtime/logger.h"
#include "operator/runtime/provider_discovery.h"
#include "operator/runtime/summary_reader.h"
#include "operator/runtime/work_queue.h"

namespace ringleader::runtime {

class OperatorMetrics;

struct ControllerOptions {
  planner::PlannerConfig planner;
  ports::PortRange port_range{61000, 65535};
  std::vector<std::string> namespaces;  // empty: all
  int workers = 4;
  std::chrono::seconds resync_period{300};
  // How often a running job's rank-0 summary is read into its status.
  std::chrono::seconds summary_interval{60};
  WorkQueueOptions queue;
  std::string identity = "ringleader-operator";  // reportingInstance of Events
  LivenessOptions liveness;
  // How long each informer watch stays open before it is reopened (its timeoutSeconds).
  std::int64_t watch_timeout_seconds = 300;
  // The work queue's delays and the liveness check's times; null: the real clock.
  kube::Clock* clock = nullptr;
  // A job whose create was refused (quota, webhook, validation, a name taken by another object)
  // creates nothing more until this has passed, doubling per refusal up to the max; whatever
  // enqueues the job meanwhile, it is never a tight loop.
  std::chrono::milliseconds refused_create_backoff{5'000};
  std::chrono::milliseconds refused_create_backoff_max{300'000};
  // How often API discovery is asked again which gang-scheduling providers the cluster serves.
  std::chrono::seconds provider_discovery_interval{60};
};

class Controller {
 public:
  // `summary_reader` and `metrics` may be null. Everything must outlive the controller.
  Controller(kube::Client& client, ControllerOptions options, Logger& logger,
             OperatorMetrics* metrics, SummaryReader* summary_reader);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers, waits for their first lists, rebuilds the port ledger, then runs the
  // workers until `stop` is requested. Returns after every worker and informer stopped.
  void Run(std::stop_token stop);

  // "" once the caches are synced and the workers run; the reason otherwise.
  std::string NotReadyReason() const;
  // "" while the informers and workers keep moving, or while Run is not running (a standby);
  // otherwise what is stuck (see LivenessCheck). Never waits for a worker or a cache.
  std::string NotLiveReason();

  const WriteCounts& writes() const { return applier_.writes(); }
  std::size_t QueueDepth() const { return queue_.Depth() + queue_.Delayed() + queue_.Processing(); }
  // Reconciles finished since Run began.
  std::int64_t reconciles() const { return reconciles_.load(); }

 private:
  void RebuildLedger();
  void Work(std::stop_token stop, std::size_t worker);
  void SetWorker(std::size_t worker, const std::string& reconciling);
  // One key; returns the result label for metrics.
  std::string Reconcile(const std::string& key);
  std::string ReconcileGone(const std::string& key);
  bool ExpectationMet(const std::string& job_key, const Expectation& expectation);
  std::optional<api::CommunicationStatus> Summary(const api::TrainingJob& job,
                                                  const std::vector<ObjectPtr>& pods);
  // Why Kueue holds a Kueue job's gated Pods: the attempt's Workload's QuotaReserved=False
  // reason and message. Read (one GET) only while a current Pod waits SchedulingGated.
  std::optional<std::string> QueueVerdict(const api::TrainingJob& job, const std::vector<ObjectPtr>& pods);
  void EnqueueOwner(const ObjectPtr& object);
  void ReleaseIfPodsGone(const std::string& uid);
  // A block was freed: jobs still waiting for ports are planned again now.
  void EnqueuePortWaiters();
  void PublishGauges();
  // The informers running: jobs, Pods, Services, Secrets and, when on, NetworkPolicies.
  std::vector<Informer*> Informers();
  // Asks discovery again; when a provider came or went, every job is planned again.
  void RefreshProviders();

  // A job's last refused create, while its creates wait out the backoff.
  struct RefusedCreates {
    std::string uid;
    CreateRefusal refusal;
    int refusals = 0;
    kube::Clock::TimePoint retry_at{};
  };
  enum class RefusalState { kNone, kHeld, kRetrying };
  // Before applying: a job whose creates were refused keeps its Created=False condition in the
  // plan's status, and while its backoff runs the plan's creates (and their Events) are dropped.
  RefusalState HoldRefusedCreates(const std::string& key, const api::TrainingJob& job, planner::Plan& plan,
                                  kube::Clock::Duration& wait);
  // After a refused create: backoff doubled, Event when the refusal is new or says something new.
  kube::Clock::Duration NoteRefusal(const std::string& key, const api::TrainingJob& job, const CreateRefusal& refusal);
  void ForgetRefusal(const std::string& key);

  kube::Client& client_;
  const ControllerOptions options_;
  kube::Clock& clock_;
  Logger& logger_;
  OperatorMetrics* metrics_;
  SummaryReader* summary_reader_;
  WorkQueue queue_;
  Expectations expectations_;
  Applier applier_;
  ProviderDiscovery providers_;
  Informer jobs_;
  Informer pods_;
  Informer services_;
  Informer secrets_;
  Informer network_policies_;  // started only with options_.planner.network_policy

  // Guards the ledger; held from planning a job through reserving its block, so two workers
  // never propose the same free block.
  mutable std::mutex ledger_mutex_;
  ports::PortLedger ledger_;
  // uid of deleted jobs whose Pods may still hold their ports -> namespace.
  std::map<std::string, std::string> releasing_;
  // What the operator has read of a job's rank-0 /summary.
  struct SummaryRead {
    std::string job;  // namespace/name, so the entry goes with the job (ReconcileGone)
    std::chrono::steady_clock::time_point read_at;  // the last attempt
    std::optional<api::CommunicationStatus> summary;
    std::string final_read_of;  // uid of the rank-0 Pod whose ended trainer had its last read
  };
  // When the next read is due: summary_interval, or sooner while there is no preflight verdict.
  std::chrono::seconds SummaryInterval(const SummaryRead& read) const;
  std::mutex summary_mutex_;
  std::map<std::string, SummaryRead> summaries_;  // job uid ->

  // What each worker is doing, for the liveness check; sized while the workers run.
  std::mutex workers_mutex_;
  std::vector<ProgressSnapshot::Worker> workers_;
  LivenessCheck liveness_;
  std::atomic<bool> informers_started_{false};

  std::mutex refused_mutex_;
  std::map<std::string, RefusedCreates> refused_;  // by job key

  std::atomic<bool> running_{false};
  std::atomic<std::int64_t> reconciles_{0};
};

}  // namespace ringleader::runtime
