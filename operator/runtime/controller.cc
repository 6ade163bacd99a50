// Controller: caches, queue, workers; each job planned from the caches and the port ledger.
#include "operator/runtime/controller.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "operator/api/field_error.h"
#include "operator/planner/children_builder.h"
#include "operator/planner/gang_scheduling.h"
#include "operator/planner/scheduling_state.h"
#include "operator/planner/status_builder.h"
#include "operator/runtime/cache_transforms.h"
#include "operator/runtime/operator_metrics.h"
#include "sidecar/contract/contract.h"

namespace ringleader::runtime {

using nlohmann::json;

namespace {

constexpr std::string_view kUidIndexPrefix = "uid:";

const json& Meta(const json& object) {
  static const json kEmpty = json::object();
  const auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

std::string Label(const json& object, std::string_view name) {
  const json& meta = Meta(object);
  const auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) {
    return "";
  }
  const auto it = labels->find(name);
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

// Children are found by the job they name in their labels; ownership is checked when planning.
std::vector<std::string> OwnerIndex(const json& object) {
  std::vector<std::string> values;
  const std::string job = Label(object, planner::kJobNameLabel);
  if (!job.empty()) {
    values.push_back(Meta(object).value("namespace", "") + "/" + job);
  }
  const std::string uid = Label(object, planner::kJobUidLabel);
  if (!uid.empty()) {
    values.push_back(std::string(kUidIndexPrefix) + uid);
  }
  return values;
}

std::string FreshToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    throw std::runtime_error("OpenSSL could not generate a job token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token.push_back(kHex[byte >> 4]);
    token.push_back(kHex[byte & 15]);
  }
  return token;
}

api::Time Now() { return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()); }

InformerOptions ChildInformer(kube::Resource resource, const ControllerOptions& controller,
                              void (*transform)(json&)) {
  // Only what the operator made: the label it puts on every child.
  InformerOptions options;
  options.resource = std::move(resource);
  options.namespaces = controller.namespaces;
  options.watch_timeout_seconds = controller.watch_timeout_seconds;
  options.label_selector = std::string(planner::kManagedByLabel) + "=" + std::string(planner::kManagedByValue);
  options.transform = transform;
  options.index = OwnerIndex;
  // Thousands of Pods per operator, each read only with its job: kept as CBOR (informer.h).
  options.compact = true;
  return options;
}

InformerOptions JobInformer(const ControllerOptions& controller) {
  InformerOptions options;
  options.resource = kube::TrainingJobs();
  options.namespaces = controller.namespaces;
  options.watch_timeout_seconds = controller.watch_timeout_seconds;
  options.transform = TrimTrainingJob;
  return options;
}

// The status of a job that cannot even be parsed (a hostile or hand-edited object that the
// CRD's schema did not stop): Failed, naming the fields.
json InvalidStatus(const json& object, const std::string& message) {
  json status = object.contains("status") && object["status"].is_object() ? object["status"] : json::object();
  json conditions = json::array();
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& condition : status["conditions"]) {
      if (condition.is_object() && condition.value("type", "") != planner::kFailed) {
        conditions.push_back(condition);
      }
    }
  }
  conditions.push_back({{"type", planner::kFailed},
                        {"status", "True"},
                        {"reason", "InvalidSpec"},
                        {"message", message},
                        {"lastTransitionTime", api::FormatTime(Now())}});
  status["conditions"] = conditions;
  status["state"] = "Failed";
  return status;
}

std::string RefusalReason(const CreateRefusal& refusal) {
  return std::string(refusal.refused_by == kNameConflict ? kNameConflict : kCreateRefused);
}

// What `kubectl describe` shows under the Created condition: the API's own words, unedited.
std::string RefusalMessage(const CreateRefusal& refusal) {
  if (refusal.refused_by == kNameConflict) {
    return refusal.message + "; retrying with backoff";
  }
  return "the API server refused to create " + refusal.kind + " " + refusal.name + " (" + refusal.refused_by +
         "): " + refusal.message + "; retrying with backoff";
}

