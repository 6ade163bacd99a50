// FakeCluster: applies plans to in-memory objects for planner tests.
#include "tests/operator/planner/fake_cluster.h"

#include <functional>
#include <stdexcept>

#include "operator/planner/pod_builder.h"

namespace ringleader::planner::testing {

using nlohmann::json;

FakeCluster::FakeCluster(json job, ports::PortRange range)
    : job_(std::move(job)), ledger_(range), now_(At(0)) {
  config_.validation.port_range_first = range.first;
  config_.validation.port_range_last = range.last;
  if (!job_["metadata"].contains("uid")) {
    job_["metadata"]["uid"] = "job-uid-1";
  }
  job_["metadata"]["generation"] = 1;
  if (!job_["metadata"].contains("namespace")) {
    job_["metadata"]["namespace"] = "default";
  }
}

api::TrainingJob FakeCluster::Job() const {
  api::FieldErrors errors;
  api::TrainingJob job = api::TrainingJob::FromJson(job_, &errors);
  if (!errors.empty()) {
    throw std::runtime_error("FakeCluster job does not parse: " + api::JoinErrors(errors));
  }
  if (job_edit_) {
    job_edit_(job);
  }
  return job;
}

Plan FakeCluster::PlanNow(api::Time now) const {
  Observed observed;
  observed.job = Job();
  for (const auto& [name, pod] : pods_) {
    observed.pods.push_back(pod);
  }
  observed.service = service_;
  observed.secret = secret_;
  observed.network_policy = network_policy_;
  observed.ledger = &ledger_;
  observed.fresh_token = "token-" + std::to_string(next_uid_);
  observed.summary = summary_;
  observed.now = now;
  observed.providers = providers_;
  observed.queue_verdict = queue_verdict_;
  return MakePlan(observed, config_);
}

Plan FakeCluster::Reconcile(api::Time now) {
  now_ = now;
  Plan plan = PlanNow(now);
  Apply(plan);
  return plan;
}

int FakeCluster::ReconcileUntilStable(api::Time now, int rounds) {
  for (int round = 1; round <= rounds; ++round) {
    if (Reconcile(now).empty()) {
      return round;
    }
  }
  throw std::runtime_error("planner did not settle within " + std::to_string(rounds) + " rounds");
}

void FakeCluster::Apply(const Plan& plan) {
  if (plan.reserve_ports && !ledger_.Reserve(job_["metadata"]["uid"], *plan.reserve_ports)) {
    throw std::runtime_error("planner proposed a port block another job holds");
  }
  if (plan.release_ports) {
    ledger_.Release(job_["metadata"]["uid"]);
  }
  for (const Action& action : plan.actions) {
    if (const auto* status = std::get_if<UpdateStatus>(&action)) {
      job_["status"] = status->status;
    } else if (const auto* create = std::get_if<CreateObject>(&action)) {
      json object = create->object;
      object["metadata"]["uid"] = "uid-" + std::to_string(next_uid_++);
      const std::string kind = object["kind"];
      const std::string name = object["metadata"]["name"];
      if (kind == "Pod") {
        if (pods_.contains(name)) {
          throw std::runtime_error("AlreadyExists: pod " + name);
        }
        object["status"] = {{"phase", "Pending"}};
        pods_[name] = object;
      } else if (kind == "Service") {
        service_ = object;
      } else if (kind == "Secret") {
        secret_ = object;
      } else if (kind == "NetworkPolicy") {
        network_policy_ = object;
      } else if (kind == "PodGroup") {
        pod_groups_[name] = object;
      }
    } else if (const auto* del = std::get_if<DeleteObject>(&action)) {
      if (del->kind == "Pod") {
        auto it = pods_.find(del->name);
        if (it == pods_.end() || it->second["metadata"]["uid"] != del->uid) {
          throw std::runtime_error("delete precondition failed for pod " + del->name);
        }
        if (graceful_) {
          it->second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
        } else {
          pods_.erase(it);
        }
      } else if (del->kind == "Service") {
        if (!service_ || (*service_)["metadata"]["uid"] != del->uid) {
          throw std::runtime_error("delete precondition failed for service " + del->name);
        }
        service_.reset();
      } else if (del->kind == "NetworkPolicy") {
        if (!network_policy_ || (*network_policy_)["metadata"]["uid"] != del->uid) {
          throw std::runtime_error("delete precondition failed for network policy " + del->name);
        }
        network_policy_.reset();
      } else {
        throw std::runtime_error("the planner deleted a " + del->kind + ", which it never creates");
      }
    } else if (const auto* event = std::get_if<RecordEvent>(&action)) {
      events_.push_back(*event);
    } else if (std::holds_alternative<DeleteJob>(action)) {
      job_deleted_ = true;
    }
  }
}

void FakeCluster::SetPhase(const std::string& pod, const std::string& phase) {
  json& status = pods_.at(pod)["status"];
  status["phase"] = phase;
  // Trainers run only after every init container: the sidecar started, the preflight exited 0.
  if (phase == "Running" || phase == "Succeeded") {
    if (FindInitStatus(pod, "ringleader-sidecar") == nullptr) {
      SetSidecarStarted(pod, true);
    }
    PassPreflight(pod);
  }
}

std::vector<std::string> FakeCluster::PodNames() const {
  std::vector<std::string> names;
  for (const auto& [name, pod] : pods_) {
    names.push_back(name);
  }
  return names;
}

std::string FakeCluster::ConditionMessage(const std::string& type) const {
  const nlohmann::json* condition = FindCondition(job_, type);
  return condition == nullptr ? "<no " + type + " condition>" : condition->value("message", "");
}

std::string FakeCluster::ConditionReason(const std::string& type) const {
  const nlohmann::json* condition = FindCondition(job_, type);
  return condition == nullptr ? "<no " + type + " condition>" : condition->value("reason", "");
}

std::vector<std::string> FakeCluster::EventMessages(const std::string& reason) const {
  std::vector<std::string> out;
  for (const RecordEvent& event : events_) {
    if (event.reason == reason) {
      out.push_back(event.message);
    }
  }
  return out;
}

void FakeCluster::StartRunning(api::Time now) {
  ReconcileUntilStable(now);
  SetAllPhases("Running");  // the fake passes each Pod's preflight on the way
  ReconcileUntilStable(now);
}

std::string FakeCluster::CurrentPod(int rank) const {
  const api::TrainingJob job = Job();
  return PodName(job, rank, job.status.restarts);
}

void FakeCluster::SetAllPhases(const std::string& phase) {
  for (const auto& [name, pod] : pods_) {
    const std::string current = pod["status"].value("phase", "");
    if (current != "Failed" && current != "Succeeded") {
      SetPhase(name, phase);
    }
  }
}

json* FakeCluster::FindInitStatus(const std::string& pod, const std::string& container) {
  json& status = pods_.at(pod)["status"];
  if (!status.contains("initContainerStatuses")) {
    return nullptr;
  }
  for (json& entry : status["initContainerStatuses"]) {
    if (entry["name"] == container) {
      return &entry;
    }
  }
  return nullptr;
}

void FakeCluster::SetInitStatus(const std::string& pod, const json& container_status) {
  if (json* existing = FindInitStatus(pod, container_status["name"])) {
    *existing = container_status;
    return;
  }
  json& status = pods_.at(pod)["status"];
  if (!status.contains("initContainerStatuses")) {
    status["initContainerStatuses"] = json::array();
  }
  status["initContainerStatuses"].push_back(container_status);
}

void FakeCluster::SetSidecarStarted(const std::string& pod, bool started) {
  SetInitStatus(pod, {{"name", "ringleader-sidecar"}, {"started", started}, {"ready", started},
                      {"state", started ? json{{"running", json::object()}} : json{{"waiting", json::object()}}}});
}

void FakeCluster::PassPreflight(const std::string& pod) {
  SetInitStatus(pod, {{"name", "ringleader-preflight"},
                      {"ready", false},
                      {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}});
}

void FakeCluster::FailPreflight(const std::string& pod, int exit_code, const std::string& message) {
  SetInitStatus(pod, {{"name", "ringleader-preflight"},
                      {"ready", false},
                      {"state",
                       {{"terminated",
                         {{"exitCode", exit_code},
                          {"reason", "Error"},
                          {"message", message},
                          {"finishedAt", api::FormatTime(now_)}}}}}});
  // restartPolicy Never: a failed init container fails the Pod.
  pods_.at(pod)["status"]["phase"] = "Failed";
}

void FakeCluster::FailContainer(const std::string& pod, int exit_code, const std::string& reason,
                                const std::string& container, std::optional<api::Time> finished_at) {
  json& status = pods_.at(pod)["status"];
  status["phase"] = "Failed";
  // A kubelet always stamps finishedAt; the planner's wait for a peer's failure counts from it.
  status["containerStatuses"] = json::array(
      {{{"name", container},
        {"state",
         {{"terminated",
           {{"exitCode", exit_code},
            {"reason", reason},
            {"finishedAt", api::FormatTime(finished_at.value_or(now_))}}}}}}});
}

void FakeCluster::SetPodCondition(const std::string& pod, const std::string& type,
                                  const std::string& status, const std::string& reason,
                                  const std::string& message) {
  json& pod_status = pods_.at(pod)["status"];
  if (!pod_status.contains("conditions")) {
    pod_status["conditions"] = json::array();
  }
  json condition = {{"type", type}, {"status", status}};
  if (!reason.empty()) {
    condition["reason"] = reason;
  }
  if (!message.empty()) {
    condition["message"] = message;
  }
  for (json& existing : pod_status["conditions"]) {
    if (existing["type"] == type) {
      existing = condition;
      return;
    }
  }
  pod_status["conditions"].push_back(condition);
}

void FakeCluster::Disrupt(const std::string& pod, const std::string& reason, const std::string& message) {
  SetPodCondition(pod, "DisruptionTarget", "True", reason, message);
  pods_.at(pod)["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
}

void FakeCluster::StopByKueue(const std::string& pod, const std::string& reason, const std::string& message) {
  SetPodCondition(pod, "TerminationTarget", "True", reason, message);
  for (json& condition : pods_.at(pod)["status"]["conditions"]) {
    if (condition["type"] == "TerminationTarget") {
      condition["lastTransitionTime"] = api::FormatTime(now_);
    }
  }
  pods_.at(pod)["metadata"]["deletionTimestamp"] = api::FormatTime(now_);
}

void FakeCluster::SucceedContainers(const std::string& pod, api::Time finished_at) {
  SetPhase(pod, "Succeeded");
  pods_.at(pod)["status"]["containerStatuses"] = json::array(
      {{{"name", "trainer"},
        {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"finishedAt", api::FormatTime(finished_at)}}}}}}});
}

