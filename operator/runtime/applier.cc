// Applier: one plan's writes, in order, each remembered as an expectation.
#include "operator/runtime/applier.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <variant>

#include "operator/planner/children_builder.h"
#include "operator/runtime/operator_metrics.h"

namespace ringleader::runtime {

using nlohmann::json;

kube::Resource ChildResource(const std::string& kind, const std::string& api_version) {
  if (kind == planner::kPodGroupKind) {
    if (api_version == planner::kCoschedulingApiVersion) {
      return kube::CoschedulingPodGroups();
    }
    if (api_version == planner::kVolcanoApiVersion) {
      return kube::VolcanoPodGroups();
    }
    if (api_version == planner::kKubernetesApiVersion) {
      return kube::KubernetesPodGroups();
    }
    throw std::invalid_argument("the operator does not create PodGroups of " +
                                (api_version.empty() ? std::string("an unnamed apiVersion") : api_version));
  }
  if (kind == "Pod") {
    return kube::Pods();
  }
  if (kind == "Service") {
    return kube::Services();
  }
  if (kind == "Secret") {
    return kube::Secrets();
  }
  if (kind == "NetworkPolicy") {
    return kube::NetworkPolicies();
  }
  throw std::invalid_argument("the operator does not create objects of kind " + kind);
}

namespace {

// Event names only need to be unique within the namespace: the job's name and 64 random bits.
std::string EventName(const std::string& job_name) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(random()));
  return job_name + "." + suffix;
}

std::string Describe(const kube::ApiError& e) {
  return std::to_string(e.code()) + " " + (e.reason().empty() ? std::string("error") : e.reason()) +
         ": " + e.message();
}

// Refusals that the same request cannot get past until someone changes the cluster or the job:
// quota and admission webhooks (403), validation (422), a malformed request (400).
bool IsRefusal(const kube::ApiError& e) { return e.code() == 400 || e.code() == 403 || e.code() == 422; }

ApplyOutcome Refused(CreateRefusal refusal, std::string error) {
  ApplyOutcome outcome{ApplyOutcome::Result::kRefused, std::move(error), false, std::nullopt};
  outcome.refused = std::move(refusal);
  return outcome;
}

}  // namespace

Applier::Applier(kube::Client& client, Expectations& expectations, Logger& logger,
                 OperatorMetrics* metrics, std::string reporting_instance)
    : client_(client),
      expectations_(expectations),
      logger_(logger),
      metrics_(metrics),
      reporting_instance_(std::move(reporting_instance)) {}

ApplyOutcome Applier::Apply(const json& job_object, const api::TrainingJob& job,
                            const planner::Plan& plan) {
  const std::string key = job.Key();
  ApplyOutcome outcome;
  for (const planner::Action& action : plan.actions) {
    if (const auto* status = std::get_if<planner::UpdateStatus>(&action)) {
      json object = job_object;
      object["status"] = status->status;
      try {
        ++writes_.status;
        client_.UpdateStatus(kube::TrainingJobs(), job.metadata.namespace_, object);
        outcome.status_written = true;
        expectations_.Expect(key, {Expectation::Kind::kJobVersionGone, "TrainingJob",
                                   job.metadata.name, job.metadata.uid, job.metadata.resource_version});
      } catch (const kube::ApiError& e) {
        ++writes_.failed;
        if (kube::IsConflict(e)) {
          return {ApplyOutcome::Result::kConflict, "status: " + Describe(e), false, std::nullopt};
        }
        if (kube::IsNotFound(e)) {
          return {ApplyOutcome::Result::kDone, "", false, std::nullopt};  // deleted meanwhile; nothing to do
        }
        return {ApplyOutcome::Result::kError, "writing status: " + Describe(e), false, std::nullopt};
      }
    } else if (const auto* create = std::get_if<planner::CreateObject>(&action)) {
      ApplyOutcome created = CreateChild(job, create->object);
      if (created.result != ApplyOutcome::Result::kDone) {
        created.status_written = outcome.status_written;
        return created;
      }
    } else if (const auto* del = std::get_if<planner::DeleteObject>(&action)) {
      kube::DeleteOptions options;
      options.precondition_uid = del->uid;
      options.propagation_policy = kube::PropagationPolicy::kBackground;
      try {
        ++writes_.deletes;
        client_.Delete(ChildResource(del->kind), job.metadata.namespace_, del->name, options);
        expectations_.Expect(key, {Expectation::Kind::kDeleted, del->kind, del->name, del->uid, ""});
      } catch (const kube::ApiError& e) {
        // Gone already, or a newer object took the name (the uid precondition failed): either
        // way the object we meant to delete is not there.
        if (!kube::IsNotFound(e) && !kube::IsConflict(e)) {
          ++writes_.failed;
          return {ApplyOutcome::Result::kError,
                  "deleting " + del->kind + " " + del->name + ": " + Describe(e), outcome.status_written, std::nullopt};
        }
      }
    } else if (const auto* event = std::get_if<planner::RecordEvent>(&action)) {
      RecordEvent(job, *event);
    } else if (std::holds_alternative<planner::DeleteJob>(action)) {
      kube::DeleteOptions options;
      options.precondition_uid = job.metadata.uid;
      options.propagation_policy = kube::PropagationPolicy::kBackground;
      try {
        ++writes_.deletes;
        client_.Delete(kube::TrainingJobs(), job.metadata.namespace_, job.metadata.name, options);
      } catch (const kube::ApiError& e) {
        if (!kube::IsNotFound(e) && !kube::IsConflict(e)) {
          ++writes_.failed;
          return {ApplyOutcome::Result::kError, "deleting the finished job: " + Describe(e),
                  outcome.status_written, std::nullopt};
        }
      }
    }
  }
  return outcome;
}

