// The operator's own Prometheus metrics (the API client's request metrics live in
// operator/kube/metrics.h and go into the same registry).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace ringleader::runtime {

class OperatorMetrics {
 public:
  // Registers, in `registry` (which must outlive this):
  //   ringleader_operator_reconciles_total{result}           counter; result: success, requeue,
  //                                                          conflict, error
  //   ringleader_operator_reconcile_duration_seconds         histogram
  //   ringleader_operator_queue_depth                        gauge, keys waiting for a worker
  //   ringleader_operator_queue_wait_seconds                 histogram, ready -> picked up
  //   ringleader_operator_jobs{state}                        gauge per TrainingJob state
  //   ringleader_operator_ports_in_use                       gauge, ports held by jobs
  //   ringleader_operator_ports_capacity                     gauge, ports in the range (whole blocks)
  //   ringleader_operator_leader                             gauge, 1 while this replica leads
  //   ringleader_operator_events_total{type,reason}          counter, Events recorded
  //   ringleader_operator_creates_refused_total{kind,reason} counter, creates of a child the API
  //                                                          refused (reason: Forbidden, Invalid,
  //                                                          BadRequest, NameConflict)
  //   ringleader_operator_jobs_creates_refused{reason}       gauge, jobs whose last create was
  //                                                          refused (CreateRefused, NameConflict)
  //   ringleader_operator_jobs_unschedulable{reason}         gauge, active jobs with Scheduled=False
  //                                                          (Unschedulable, SchedulingGated,
  //                                                          NotScheduled, SchedulerNotInstalled, other)
  explicit OperatorMetrics(prometheus::Registry& registry);

  void ObserveReconcile(std::string_view result, double seconds);
  void SetQueueDepth(double depth);
  void ObserveQueueWait(double seconds);
  // Replaces every state's count; states missing from `counts` are set to 0.
  void SetJobsByState(const std::map<std::string, int>& counts);
  void SetPorts(double in_use, double capacity);
  void SetLeader(bool leader);
  void CountEvent(std::string_view type, std::string_view reason);
  // `kind` is Pod, Service, Secret or PodGroup.
  void CountCreateRefused(std::string_view kind, std::string_view reason);
  // Replaces every reason's count; reasons missing from `counts` are set to 0.
  void SetJobsWithRefusedCreates(const std::map<std::string, int>& counts);
  // Replaces every reason's count (reasons outside the list count as "other").
  void SetUnschedulableJobs(const std::map<std::string, int>& counts);

 private:
  prometheus::Family<prometheus::Counter>& reconciles_;
  prometheus::Histogram& reconcile_duration_;
  prometheus::Gauge& queue_depth_;
  prometheus::Histogram& queue_wait_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Gauge& ports_in_use_;
  prometheus::Gauge& ports_capacity_;
  prometheus::Gauge& leader_;
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Counter>& creates_refused_;
  prometheus::Family<prometheus::Gauge>& jobs_creates_refused_;
  prometheus::Family<prometheus::Gauge>& jobs_unschedulable_;
};

}  // namespace ringleader::runtime