void FakeCluster::RemovePod(const std::string& pod) { pods_.erase(pod); }

void FakeCluster::FailSidecar(const std::string& pod, int exit_code, const std::string& message) {
  SetInitStatus(pod, {{"name", "ringleader-sidecar"},
                      {"started", false},
                      {"restartCount", 1},
                      {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                      {"lastState",
                       {{"terminated",
                         {{"exitCode", exit_code},
                          {"reason", "Error"},
                          {"message", message},
                          {"finishedAt", api::FormatTime(now_)}}}}}});
}

void FakeCluster::AddForeignPod(const std::string& name) {
  pods_[name] = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata",
                  {{"name", name},
                   {"uid", "foreign-" + name},
                   {"labels", {{"ringleader.dev/job-name", "demo"}, {"ringleader.dev/rank", "0"},
                               {"ringleader.dev/attempt", "0"}}}}},
                 {"status", {{"phase", "Failed"}}}};
}

void FakeCluster::FinishDeletions() {
  std::erase_if(pods_, [](const auto& entry) {
    return entry.second["metadata"].contains("deletionTimestamp");
  });
}

void FakeCluster::EditSpec(const std::function<void(json& spec)>& edit) {
  edit(job_["spec"]);
  job_["metadata"]["generation"] = job_["metadata"]["generation"].get<int>() + 1;
}

