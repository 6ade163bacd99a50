// MakePlan: validate, then walk the job's life (ports, children, gang restarts, suspend, deadline,
// completion, TTL) deciding actions from what is observed now, never from what happened before.
#include "operator/planner/plan.h"

#include <algorithm>
#include <map>

#include "operator/planner/children_builder.h"
#include "operator/planner/pod_builder.h"
#include "operator/planner/status_builder.h"
#include "sidecar/contract/contract.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// What the planner needs to know about one owned Pod.
struct PodView {
  std::string name;
  std::string uid;
  std::int64_t rank = -1;     // -1: missing or malformed label
  std::int64_t attempt = -1;  // -1: missing or malformed label
  std::string phase;
  bool deleting = false;
  bool ready = false;
  bool preflight_passed = false;  // the preflight init container exited 0
  bool trainers_done = false;     // Succeeded, or every app container exited 0
  std::string failure;  // why it failed, naming the container, when it did
  std::string sidecar_failure;  // why its native sidecar exited non-zero, when it did

  bool Finished() const { return phase == "Succeeded" || phase == "Failed"; }
};

// The member `key` of `object`, or nullptr; never copies (re-plans read every Pod every time).
const json* Member(const json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string& StringMember(const json& object, std::string_view key) {
  static const std::string kEmpty;
  const json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get_ref<const std::string&>() : kEmpty;
}

const json& ArrayMember(const json& object, std::string_view key) {
  static const json kEmpty = json::array();
  const json* value = Member(object, key);
  return value != nullptr && value->is_array() ? *value : kEmpty;
}

std::int64_t ParseIndex(const json& labels, std::string_view key) {
  const std::string& text = StringMember(labels, key);
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    return -1;
  }
  return std::stoll(text);
}

// A terminated container's message is usually the tail of its output (FallbackToLogsOnError);
// the reason it failed is the last line written, after whatever it logged while starting.
std::string LastLine(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) {
    return "";
  }
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

std::string Terminated(const json& container_status) {
  const json* state = Member(container_status, "state");
  const json* terminated = state != nullptr ? Member(*state, "terminated") : nullptr;
  if (terminated == nullptr || !terminated->is_object()) {
    const json* last = Member(container_status, "lastState");
    terminated = last != nullptr ? Member(*last, "terminated") : nullptr;
  }
  if (terminated == nullptr || !terminated->is_object()) {
    return "";
  }
  const json* code = Member(*terminated, "exitCode");
  const std::int64_t exit_code = code != nullptr && code->is_number_integer() ? code->get<std::int64_t>() : 0;
  if (exit_code == 0) {
    return "";
  }
  const std::string& name = StringMember(container_status, "name");
  std::string text = "container " + (name.empty() ? std::string("?") : name) + " exited with code " +
                     std::to_string(exit_code);
  if (const std::string& reason = StringMember(*terminated, "reason"); !reason.empty()) {
    text += " (" + reason + ")";
  }
  if (std::string message = LastLine(StringMember(*terminated, "message")); !message.empty()) {
    if (message.size() > 200) {
      message = message.substr(0, 200) + "...";
    }
    text += ": " + message;
  }
  return text;
}

bool ExitedZero(const json& container_status) {
  const json* state = Member(container_status, "state");
  const json* terminated = state != nullptr ? Member(*state, "terminated") : nullptr;
  const json* code = terminated != nullptr ? Member(*terminated, "exitCode") : nullptr;
  return code != nullptr && code->is_number_integer() && code->get<std::int64_t>() == 0;
}

