// The operator's metric families. Every label value is one of a short known list, except the
// Events' reason, which the operator's own code chooses.
#include "operator/runtime/operator_metrics.h"

#include <algorithm>
#include <array>

namespace ringleader::runtime {
namespace {

constexpr std::array<std::string_view, 7> kJobStates = {
    "Pending", "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"};
// The condition reasons a job's refused creates are reported under (controller.h).
constexpr std::array<std::string_view, 2> kRefusalReasons = {"CreateRefused", "NameConflict"};
constexpr std::array<std::string_view, 5> kChildKinds = {"Pod", "Service", "Secret", "NetworkPolicy", "PodGroup"};
// The reasons of Scheduled=False exported as they are; any other scheduler's reason is "other".
constexpr std::array<std::string_view, 5> kUnschedulableReasons = {"Unschedulable", "SchedulingGated", "NotScheduled",
                                                                   "SchedulerNotInstalled", "other"};
constexpr std::array<std::string_view, 4> kRefusedBy = {"Forbidden", "Invalid", "BadRequest", "NameConflict"};
constexpr std::array<std::string_view, 4> kReconcileResults = {"success", "requeue", "conflict",
                                                               "error"};

// 1 ms doubling to about 65 s: 17 buckets covering a fast cache-only reconcile up to one that
// waited out a slow API server, and a queue wait up to a minute-long backoff.
prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  double bound = 0.001;
  for (int i = 0; i < 17; ++i) {
    buckets.push_back(bound);
    bound *= 2;
  }
  return buckets;
}

}  // namespace

OperatorMetrics::OperatorMetrics(prometheus::Registry& registry)
    : reconciles_(prometheus::BuildCounter()
                      .Name("ringleader_operator_reconciles_total")
                      .Help("TrainingJob reconciles by result (success, requeue, conflict, error)")
                      .Register(registry)),
      reconcile_duration_(prometheus::BuildHistogram()
                              .Name("ringleader_operator_reconcile_duration_seconds")
                              .Help("Time one reconcile of a TrainingJob took")
                              .Register(registry)
                              .Add({}, SecondsBuckets())),
      queue_depth_(prometheus::BuildGauge()
                       .Name("ringleader_operator_queue_depth")
                       .Help("Job keys ready and waiting for a worker")
                       .Register(registry)
                       .Add({})),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("ringleader_operator_queue_wait_seconds")
                      .Help("Time from a key becoming ready until a worker picked it up")
                      .Register(registry)
                      .Add({}, SecondsBuckets())),
      jobs_(prometheus::BuildGauge()
                .Name("ringleader_operator_jobs")
                .Help("TrainingJobs by state")
                .Register(registry)),
      ports_in_use_(prometheus::BuildGauge()
                        .Name("ringleader_operator_ports_in_use")
                        .Help("Ports held by TrainingJobs")
                        .Register(registry)
                        .Add({})),
      ports_capacity_(prometheus::BuildGauge()
                          .Name("ringleader_operator_ports_capacity")
                          .Help("Ports in the configured range, counting whole blocks only")
                          .Register(registry)
                          .Add({})),
      leader_(prometheus::BuildGauge()
                  .Name("ringleader_operator_leader")
                  .Help("1 while this replica holds the leader Lease, else 0")
                  .Register(registry)
                  .Add({})),
      events_(prometheus::BuildCounter()
                  .Name("ringleader_operator_events_total")
                  .Help("Kubernetes Events recorded by type and reason")
                  .Register(registry)),
      creates_refused_(prometheus::BuildCounter()
                           .Name("ringleader_operator_creates_refused_total")
                           .Help("Creates of a job's Pods, Service or Secret that the API refused, by "
                                 "kind and reason (Forbidden, Invalid, BadRequest, NameConflict)")
                           .Register(registry)),
      jobs_creates_refused_(prometheus::BuildGauge()
                                .Name("ringleader_operator_jobs_creates_refused")
                                .Help("TrainingJobs whose last create was refused, by condition reason "
                                      "(CreateRefused, NameConflict); retried with backoff")
                                .Register(registry)),
      jobs_unschedulable_(prometheus::BuildGauge()
                              .Name("ringleader_operator_jobs_unschedulable")
                              .Help("Active TrainingJobs with the condition Scheduled=False, by its reason "
                                    "(Unschedulable, SchedulingGated, NotScheduled, SchedulerNotInstalled, other)")
                              .Register(registry)) {
  // Every known series exists from the start, so rate() and absent() see a zero, not a gap.
  for (const std::string_view result : kReconcileResults) {
    reconciles_.Add({{"result", std::string(result)}});
  }
  SetJobsByState({});
  for (const std::string_view kind : kChildKinds) {
    for (const std::string_view reason : kRefusedBy) {
      creates_refused_.Add({{"kind", std::string(kind)}, {"reason", std::string(reason)}});
    }
  }
  SetJobsWithRefusedCreates({});
  SetUnschedulableJobs({});
}