json MinimalJob(const std::string& name, int replicas) {
  return {{"apiVersion", "ringleader.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", replicas},
            {"template",
             {{"spec",
               {{"containers",
                 json::array({{{"name", "trainer"}, {"image", "example/trainer:1"}}})}}}}}}}};
}

api::Time At(int seconds) {
  // 2026-01-01T00:00:00Z plus `seconds`.
  return api::Time{std::chrono::seconds{1767225600 + seconds}};
}

std::vector<std::string> CreatedPodNames(const Plan& plan) {
  std::vector<std::string> names;
  for (const Action& action : plan.actions) {
    if (const auto* create = std::get_if<CreateObject>(&action); create != nullptr && create->object["kind"] == "Pod") {
      names.push_back(create->object["metadata"]["name"]);
    }
  }
  return names;
}

std::vector<std::string> DeletedPodNames(const Plan& plan) {
  std::vector<std::string> names;
  for (const Action& action : plan.actions) {
    if (const auto* del = std::get_if<DeleteObject>(&action); del != nullptr && del->kind == "Pod") {
      names.push_back(del->name);
    }
  }
  return names;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const json& entry : container.value("env", json::array())) {
    if (entry.value("name", "") == name) {
      return entry.value("value", "");
    }
  }
  return "<unset>";
}

const json* FindCondition(const json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) {
    return nullptr;
  }
  const json& conditions = job["status"]["conditions"];
  for (const json& condition : conditions) {
    if (condition["type"] == type) {
      return &condition;
    }
  }
  return nullptr;
}

}  // namespace ringleader::planner::testing