PodView ViewPod(const json& pod) {
  PodView view;
  static const json kEmptyObject = json::object();
  const json* meta_ptr = Member(pod, "metadata");
  const json& meta = meta_ptr != nullptr ? *meta_ptr : kEmptyObject;
  view.name = StringMember(meta, "name");
  view.uid = StringMember(meta, "uid");
  if (const json* labels = Member(meta, "labels")) {
    view.rank = ParseIndex(*labels, kRankLabel);
    view.attempt = ParseIndex(*labels, kAttemptLabel);
  }
  const json* deletion = Member(meta, "deletionTimestamp");
  view.deleting = deletion != nullptr && !deletion->is_null();
  const json* status_ptr = Member(pod, "status");
  if (status_ptr == nullptr || !status_ptr->is_object()) {
    view.phase = "Pending";
    return view;
  }
  const json& status = *status_ptr;
  view.phase = StringMember(status, "phase");
  if (view.phase.empty()) {
    view.phase = "Pending";
  }
  for (const json& condition : ArrayMember(status, "conditions")) {
    if (StringMember(condition, "type") == "Ready" && StringMember(condition, "status") == "True") {
      view.ready = true;
    }
  }
  for (const json& init : ArrayMember(status, "initContainerStatuses")) {
    const std::string& name = StringMember(init, "name");
    if (name == contract::kPreflightContainerName) {
      view.preflight_passed = ExitedZero(init);
      // Rendezvous timeout, bandwidth under the floor, a broken peer: the trainers never start.
      if (std::string why = Terminated(init); !why.empty()) {
        view.failure = "preflight failed: " + why;
      }
    } else if (name == contract::kSidecarContainerName) {
      if (std::string why = Terminated(init); !why.empty()) {
        view.sidecar_failure = "sidecar failed: " + why;
      }
    }
  }
  const json& containers = ArrayMember(status, "containerStatuses");
  view.trainers_done = view.phase == "Succeeded" ||
                       (!containers.empty() && std::all_of(containers.begin(), containers.end(), ExitedZero));
  if (view.phase == "Failed" && view.failure.empty()) {
    for (const json& container : containers) {
      if (std::string why = Terminated(container); !why.empty()) {
        view.failure = why;
        break;
      }
    }
  }
  // A trainer's or the preflight's own failure says more than the sidecar's.
  if (view.phase == "Failed" && view.failure.empty()) {
    view.failure = view.sidecar_failure;
  }
  if (view.phase == "Failed" && view.failure.empty()) {
    view.failure = "pod failed";
    if (const std::string& reason = StringMember(status, "reason"); !reason.empty()) {
      view.failure += " (" + reason + ")";
    }
  }
  return view;
}

bool HasFailed(const PodView& pod) { return pod.phase == "Failed" || !pod.failure.empty(); }

std::string DescribeFailures(const std::vector<const PodView*>& failed) {
  std::string text;
  for (const PodView* pod : failed) {
    if (!text.empty()) {
      text += "; ";
    }
    text += "rank " + std::to_string(pod->rank) + " (pod " + pod->name + ") " + pod->failure;
  }
  return text;
}

std::string DescribePorts(const api::JobPorts& ports) {
  return "master=" + std::to_string(ports.master) + " rendezvous=" + std::to_string(ports.rendezvous) +
         " metrics=" + std::to_string(ports.metrics) + " spare=" + std::to_string(ports.spare);
}

api::JobPorts ToJobPorts(const ports::PortBlock& block) {
  using contract::PortRole;
  return {.master = block.Port(PortRole::kMaster),
          .rendezvous = block.Port(PortRole::kRendezvous),
          .metrics = block.Port(PortRole::kMetrics),
          .spare = block.Port(PortRole::kSpare)};
}