void OperatorMetrics::ObserveReconcile(std::string_view result, double seconds) {
  reconciles_.Add({{"result", std::string(result)}}).Increment();
  reconcile_duration_.Observe(seconds);
}

void OperatorMetrics::SetQueueDepth(double depth) { queue_depth_.Set(depth); }

void OperatorMetrics::ObserveQueueWait(double seconds) { queue_wait_.Observe(seconds); }

void OperatorMetrics::SetJobsByState(const std::map<std::string, int>& counts) {
  // Only the seven states are exported, so a stray status.state cannot add a series.
  for (const std::string_view state : kJobStates) {
    const std::string name(state);
    const auto it = counts.find(name);
    jobs_.Add({{"state", name}}).Set(it == counts.end() ? 0 : it->second);
  }
}

void OperatorMetrics::SetPorts(double in_use, double capacity) {
  ports_in_use_.Set(in_use);
  ports_capacity_.Set(capacity);
}

void OperatorMetrics::SetLeader(bool leader) { leader_.Set(leader ? 1 : 0); }

void OperatorMetrics::CountEvent(std::string_view type, std::string_view reason) {
  events_.Add({{"type", std::string(type)}, {"reason", std::string(reason)}}).Increment();
}

void OperatorMetrics::CountCreateRefused(std::string_view kind, std::string_view reason) {
  // Only the known values: an unexpected reason from the server cannot add series.
  const bool known_kind = std::find(kChildKinds.begin(), kChildKinds.end(), kind) != kChildKinds.end();
  const bool known_reason = std::find(kRefusedBy.begin(), kRefusedBy.end(), reason) != kRefusedBy.end();
  creates_refused_
      .Add({{"kind", known_kind ? std::string(kind) : "other"}, {"reason", known_reason ? std::string(reason) : "other"}})
      .Increment();
}

void OperatorMetrics::SetJobsWithRefusedCreates(const std::map<std::string, int>& counts) {
  for (const std::string_view reason : kRefusalReasons) {
    const std::string name(reason);
    const auto it = counts.find(name);
    jobs_creates_refused_.Add({{"reason", name}}).Set(it == counts.end() ? 0 : it->second);
  }
}

void OperatorMetrics::SetUnschedulableJobs(const std::map<std::string, int>& counts) {
  std::map<std::string, int> known;
  for (const auto& [reason, count] : counts) {
    const bool listed =
        std::find(kUnschedulableReasons.begin(), kUnschedulableReasons.end(), reason) != kUnschedulableReasons.end();
    known[listed ? reason : "other"] += count;
  }
  for (const std::string_view reason : kUnschedulableReasons) {
    const std::string name(reason);
    const auto it = known.find(name);
    jobs_unschedulable_.Add({{"reason", name}}).Set(it == known.end() ? 0 : it->second);
  }
}

}  // namespace ringleader::runtime