ApplyOutcome Applier::CreateChild(const api::TrainingJob& job, const json& object) {
  const std::string kind = object.value("kind", "");
  const std::string name = object["metadata"].value("name", "");
  const std::string key = job.Key();
  const kube::Resource resource = ChildResource(kind, object.value("apiVersion", ""));
  // No informer watches PodGroups (their CRDs may come and go): the planner asks for one only
  // with the Pods it precedes, and an existing one counts as created, so there is nothing to wait for.
  const bool cached = kind != planner::kPodGroupKind;
  try {
    ++writes_.creates;
    client_.Create(resource, job.metadata.namespace_, object);
    if (cached) {
      expectations_.Expect(key, {Expectation::Kind::kCreated, kind, name, "", ""});
    }
    return {};
  } catch (const kube::ApiError& e) {
    ++writes_.failed;
    if (IsRefusal(e)) {
      const std::string refused_by = !e.reason().empty() ? e.reason()
                                     : e.code() == 400   ? "BadRequest"
                                     : e.code() == 403   ? "Forbidden"
                                                         : "Invalid";
      if (metrics_ != nullptr) {
        metrics_->CountCreateRefused(kind, refused_by);
      }
      return Refused({kind, name, refused_by, e.message()}, "creating " + kind + " " + name + ": " + Describe(e));
    }
    if (!kube::IsAlreadyExists(e)) {
      return {ApplyOutcome::Result::kError, "creating " + kind + " " + name + ": " + Describe(e), false, std::nullopt};
    }
  }
  // The name is taken. Ours (a cache that lags behind): wait for the cache. Someone else's: say
  // so on the job, since the planner would otherwise try again forever.
  try {
    json existing = client_.Get(resource, job.metadata.namespace_, name);
    if (planner::IsControlledBy(existing, job)) {
      if (!cached) {
        return RefreshPodGroup(job, std::move(existing), object);
      }
      expectations_.Expect(key, {Expectation::Kind::kCreated, kind, name, "", ""});
      return {};
    }
  } catch (const kube::ApiError& e) {
    if (!kube::IsNotFound(e)) {
      return {ApplyOutcome::Result::kError, "reading " + kind + " " + name + ": " + Describe(e), false, std::nullopt};
    }
    return {ApplyOutcome::Result::kError, kind + " " + name + " was deleted while being created", false, std::nullopt};
  }
  // The controller records the Event and the condition, once per refusal rather than per try.
  const std::string message = kind + " " + name + " already exists and is not owned by this TrainingJob; "
                              "delete or rename it";
  if (metrics_ != nullptr) {
    metrics_->CountCreateRefused(kind, kNameConflict);
  }
  return Refused({kind, name, std::string(kNameConflict), message}, message);
}

ApplyOutcome Applier::RefreshPodGroup(const api::TrainingJob& job, json existing, const json& wanted) {
  const json& spec = wanted.contains("spec") ? wanted["spec"] : json::object();
  json& current = existing["spec"];
  if (!current.is_object()) {
    current = json::object();
  }
  bool changed = false;
  // The fields ringleader sets; others (a provider's defaults, minResources) stay as they are.
  for (const char* field : {"minMember", "scheduleTimeoutSeconds", "queue", "priorityClassName"}) {
    const auto want = spec.find(field);
    const auto have = current.find(field);
    if (want != spec.end() && (have == current.end() || *have != *want)) {
      current[field] = *want;
      changed = true;
    } else if (want == spec.end() && have != current.end() && std::string_view(field) != "queue") {
      current.erase(field);  // Volcano defaults the queue itself; a cleared one stays its default
      changed = true;
    }
  }
  if (!changed) {
    return {};
  }
  const std::string kind = wanted.value("kind", "");
  const std::string name = wanted["metadata"].value("name", "");
  try {
    ++writes_.creates;  // counted with the create it completes
    client_.Update(ChildResource(kind, wanted.value("apiVersion", "")), job.metadata.namespace_, existing);
    logger_.Info("updated the job's PodGroup to its spec", {{"job", job.Key()}, {"podgroup", name}});
    return {};
  } catch (const kube::ApiError& e) {
    ++writes_.failed;
    // A conflict means someone (the provider's controller) wrote it meanwhile: plan again.
    return {ApplyOutcome::Result::kError, "updating " + kind + " " + name + ": " + Describe(e), false, std::nullopt};
  }
}

void Applier::RecordEvent(const api::TrainingJob& job, const planner::RecordEvent& event) {
  const std::string now = api::FormatTime(std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  const json object = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", EventName(job.metadata.name)}, {"namespace", job.metadata.namespace_}}},
      {"involvedObject",
       {{"apiVersion", "ringleader.dev/v1alpha1"},
        {"kind", "TrainingJob"},
        {"name", job.metadata.name},
        {"namespace", job.metadata.namespace_},
        {"uid", job.metadata.uid},
        {"resourceVersion", job.metadata.resource_version}}},
      {"type", event.type},
      {"reason", event.reason},
      {"message", event.message},
      {"source", {{"component", "ringleader-operator"}}},
      {"reportingComponent", "ringleader.dev/operator"},
      {"reportingInstance", reporting_instance_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  if (metrics_ != nullptr) {
    metrics_->CountEvent(event.type, event.reason);
  }
  try {
    ++writes_.events;
    client_.Create(kube::Events(), job.metadata.namespace_, object);
  } catch (const kube::ApiError& e) {
    // An Event is a courtesy; losing one must not stop the reconcile.
    ++writes_.failed;
    logger_.Warn("could not record event",
                 {{"job", job.Key()}, {"reason", event.reason}, {"error", Describe(e)}});
  }
}

}  // namespace ringleader::runtime