// Builds a plan step by step; the status it edits is written once at the end if it changed.
class Planner {
 public:
  Planner(const Observed& observed, const PlannerConfig& config)
      : observed_(observed),
        config_(config),
        job_(observed.job),
        // Status times have second precision; planning at it keeps re-plans byte-identical.
        now_(std::chrono::floor<seconds>(observed.now)),
        next_(job_.status) {
    for (const json& pod : observed.pods) {
      if (IsControlledBy(pod, job_)) {
        pods_.push_back(ViewPod(pod));
      }
    }
    // The kubelet would only restart a sidecar that exited non-zero, and a restarted one cannot
    // rejoin its attempt (a monitor failure names the rank that is gone), so it fails the Pod.
    // Not once some rank's trainers are done: the gang is ending, that rank's sidecar is stopped
    // and the others' monitors lose a peer.
    const bool ending = std::any_of(pods_.begin(), pods_.end(), [this](const PodView& pod) {
      return pod.attempt == next_.restarts && pod.trainers_done;
    });
    for (PodView& pod : pods_) {
      if (!ending && pod.failure.empty()) {
        pod.failure = pod.sidecar_failure;
      }
    }
  }

  Plan Run() {
    if (job_.metadata.deletion_timestamp.has_value()) {
      return std::move(plan_);  // garbage collection removes the children
    }
    next_.observed_generation = job_.metadata.generation;
    if (const api::FieldErrors errors = api::Validate(job_, config_.validation); !errors.empty()) {
      Condition(kFailed, true, "InvalidSpec", api::JoinErrors(errors), "Warning");
      return Finish();
    }
    if (const api::Condition* failed = next_.FindCondition(kFailed);
        failed != nullptr && failed->reason == "InvalidSpec") {
      RemoveCondition(next_, kFailed);  // the spec was fixed
    }
    if (next_.IsTrue(kSucceeded) || next_.IsTrue(kFailed)) {
      FinishedJob();
      return Finish();
    }
    if (job_.spec.run_policy.suspend) {
      SuspendedJob();
      return Finish();
    }
    if (next_.IsTrue(kSuspended)) {
      Condition(kSuspended, false, "Resumed", "the job was resumed", "Normal");
    }
    if (!next_.ports.has_value()) {
      AssignPorts();
      return Finish();
    }
    ActiveJob();
    return Finish();
  }

 private:
  // Sets a condition and records an Event when its status changes to what it announces.
  void Condition(std::string_view type, bool value, std::string_view reason, const std::string& message,
                 std::string_view event_type) {
    const bool changed = SetCondition(next_, type, value, reason, message, now_,
                                      job_.metadata.generation);
    if (changed && (value || type == kSuspended)) {
      // Restarts and failures are announced under their condition's name (what a user filters
      // `kubectl get events` by); the specific reason leads the message.
      if (type == kRestarting || type == kFailed) {
        Event(event_type, type, std::string(reason) + ": " + message);
      } else {
        Event(event_type, reason, message);
      }
    }
  }
  void Event(std::string_view type, std::string_view reason, const std::string& message) {
    plan_.actions.push_back(RecordEvent{std::string(type), std::string(reason), message});
  }
  void Requeue(seconds after) {
    after = std::max(after, seconds(1));
    if (!plan_.requeue_after || after < *plan_.requeue_after) {
      plan_.requeue_after = after;
    }
  }
  void DeletePod(const PodView& pod) {
    if (!pod.deleting) {
      plan_.actions.push_back(DeleteObject{"Pod", pod.name, pod.uid});
    }
  }
  std::vector<const PodView*> Current() const {
    std::vector<const PodView*> out;
    for (const PodView& pod : pods_) {
      if (pod.attempt == next_.restarts && pod.rank >= 0 && pod.rank < job_.spec.replicas) {
        out.push_back(&pod);
      }
    }
    return out;
  }
  void CountReplicas() {
    api::ReplicaCounts counts;
    for (const PodView* pod : Current()) {
      counts.active += pod->Finished() ? 0 : 1;
      counts.ready += pod->ready ? 1 : 0;
      counts.succeeded += pod->phase == "Succeeded" ? 1 : 0;
      counts.failed += HasFailed(*pod) ? 1 : 0;
    }
    next_.replicas = counts;
  }

