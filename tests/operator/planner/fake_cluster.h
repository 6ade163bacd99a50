// A tiny in-memory cluster for planner tests: it applies a Plan's actions the way the operator's
// applier would (status replaced, children created with uids, deletions) and lets a test drive
// Pod phases as a kubelet would. No HTTP, no threads.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/planner/plan.h"

namespace ringleader::planner::testing {

class FakeCluster {
 public:
  // The job's metadata.uid is "job-uid-1" unless it has one.
  explicit FakeCluster(nlohmann::json job, ports::PortRange range = {61000, 65535});

  // Plans once at `now` and applies the actions; returns the plan. `now` becomes the fake's clock.
  Plan Reconcile(api::Time now);
  // Reconciles until a plan has no actions (at most `rounds` times); returns the rounds used.
  int ReconcileUntilStable(api::Time now, int rounds = 10);
  // The plan the operator would make now, without applying it (the clock stays).
  Plan PlanNow(api::Time now) const;
  // The fake's clock: the time of the last Reconcile, At(0) before the first. Containers the
  // drivers below terminate finish at it unless told another time, as a kubelet stamps finishedAt.
  api::Time now() const { return now_; }

  api::TrainingJob Job() const;
  // Applied to the job after it is parsed from job_json() on every plan: sets C++ fields
  // directly (spec.elasticPolicy in the elastic tests).
  void set_job_edit(std::function<void(api::TrainingJob&)> edit) { job_edit_ = std::move(edit); }
  nlohmann::json& job_json() { return job_; }
  const std::map<std::string, nlohmann::json>& pods() const { return pods_; }
  nlohmann::json& pod(const std::string& name) { return pods_.at(name); }
  bool has_service() const { return service_.has_value(); }
  bool has_secret() const { return secret_.has_value(); }
  const nlohmann::json& service() const { return *service_; }
  const nlohmann::json& secret() const { return *secret_; }
  const std::optional<nlohmann::json>& network_policy() const { return network_policy_; }
  const std::vector<RecordEvent>& events() const { return events_; }
  bool job_deleted() const { return job_deleted_; }
  ports::PortLedger& ledger() { return ledger_; }
  PlannerConfig& config() { return config_; }
  void set_summary(api::CommunicationStatus summary) { summary_ = std::move(summary); }
  // What discovery says the cluster serves (Observed::providers); nothing by default.
  SchedulingProviders& providers() { return providers_; }
  // What the controller read from Kueue's Workload (Observed::queue_verdict); none by default.
  std::optional<std::string>& queue_verdict() { return queue_verdict_; }
  // PodGroups created by name (a create of an existing one replaces it, as the applier does).
  const std::map<std::string, nlohmann::json>& pod_groups() const { return pod_groups_; }

  // The name of rank `rank`'s Pod in the job's current attempt (status.restarts).
  std::string CurrentPod(int rank) const;
  // Every Pod's name, sorted.
  std::vector<std::string> PodNames() const;
  const nlohmann::json& status() { return job_["status"]; }
  // A condition's message or reason, or "<no TYPE condition>" (readable in a failed expectation).
  std::string ConditionMessage(const std::string& type) const;
  std::string ConditionReason(const std::string& type) const;
  // The messages of the Events recorded with `reason`, in order.
  std::vector<std::string> EventMessages(const std::string& reason) const;

  // Brings a new job to all Pods created and running with passed preflights.
  void StartRunning(api::Time now);

  // Kubelet-like drivers. A Pod set Running or Succeeded has its init containers done: the
  // sidecar started (unless its status was set already) and the preflight exited 0.
  void SetPhase(const std::string& pod, const std::string& phase);
  // Every Pod not yet Failed or Succeeded: a kubelet never moves a Pod out of those phases, so a
  // failed attempt's Pod kept for its logs stays as it is.
  void SetAllPhases(const std::string& phase);
  void SetSidecarStarted(const std::string& pod, bool started);
  // The preflight init container exited 0 (the Pod's phase is left as it is).
  void PassPreflight(const std::string& pod);
  // The preflight init container exited non-zero with `message` (its log tail) at now(); the Pod
  // fails.
  void FailPreflight(const std::string& pod, int exit_code, const std::string& message);
  // The app container `container` terminated with `exit_code` at `finished_at` (default now());
  // the Pod fails.
  void FailContainer(const std::string& pod, int exit_code, const std::string& reason,
                     const std::string& container = "trainer",
                     std::optional<api::Time> finished_at = std::nullopt);
  // Sets (or replaces) a condition in the Pod's status.conditions.
  void SetPodCondition(const std::string& pod, const std::string& type, const std::string& status,
                       const std::string& reason = "", const std::string& message = "");
  // What Kubernetes does to a Pod it preempts or evicts: DisruptionTarget=True, then a graceful
  // delete (deletionTimestamp set; the Pod stays until FinishDeletions or RemovePod).
  void Disrupt(const std::string& pod, const std::string& reason, const std::string& message);
  // What Kueue does to each Pod of a Workload it preempts or evicts: TerminationTarget=True stamped
  // now(), then a delete (Kueue never sets DisruptionTarget).
  void StopByKueue(const std::string& pod, const std::string& reason, const std::string& message);
  // Every app container exited 0 at `finished_at` (a trainer that exits 0 on SIGTERM, too): the Pod
  // Succeeded.
  void SucceedContainers(const std::string& pod, api::Time finished_at);
  // The Pod is gone from the API, as after its deletion completed.
  void RemovePod(const std::string& pod);
  // The sidecar exited non-zero with `message` at now() and the kubelet is restarting it.
  void FailSidecar(const std::string& pod, int exit_code, const std::string& message);
  // A Pod the job does not own, carrying the job's labels.
  void AddForeignPod(const std::string& name);
  // Pods being deleted keep existing until this is called (graceful termination).
  void set_graceful_deletion(bool graceful) { graceful_ = graceful; }
  void FinishDeletions();
  // Spec edits bump metadata.generation like the API server.
  void EditSpec(const std::function<void(nlohmann::json& spec)>& edit);

 private:
  void Apply(const Plan& plan);
  nlohmann::json* FindInitStatus(const std::string& pod, const std::string& container);
  // Replaces the init container status of the same name, or adds it.
  void SetInitStatus(const std::string& pod, const nlohmann::json& container_status);

  nlohmann::json job_;
  std::function<void(api::TrainingJob&)> job_edit_;
  std::map<std::string, nlohmann::json> pods_;
  std::optional<nlohmann::json> service_;
  std::optional<nlohmann::json> secret_;
  std::optional<nlohmann::json> network_policy_;
  std::vector<RecordEvent> events_;
  ports::PortLedger ledger_;
  PlannerConfig config_;
  std::optional<api::CommunicationStatus> summary_;
  SchedulingProviders providers_;
  std::optional<std::string> queue_verdict_;
  std::map<std::string, nlohmann::json> pod_groups_;
  api::Time now_;
  int next_uid_ = 1;
  bool graceful_ = false;
  bool job_deleted_ = false;
};

nlohmann::json MinimalJob(const std::string& name = "demo", int replicas = 4);
api::Time At(int seconds_after_epoch_base);
std::string EnvValue(const nlohmann::json& container, const std::string& name);
const nlohmann::json* FindCondition(const nlohmann::json& job, const std::string& type);
// The names of the Pods `plan` creates, and of those it deletes, in the plan's order.
std::vector<std::string> CreatedPodNames(const Plan& plan);
std::vector<std::string> DeletedPodNames(const Plan& plan);

}  // namespace ringleader::planner::testing
