// Carries out a planner::Plan for one job against the API: status through /status with the
// job's resourceVersion, children created and deleted (with uid preconditions), Events
// recorded. Stops at the first failed write; every write it makes is registered as an
// expectation so the job is not planned again until the caches show it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/kube/client.h"
#include "operator/planner/plan.h"
#include "operator/runtime/expectations.h"
#include "operator/runtime/logger.h"

namespace ringleader::runtime {

class OperatorMetrics;

// The condition reasons (type Created, status False) of a job whose creates are refused.
inline constexpr std::string_view kCreateRefused = "CreateRefused";
inline constexpr std::string_view kNameConflict = "NameConflict";

// A create of a child that retrying at once will not fix: the API refused it (403 Forbidden, as a
// ResourceQuota or an admission webhook answers; 422 Invalid; 400 BadRequest), or the name is
// taken by an object this job does not own.
struct CreateRefusal {
  std::string kind;      // Pod, Service, Secret or PodGroup
  std::string name;
  std::string refused_by;  // the API's reason (Forbidden, Invalid, BadRequest) or NameConflict
  std::string message;   // the API's own message, or ours for a NameConflict
  bool operator==(const CreateRefusal&) const = default;
};

struct ApplyOutcome {
  enum class Result {
    kDone,      // every action succeeded
    kConflict,  // the job changed under us (409 on the status write): plan again
    kError,     // a write failed; `error` says which and why
    kRefused,   // a create was refused (`refused`); the writes before it were made
  };
  Result result = Result::kDone;
  std::string error;
  bool status_written = false;  // the plan's UpdateStatus reached the server
  std::optional<CreateRefusal> refused;
};

// Counts of writes by kind, for the benchmark's writes-per-job figure.
struct WriteCounts {
  std::atomic<std::int64_t> status{0};
  std::atomic<std::int64_t> creates{0};
  std::atomic<std::int64_t> deletes{0};
  std::atomic<std::int64_t> events{0};
  std::atomic<std::int64_t> failed{0};  // writes answered with an error (409s included)
};

class Applier {
 public:
  // All references must outlive the applier. `metrics` may be null.
  Applier(kube::Client& client, Expectations& expectations, Logger& logger,
          OperatorMetrics* metrics, std::string reporting_instance);

  // `job_object` is the cached TrainingJob the plan was made from (its resourceVersion guards
  // the status write).
  ApplyOutcome Apply(const nlohmann::json& job_object, const api::TrainingJob& job,
                     const planner::Plan& plan);

  // Records a Warning or Normal Event on the job outside any plan (e.g. a name already taken).
  void RecordEvent(const api::TrainingJob& job, const planner::RecordEvent& event);

  const WriteCounts& writes() const { return writes_; }

 private:
  ApplyOutcome CreateChild(const api::TrainingJob& job, const nlohmann::json& object);
  // A PodGroup of this job that exists already keeps its object; its spec is brought to the
  // plan's (minMember and the rest may have changed while no Pods were there).
  ApplyOutcome RefreshPodGroup(const api::TrainingJob& job, nlohmann::json existing, const nlohmann::json& wanted);

  kube::Client& client_;
  Expectations& expectations_;
  Logger& logger_;
  OperatorMetrics* metrics_;
  const std::string reporting_instance_;
  WriteCounts writes_;
};

// The resource for a child kind the planner creates: Pod, Service, Secret, or a PodGroup, which
// needs its apiVersion too (scheduler-plugins' and Volcano's share the kind).
kube::Resource ChildResource(const std::string& kind, const std::string& api_version = "");

}  // namespace ringleader::runtime