  void FinishedJob() {
    bool pods_hold_ports = false;
    for (const PodView& pod : pods_) {
      if (!pod.Finished()) {
        DeletePod(pod);
        pods_hold_ports = true;
      }
    }
    CountReplicas();
    if (!pods_hold_ports && next_.ports.has_value() && !next_.ports_released) {
      next_.ports_released = true;
      plan_.release_ports = true;
    }
    const auto& ttl = job_.spec.run_policy.ttl_seconds_after_finished;
    if (ttl.has_value() && next_.completion_time.has_value()) {
      const api::Time expiry = *next_.completion_time + seconds(*ttl);
      if (now_ >= expiry) {
        plan_.actions.push_back(DeleteJob{});
      } else {
        Requeue(std::chrono::duration_cast<seconds>(expiry - now_));
      }
    }
  }

  void SuspendedJob() {
    for (const PodView& pod : pods_) {
      DeletePod(pod);
    }
    Condition(kSuspended, true, "Suspended", "the job is suspended (spec.runPolicy.suspend)", "Normal");
    ReleaseSuspendedPorts();
    if (next_.IsTrue(kRunning)) {
      SetCondition(next_, kRunning, false, "Suspended", "the job is suspended", now_,
                   job_.metadata.generation);
    }
    // The deadline counts from the run's start; a resumed job starts a new run, as batch Jobs do.
    next_.start_time.reset();
    CountReplicas();
  }

  // A suspended job gives its block back once none of its Pods can still be listening on it:
  // Kueue preempts by suspending, and a block held per suspended job would drain the range.
  // Resuming assigns a block again; the Pods are recreated, so their env is new. The Service
  // carries the old block's ports, so it goes too and is recreated with the new ones.
  void ReleaseSuspendedPorts() {
    const bool pods_hold_ports =
        std::any_of(pods_.begin(), pods_.end(), [](const PodView& pod) { return !pod.Finished(); });
    if (next_.ports.has_value() && !pods_hold_ports) {
      const std::string message = "the suspended job gave back ports " + DescribePorts(*next_.ports);
      Event("Normal", "PortsReleased", message);
      SetCondition(next_, kCreated, false, "Suspended", message + "; resuming assigns a block again",
                   now_, job_.metadata.generation);
      next_.ports.reset();
      next_.ports_released = false;
      plan_.release_ports = true;
    }
    // Checked on every pass, not only at the release, so a delete that failed is retried.
    if (!next_.ports.has_value() && observed_.service.has_value()) {
      const json& meta = observed_.service->value("metadata", json::object());
      plan_.actions.push_back(DeleteObject{"Service", meta.value("name", ""), meta.value("uid", "")});
    }
  }

  void AssignPorts() {
    const ports::PortLedger& ledger = *observed_.ledger;
    std::optional<ports::PortBlock> block = ledger.Find(job_.metadata.uid);
    if (!block) {
      block = ledger.Peek();
    }
    if (!block) {
      const api::Condition* before = job_.status.FindCondition(kCreated);
      const bool announced = before != nullptr && before->reason == "PortsExhausted";
      const std::string message =
          "no free block of " + std::to_string(contract::kPortsPerJob) + " ports in " +
          ledger.range().ToString() + ": all " + std::to_string(ledger.capacity()) +
          " blocks are held by live jobs; retrying when one is released";
      SetCondition(next_, kCreated, false, "PortsExhausted", message, now_, job_.metadata.generation);
      if (!announced) {
        Event("Warning", "PortsExhausted", message);
      }
      Requeue(config_.exhausted_retry);
      return;
    }
    next_.ports = ToJobPorts(*block);
    next_.master_addr = MasterAddr(job_, config_);
    plan_.reserve_ports = *block;
    SetCondition(next_, kCreated, false, "PortsAssigned", "ports " + DescribePorts(*next_.ports),
                 now_, job_.metadata.generation);
    Event("Normal", "PortsAssigned", "ports " + DescribePorts(*next_.ports));
  }