// The Events the planner records beside the creates they announce.
bool AnnouncesCreates(const planner::Action& action) {
  const auto* event = std::get_if<planner::RecordEvent>(&action);
  return event != nullptr && (event->reason == "PodsCreated" || event->reason == "ProfilerPluginLeftAlone");
}

// Created=False with the refusal in the status the plan writes; the write is added when the
// job's status does not say so yet, and dropped when the plan's only change was Created=True.
void KeepRefusalCondition(const api::TrainingJob& job, const CreateRefusal& refusal, planner::Plan& plan) {
  auto update = std::find_if(plan.actions.begin(), plan.actions.end(), [](const planner::Action& action) {
    return std::holds_alternative<planner::UpdateStatus>(action);
  });
  api::TrainingJobStatus status = job.status;
  if (update != plan.actions.end()) {
    api::FieldErrors ignored;  // the planner wrote it
    status = api::StatusFromJson(std::get<planner::UpdateStatus>(*update).status, &ignored);
  }
  planner::SetCondition(status, planner::kCreated, false, RefusalReason(refusal), RefusalMessage(refusal), Now(),
                        job.metadata.generation);
  // The transition is measured against what the job's status says, not the planner's draft.
  if (const api::Condition* before = job.status.FindCondition(planner::kCreated);
      before != nullptr && before->status == "False") {
    for (api::Condition& condition : status.conditions) {
      if (condition.type == planner::kCreated) {
        condition.last_transition_time = before->last_transition_time;
      }
    }
  }
  status.state = planner::DeriveState(status);
  if (status == job.status) {
    if (update != plan.actions.end()) {
      plan.actions.erase(update);
    }
    return;
  }
  if (update != plan.actions.end()) {
    *update = planner::UpdateStatus{api::StatusToJson(status)};
  } else {
    plan.actions.insert(plan.actions.begin(), planner::UpdateStatus{api::StatusToJson(status)});
  }
}

}  // namespace

Controller::Controller(kube::Client& client, ControllerOptions options, Logger& logger,
                       OperatorMetrics* metrics, SummaryReader* summary_reader)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : kube::RealClock()),
      logger_(logger),
      metrics_(metrics),
      summary_reader_(summary_reader),
      queue_(options_.queue, clock_),
      applier_(client, expectations_, logger, metrics, options_.identity),
      providers_(client, logger),
      jobs_(client, JobInformer(options_)),
      pods_(client, ChildInformer(kube::Pods(), options_, TrimPod)),
      services_(client, ChildInformer(kube::Services(), options_, TrimToOwnership)),
      secrets_(client, ChildInformer(kube::Secrets(), options_, TrimToOwnership)),
      network_policies_(client, ChildInformer(kube::NetworkPolicies(), options_, TrimToOwnership)),
      ledger_(options_.port_range),
      liveness_(options_.liveness) {
  jobs_.AddHandler([this](const ObjectPtr& before, const ObjectPtr& after) {
    if (after) {
      queue_.Add(ObjectKey(*after));
      return;
    }
    // Deleted: garbage collection removes its children; its block is freed once no Pod of it
    // is left to hold the ports.
    const std::string uid = Meta(*before).value("uid", "");
    {
      std::lock_guard lock(ledger_mutex_);
      if (ledger_.Find(uid)) {
        releasing_[uid] = Meta(*before).value("namespace", "");
      }
    }
    ReleaseIfPodsGone(uid);
    queue_.Add(ObjectKey(*before));
  });
  pods_.AddHandler([this](const ObjectPtr& before, const ObjectPtr& after) {
    EnqueueOwner(after ? after : before);
    if (!after) {
      ReleaseIfPodsGone(Label(*before, planner::kJobUidLabel));
    }
  });
  for (Informer* informer : {&services_, &secrets_, &network_policies_}) {
    informer->AddHandler([this](const ObjectPtr& before, const ObjectPtr& after) {
      EnqueueOwner(after ? after : before);
    });
  }
}

