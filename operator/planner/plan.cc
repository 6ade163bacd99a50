// MakePlan: validate, then walk the job's life (ports, children, the failure policy and gang
// restarts with their backoff, suspend, deadline, completion, TTL) deciding actions from what is
// observed now, never from what happened before.
#include "operator/planner/plan.h"

#include <algorithm>
#include <map>

#include "operator/planner/children_builder.h"
#include "operator/planner/pod_builder.h"
#include "operator/planner/scheduling_state.h"
#include "operator/planner/status_builder.h"
#include "sidecar/contract/contract.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// What the planner needs to know about one owned Pod.
struct PodView {
  const json* source = nullptr;  // the observed Pod
  std::string name;
  std::string uid;
  std::int64_t rank = -1;     // -1: missing or malformed label
  std::int64_t attempt = -1;  // -1: missing or malformed label
  std::string phase;
  bool deleting = false;
  bool ready = false;
  bool preflight_passed = false;  // the preflight init container exited 0
  bool trainers_done = false;     // Succeeded, or every app container exited 0
  bool trainers_exited = false;   // finished, or every app container terminated, whatever its code
  std::string failure;  // why it failed, naming the container, when it did
  std::string sidecar_failure;  // why its native sidecar exited non-zero, when it did
  // Containers (app, then init) that terminated non-zero, for the failure policy's onExitCodes.
  struct Exit {
    std::string container;
    std::int64_t code = 0;
  };
  std::vector<Exit> exits;
  // When the first of those exits happened (terminated.finishedAt), when the kubelet said.
  std::optional<api::Time> first_exit_time;
  // status.conditions as (type, status), for the failure policy's onPodConditions.
  std::vector<std::pair<std::string, std::string>> conditions;
  // DisruptionTarget=True (preempted, evicted or drained by Kubernetes) or TerminationTarget=True
  // (stopped by Kueue); the condition's type, reason, message and lastTransitionTime.
  bool disrupted = false;
  std::string disruption_condition;
  std::string disruption_reason;
  std::string disruption_message;
  std::optional<api::Time> disruption_time;
  // Kueue's webhook took it: label kueue.x-k8s.io/managed=true or its admission scheduling gate.
  bool kueue_managed = false;

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

// The container's terminated state, or its last one (a restarted native sidecar); nullptr if none.
const json* TerminatedState(const json& container_status) {
  const json* state = Member(container_status, "state");
  const json* terminated = state != nullptr ? Member(*state, "terminated") : nullptr;
  if (terminated == nullptr || !terminated->is_object()) {
    const json* last = Member(container_status, "lastState");
    terminated = last != nullptr ? Member(*last, "terminated") : nullptr;
  }
  return terminated != nullptr && terminated->is_object() ? terminated : nullptr;
}

std::int64_t ExitCode(const json& terminated) {
  const json* code = Member(terminated, "exitCode");
  return code != nullptr && code->is_number_integer() ? code->get<std::int64_t>() : 0;
}

std::string Shortened(std::string text) {
  if (text.size() > 200) {
    text = text.substr(0, 200) + "...";
  }
  return text;
}

std::string Terminated(const json& container_status) {
  const json* terminated = TerminatedState(container_status);
  if (terminated == nullptr) {
    return "";
  }
  const std::int64_t exit_code = ExitCode(*terminated);
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
    text += ": " + Shortened(std::move(message));
  }
  return text;
}

void AddExit(const json& container_status, PodView* view) {
  if (const json* terminated = TerminatedState(container_status)) {
    if (const std::int64_t code = ExitCode(*terminated); code != 0) {
      view->exits.push_back({StringMember(container_status, "name"), code});
      if (const std::optional<api::Time> at = api::ParseTime(StringMember(*terminated, "finishedAt"));
          at.has_value() && (!view->first_exit_time.has_value() || *at < *view->first_exit_time)) {
        view->first_exit_time = at;
      }
    }
  }
}

bool ExitedZero(const json& container_status) {
  const json* state = Member(container_status, "state");
  const json* terminated = state != nullptr ? Member(*state, "terminated") : nullptr;
  const json* code = terminated != nullptr ? Member(*terminated, "exitCode") : nullptr;
  return code != nullptr && code->is_number_integer() && code->get<std::int64_t>() == 0;
}

bool IsTerminated(const json& container_status) {
  const json* state = Member(container_status, "state");
  return state != nullptr && Member(*state, "terminated") != nullptr;
}