  void EnsureServiceAndSecret() {
    if (!observed_.secret.has_value()) {
      plan_.actions.push_back(CreateObject{BuildSecret(job_, observed_.fresh_token)});
    }
    if (!observed_.service.has_value()) {
      plan_.actions.push_back(CreateObject{BuildService(job_, *next_.ports)});
    }
  }

  void ActiveJob() {
    EnsureServiceAndSecret();
    // Pods from earlier attempts, for ranks the job no longer has, or without our labels go.
    std::map<std::string, const PodView*> by_name;
    for (const PodView& pod : pods_) {
      by_name[pod.name] = &pod;
      if (pod.attempt != next_.restarts || pod.rank < 0 || pod.rank >= job_.spec.replicas ||
          pod.name != PodName(job_, pod.rank)) {
        DeletePod(pod);
      }
    }
    std::vector<const PodView*> failed;
    for (const PodView* pod : Current()) {
      if (HasFailed(*pod)) {
        failed.push_back(pod);
      }
    }
    if (!failed.empty()) {
      GangRestartOrFail(failed);
      CountReplicas();
      return;
    }
    if (DeadlinePassed()) {
      return;
    }
    CreateMissingPods(by_name);
    CountReplicas();
    UpdateProgress();
  }

  void CreateMissingPods(const std::map<std::string, const PodView*>& by_name) {
    std::int64_t created = 0;
    bool waiting_for_old = false;
    for (std::int64_t rank = 0; rank < job_.spec.replicas; ++rank) {
      const std::string name = PodName(job_, rank);
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        plan_.actions.push_back(CreateObject{BuildPod(job_, rank, next_.restarts, *next_.ports, config_)});
        ++created;
      } else if (it->second->attempt != next_.restarts) {
        waiting_for_old = true;  // the name frees up once the old Pod is gone
      }
    }
    if (created > 0) {
      if (!next_.start_time) {
        next_.start_time = now_;
      }
      Event("Normal", "PodsCreated",
            "created " + std::to_string(created) + " of " + std::to_string(job_.spec.replicas) +
                " pods (attempt " + std::to_string(next_.restarts) + ")");
    }
    // Every rank now has a Pod of this attempt (existing or just created).
    if (!waiting_for_old && !next_.IsTrue(kCreated)) {
      SetCondition(next_, kCreated, true, "PodsCreated",
                   "service, secret and " + std::to_string(job_.spec.replicas) + " pods created",
                   now_, job_.metadata.generation);
    }
  }

  void GangRestartOrFail(const std::vector<const PodView*>& failed) {
    const std::string what = DescribeFailures(failed);
    const bool preflight = std::any_of(failed.begin(), failed.end(), [](const PodView* pod) {
      return pod->failure.starts_with("preflight failed");
    });
    if (preflight) {
      Condition(kPreflightPassed, false, "PreflightFailed", what, "Warning");
      Event("Warning", "PreflightFailed", what);
    }
    const std::int64_t limit = job_.spec.run_policy.backoff_limit;
    if (next_.restarts >= limit) {
      Fail("BackoffLimitExceeded", what + "; " + std::to_string(next_.restarts) + " of " +
                                       std::to_string(limit) + " restarts used");
      return;
    }
    next_.restarts += 1;
    for (const PodView& pod : pods_) {
      DeletePod(pod);
    }
    Condition(kRestarting, true, "PodFailed",
              what + "; restarting all " + std::to_string(job_.spec.replicas) + " pods (restart " +
                  std::to_string(next_.restarts) + " of " + std::to_string(limit) + ")",
              "Warning");
    if (next_.IsTrue(kRunning)) {
      SetCondition(next_, kRunning, false, "Restarting", "the gang is restarting", now_,
                   job_.metadata.generation);
    }
    if (!preflight && next_.FindCondition(kPreflightPassed) != nullptr) {
      SetCondition(next_, kPreflightPassed, false, "Restarting",
                   "the new attempt has not passed its preflight yet", now_,
                   job_.metadata.generation);
    }
  }

  void Fail(std::string_view reason, const std::string& message) {
    for (const PodView& pod : pods_) {
      if (!pod.Finished()) {
        DeletePod(pod);
      }
    }
    Condition(kFailed, true, reason, message, "Warning");
    if (next_.IsTrue(kRunning)) {
      SetCondition(next_, kRunning, false, reason, "the job failed", now_,
                   job_.metadata.generation);
    }
    next_.completion_time = now_;
  }

  bool DeadlinePassed() {
    const auto& deadline = job_.spec.run_policy.active_deadline_seconds;
    if (!deadline || !next_.start_time) {
      return false;
    }
    const api::Time expiry = *next_.start_time + seconds(*deadline);
    if (now_ < expiry) {
      Requeue(std::chrono::duration_cast<seconds>(expiry - now_));
      return false;
    }
    Fail("DeadlineExceeded", "the job ran longer than spec.runPolicy.activeDeadlineSeconds (" +
                                 std::to_string(*deadline) + " s)");
    CountReplicas();
    return true;
  }

  void UpdateProgress() {
    const std::vector<const PodView*> current = Current();
    const auto replicas = static_cast<std::size_t>(job_.spec.replicas);
    const bool complete_gang = current.size() == replicas;
    const auto all = [&current](auto predicate) {
      return std::all_of(current.begin(), current.end(), predicate);
    };
    // With the preflight disabled the preflight container proves only the rendezvous, so no
    // PreflightPassed is claimed.
    if (job_.spec.communication.preflight.enabled && complete_gang &&
        all([](const PodView* pod) { return pod->preflight_passed || pod->phase == "Succeeded"; })) {
      if (!next_.IsTrue(kPreflightPassed)) {
        Condition(kPreflightPassed, true, "PreflightPassed", "every rank's preflight passed", "Normal");
      }
    }
    if (complete_gang && all([](const PodView* pod) { return pod->phase == "Succeeded"; })) {
      SetCondition(next_, kRunning, false, "AllPodsSucceeded", "every pod finished", now_,
                   job_.metadata.generation);
      if (next_.IsTrue(kRestarting)) {
        SetCondition(next_, kRestarting, false, "AllPodsSucceeded", "every pod finished",
                     now_, job_.metadata.generation);
      }
      Condition(kSucceeded, true, "AllPodsSucceeded",
                "all " + std::to_string(job_.spec.replicas) + " pods succeeded", "Normal");
      next_.completion_time = now_;
      return;
    }
    if (complete_gang && all([](const PodView* pod) { return pod->phase == "Running"; })) {
      Condition(kRunning, true, "AllPodsRunning",
                "all " + std::to_string(job_.spec.replicas) + " pods are running", "Normal");
      if (next_.IsTrue(kRestarting)) {
        SetCondition(next_, kRestarting, false, "AllPodsRunning", "the restarted gang is running",
                     now_, job_.metadata.generation);
      }
    }
  }

  Plan Finish() {
    if (observed_.summary.has_value()) {
      next_.communication = observed_.summary;
    }
    next_.state = DeriveState(next_);
    if (next_ != job_.status) {
      // The status write goes first so ports are recorded before anything uses them.
      plan_.actions.insert(plan_.actions.begin(), UpdateStatus{api::StatusToJson(next_)});
    }
    return std::move(plan_);
  }

  const Observed& observed_;
  const PlannerConfig& config_;
  const api::TrainingJob& job_;
  const api::Time now_;
  api::TrainingJobStatus next_;
  std::vector<PodView> pods_;
  Plan plan_;
};

}  // namespace

Plan MakePlan(const Observed& observed, const PlannerConfig& config) {
  return Planner(observed, config).Run();
}

}  // namespace ringleader::planner