Controller::~Controller() {
  queue_.ShutDown();
  for (Informer* informer : Informers()) {
    informer->Stop();
  }
}

std::vector<Informer*> Controller::Informers() {
  std::vector<Informer*> informers = {&jobs_, &pods_, &services_, &secrets_};
  if (options_.planner.network_policy) {
    informers.push_back(&network_policies_);
  }
  return informers;
}

void Controller::EnqueueOwner(const ObjectPtr& object) {
  const std::string job = Label(*object, planner::kJobNameLabel);
  if (!job.empty()) {
    queue_.Add(Meta(*object).value("namespace", "") + "/" + job);
  }
}

void Controller::ReleaseIfPodsGone(const std::string& uid) {
  if (uid.empty()) {
    return;
  }
  {
    std::lock_guard lock(ledger_mutex_);
    if (!releasing_.contains(uid)) {
      return;
    }
  }
  if (!pods_.ByIndex(std::string(kUidIndexPrefix) + uid).empty()) {
    return;
  }
  {
    std::lock_guard lock(ledger_mutex_);
    if (releasing_.erase(uid) == 0) {
      return;
    }
    ledger_.Release(uid);
  }
  logger_.Info("released the ports of a deleted job", {{"uid", uid}});
  EnqueuePortWaiters();
}

void Controller::EnqueuePortWaiters() {
  for (const ObjectPtr& job : jobs_.List()) {
    const auto status = job->find("status");
    if (status == job->end() || !status->is_object() || !status->contains("ports")) {
      queue_.Add(ObjectKey(*job));
    }
  }
}

std::string Controller::NotReadyReason() const {
  if (running_.load()) {
    return "";
  }
  return "caches are not synced yet";
}

std::string Controller::NotLiveReason() {
  ProgressSnapshot snapshot;
  snapshot.now = clock_.Now();
  if (informers_started_.load()) {
    for (const Informer* informer : Informers()) {
      for (LoopProgress& loop : informer->Progress()) {
        snapshot.loops.push_back(std::move(loop));
      }
    }
  }
  {
    std::lock_guard lock(workers_mutex_);
    snapshot.workers = workers_;
  }
  snapshot.oldest_due = queue_.OldestDue(snapshot.now);
  return liveness_.Check(snapshot);
}

void Controller::SetWorker(std::size_t worker, const std::string& reconciling) {
  const kube::Clock::TimePoint now = clock_.Now();
  std::lock_guard lock(workers_mutex_);
  workers_[worker] = {reconciling, now};
}

void Controller::RebuildLedger() {
  // Oldest first: if two jobs' status ever claimed the same ports, the older keeps them.
  std::vector<ObjectPtr> jobs = jobs_.List();
  std::sort(jobs.begin(), jobs.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    const std::string ta = Meta(*a).value("creationTimestamp", "");
    const std::string tb = Meta(*b).value("creationTimestamp", "");
    return ta != tb ? ta < tb : ObjectKey(*a) < ObjectKey(*b);
  });
  std::vector<std::pair<std::string, ports::PortBlock>> held;
  for (const ObjectPtr& job : jobs) {
    const json& status = job->contains("status") ? (*job)["status"] : json::object();
    if (!status.is_object() || !status.contains("ports") || !status["ports"].is_object() ||
        status.value("portsReleased", false)) {
      continue;
    }
    const json& master = status["ports"]["master"];
    if (master.is_number_integer()) {
      held.emplace_back(Meta(*job).value("uid", ""), ports::PortBlock{master.get<std::int32_t>()});
    }
  }
  std::vector<std::string> conflicts;
  std::lock_guard lock(ledger_mutex_);
  ledger_ = ports::PortLedger::Rebuild(options_.port_range, held, &conflicts);
  for (const std::string& uid : conflicts) {
    logger_.Error("a job's status claims ports an older job holds", {{"uid", uid}});
  }
  logger_.Info("port ledger rebuilt from status", {{"jobs", ledger_.jobs()}, {"conflicts", conflicts.size()}});
}