// When the last of the containers terminated; nullopt if one has not, or did not say when.
std::optional<api::Time> LastFinish(const json& containers) {
  std::optional<api::Time> last;
  for (const json& container : containers) {
    const json* state = Member(container, "state");
    const json* terminated = state != nullptr ? Member(*state, "terminated") : nullptr;
    const std::optional<api::Time> at =
        terminated != nullptr ? api::ParseTime(StringMember(*terminated, "finishedAt")) : std::nullopt;
    if (!at.has_value()) {
      return std::nullopt;
    }
    last = last.has_value() ? std::max(*last, *at) : *at;
  }
  return last;
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
  if (const json* labels = Member(meta, "labels")) {
    view.kueue_managed = StringMember(*labels, api::kKueueManagedLabel) == "true";
  }
  if (const json* spec = Member(pod, "spec")) {
    for (const json& gate : ArrayMember(*spec, "schedulingGates")) {
      view.kueue_managed = view.kueue_managed || StringMember(gate, "name") == api::kKueueAdmissionGate;
    }
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
    const std::string& type = StringMember(condition, "type");
    const std::string& value = StringMember(condition, "status");
    view.conditions.emplace_back(type, value);
    if (type == "Ready" && value == "True") {
      view.ready = true;
    }
    if ((type == kDisruptionTarget || type == kTerminationTarget) && value == "True" && !view.disrupted) {
      view.disrupted = true;
      view.disruption_condition = type;
      view.disruption_reason = StringMember(condition, "reason");
      view.disruption_message = Shortened(LastLine(StringMember(condition, "message")));
      view.disruption_time = api::ParseTime(StringMember(condition, "lastTransitionTime"));
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
  for (const json& container : containers) {
    AddExit(container, &view);
  }
  for (const json& init : ArrayMember(status, "initContainerStatuses")) {
    AddExit(init, &view);
  }
  view.trainers_done = view.phase == "Succeeded" ||
                       (!containers.empty() && std::all_of(containers.begin(), containers.end(), ExitedZero));
  view.trainers_exited = view.Finished() ||
                         (!containers.empty() && std::all_of(containers.begin(), containers.end(), IsTerminated));
  // Trainers that exit 0 on SIGTERM once their Pod is marked for termination were stopped, not
  // done: only trainers that finished before the condition's time succeeded.
  if (view.disrupted && view.trainers_done && view.disruption_time.has_value()) {
    const std::optional<api::Time> finished = LastFinish(containers);
    if (!finished.has_value() || *finished >= *view.disruption_time) {
      view.trainers_done = false;
    }
  }
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
  // A disrupted Pod fails or is deleted; either way the disruption is the cause, and what its
  // containers did when they were stopped is its consequence.
  // A Pod whose trainers were done when it was drained failed nothing.
  if (view.disrupted && !view.trainers_done && (view.Finished() || view.deleting)) {
    view.failure = "disrupted (" + view.disruption_condition;
    if (!view.disruption_reason.empty()) {
      view.failure += ", " + view.disruption_reason;
    }
    view.failure += ")";
    if (!view.disruption_message.empty()) {
      view.failure += ": " + view.disruption_message;
    }
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

// The order failures happened in: the first container exit first (a rank that failed by itself
// usually exits before the ranks that lose it as a peer), Pods with no known exit time after
// those with one, then by rank, so the order never depends on how the Pods were listed.
bool EarlierFailure(const PodView* a, const PodView* b) {
  if (a->first_exit_time.has_value() != b->first_exit_time.has_value()) {
    return a->first_exit_time.has_value();
  }
  if (a->first_exit_time.has_value() && *a->first_exit_time != *b->first_exit_time) {
    return *a->first_exit_time < *b->first_exit_time;
  }
  return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
}

std::string DescribeFailure(const PodView& pod) {
  return "rank " + std::to_string(pod.rank) + " (pod " + pod.name + ") " + pod.failure;
}

std::string DescribeFailures(const std::vector<const PodView*>& failed) {
  std::string text;
  for (const PodView* pod : failed) {
    if (!text.empty()) {
      text += "; ";
    }
    text += DescribeFailure(*pod);
  }
  return text;
}

std::string JoinCodes(const std::vector<std::int64_t>& values) {
  std::string text;
  for (const std::int64_t value : values) {
    text += (text.empty() ? "" : ", ") + std::to_string(value);
  }
  return "[" + text + "]";
}

// "spec.runPolicy.failurePolicy.rules[0] (FailJob on exit codes In [3, 4] of container trainer)"
std::string DescribeRule(std::size_t index, const api::FailurePolicyRule& rule) {
  std::string text = "spec.runPolicy.failurePolicy.rules[" + std::to_string(index) + "] (" +
                     std::string(api::FailureActionName(rule.action)) + " on ";
  if (rule.on_exit_codes.has_value()) {
    const api::ExitCodeRequirement& on = *rule.on_exit_codes;
    text += "exit codes " + std::string(api::ExitCodeOperatorName(on.op)) + " " + JoinCodes(on.values);
    if (on.container_name.has_value()) {
      text += " of container " + *on.container_name;
    }
  } else if (rule.on_pod_conditions.has_value()) {
    text += "pod condition";
    bool first = true;
    for (const api::PodConditionPattern& pattern : *rule.on_pod_conditions) {
      text += (first ? " " : " or ") + pattern.type + "=" + pattern.status;
      first = false;
    }
  }
  return text + ")";
}

bool ExitCodeMatches(const api::ExitCodeRequirement& on, std::int64_t code) {
  const bool listed = std::find(on.values.begin(), on.values.end(), code) != on.values.end();
  return on.op == api::ExitCodeOperator::kIn ? listed : !listed;
}

// What the failure policy makes of one failed Pod.
struct Verdict {
  const PodView* pod = nullptr;
  api::FailureAction action = api::FailureAction::kRestartJob;
  std::string rule;     // the rule that matched, described; empty for a default
  std::string matched;  // what the rule matched, e.g. "container trainer exited with code 3"
  bool disruption = false;  // Ignored by default because of a disruption
};

// The first rule that matches the Pod, else the defaults: a disrupted Pod, or another Pod of an
// attempt with one (its peers fail when they lose it), is Ignored; anything else restarts and counts.
Verdict Judge(const PodView& pod, const api::FailurePolicy& policy,
              const std::optional<api::Disruption>& attempt_disruption) {
  if (attempt_disruption.has_value() && !pod.disrupted) {
    return {.pod = &pod,
            .action = api::FailureAction::kIgnore,
            .rule = "",
            .matched = "pod " + attempt_disruption->pod + " of the same attempt was disrupted",
            .disruption = true};
  }
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    const api::FailurePolicyRule& rule = policy.rules[i];
    if (rule.on_exit_codes.has_value()) {
      const api::ExitCodeRequirement& on = *rule.on_exit_codes;
      for (const PodView::Exit& exit : pod.exits) {
        if ((!on.container_name.has_value() || *on.container_name == exit.container) &&
            ExitCodeMatches(on, exit.code)) {
          return {.pod = &pod,
                  .action = rule.action,
                  .rule = DescribeRule(i, rule),
                  .matched = "container " + exit.container + " exited with code " + std::to_string(exit.code),
                  .disruption = false};
        }
      }
    }
    if (rule.on_pod_conditions.has_value()) {
      for (const api::PodConditionPattern& pattern : *rule.on_pod_conditions) {
        for (const auto& [type, status] : pod.conditions) {
          if (type == pattern.type && status == pattern.status) {
            return {.pod = &pod,
                    .action = rule.action,
                    .rule = DescribeRule(i, rule),
                    .matched = "pod condition " + type + "=" + status,
                    .disruption = false};
          }
        }
      }
    }
  }
  if (pod.disrupted) {
    return {.pod = &pod,
            .action = api::FailureAction::kIgnore,
            .rule = "",
            .matched = "pod " + pod.name + " was disrupted (" + pod.disruption_condition + "=True)",
            .disruption = true};
  }
  return {.pod = &pod, .action = api::FailureAction::kRestartJob, .rule = "", .matched = "", .disruption = false};
}

std::string Seconds(seconds value) { return std::to_string(value.count()) + " s"; }

// How long a gang restart may wait for the other ranks' failures (AwaitingEvidence).
constexpr seconds kFailureSettle{5};

// How many past attempts keep their failed rank's Pod for `kubectl logs`. A constant, not a spec
// field: the Pods hold no ports or GPUs, only an API object and the node's copy of the logs, and
// a log pipeline is the place for a longer history; three covers "what failed, and did the retries
// fail the same way" within the default backoffLimit.
constexpr std::int64_t kEvidenceAttempts = 3;

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
        pods_.back().source = &pod;
      }
    }
    // The kubelet would only restart a sidecar that exited non-zero, and a restarted one cannot
    // rejoin its attempt (a monitor failure names the rank that is gone), so it fails the Pod.
    // Not once some rank's trainers are done: the gang is ending, that rank's sidecar is stopped
    // and the others' monitors lose a peer.
    const bool ending = std::any_of(pods_.begin(), pods_.end(), [this](const PodView& pod) {
      return pod.attempt == next_.restarts && pod.trainers_done;
    });
    // A past attempt's Pod is judged by what it did in its own attempt, whatever the current one
    // does, so the Pod kept as that attempt's evidence stays the same one (FindEvidence).
    for (PodView& pod : pods_) {
      if ((!ending || pod.attempt != next_.restarts) && pod.failure.empty()) {
        pod.failure = pod.sidecar_failure;
      }
    }
    FindEvidence();
  }

  Plan Run() {
    if (job_.metadata.deletion_timestamp.has_value()) {
      return std::move(plan_);  // garbage collection removes the children
    }
    next_.observed_generation = job_.metadata.generation;
    next_.selector = PodLabelSelector(job_);
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
    // Built in place: moving a temporary variant trips GCC 12's -Wmaybe-uninitialized.
    plan_.actions.emplace_back(std::in_place_type<RecordEvent>,
                               RecordEvent{std::string(type), std::string(reason), message});
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
  // The Pods kept for `kubectl logs` from `attempt`: of its Pods that failed and are not being
  // deleted, the earliest failure, with every other that exited in the same second (the API's
  // time resolution: which of those brought the others down cannot be told, and the cause is the
  // log a user needs), each only if its trainers have exited. One whose trainers still run (only
  // its sidecar failed) would keep holding GPUs and ports, so it is not kept. Decided from what
  // is observed on every pass: once the gang restart has deleted the attempt's other Pods, the
  // kept ones are the only candidates left.
  std::vector<const PodView*> EvidencePods(std::int64_t attempt) const {
    std::vector<const PodView*> failed;
    for (const PodView& pod : pods_) {
      if (pod.attempt == attempt && pod.rank >= 0 && pod.rank < job_.spec.replicas && !pod.deleting &&
          HasFailed(pod) && pod.name == PodName(job_, pod.rank, attempt)) {
        failed.push_back(&pod);
      }
    }
    if (failed.empty()) {
      return {};
    }
    const PodView* earliest = *std::min_element(failed.begin(), failed.end(), EarlierFailure);
    std::vector<const PodView*> kept;
    for (const PodView* pod : failed) {
      const bool same_time = pod == earliest || (pod->first_exit_time.has_value() &&
                                                 pod->first_exit_time == earliest->first_exit_time);
      if (same_time && pod->trainers_exited) {
        kept.push_back(pod);
      }
    }
    std::sort(kept.begin(), kept.end(), [](const PodView* a, const PodView* b) { return a->rank < b->rank; });
    return kept;
  }
  // The evidence Pods of the last kEvidenceAttempts attempts before the current one.
  void FindEvidence() {
    evidence_.clear();
    for (std::int64_t attempt = std::max<std::int64_t>(next_.restarts - kEvidenceAttempts, 0);
         attempt < next_.restarts; ++attempt) {
      for (const PodView* pod : EvidencePods(attempt)) {
        evidence_.push_back(pod);
      }
    }
  }
  bool IsEvidence(const PodView& pod) const {
    return std::find(evidence_.begin(), evidence_.end(), &pod) != evidence_.end();
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
    if (next_.IsTrue(kStalled)) {
      SetCondition(next_, kStalled, false, "JobFinished", "the job finished", now_, job_.metadata.generation);
    }
    bool pods_hold_ports = false;
    // A succeeded job's Pod whose trainers are done (rank 0's under RankZero) is left to finish
    // by itself, its logs kept: only its sidecar is left, and the kubelet stops that.
    const bool succeeded = next_.IsTrue(kSucceeded);
    for (const PodView& pod : pods_) {
      // A kept Pod's trainers have exited; whatever still runs there (its sidecar) is being
      // stopped by the kubelet, and waiting on it could wait forever on a node that is gone.
      if (!pod.Finished() && !IsEvidence(pod)) {
        if (!(succeeded && pod.trainers_done && pod.attempt == next_.restarts)) {
          DeletePod(pod);
        }
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
    next_.next_restart_time.reset();  // resuming starts the Pods at once
    CountReplicas();
  }

  // A suspended job gives its block back once none of its Pods can still be listening on it: a
  // block held per suspended job (a queue system may suspend many) would drain the range.
  // Resuming assigns a block again; the Pods are recreated, so their env is new. The Service and
  // the NetworkPolicy carry the old block's ports, so they go too and are recreated with the new
  // ones.
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
    if (!next_.ports.has_value()) {
      for (const auto& [kind, object] : {std::pair{"Service", &observed_.service},
                                         std::pair{"NetworkPolicy", &observed_.network_policy}}) {
        if (object->has_value()) {
          const json& meta = (*object)->value("metadata", json::object());
          plan_.actions.push_back(DeleteObject{kind, meta.value("name", ""), meta.value("uid", "")});
        }
      }
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

  void EnsureServiceSecretAndPolicy() {
    if (!observed_.secret.has_value()) {
      plan_.actions.push_back(CreateObject{BuildSecret(job_, observed_.fresh_token)});
    }
    if (!observed_.service.has_value()) {
      plan_.actions.push_back(CreateObject{BuildService(job_, *next_.ports)});
    }
    // Before any Pod: a store is never up before the policy that shields it.
    if (config_.network_policy && !observed_.network_policy.has_value()) {
      plan_.actions.push_back(CreateObject{BuildNetworkPolicy(job_, *next_.ports)});
    }
  }

  void ActiveJob() {
    EnsureServiceSecretAndPolicy();
    // Pods from earlier attempts or without our labels go; so do ranks the job no longer has.
    std::map<std::string, const PodView*> by_name;
    std::vector<const PodView*> beyond;
    for (const PodView& pod : pods_) {
      by_name[pod.name] = &pod;
      const bool ours = pod.attempt == next_.restarts && pod.rank >= 0 &&
                        pod.name == PodName(job_, pod.rank, pod.attempt);
      if (ours && pod.rank >= job_.spec.replicas) {
        beyond.push_back(&pod);
      } else if (!ours && !IsEvidence(pod)) {
        DeletePod(pod);
      }
    }
    ScaleDown(std::move(beyond));
    RememberDisruption();
    // Rank 0's success is checked before any failure: under RankZero the other ranks fail for
    // want of their peers once rank 0 is done, and that says nothing about the job.
    if (RankZeroSucceeded()) {
      CountReplicas();
      return;
    }
    std::vector<const PodView*> failed;
    for (const PodView* pod : Current()) {
      if (HasFailed(*pod)) {
        failed.push_back(pod);
      }
    }
    // The messages name the earliest failure first, the one most likely to be the cause.
    std::stable_sort(failed.begin(), failed.end(), EarlierFailure);
    if (ElasticRecovery() && std::none_of(failed.begin(), failed.end(), [](const PodView* pod) {
          return pod->rank == 0;
        })) {
      if (RankZeroLost() || RecoverAlone(failed)) {
        CountReplicas();
        return;  // the job failed, or the gang restarts
      }
      failed.clear();
    }
    if (!failed.empty()) {
      std::vector<Verdict> verdicts;
      for (const PodView* pod : failed) {
        verdicts.push_back(Judge(*pod, job_.spec.run_policy.failure_policy, AttemptDisruption()));
      }
      if (!AwaitingEvidence(verdicts)) {
        GangRestartOrFail(failed, verdicts);
      }
      CountReplicas();
      return;
    }
    if (DeadlinePassed()) {
      return;
    }
    if (UpdateStall()) {
      CountReplicas();
      return;  // onStall: Restart restarted the gang, or failed the job past backoffLimit
    }
    if (BelowMinReplicas()) {
      CountReplicas();
      return;
    }
    if (next_.next_restart_time.has_value() && now_ < *next_.next_restart_time) {
      Requeue(std::chrono::duration_cast<seconds>(*next_.next_restart_time - now_));
      CountReplicas();
      return;
    }
    CreateMissingPods(by_name);
    CountReplicas();
    UpdateScheduled();
    UpdateKueueManaged();
    UpdateProgress();
  }

  // spec.elasticPolicy, except under Kueue: Kueue finishes a plain-Pod group's Workload at its
  // first failed Pod (retriable-in-group false), so a rank recreated alone would run outside the
  // quota; a Kueue-managed elastic job restarts its gang on a failure, as a rigid one does.
  bool ElasticRecovery() const {
    return job_.spec.elastic_policy.has_value() &&
           job_.spec.run_policy.scheduling_policy.provider != api::SchedulingProvider::kKueue;
  }

  // The current attempt's Pods of ranks at or above spec.replicas (an elastic job scaled down)
  // go, highest rank first, all in this plan. They are no rank of the job any more, so whatever
  // their containers do as they stop is never judged a failure.
  void ScaleDown(std::vector<const PodView*> beyond) {
    std::sort(beyond.begin(), beyond.end(), [](const PodView* a, const PodView* b) { return a->rank > b->rank; });
    std::string names;
    for (const PodView* pod : beyond) {
      if (!pod->deleting) {
        DeletePod(*pod);
        names += (names.empty() ? "" : ", ") + pod->name + " (rank " + std::to_string(pod->rank) + ")";
      }
    }
    if (!names.empty() && job_.spec.elastic_policy.has_value()) {
      Event("Normal", "ScalingDown",
            "spec.replicas is " + std::to_string(job_.spec.replicas) + ": deleting " +
                (names.find(',') == std::string::npos ? "pod " : "pods ") + names +
                ", highest rank first; the other ranks go on");
    }
  }

  // An elastic job's failed Pods of ranks other than 0 (rank 0's sidecar serves the store
  // torchrun's rendezvous meets on, so its failure restarts the gang): each is deleted and, once
  // it is gone, recreated alone (CreateMissingPods), while the others go on. A RestartJob verdict
  // counts one of torchrun's restarts in status.elasticRestarts, failing the job once
  // spec.elasticPolicy.maxRestarts is spent; Ignore recreates it uncounted; FailJob fails the job.
  // A Pod already being deleted was dealt with, or is leaving (scaled down, deleted by someone):
  // it is recreated once gone, never counted. True when the job failed.
  bool RecoverAlone(const std::vector<const PodView*>& failed) {
    std::vector<Verdict> verdicts;
    for (const PodView* pod : failed) {
      if (!pod->deleting) {
        verdicts.push_back(Judge(*pod, job_.spec.run_policy.failure_policy, std::nullopt));
      }
    }
    if (verdicts.empty()) {
      return false;
    }
    for (const Verdict& verdict : verdicts) {
      if (verdict.action == api::FailureAction::kFailJob) {
        Fail("FailJobRule", DescribeFailure(*verdict.pod) + "; " + verdict.rule + " matched: " + verdict.matched +
                                "; the job fails without a restart");
        return true;
      }
    }
    // A rank that loses rank 0 fails too, and its kubelet may say so first: the gang restart
    // that rank 0's failure brings must not follow a recreation of that rank.
    if (AwaitingRankZero(verdicts)) {
      return false;
    }
    // Checked before any Pod goes, so the one that would pass the limit is still there to read.
    const std::int64_t limit = job_.spec.elastic_policy->max_restarts;
    std::int64_t would = next_.elastic_restarts;
    for (const Verdict& verdict : verdicts) {
      if (verdict.action != api::FailureAction::kRestartJob) {
        continue;
      }
      if (would >= limit) {
        Fail("MaxRestartsExceeded",
             DescribeFailure(*verdict.pod) + "; torchrun's maxRestarts (" + std::to_string(limit) +
                 ", spec.elasticPolicy.maxRestarts) is spent: recreating it would be restart " +
                 std::to_string(would + 1) + " in attempt " + std::to_string(next_.restarts));
        return true;
      }
      ++would;
    }
    for (const Verdict& verdict : verdicts) {
      const PodView& pod = *verdict.pod;
      const bool counted = verdict.action == api::FailureAction::kRestartJob;
      std::string terms;
      if (counted) {
        next_.elastic_restarts += 1;
        terms = "elastic restart " + std::to_string(next_.elastic_restarts) + " of " + std::to_string(limit);
      } else {
        terms = "not counted against maxRestarts: " +
                (verdict.rule.empty() ? verdict.matched : verdict.rule + " matched " + verdict.matched);
      }
      DeletePod(pod);
      Event("Warning", "PodRecreated",
            DescribeFailure(pod) + "; recreating rank " + std::to_string(pod.rank) +
                " alone once its pod is gone, the other ranks go on (" + terms + ")");
    }
    return false;
  }

  // Holds lone recreations until kFailureSettle after the first of their failures.
  bool AwaitingRankZero(const std::vector<Verdict>& verdicts) { return WithinFailureSettle(verdicts); }

  // True, with a requeue for when it ends, until kFailureSettle after the first container exit
  // among the verdicts' Pods.
  bool WithinFailureSettle(const std::vector<Verdict>& verdicts) {
    std::optional<api::Time> first;
    for (const Verdict& verdict : verdicts) {
      const std::optional<api::Time>& at = verdict.pod->first_exit_time;
      if (at.has_value() && (!first.has_value() || *at < *first)) {
        first = at;
      }
    }
    if (!first.has_value() || now_ >= *first + kFailureSettle) {
      return false;
    }
    Requeue(std::chrono::duration_cast<seconds>(*first + kFailureSettle - now_));
    return true;
  }

  // An elastic job whose rank 0 Pod vanished without a failure seen (a forced delete, a lost
  // node): a new rank 0 would serve an empty store under the other ranks, so the gang restarts,
  // counted unless rank 0 was disrupted. True when it restarted the gang or failed the job.
  bool RankZeroLost() {
    const std::vector<const PodView*> current = Current();
    if (current.empty() ||
        std::any_of(current.begin(), current.end(), [](const PodView* pod) { return pod->rank == 0; })) {
      return false;
    }
    const std::string name = PodName(job_, 0, next_.restarts);
    const std::optional<api::Disruption> disruption = AttemptDisruption();
    const bool counted = !(disruption.has_value() && disruption->pod == name);
    const std::string what = "rank 0 (pod " + name + ") is gone, and with it the store torchrun's rendezvous meets on";
    const std::int64_t limit = job_.spec.run_policy.backoff_limit;
    if (counted && next_.counted_restarts >= limit) {
      Fail("BackoffLimitExceeded", what + "; " + std::to_string(next_.counted_restarts) + " of " +
                                       std::to_string(limit) + " restarts used");
      return true;
    }
    RestartGang(counted ? "PodLost" : "PodDisrupted", what, counted,
                counted ? "" : "pod " + name + " was disrupted", /*preflight=*/false);
    return true;
  }

  // Elastic jobs, once they ran: status.belowMinReplicasSince while fewer than minReplicas of the
  // current Pods run, cleared when enough run again; the job fails after
  // minReplicasTimeoutSeconds of it. Unset while the gang is not Running (starting, restarting).
  // True when the job failed.
  bool BelowMinReplicas() {
    if (!job_.spec.elastic_policy.has_value() || !next_.IsTrue(kRunning)) {
      next_.below_min_replicas_since.reset();
      return false;
    }
    const api::ElasticPolicy& policy = *job_.spec.elastic_policy;
    const std::vector<const PodView*> current = Current();
    const auto running = std::count_if(current.begin(), current.end(), [](const PodView* pod) {
      return pod->phase == "Running" && !pod->deleting && !HasFailed(*pod);
    });
    if (running >= policy.min_replicas) {
      next_.below_min_replicas_since.reset();
      return false;
    }
    if (!next_.below_min_replicas_since.has_value()) {
      next_.below_min_replicas_since = now_;
    }
    const api::Time expiry = *next_.below_min_replicas_since + seconds(policy.min_replicas_timeout_seconds);
    if (now_ < expiry) {
      Requeue(std::chrono::duration_cast<seconds>(expiry - now_));
      return false;
    }
    Fail("BelowMinReplicas",
         std::to_string(running) + (running == 1 ? " pod has" : " pods have") +
             " been running, fewer than spec.elasticPolicy.minReplicas (" + std::to_string(policy.min_replicas) +
             "), since " + api::FormatTime(*next_.below_min_replicas_since) + ", longer than " +
             "spec.elasticPolicy.minReplicasTimeoutSeconds (" +
             std::to_string(policy.min_replicas_timeout_seconds) + " s)");
    return true;
  }

  void CreateMissingPods(const std::map<std::string, const PodView*>& by_name) {
    std::vector<std::int64_t> missing;
    // A deleted Pod of another attempt that is still terminating may still listen on the job's
    // ports and hold its GPUs, so the new attempt waits until each is gone or has finished. A kept
    // Pod's trainers have exited, and it is never deleted, so it never holds the new attempt back.
    bool waiting_for_old = std::any_of(pods_.begin(), pods_.end(), [this](const PodView& pod) {
      return pod.attempt != next_.restarts && !pod.Finished() && !IsEvidence(pod);
    });
    for (std::int64_t rank = 0; rank < job_.spec.replicas && !waiting_for_old; ++rank) {
      auto it = by_name.find(PodName(job_, rank, next_.restarts));
      if (it == by_name.end()) {
        missing.push_back(rank);
      } else if (it->second->attempt != next_.restarts) {
        waiting_for_old = true;  // a mislabelled Pod holds the name; it frees up once that Pod is gone
      }
    }
    if (!missing.empty() && ProviderMissing()) {
      return;
    }
    // The group exists before its first member, so the scheduler never sees a Pod without it.
    if (!missing.empty()) {
      if (std::optional<json> group = BuildPodGroup(job_, next_.restarts)) {
        plan_.actions.push_back(CreateObject{std::move(*group)});
      }
    }
    // The attempt's first Pods meet in one world of spec.replicas Pods; a Pod made later in the
    // same attempt (a scale-up, a rank recreated alone) joins the world that is already there.
    const bool initial = std::none_of(pods_.begin(), pods_.end(), [this](const PodView& pod) {
      return pod.attempt == next_.restarts;
    });
    const PreflightScope scope = initial ? PreflightScope::kJob : PreflightScope::kPod;
    const std::int64_t created = static_cast<std::int64_t>(missing.size());
    for (const std::int64_t rank : missing) {
      plan_.actions.push_back(
          CreateObject{BuildPod(job_, rank, next_.restarts, *next_.ports, config_, scope)});
    }
    if (created > 0) {
      if (!next_.start_time) {
        next_.start_time = now_;
      }
      Event("Normal", "PodsCreated",
            "created " + std::to_string(created) + " of " + std::to_string(job_.spec.replicas) +
                " pods (attempt " + std::to_string(next_.restarts) + ")");
      AnnounceOwnProfilerPlugins();
    }
    if (!waiting_for_old) {
      next_.next_restart_time.reset();  // the backoff is over: every rank has its Pod
    }
    // Every rank now has a Pod of this attempt (existing or just created).
    if (!waiting_for_old && !next_.IsTrue(kCreated)) {
      SetCondition(next_, kCreated, true, "PodsCreated",
                   "service, secret and " + std::to_string(job_.spec.replicas) + " pods created",
                   now_, job_.metadata.generation);
    }
  }

  // The job asks for a gang-scheduling provider the cluster does not serve: no Pods (they would
  // wait for a scheduler or a group that never comes), Scheduled=False naming the CRD, one Event,
  // and a look again later. Once discovery finds it, the condition goes and the Pods are created.
  bool ProviderMissing() {
    const std::optional<std::string_view> crd = MissingProviderCrd(job_, observed_.providers);
    const api::Condition* before = next_.FindCondition(kScheduled);
    const bool announced = before != nullptr && before->status == "False" && before->reason == kSchedulerNotInstalled;
    if (!crd.has_value()) {
      if (announced) {
        RemoveCondition(next_, kScheduled);  // the Pods' placement decides it from here
      }
      return false;
    }
    const api::SchedulingProvider which = job_.spec.run_policy.scheduling_policy.provider;
    const std::string provider(api::SchedulingProviderName(which));
    // Kubernetes' own gang scheduling is in every kube-apiserver, off by default.
    const std::string remedy =
        which == api::SchedulingProvider::kKubernetes
            ? "turn on the feature gate GenericWorkload (kube-apiserver, kube-scheduler) and "
              "--runtime-config=scheduling.k8s.io/v1beta1=true"
            : "install " + provider;
    const std::string message = "spec.runPolicy.schedulingPolicy.provider is " + provider +
                                ", but the cluster does not serve " + std::string(*crd) + "; " + remedy +
                                " (docs/operations.md, Gang scheduling); no pods are created until it is there";
    SetCondition(next_, kScheduled, false, kSchedulerNotInstalled, message, now_, job_.metadata.generation);
    if (!announced) {
      Event("Warning", kSchedulerNotInstalled, message);
    }
    Requeue(config_.missing_provider_retry);
    return true;
  }

  // Kueue's webhook labels and gates each Pod it takes; a current Pod with neither means Kueue
  // never saw it (its namespace is not selected, or the pod integration is off), so the gang is
  // neither queued nor placed whole. Said once per change, on the first such Pod.
  void UpdateKueueManaged() {
    if (job_.spec.run_policy.scheduling_policy.provider != api::SchedulingProvider::kKueue) {
      return;
    }
    const std::vector<const PodView*> current = Current();
    if (current.empty()) {
      return;
    }
    const auto unmanaged =
        std::find_if(current.begin(), current.end(), [](const PodView* pod) { return !pod->kueue_managed; });
    if (unmanaged == current.end()) {
      SetCondition(next_, kKueueManaged, true, "ManagedByKueue",
                   "Kueue's webhook took every pod of attempt " + std::to_string(next_.restarts), now_,
                   job_.metadata.generation);
      return;
    }
    const std::string message =
        "pod " + (*unmanaged)->name + " has neither the label " + std::string(api::kKueueManagedLabel) +
        " nor the scheduling gate " + std::string(api::kKueueAdmissionGate) +
        ": Kueue is not managing this job's pods, so the gang is neither queued nor placed whole. Likely: "
        "namespace \"" + job_.metadata.namespace_ +
        "\" is not selected by Kueue's managedJobsNamespaceSelector, or Kueue's pod integration "
        "(integrations.frameworks: pod) is off";
    if (SetCondition(next_, kKueueManaged, false, kNotManagedByKueue, message, now_, job_.metadata.generation)) {
      Event("Warning", kNotManagedByKueue, message);
    }
  }

  // How often a Kueue job's Workload is read again while Kueue holds its gated gang.
  static constexpr std::chrono::seconds kQueueVerdictRefresh{15};

  // Scheduled from the current Pods' PodScheduled conditions: True once all are placed, False in
  // the scheduler's words once one has waited past config_.unschedulable_after.
  void UpdateScheduled() {
    if (const api::Condition* before = next_.FindCondition(kScheduled);
        before != nullptr && before->reason == kSchedulerNotInstalled) {
      return;  // no Pods yet; ProviderMissing keeps it
    }
    std::vector<RankPod> ranks;
    for (const PodView* pod : Current()) {
      if (!pod->deleting && pod->source != nullptr) {
        ranks.push_back({pod->rank, pod->name, pod->source});
      }
    }
    const SchedulingVerdict verdict =
        JudgeScheduling(ranks, job_.spec.replicas, now_, config_.unschedulable_after);
    const api::Condition* before = next_.FindCondition(kScheduled);
    const std::string replicas = std::to_string(job_.spec.replicas);
    switch (verdict.state) {
      case SchedulingVerdict::State::kAllScheduled:
        if (before == nullptr || before->status != "True") {
          const bool was_false = before != nullptr;
          SetCondition(next_, kScheduled, true, "AllPodsScheduled", "all " + replicas + " pods are scheduled",
                       now_, job_.metadata.generation);
          if (was_false) {
            Event("Normal", kScheduled, "all " + replicas + " pods are scheduled (attempt " +
                                            std::to_string(next_.restarts) + ")");
          }
        }
        return;
      case SchedulingVerdict::State::kWaiting:
        if (verdict.recheck_after.has_value()) {
          Requeue(*verdict.recheck_after);
        }
        return;
      case SchedulingVerdict::State::kUnschedulable: {
        // A gate says only that something holds the Pod; Kueue's Workload says why.
        const std::string message = verdict.reason == "SchedulingGated" && observed_.queue_verdict.has_value()
                                        ? verdict.message + "; Kueue: " + *observed_.queue_verdict
                                        : verdict.message;
        if (SetCondition(next_, kScheduled, false, verdict.reason, message, now_, job_.metadata.generation)) {
          Event("Warning", "Unschedulable", verdict.reason + ": " + message);
        }
        // Nothing the operator watches changes while Kueue holds the gang: look at its Workload
        // again now and then, for its first verdict or a new one.
        if (verdict.reason == "SchedulingGated" &&
            job_.spec.run_policy.scheduling_policy.provider == api::SchedulingProvider::kKueue) {
          Requeue(kQueueVerdictRefresh);
        }
        return;
      }
    }
  }

  // Said with each creation of Pods, not on every pass: the template is the same for every rank.
  void AnnounceOwnProfilerPlugins() {
    const std::vector<std::string> names = TrainersWithOwnProfilerPlugin(job_);
    if (names.empty()) {
      return;
    }
    std::string list;
    for (const std::string& name : names) {
      list += (list.empty() ? "" : ", ") + name;
    }
    const bool one = names.size() == 1;
    Event("Normal", "ProfilerPluginLeftAlone",
          std::string(one ? "trainer container " : "trainer containers ") + list +
              (one ? " sets " : " set ") + std::string(contract::env::kNcclProfilerPlugin) +
              (one ? " itself" : " themselves") +
              " in every replica: ringleader's profiler plugin is not loaded there, so "
              "status.communication.training leaves " + (one ? "its" : "their") +
              " collectives out (attempt " + std::to_string(next_.restarts) + ")");
  }

  // The first Pod of this attempt seen with DisruptionTarget=True or Kueue's TerminationTarget=True,
  // kept in status: it may be
  // deleted before its peers fail for want of it, and their failures are Ignored too.
  void RememberDisruption() {
    if (next_.disruption.has_value() && next_.disruption->attempt == next_.restarts) {
      return;
    }
    for (const PodView* pod : Current()) {
      // In an elastic job only rank 0's loss brings the others down; any other rank's
      // disruption is its own (RecoverAlone).
      if (pod->disrupted && (pod->rank == 0 || !ElasticRecovery())) {
        next_.disruption = api::Disruption{.attempt = next_.restarts,
                                           .pod = pod->name,
                                           .reason = pod->disruption_reason,
                                           .message = pod->disruption_message};
        std::string message = "pod " + pod->name + " (rank " + std::to_string(pod->rank) +
                              ") has " + pod->disruption_condition + "=True";
        if (!pod->disruption_reason.empty()) {
          message += " (" + pod->disruption_reason + ")";
        }
        Event("Warning", "PodDisrupted",
              message + "; the other ranks' failures in attempt " + std::to_string(next_.restarts) +
                  " are not counted against backoffLimit");
        return;
      }
    }
  }

  std::optional<api::Disruption> AttemptDisruption() const {
    if (next_.disruption.has_value() && next_.disruption->attempt == next_.restarts) {
      return next_.disruption;
    }
    return std::nullopt;
  }

  // Each kubelet reports on its own, so a rank that failed because it lost a peer is often seen
  // before the peer's own failure, which a rule may judge differently. With rules to apply, and no
  // FailJob verdict or disruption yet, the restart waits until every current Pod has finished, or
  // kFailureSettle after the first container failure, whichever comes first.
  bool AwaitingEvidence(const std::vector<Verdict>& verdicts) {
    if (job_.spec.run_policy.failure_policy.rules.empty() || AttemptDisruption().has_value() ||
        std::any_of(verdicts.begin(), verdicts.end(),
                    [](const Verdict& v) { return v.action == api::FailureAction::kFailJob; })) {
      return false;
    }
    const std::vector<const PodView*> current = Current();
    if (std::all_of(current.begin(), current.end(),
                    [](const PodView* pod) { return pod->Finished() || pod->deleting; })) {
      return false;
    }
    return WithinFailureSettle(verdicts);
  }

  void GangRestartOrFail(const std::vector<const PodView*>& failed, const std::vector<Verdict>& verdicts) {
    const std::string what = DescribeFailures(failed);
    const bool preflight = std::any_of(failed.begin(), failed.end(), [](const PodView* pod) {
      return pod->failure.starts_with("preflight failed");
    });
    if (preflight) {
      Condition(kPreflightPassed, false, "PreflightFailed", what, "Warning");
      Event("Warning", "PreflightFailed", what);
    }
    const auto has = [&verdicts](api::FailureAction action) {
      return std::find_if(verdicts.begin(), verdicts.end(),
                          [action](const Verdict& v) { return v.action == action; });
    };
    if (const auto fail = has(api::FailureAction::kFailJob); fail != verdicts.end()) {
      Fail("FailJobRule", DescribeFailure(*fail->pod) + "; " + fail->rule + " matched: " + fail->matched +
                              "; the job fails without a restart");
      return;
    }
    const bool counted = has(api::FailureAction::kRestartJob) != verdicts.end();
    const std::int64_t limit = job_.spec.run_policy.backoff_limit;
    if (counted && next_.counted_restarts >= limit) {
      Fail("BackoffLimitExceeded", what + "; " + std::to_string(next_.counted_restarts) + " of " +
                                       std::to_string(limit) + " restarts used");
      return;
    }
    std::string reason = "PodFailed";
    std::string not_counted_because;
    if (!counted) {
      const Verdict& ignored = verdicts.front();
      reason = ignored.disruption ? "PodDisrupted" : "IgnoreRule";
      not_counted_because = ignored.rule.empty() ? ignored.matched : ignored.rule + " matched " + ignored.matched;
    }
    RestartGang(reason, what, counted, not_counted_because, preflight);
  }

  // Ends the current attempt: its Pods go (but the evidence kept for kubectl logs), the next
  // attempt waits out its backoff, and the restart is announced with `reason` leading `what`.
  // `preflight`: the restart is a preflight's failure, whose PreflightPassed=False stands.
  void RestartGang(const std::string& reason, const std::string& what, bool counted,
                   const std::string& not_counted_because, bool preflight) {
    const std::int64_t limit = job_.spec.run_policy.backoff_limit;
    next_.restarts += 1;
    next_.counted_restarts += counted ? 1 : 0;
    // The new attempt's torchrun agents start with maxRestarts of their own.
    next_.elastic_restarts = 0;
    next_.below_min_replicas_since.reset();
    // The ended attempt's failed rank joins the kept Pods; the oldest beyond the bound goes.
    FindEvidence();
    const std::vector<const PodView*> kept = EvidencePods(next_.restarts - 1);
    for (const PodView& pod : pods_) {
      if (!IsEvidence(pod)) {
        DeletePod(pod);
      }
    }
    const seconds delay = job_.spec.run_policy.failure_policy.restart_backoff.Delay(next_.restarts);
    if (delay > seconds(0)) {
      next_.next_restart_time = now_ + delay;
      Requeue(delay);
    } else {
      next_.next_restart_time.reset();
    }
    std::string terms;
    if (counted) {
      terms = "restart " + std::to_string(next_.counted_restarts) + " of " + std::to_string(limit);
    } else {
      terms = "not counted against backoffLimit: " + not_counted_because + "; " +
              std::to_string(next_.counted_restarts) + " of " + std::to_string(limit) + " restarts used";
    }
    std::string message = what + "; restarting all " + std::to_string(job_.spec.replicas) + " pods";
    if (delay > seconds(0)) {
      message += " in " + Seconds(delay) + " (" + terms + ", backoff " + Seconds(delay) + ")";
    } else {
      message += " (" + terms + ")";
    }
    if (!kept.empty()) {
      std::string names;
      for (const PodView* pod : kept) {
        names += (names.empty() ? "" : ", ") + pod->name;
      }
      message += (kept.size() == 1 ? "; pod " : "; pods ") + names + " kept for kubectl logs";
    }
    // Every gang restart is announced, also one that follows another before the gang ran.
    SetCondition(next_, kRestarting, true, reason, message, now_, job_.metadata.generation);
    Event("Warning", kRestarting, reason + ": " + message);
    if (next_.IsTrue(kRunning)) {
      SetCondition(next_, kRunning, false, "Restarting", "the gang is restarting", now_,
                   job_.metadata.generation);
    }
    if (!preflight && next_.FindCondition(kPreflightPassed) != nullptr) {
      SetCondition(next_, kPreflightPassed, false, "Restarting",
                   "the new attempt has not passed its preflight yet", now_,
                   job_.metadata.generation);
    }
    if (next_.IsTrue(kStalled)) {
      SetCondition(next_, kStalled, false, "Restarting",
                   "the gang is restarting; the new attempt has not stalled", now_, job_.metadata.generation);
    }
  }

  // The rank-0 sidecar's stall of the current attempt, if its last summary has one (a summary
  // kept from an earlier attempt says nothing about this one).
  const contract::StallSummary* CurrentStall() const {
    if (!observed_.summary.has_value() || !observed_.summary->stall.has_value() ||
        observed_.summary->stall->attempt != next_.restarts) {
      return nullptr;
    }
    return &*observed_.summary->stall;
  }

  // "rank 2 (pod demo-2)" or "ranks 2, 5 and 3 more (pods demo-0, demo-1)": the stall's missing
  // communicator ranks and the Pods they run in.
  std::string DescribeMissing(const contract::StallSummary& stall) const {
    std::string ranks;
    for (const int rank : stall.missing_ranks) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    }
    const int unlisted = stall.missing_rank_count - static_cast<int>(stall.missing_ranks.size());
    if (unlisted > 0) {
      ranks += " and " + std::to_string(unlisted) + " more";
    }
    std::string pods;
    for (const int pod : stall.missing_pods) {
      pods += (pods.empty() ? "" : ", ") + PodName(job_, pod, next_.restarts);
    }
    return (stall.missing_rank_count == 1 ? "rank " : "ranks ") + ranks +
           (stall.missing_pods.size() == 1 ? " (pod " : " (pods ") + pods + ")";
  }

  // What the stall is, without how long it has lasted: the same words for as long as it lasts.
  std::string StallIdentity(const contract::StallSummary& stall) const {
    std::string collective = stall.collective.value_or("collective") + " #" + std::to_string(stall.sequence);
    if (stall.bytes.has_value()) {
      collective += " (" + std::to_string(*stall.bytes) + " bytes)";
    }
    return DescribeMissing(stall) + " never entered " + collective + " on communicator " + stall.communicator;
  }

  // The Stalled condition from the current attempt's stall, announced once per stall; with
  // onStall: Restart, a gang restart counted against backoffLimit. True when it restarted the
  // gang or failed the job (the pass ends there).
  bool UpdateStall() {
    const contract::StallSummary* stall = CurrentStall();
    if (stall == nullptr) {
      if (next_.IsTrue(kStalled)) {
        SetCondition(next_, kStalled, false, "StallEnded",
                     "the missing ranks entered the collective; no rank waits for another", now_,
                     job_.metadata.generation);
      }
      return false;
    }
    const std::string identity = StallIdentity(*stall);
    const api::Condition* before = next_.FindCondition(kStalled);
    // The message keeps the wait as first reported, so status is not rewritten on every read.
    if (before == nullptr || before->status != "True" || !before->message.starts_with(identity + ":")) {
      const std::int64_t waiting = stall->waiting_ranks;
      const std::string message = identity + ": " + std::to_string(waiting) +
                                  (waiting == 1 ? " rank entered it and has" : " ranks entered it and have") +
                                  " waited " + std::to_string(stall->waited_seconds) + " s";
      SetCondition(next_, kStalled, true, kCollectiveStalled, message, now_, job_.metadata.generation);
      Event("Warning", kCollectiveStalled, message);
    }
    if (job_.spec.communication.telemetry.on_stall != api::StallAction::kRestart) {
      return false;
    }
    const std::string what = next_.FindCondition(kStalled)->message +
                             " (spec.communication.telemetry.onStall is Restart)";
    const std::int64_t limit = job_.spec.run_policy.backoff_limit;
    if (next_.counted_restarts >= limit) {
      Fail("BackoffLimitExceeded", what + "; " + std::to_string(next_.counted_restarts) + " of " +
                                       std::to_string(limit) + " restarts used");
      return true;
    }
    RestartGang(std::string(kCollectiveStalled), what, /*counted=*/true, "", /*preflight=*/false);
    return true;
  }

  void Fail(std::string_view reason, const std::string& message) {
    for (const PodView& pod : pods_) {
      if (!pod.Finished() && !IsEvidence(pod)) {
        DeletePod(pod);
      }
    }
    next_.next_restart_time.reset();
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

  // spec.runPolicy.successPolicy RankZero: once rank 0's trainers of this attempt have all exited
  // 0, the job has succeeded; the other ranks' Pods still running are stopped.
  bool RankZeroSucceeded() {
    if (job_.spec.run_policy.success_policy != api::SuccessPolicy::kRankZero) {
      return false;
    }
    const std::vector<const PodView*> current = Current();
    const auto rank_zero = std::find_if(current.begin(), current.end(), [](const PodView* pod) {
      return pod->rank == 0 && pod->trainers_done;
    });
    if (rank_zero == current.end()) {
      return false;
    }
    MarkPreflightPassed(current);
    std::int64_t stopped = 0;
    for (const PodView* pod : current) {
      if (pod->rank != 0 && !pod->Finished() && !pod->trainers_done && !pod->deleting) {
        DeletePod(*pod);
        ++stopped;
      }
    }
    const std::string message = "rank 0's trainers succeeded (pod " + (*rank_zero)->name + ", attempt " +
                                std::to_string(next_.restarts) + "); spec.runPolicy.successPolicy is RankZero";
    SetCondition(next_, kRunning, false, "RankZeroSucceeded", "rank 0 finished", now_,
                 job_.metadata.generation);
    if (next_.IsTrue(kRestarting)) {
      SetCondition(next_, kRestarting, false, "RankZeroSucceeded", "rank 0 finished", now_,
                   job_.metadata.generation);
    }
    next_.next_restart_time.reset();
    if (SetCondition(next_, kSucceeded, true, "RankZeroSucceeded", message, now_, job_.metadata.generation)) {
      const std::int64_t others = job_.spec.replicas - 1;
      Event("Normal", "RankZeroSucceeded",
            others == 0 ? message
                        : message + "; stopping " + std::to_string(stopped) + " of the other " +
                              std::to_string(others) + (others == 1 ? " pod" : " pods") + ", still running");
    }
    next_.completion_time = now_;
    return true;
  }

  // With the preflight disabled the preflight container proves only the rendezvous, so no
  // PreflightPassed is claimed.
  void MarkPreflightPassed(const std::vector<const PodView*>& current) {
    if (job_.spec.communication.preflight.enabled &&
        current.size() == static_cast<std::size_t>(job_.spec.replicas) &&
        std::all_of(current.begin(), current.end(), [](const PodView* pod) {
          return pod->preflight_passed || pod->phase == "Succeeded";
        }) &&
        !next_.IsTrue(kPreflightPassed)) {
      Condition(kPreflightPassed, true, "PreflightPassed", "every rank's preflight passed", "Normal");
    }
  }

  void UpdateProgress() {
    const std::vector<const PodView*> current = Current();
    const auto replicas = static_cast<std::size_t>(job_.spec.replicas);
    const bool complete_gang = current.size() == replicas;
    const auto all = [&current](auto predicate) {
      return std::all_of(current.begin(), current.end(), predicate);
    };
    MarkPreflightPassed(current);
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
      next_.communication->stall.reset();  // the Stalled condition carries it
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
  // The Pods kept for `kubectl logs` from past attempts (FindEvidence), pointing into pods_.
  std::vector<const PodView*> evidence_;
  Plan plan_;
};

}  // namespace

Plan MakePlan(const Observed& observed, const PlannerConfig& config) {
  return Planner(observed, config).Run();
}

}  // namespace ringleader::planner