void Controller::Run(std::stop_token stop) {
  const std::vector<Informer*> informers = Informers();
  for (Informer* informer : informers) {
    informer->Start();
  }
  informers_started_ = true;
  while (!stop.stop_requested() &&
         !std::all_of(informers.begin(), informers.end(), [](const Informer* i) { return i->HasSynced(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!stop.stop_requested()) {
    RebuildLedger();
    providers_.Refresh();  // before any job is planned, so none is told its provider is missing
    logger_.Info("caches synced", {{"jobs", jobs_.Size()}, {"pods", pods_.Size()}});
    for (const ObjectPtr& job : jobs_.List()) {
      queue_.Add(ObjectKey(*job));
    }
    const auto worker_count = static_cast<std::size_t>(std::max(1, options_.workers));
    {
      const kube::Clock::TimePoint now = clock_.Now();
      std::lock_guard lock(workers_mutex_);
      workers_.assign(worker_count, {"", now});
    }
    running_ = true;
    std::vector<std::jthread> workers;
    for (std::size_t i = 0; i < worker_count; ++i) {
      workers.emplace_back([this, stop, i] { Work(stop, i); });
    }
    auto next_resync = std::chrono::steady_clock::now() + options_.resync_period;
    auto next_discovery = std::chrono::steady_clock::now() + options_.provider_discovery_interval;
    while (!stop.stop_requested()) {
      PublishGauges();
      if (std::chrono::steady_clock::now() >= next_discovery) {
        RefreshProviders();
        next_discovery = std::chrono::steady_clock::now() + options_.provider_discovery_interval;
      }
      if (std::chrono::steady_clock::now() >= next_resync) {
        for (const ObjectPtr& job : jobs_.List()) {
          queue_.Add(ObjectKey(*job));
        }
        next_resync = std::chrono::steady_clock::now() + options_.resync_period;
      }
      kube::RealClock().SleepFor(std::chrono::seconds(1), stop);
    }
    running_ = false;
    queue_.ShutDown();
    workers.clear();  // joined
    std::lock_guard lock(workers_mutex_);
    workers_.clear();
  }
  queue_.ShutDown();
  informers_started_ = false;
  for (Informer* informer : informers) {
    informer->Stop();
  }
}

void Controller::Work(std::stop_token stop, std::size_t worker) {
  while (auto item = queue_.Get(stop)) {
    SetWorker(worker, item->key);
    if (metrics_ != nullptr) {
      metrics_->ObserveQueueWait(std::chrono::duration<double>(item->waited).count());
    }
    const auto start = std::chrono::steady_clock::now();
    std::string result;
    try {
      result = Reconcile(item->key);
    } catch (const std::exception& e) {
      // The planner and applier report through results; anything thrown is a surprise, and
      // one bad object must not take the operator down.
      logger_.Error("reconcile failed", {{"job", item->key}, {"error", e.what()}});
      queue_.AddRateLimited(item->key);
      result = "error";
    }
    ++reconciles_;
    if (metrics_ != nullptr) {
      metrics_->ObserveReconcile(result, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    queue_.Done(item->key);
    SetWorker(worker, "");
  }
}

bool Controller::ExpectationMet(const std::string& job_key, const Expectation& expectation) {
  const std::string ns = job_key.substr(0, job_key.find('/'));
  if (expectation.kind == Expectation::Kind::kJobVersionGone) {
    const ObjectPtr job = jobs_.Get(job_key);
    return !job || Meta(*job).value("resourceVersion", "") != expectation.resource_version;
  }
  const Informer& informer = expectation.object_kind == "Pod"             ? pods_
                             : expectation.object_kind == "Service"       ? services_
                             : expectation.object_kind == "NetworkPolicy" ? network_policies_
                                                                          : secrets_;
  const ObjectPtr object = informer.Get(ns + "/" + expectation.name);
  if (expectation.kind == Expectation::Kind::kCreated) {
    return object != nullptr;
  }
  return !object || Meta(*object).value("uid", "") != expectation.uid ||
         Meta(*object).contains("deletionTimestamp");
}

Controller::RefusalState Controller::HoldRefusedCreates(const std::string& key, const api::TrainingJob& job,
                                                       planner::Plan& plan, kube::Clock::Duration& wait) {
  std::optional<RefusedCreates> refused;
  {
    std::lock_guard lock(refused_mutex_);
    if (auto it = refused_.find(key); it != refused_.end()) {
      refused = it->second;
    }
  }
  if (!refused) {
    return RefusalState::kNone;
  }
  const bool creates = std::any_of(plan.actions.begin(), plan.actions.end(), [](const planner::Action& action) {
    return std::holds_alternative<planner::CreateObject>(action);
  });
  if (refused->uid != job.metadata.uid || !creates) {
    // Another job by the same name, or nothing left to create (the Pods exist, the job was
    // suspended or finished): the planner sets Created as it sees it.
    ForgetRefusal(key);
    return RefusalState::kNone;
  }
  KeepRefusalCondition(job, refused->refusal, plan);
  const kube::Clock::TimePoint now = clock_.Now();
  if (now >= refused->retry_at) {
    return RefusalState::kRetrying;
  }
  std::erase_if(plan.actions, [](const planner::Action& action) {
    return std::holds_alternative<planner::CreateObject>(action) || AnnouncesCreates(action);
  });
  wait = refused->retry_at - now;
  return RefusalState::kHeld;
}

kube::Clock::Duration Controller::NoteRefusal(const std::string& key, const api::TrainingJob& job,
                                              const CreateRefusal& refusal) {
  bool announce = false;
  kube::Clock::Duration backoff{};
  {
    std::lock_guard lock(refused_mutex_);
    RefusedCreates& entry = refused_[key];
    if (entry.uid != job.metadata.uid) {
      entry = RefusedCreates{job.metadata.uid, {}, 0, {}};
    }
    announce = RefusalMessage(entry.refusal) != RefusalMessage(refusal) || entry.refusals == 0;
    entry.refusal = refusal;
    const double base = std::chrono::duration<double>(options_.refused_create_backoff).count();
    const double max = std::chrono::duration<double>(options_.refused_create_backoff_max).count();
    const double seconds = std::min(base * std::ldexp(1.0, std::min(entry.refusals, 40)), max);
    backoff = std::chrono::duration_cast<kube::Clock::Duration>(std::chrono::duration<double>(seconds));
    ++entry.refusals;
    entry.retry_at = clock_.Now() + backoff;
  }
  logger_.Warn("a create was refused; retrying with backoff",
               {{"job", key},
                {"reason", RefusalReason(refusal)},
                {"error", refusal.message},
                {"retry_in_seconds", std::chrono::duration<double>(backoff).count()}});
  if (announce) {
    applier_.RecordEvent(job, {"Warning", RefusalReason(refusal), RefusalMessage(refusal)});
  }
  return backoff;
}

void Controller::ForgetRefusal(const std::string& key) {
  std::lock_guard lock(refused_mutex_);
  refused_.erase(key);
}

std::string Controller::ReconcileGone(const std::string& key) {
  {
    // On a worker, not the informer's handler: a summary read may hold this lock for seconds.
    std::lock_guard lock(summary_mutex_);
    std::erase_if(summaries_, [&key](const auto& entry) { return entry.second.job == key; });
  }
  ForgetRefusal(key);
  expectations_.Forget(key);
  queue_.Forget(key);
  return "success";
}

namespace {

// A Pod whose trainer containers have all ended while its sidecar still runs: the last moment
// rank 0's sidecar can be asked for the job's final figures (the kubelet stops it next).
bool TrainerEndedSidecarRunning(const json& pod) {
  const json& status = pod.contains("status") ? pod["status"] : json::object();
  const json containers = status.value("containerStatuses", json::array());
  if (!containers.is_array() || containers.empty()) {
    return false;
  }
  for (const json& container : containers) {
    if (!container.is_object() || !container.contains("state") || !container["state"].contains("terminated")) {
      return false;
    }
  }
  for (const json& init : status.value("initContainerStatuses", json::array())) {
    if (init.is_object() && init.value("name", "") == contract::kSidecarContainerName) {
      return init.contains("state") && init["state"].contains("running");
    }
  }
  return false;
}

}  // namespace

std::chrono::seconds Controller::SummaryInterval(const SummaryRead& read) const {
  // Until the sidecar has the preflight's verdict (or while it cannot be read), a job that
  // trains for less than summary_interval would never show its fabric.
  constexpr std::chrono::seconds kUntilPreflightKnown{3};
  if (!read.summary || read.summary->preflight.empty()) {
    return std::min(kUntilPreflightKnown, options_.summary_interval);
  }
  return options_.summary_interval;
}

std::optional<api::CommunicationStatus> Controller::Summary(const api::TrainingJob& job,
                                                            const std::vector<ObjectPtr>& pods) {
  std::lock_guard lock(summary_mutex_);
  SummaryRead& read = summaries_[job.metadata.uid];
  read.job = job.Key();
  if (summary_reader_ == nullptr || job.status.state != "Running" || !job.status.ports) {
    return read.summary;
  }
  for (const ObjectPtr& pod : pods) {
    if (Label(*pod, planner::kRankLabel) != "0" ||
        Label(*pod, planner::kAttemptLabel) != std::to_string(job.status.restarts)) {
      continue;
    }
    const std::string ip = pod->contains("status") ? (*pod)["status"].value("podIP", "") : "";
    if (ip.empty()) {
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    // By uid: a gang restart's new rank-0 Pod may have the same name.
    const std::string uid = Meta(*pod).value("uid", "");
    // The final read: once per rank-0 Pod, whatever the interval, so status keeps the figures
    // of the whole run (the training telemetry of its last steps) after the sidecar is gone.
    const bool final = TrainerEndedSidecarRunning(*pod) && read.final_read_of != uid;
    const bool due = read.read_at == std::chrono::steady_clock::time_point{} ||
                     now - read.read_at >= SummaryInterval(read);
    if (!final && !due) {
      break;
    }
    read.read_at = now;
    if (final) {
      read.final_read_of = uid;
    }
    std::string error;
    if (auto summary = summary_reader_->Read(ip, job.status.ports->metrics, &error)) {
      read.summary = std::move(summary);
    } else {
      logger_.Warn("could not read the rank-0 summary", {{"job", job.Key()}, {"error", error}});
    }
    break;
  }
  return read.summary;
}

std::optional<std::string> Controller::QueueVerdict(const api::TrainingJob& job, const std::vector<ObjectPtr>& pods) {
  if (job.spec.run_policy.scheduling_policy.provider != api::SchedulingProvider::kKueue) {
    return std::nullopt;
  }
  const std::string attempt = std::to_string(job.status.restarts);
  const bool gated = std::any_of(pods.begin(), pods.end(), [&](const ObjectPtr& pod) {
    return Label(*pod, planner::kAttemptLabel) == attempt && planner::ReadPlacement(*pod).reason == "SchedulingGated";
  });
  if (!gated) {
    return std::nullopt;
  }
  // Kueue names a plain-Pod group's Workload after the group. v1beta2: Kueue 0.15 and later.
  static const kube::Resource kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", true};
  const std::string name = planner::KueueGroupName(job, job.status.restarts);
  json workload;
  try {
    workload = client_.Get(kWorkloads, job.metadata.namespace_, name);
  } catch (const kube::ApiError& e) {
    // Not made yet (Kueue makes it once every Pod of the group exists), or not readable: the
    // condition keeps the scheduler's words alone.
    if (!kube::IsNotFound(e)) {
      logger_.Warn("could not read the Kueue Workload", {{"job", job.Key()}, {"workload", name}, {"error", e.what()}});
    }
    return std::nullopt;
  }
  const json* conditions = workload.contains("status") ? &workload["status"]["conditions"] : nullptr;
  if (conditions == nullptr || !conditions->is_array()) {
    return "Workload " + name + " has no conditions yet";
  }
  for (const json& condition : *conditions) {
    if (condition.is_object() && condition.value("type", "") == "QuotaReserved" &&
        condition.value("status", "") == "False") {
      return "Workload " + name + " QuotaReserved=False (" + condition.value("reason", "") +
             "): " + condition.value("message", "");
    }
  }
  return std::nullopt;
}

std::string Controller::Reconcile(const std::string& key) {
  const ObjectPtr object = jobs_.Get(key);
  if (!object) {
    return ReconcileGone(key);
  }
  if (!expectations_.Satisfied(key, [&](const Expectation& e) { return ExpectationMet(key, e); })) {
    // The watch event that meets them enqueues the key; this is only the safety net.
    queue_.AddAfter(key, std::chrono::seconds(5));
    return "requeue";
  }
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(*object, &errors);
  if (!errors.empty()) {
    ForgetRefusal(key);  // nothing is created for it until the spec is fixed
    const std::string message = api::JoinErrors(errors);
    const json current = object->contains("status") ? (*object)["status"] : json();
    if (current.is_object() && current.value("state", "") == "Failed") {
      for (const json& condition : current.value("conditions", json::array())) {
        if (condition.is_object() && condition.value("reason", "") == "InvalidSpec" &&
            condition.value("message", "") == message) {
          return "success";  // already reported
        }
      }
    }
    logger_.Warn("invalid TrainingJob", {{"job", key}, {"error", message}});
    json updated = *object;
    updated["status"] = InvalidStatus(*object, message);
    try {
      client_.UpdateStatus(kube::TrainingJobs(), job.metadata.namespace_, updated);
      applier_.RecordEvent(job, {"Warning", std::string(planner::kFailed), "InvalidSpec: " + message});
    } catch (const kube::ApiError& e) {
      queue_.AddRateLimited(key);
      return kube::IsConflict(e) ? "conflict" : "error";
    }
    return "success";
  }
  if (job.metadata.deletion_timestamp.has_value()) {
    ForgetRefusal(key);
    return "success";  // garbage collection removes the children
  }

  planner::Observed observed;
  observed.job = job;
  std::vector<ObjectPtr> pods;
  for (const ObjectPtr& pod : pods_.ByIndex(key)) {
    if (planner::IsControlledBy(*pod, job)) {
      pods.push_back(pod);
      observed.pods.push_back(*pod);
    }
  }
  if (const ObjectPtr service = services_.Get(key); service && planner::IsControlledBy(*service, job)) {
    observed.service = *service;
  }
  if (options_.planner.network_policy) {
    const ObjectPtr policy = network_policies_.Get(job.metadata.namespace_ + "/" + planner::NetworkPolicyName(job));
    if (policy && planner::IsControlledBy(*policy, job)) {
      observed.network_policy = *policy;
    }
  }
  const ObjectPtr secret = secrets_.Get(job.metadata.namespace_ + "/" + planner::SecretName(job));
  if (secret && planner::IsControlledBy(*secret, job)) {
    observed.secret = *secret;
  } else {
    observed.fresh_token = FreshToken();
  }
  observed.summary = Summary(job, pods);
  observed.now = Now();
  observed.providers = providers_.Current();
  observed.queue_verdict = QueueVerdict(job, pods);

  planner::Plan plan;
  {
    std::lock_guard lock(ledger_mutex_);
    observed.ledger = &ledger_;
    plan = planner::MakePlan(observed, options_.planner);
    // Reserved before the status write: a block may stay reserved for a job whose write failed
    // (it is proposed to the same job again), but is never handed to a second job.
    if (plan.reserve_ports && !ledger_.Reserve(job.metadata.uid, *plan.reserve_ports)) {
      logger_.Error("the planner proposed a block another job holds", {{"job", key}});
      queue_.AddRateLimited(key);
      return "error";
    }
  }

  kube::Clock::Duration held_for{};
  const RefusalState refusal = HoldRefusedCreates(key, job, plan, held_for);
  const ApplyOutcome outcome = applier_.Apply(*object, job, plan);
  switch (outcome.result) {
    case ApplyOutcome::Result::kRefused:
      NoteRefusal(key, job, *outcome.refused);
      // Planned again at once, creates held: that pass writes the Created=False condition.
      queue_.Add(key);
      return "requeue";
    case ApplyOutcome::Result::kConflict:
      queue_.AddRateLimited(key);
      return "conflict";
    case ApplyOutcome::Result::kError:
      logger_.Warn("applying the plan failed", {{"job", key}, {"error", outcome.error}});
      queue_.AddRateLimited(key);
      return "error";
    case ApplyOutcome::Result::kDone:
      break;
  }
  if (plan.release_ports) {
    {
      std::lock_guard lock(ledger_mutex_);
      ledger_.Release(job.metadata.uid);
    }
    EnqueuePortWaiters();
  }
  queue_.Forget(key);
  if (refusal == RefusalState::kRetrying) {
    ForgetRefusal(key);  // every create went through; the next pass sets Created=True
    logger_.Info("refused creates went through", {{"job", key}});
  } else if (refusal == RefusalState::kHeld) {
    queue_.AddAfter(key, held_for);
  }
  auto requeue = plan.requeue_after;
  if (summary_reader_ != nullptr && job.status.state == "Running") {
    std::chrono::seconds interval = options_.summary_interval;
    {
      std::lock_guard lock(summary_mutex_);
      interval = SummaryInterval(summaries_[job.metadata.uid]);
    }
    requeue = requeue ? std::min(*requeue, interval) : interval;
  }
  if (requeue) {
    queue_.AddAfter(key, *requeue);
  }
  return "success";
}

void Controller::RefreshProviders() {
  if (!providers_.Refresh()) {
    return;
  }
  for (const ObjectPtr& job : jobs_.List()) {
    queue_.Add(ObjectKey(*job));
  }
}

void Controller::PublishGauges() {
  if (metrics_ == nullptr) {
    return;
  }
  std::map<std::string, int> states;
  for (const ObjectPtr& job : jobs_.List()) {
    std::string state = "Pending";
    if (job->contains("status") && (*job)["status"].is_object()) {
      state = (*job)["status"].value("state", "Pending");
    }
    ++states[state.empty() ? "Pending" : state];
  }
  metrics_->SetJobsByState(states);
  {
    // Only jobs still waiting to run: a finished or suspended job keeps its last Scheduled.
    std::map<std::string, int> unschedulable;
    for (const ObjectPtr& job : jobs_.List()) {
      const auto status = job->find("status");
      if (status == job->end() || !status->is_object()) {
        continue;
      }
      const std::string state = status->value("state", "");
      if (state == "Succeeded" || state == "Failed" || state == "Suspended") {
        continue;
      }
      for (const json& condition : status->value("conditions", json::array())) {
        if (condition.is_object() && condition.value("type", "") == planner::kScheduled &&
            condition.value("status", "") == "False") {
          ++unschedulable[condition.value("reason", "")];
        }
      }
    }
    metrics_->SetUnschedulableJobs(unschedulable);
  }
  {
    std::map<std::string, int> refused;
    std::lock_guard lock(refused_mutex_);
    for (const auto& [key, entry] : refused_) {
      ++refused[RefusalReason(entry.refusal)];
    }
    metrics_->SetJobsWithRefusedCreates(refused);
  }
  metrics_->SetQueueDepth(static_cast<double>(queue_.Depth()));
  std::lock_guard lock(ledger_mutex_);
  metrics_->SetPorts(static_cast<double>(ledger_.jobs() * contract::kPortsPerJob),
                     static_cast<double>(ledger_.capacity() * contract::kPortsPerJob));
}

}  // namespace ringleader::runtime
