// JSON <-> TrainingJob. Parsing reads typed fields and keeps the whole object in `raw`; writing
// overlays the typed fields on `raw`, so unknown fields and the pod template survive untouched.
#include "operator/api/trainingjob.h"

#include <algorithm>
#include <ctime>

#include "operator/api/quantity.h"

namespace ringleader::api {
namespace {

using nlohmann::json;

std::string Describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 64) {
    text = text.substr(0, 61) + "...";
  }
  return text;
}

// Reads typed fields out of one JSON object, recording a FieldError for each wrong type.
class Reader {
 public:
  Reader(const json& object, std::string path, FieldErrors* errors)
      : object_(object), path_(std::move(path)), errors_(errors) {}

  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  const json* Find(std::string_view key) const {
    if (!object_.is_object()) {
      return nullptr;
    }
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  void Fail(std::string_view key, const std::string& message) const {
    errors_->push_back({Path(key), message});
  }

  void Int(std::string_view key, std::int64_t* out) const {
    if (const json* value = Find(key)) {
      if (value->is_number_unsigned() &&
          value->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        Fail(key, "must be at most 9223372036854775807, got " + Describe(*value));
      } else if (value->is_number_integer()) {
        *out = value->get<std::int64_t>();
      } else {
        Fail(key, "must be an integer, got " + Describe(*value));
      }
    }
  }
  void OptionalInt(std::string_view key, std::optional<std::int64_t>* out) const {
    if (Find(key) != nullptr) {
      std::int64_t value = 0;
      const std::size_t before = errors_->size();
      Int(key, &value);
      if (errors_->size() == before) {
        *out = value;
      }
    }
  }
  void OptionalBool(std::string_view key, std::optional<bool>* out) const {
    if (Find(key) != nullptr) {
      bool value = false;
      const std::size_t before = errors_->size();
      Bool(key, &value);
      if (errors_->size() == before) {
        *out = value;
      }
    }
  }
  void Bool(std::string_view key, bool* out) const {
    if (const json* value = Find(key)) {
      if (value->is_boolean()) {
        *out = value->get<bool>();
      } else {
        Fail(key, "must be true or false, got " + Describe(*value));
      }
    }
  }
  void String(std::string_view key, std::string* out) const {
    if (const json* value = Find(key)) {
      if (value->is_string()) {
        *out = value->get<std::string>();
      } else {
        Fail(key, "must be a string, got " + Describe(*value));
      }
    }
  }
  // An integer, or a string holding a Kubernetes quantity ("64Mi").
  void Quantity(std::string_view key, std::int64_t* out) const {
    const json* value = Find(key);
    if (value == nullptr) {
      return;
    }
    if (value->is_number_integer()) {
      *out = value->get<std::int64_t>();
    } else if (value->is_string()) {
      if (auto parsed = ParseIntegerQuantity(value->get<std::string>())) {
        *out = *parsed;
      } else {
        Fail(key, "must be a whole non-negative quantity such as 64Mi or 10G, got " +
                      Describe(*value));
      }
    } else {
      Fail(key, "must be an integer or a quantity string such as 64Mi, got " + Describe(*value));
    }
  }
  void Time(std::string_view key, std::optional<api::Time>* out) const {
    std::string text;
    String(key, &text);
    if (text.empty()) {
      return;
    }
    *out = ParseTime(text);
    if (!out->has_value()) {
      Fail(key, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z, got \"" + text + "\"");
    }
  }
  // A nested object; a present non-object is an error and reads as empty.
  Reader Object(std::string_view key) const {
    const json* value = Find(key);
    if (value != nullptr && !value->is_object()) {
      Fail(key, "must be an object, got " + Describe(*value));
      value = nullptr;
    }
    return Reader(value == nullptr ? Empty() : *value, Path(key), errors_);
  }
  void StringMap(std::string_view key, std::map<std::string, std::string>* out) const {
    const json* value = Find(key);
    if (value == nullptr) {
      return;
    }
    if (!value->is_object()) {
      Fail(key, "must be a map of strings, got " + Describe(*value));
      return;
    }
    for (const auto& [name, entry] : value->items()) {
      if (entry.is_string()) {
        (*out)[name] = entry.get<std::string>();
      } else {
        errors_->push_back({Path(key) + "." + name, "must be a string, got " + Describe(entry)});
      }
    }
  }
  const json& raw() const { return object_; }
  const std::string& path() const { return path_; }
  FieldErrors* errors() const { return errors_; }

 private:
  static const json& Empty() {
    static const json kEmpty = json::object();
    return kEmpty;
  }
  const json& object_;
  std::string path_;
  FieldErrors* errors_;
};

Backend ParseBackend(const Reader& reader) {
  std::string name = "auto";
  reader.String("backend", &name);
  if (name == "nccl") {
    return Backend::kNccl;
  }
  if (name == "gloo") {
    return Backend::kGloo;
  }
  if (name != "auto") {
    reader.Fail("backend", "must be one of auto, nccl, gloo, got \"" + name + "\"");
  }
  return Backend::kAuto;
}

SuccessPolicy ParseSuccessPolicy(const Reader& policy) {
  std::string name = "AllRanks";
  policy.String("successPolicy", &name);
  if (name == "RankZero") {
    return SuccessPolicy::kRankZero;
  }
  if (name != "AllRanks") {
    policy.Fail("successPolicy", "must be one of AllRanks, RankZero, got \"" + name + "\"");
  }
  return SuccessPolicy::kAllRanks;
}

StallAction ParseStallAction(const Reader& telemetry) {
  std::string name = "Report";
  telemetry.String("onStall", &name);
  if (name == "Restart") {
    return StallAction::kRestart;
  }
  if (name != "Report") {
    telemetry.Fail("onStall", "must be one of Report, Restart, got \"" + name + "\"");
  }
  return StallAction::kReport;
}

TrainerStore ParseTrainerStore(const Reader& comm) {
  std::string name = "Sidecar";
  comm.String("trainerStore", &name);
  if (name == "Trainer") {
    return TrainerStore::kTrainer;
  }
  if (name != "Sidecar") {
    comm.Fail("trainerStore", "must be one of Sidecar, Trainer, got \"" + name + "\"");
  }
  return TrainerStore::kSidecar;
}

FailureAction ParseAction(const Reader& rule) {
  std::string name;
  rule.String("action", &name);
  if (name == "FailJob") {
    return FailureAction::kFailJob;
  }
  if (name == "Ignore") {
    return FailureAction::kIgnore;
  }
  if (name != "RestartJob") {
    rule.Fail("action", name.empty() ? "is required: one of FailJob, RestartJob, Ignore"
                                     : "must be one of FailJob, RestartJob, Ignore, got \"" + name + "\"");
  }
  return FailureAction::kRestartJob;
}

ExitCodeRequirement ParseExitCodes(const Reader& on) {
  ExitCodeRequirement out;
  if (on.Find("containerName") != nullptr) {
    std::string name;
    on.String("containerName", &name);
    out.container_name = name;
  }
  std::string op;
  on.String("operator", &op);
  if (op == "NotIn") {
    out.op = ExitCodeOperator::kNotIn;
  } else if (op != "In") {
    on.Fail("operator", op.empty() ? "is required: In or NotIn" : "must be In or NotIn, got \"" + op + "\"");
  }
  const json* values = on.Find("values");
  if (values == nullptr) {
    on.Fail("values", "is required: the exit codes to match");
  } else if (!values->is_array()) {
    on.Fail("values", "must be a list of exit codes, got " + Describe(*values));
  } else {
    for (std::size_t i = 0; i < values->size(); ++i) {
      const json& value = (*values)[i];
      if (value.is_number_integer() && !(value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX)) {
        out.values.push_back(value.get<std::int64_t>());
      } else {
        on.errors()->push_back({on.Path("values") + "[" + std::to_string(i) + "]",
                                "must be an integer exit code, got " + Describe(value)});
      }
    }
  }
  return out;
}

std::vector<PodConditionPattern> ParsePodConditions(const Reader& rule) {
  std::vector<PodConditionPattern> out;
  const json* patterns = rule.Find("onPodConditions");
  if (!patterns->is_array()) {
    rule.Fail("onPodConditions", "must be a list of {type, status}, got " + Describe(*patterns));
    return out;
  }
  for (std::size_t i = 0; i < patterns->size(); ++i) {
    const std::string path = rule.Path("onPodConditions") + "[" + std::to_string(i) + "]";
    if (!(*patterns)[i].is_object()) {
      rule.errors()->push_back({path, "must be an object {type, status}, got " + Describe((*patterns)[i])});
      continue;
    }
    const Reader item((*patterns)[i], path, rule.errors());
    PodConditionPattern pattern;
    item.String("type", &pattern.type);
    item.String("status", &pattern.status);
    out.push_back(std::move(pattern));
  }
  return out;
}

FailurePolicy ParseFailurePolicy(const Reader& policy) {
  FailurePolicy out;
  if (const json* rules = policy.Find("rules")) {
    if (!rules->is_array()) {
      policy.Fail("rules", "must be a list of rules, got " + Describe(*rules));
    } else {
      for (std::size_t i = 0; i < rules->size(); ++i) {
        const std::string path = policy.Path("rules") + "[" + std::to_string(i) + "]";
        if (!(*rules)[i].is_object()) {
          policy.errors()->push_back({path, "must be a rule object, got " + Describe((*rules)[i])});
          continue;
        }
        const Reader rule((*rules)[i], path, policy.errors());
        FailurePolicyRule parsed;
        parsed.action = ParseAction(rule);
        if (rule.Find("onExitCodes") != nullptr) {
          parsed.on_exit_codes = ParseExitCodes(rule.Object("onExitCodes"));
        }
        if (rule.Find("onPodConditions") != nullptr) {
          parsed.on_pod_conditions = ParsePodConditions(rule);
        }
        out.rules.push_back(std::move(parsed));
      }
    }
  }
  const Reader backoff = policy.Object("restartBackoff");
  backoff.Int("initialSeconds", &out.restart_backoff.initial_seconds);
  backoff.Int("maxSeconds", &out.restart_backoff.max_seconds);
  return out;
}

SchedulingProvider ParseProvider(const Reader& policy) {
  std::string name = "None";
  policy.String("provider", &name);
  if (name == "Coscheduling") {
    return SchedulingProvider::kCoscheduling;
  }
  if (name == "Volcano") {
    return SchedulingProvider::kVolcano;
  }
  if (name == "Kueue") {
    return SchedulingProvider::kKueue;
  }
  if (name == "Kubernetes") {
    return SchedulingProvider::kKubernetes;
  }
  if (name != "None") {
    policy.Fail("provider", "must be one of None, Coscheduling, Volcano, Kueue, Kubernetes, got \"" + name + "\"");
  }
  return SchedulingProvider::kNone;
}

// An optional string field: present (even empty) means set, so Validate() can name an empty one.
void OptionalString(const Reader& reader, std::string_view key, std::optional<std::string>* out) {
  if (reader.Find(key) != nullptr) {
    std::string value;
    reader.String(key, &value);
    *out = value;
  }
}

SchedulingPolicy ParseSchedulingPolicy(const Reader& policy) {
  SchedulingPolicy out;
  out.provider = ParseProvider(policy);
  policy.OptionalInt("minAvailable", &out.min_available);
  policy.OptionalInt("scheduleTimeoutSeconds", &out.schedule_timeout_seconds);
  OptionalString(policy, "queue", &out.queue);
  OptionalString(policy, "priorityClassName", &out.priority_class_name);
  OptionalString(policy, "schedulerName", &out.scheduler_name);
  if (policy.Find("topology") != nullptr) {
    const Reader topology = policy.Object("topology");
    TopologyPolicy parsed;
    std::string mode;
    topology.String("mode", &mode);
    if (mode == "Preferred") {
      parsed.mode = TopologyMode::kPreferred;
    } else if (mode != "Required") {
      topology.Fail("mode", "must be Required or Preferred, got \"" + mode + "\"");
    }
    topology.String("key", &parsed.key);
    out.topology = parsed;
  }
  return out;
}

// spec.elasticPolicy: unset (a rigid job) when absent; minReplicas and maxReplicas are required,
// as the CRD says.
std::optional<ElasticPolicy> ParseElasticPolicy(const Reader& spec) {
  if (spec.Find("elasticPolicy") == nullptr) {
    return std::nullopt;
  }
  if (!spec.Find("elasticPolicy")->is_object()) {
    spec.Object("elasticPolicy");  // records the type error
    return std::nullopt;
  }
  const Reader elastic = spec.Object("elasticPolicy");
  ElasticPolicy out;
  for (const char* required : {"minReplicas", "maxReplicas"}) {
    if (elastic.Find(required) == nullptr) {
      elastic.Fail(required, "is required in an elasticPolicy");
    }
  }
  elastic.Int("minReplicas", &out.min_replicas);
  elastic.Int("maxReplicas", &out.max_replicas);
  elastic.Int("maxRestarts", &out.max_restarts);
  elastic.Int("minReplicasTimeoutSeconds", &out.min_replicas_timeout_seconds);
  return out;
}

TrainingJobSpec ParseSpec(const Reader& spec) {
  TrainingJobSpec out;
  spec.Int("replicas", &out.replicas);
  spec.Int("gpusPerReplica", &out.gpus_per_replica);
  spec.OptionalInt("processesPerReplica", &out.processes_per_replica);
  if (const json* tmpl = spec.Find("template")) {
    if (tmpl->is_object()) {
      out.template_ = *tmpl;
    } else {
      spec.Fail("template", "must be a PodTemplateSpec object, got " + Describe(*tmpl));
    }
  }
  spec.Object("networking").OptionalBool("hostNetwork", &out.host_network);

  const Reader comm = spec.Object("communication");
  out.communication.backend = ParseBackend(comm);
  out.communication.trainer_store = ParseTrainerStore(comm);
  const Reader preflight = comm.Object("preflight");
  PreflightSpec& pf = out.communication.preflight;
  preflight.Bool("enabled", &pf.enabled);
  preflight.Quantity("minBytes", &pf.min_bytes);
  preflight.Quantity("maxBytes", &pf.max_bytes);
  preflight.Int("stepFactor", &pf.step_factor);
  preflight.Quantity("minBusBandwidth", &pf.min_bus_bandwidth);
  preflight.Int("timeoutSeconds", &pf.timeout_seconds);
  const Reader monitor = comm.Object("monitor");
  MonitorSpec& mon = out.communication.monitor;
  monitor.Bool("enabled", &mon.enabled);
  monitor.Int("intervalSeconds", &mon.interval_seconds);
  monitor.Quantity("messageBytes", &mon.message_bytes);
  const Reader telemetry = comm.Object("telemetry");
  telemetry.Bool("enabled", &out.communication.telemetry.enabled);
  telemetry.Int("stallSeconds", &out.communication.telemetry.stall_seconds);
  out.communication.telemetry.on_stall = ParseStallAction(telemetry);

  const Reader policy = spec.Object("runPolicy");
  policy.Int("backoffLimit", &out.run_policy.backoff_limit);
  policy.OptionalInt("activeDeadlineSeconds", &out.run_policy.active_deadline_seconds);
  policy.OptionalInt("ttlSecondsAfterFinished", &out.run_policy.ttl_seconds_after_finished);
  policy.Bool("suspend", &out.run_policy.suspend);
  out.run_policy.success_policy = ParseSuccessPolicy(policy);
  out.run_policy.failure_policy = ParseFailurePolicy(policy.Object("failurePolicy"));
  out.run_policy.scheduling_policy = ParseSchedulingPolicy(policy.Object("schedulingPolicy"));
  out.elastic_policy = ParseElasticPolicy(spec);
  return out;
}

ObjectMeta ParseMeta(const Reader& meta) {
  ObjectMeta out;
  meta.String("name", &out.name);
  meta.String("namespace", &out.namespace_);
  meta.String("uid", &out.uid);
  meta.String("resourceVersion", &out.resource_version);
  meta.Int("generation", &out.generation);
  meta.Time("creationTimestamp", &out.creation_timestamp);
  meta.Time("deletionTimestamp", &out.deletion_timestamp);
  meta.StringMap("labels", &out.labels);
  meta.StringMap("annotations", &out.annotations);
  return out;
}

// Sets or erases `key` so that an unset optional leaves no trace in the JSON.
template <typename T>
void SetOptional(json& object, const char* key, const std::optional<T>& value) {
  if (value.has_value()) {
    object[key] = *value;
  } else {
    object.erase(key);
  }
}

json QuantityJson(const json& original, std::int64_t value) {
  // Keep the user's spelling ("64Mi" vs 67108864) when it still means the same value.
  if (original.is_string()) {
    if (auto parsed = ParseIntegerQuantity(original.get<std::string>()); parsed == value) {
      return original;
    }
  } else if (original.is_number_integer() && original.get<std::int64_t>() == value) {
    return original;
  }
  return FormatQuantity(value);
}

json& ObjectAt(json& parent, const char* key) {
  json& child = parent[key];
  if (!child.is_object()) {
    child = json::object();
  }
  return child;
}

// The rules written over the user's own rule objects, so fields this version does not know
// survive in each.
json RulesToJson(const std::vector<FailurePolicyRule>& rules, const json& original) {
  json out = json::array();
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const FailurePolicyRule& rule = rules[i];
    json item = original.is_array() && i < original.size() && original[i].is_object() ? original[i]
                                                                                        : json::object();
    item["action"] = FailureActionName(rule.action);
    if (rule.on_exit_codes.has_value()) {
      json& on = ObjectAt(item, "onExitCodes");
      SetOptional(on, "containerName", rule.on_exit_codes->container_name);
      on["operator"] = ExitCodeOperatorName(rule.on_exit_codes->op);
      on["values"] = rule.on_exit_codes->values;
    } else {
      item.erase("onExitCodes");
    }
    if (rule.on_pod_conditions.has_value()) {
      const json before = item.value("onPodConditions", json());
      json patterns = json::array();
      for (std::size_t j = 0; j < rule.on_pod_conditions->size(); ++j) {
        const PodConditionPattern& pattern = (*rule.on_pod_conditions)[j];
        json entry = before.is_array() && j < before.size() && before[j].is_object() ? before[j]
                                                                                       : json::object();
        entry["type"] = pattern.type;
        entry["status"] = pattern.status;
        patterns.push_back(std::move(entry));
      }
      item["onPodConditions"] = std::move(patterns);
    } else {
      item.erase("onPodConditions");
    }
    out.push_back(std::move(item));
  }
  return out;
}

json ConditionToJson(const Condition& condition) {
  json out = {{"type", condition.type}, {"status", condition.status}};
  if (!condition.reason.empty()) {
    out["reason"] = condition.reason;
  }
  if (!condition.message.empty()) {
    out["message"] = condition.message;
  }
  out["lastTransitionTime"] = FormatTime(condition.last_transition_time);
  if (condition.observed_generation != 0) {
    out["observedGeneration"] = condition.observed_generation;
  }
  return out;
}

// Like the rest of status.communication: empty strings, and a bandwidth's bytes with its
// human form, are left out.
json TrainingToJson(const TrainingCommunicationStatus& training) {
  json out = json::object();
  if (!training.collective.empty()) {
    out["collective"] = training.collective;
  }
  if (!training.size.empty()) {
    out["size"] = training.size;
  }
  if (!training.bus_bandwidth.empty()) {
    out["busBandwidth"] = training.bus_bandwidth;
    out["busBandwidthBytes"] = training.bus_bandwidth_bytes;
  }
  out["ranksReporting"] = training.ranks_reporting;
  if (!training.slowest_rank.empty()) {
    out["slowestRank"] = training.slowest_rank;
  }
  if (!training.slowest_rank_bus_bandwidth.empty()) {
    out["slowestRankBusBandwidth"] = training.slowest_rank_bus_bandwidth;
    out["slowestRankBusBandwidthBytes"] = training.slowest_rank_bus_bandwidth_bytes;
  }
  return out;
}

}  // namespace

std::int64_t TrainingJobSpec::EffectiveProcessesPerReplica() const {
  if (processes_per_replica.has_value()) {
    return *processes_per_replica;
  }
  return gpus_per_replica > 0 ? gpus_per_replica : 1;
}

Backend TrainingJobSpec::EffectiveBackend() const {
  if (communication.backend != Backend::kAuto) {
    return communication.backend;
  }
  return gpus_per_replica > 0 ? Backend::kNccl : Backend::kGloo;
}

const Condition* TrainingJobStatus::FindCondition(std::string_view type) const {
  for (const Condition& condition : conditions) {
    if (condition.type == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool TrainingJobStatus::IsTrue(std::string_view type) const {
  const Condition* condition = FindCondition(type);
  return condition != nullptr && condition->status == "True";
}

std::chrono::seconds RestartBackoff::Delay(std::int64_t restart) const {
  std::int64_t delay = std::min(initial_seconds, max_seconds);
  for (std::int64_t k = 1; k < restart && delay < max_seconds; ++k) {
    delay = std::min(delay * 2, max_seconds);
  }
  return std::chrono::seconds(std::max<std::int64_t>(delay, 0));
}

std::string_view FailureActionName(FailureAction action) {
  switch (action) {
    case FailureAction::kFailJob: return "FailJob";
    case FailureAction::kRestartJob: return "RestartJob";
    case FailureAction::kIgnore: return "Ignore";
  }
  return "RestartJob";
}

std::string_view SuccessPolicyName(SuccessPolicy policy) {
  return policy == SuccessPolicy::kRankZero ? "RankZero" : "AllRanks";
}

std::string_view StallActionName(StallAction action) {
  return action == StallAction::kRestart ? "Restart" : "Report";
}

std::string_view TrainerStoreName(TrainerStore store) {
  return store == TrainerStore::kTrainer ? "Trainer" : "Sidecar";
}

std::string_view SchedulingProviderName(SchedulingProvider provider) {
  switch (provider) {
    case SchedulingProvider::kNone: return "None";
    case SchedulingProvider::kCoscheduling: return "Coscheduling";
    case SchedulingProvider::kVolcano: return "Volcano";
    case SchedulingProvider::kKueue: return "Kueue";
    case SchedulingProvider::kKubernetes: return "Kubernetes";
  }
  return "None";
}

std::optional<std::string> SchedulingPolicy::EffectiveSchedulerName() const {
  if (scheduler_name.has_value()) {
    return scheduler_name;
  }
  switch (provider) {
    case SchedulingProvider::kCoscheduling: return std::string(kCoschedulingSchedulerName);
    case SchedulingProvider::kVolcano: return std::string(kVolcanoSchedulerName);
    case SchedulingProvider::kNone:
    case SchedulingProvider::kKueue:
    case SchedulingProvider::kKubernetes: return std::nullopt;
  }
  return std::nullopt;
}

std::string_view ExitCodeOperatorName(ExitCodeOperator op) {
  return op == ExitCodeOperator::kNotIn ? "NotIn" : "In";
}

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kNccl: return "nccl";
    case Backend::kGloo: return "gloo";
  }
  return "auto";
}

TrainingJobStatus StatusFromJson(const json& status, FieldErrors* errors) {
  TrainingJobStatus out;
  const Reader reader(status, "status", errors);
  reader.Int("observedGeneration", &out.observed_generation);
  reader.String("state", &out.state);
  if (const json* conditions = reader.Find("conditions"); conditions && conditions->is_array()) {
    for (std::size_t i = 0; i < conditions->size(); ++i) {
      const Reader item((*conditions)[i], "status.conditions[" + std::to_string(i) + "]", errors);
      Condition condition;
      item.String("type", &condition.type);
      item.String("status", &condition.status);
      item.String("reason", &condition.reason);
      item.String("message", &condition.message);
      std::optional<Time> when;
      item.Time("lastTransitionTime", &when);
      condition.last_transition_time = when.value_or(Time{});
      item.Int("observedGeneration", &condition.observed_generation);
      out.conditions.push_back(std::move(condition));
    }
  }
  if (reader.Find("ports") != nullptr) {
    const Reader ports = reader.Object("ports");
    auto port = [&ports](std::string_view key) {
      std::int64_t value = 0;
      ports.Int(key, &value);
      return static_cast<std::int32_t>(value);
    };
    out.ports = JobPorts{.master = port("master"),
                         .rendezvous = port("rendezvous"),
                         .metrics = port("metrics"),
                         .spare = port("spare")};
  }
  reader.Bool("portsReleased", &out.ports_released);
  reader.String("masterAddr", &out.master_addr);
  const Reader replicas = reader.Object("replicas");
  replicas.Int("active", &out.replicas.active);
  replicas.Int("ready", &out.replicas.ready);
  replicas.Int("succeeded", &out.replicas.succeeded);
  replicas.Int("failed", &out.replicas.failed);
  reader.Int("restarts", &out.restarts);
  // Written before the failure policy existed, every restart was counted.
  out.counted_restarts = out.restarts;
  reader.Int("countedRestarts", &out.counted_restarts);
  reader.Int("elasticRestarts", &out.elastic_restarts);
  reader.Time("belowMinReplicasSince", &out.below_min_replicas_since);
  reader.String("selector", &out.selector);
  reader.Time("nextRestartTime", &out.next_restart_time);
  if (reader.Find("disruption") != nullptr) {
    const Reader item = reader.Object("disruption");
    Disruption disruption;
    item.Int("attempt", &disruption.attempt);
    item.String("pod", &disruption.pod);
    item.String("reason", &disruption.reason);
    item.String("message", &disruption.message);
    out.disruption = disruption;
  }
  reader.Time("startTime", &out.start_time);
  reader.Time("completionTime", &out.completion_time);
  if (reader.Find("communication") != nullptr) {
    const Reader comm = reader.Object("communication");
    CommunicationStatus summary;
    comm.String("backend", &summary.backend);
    comm.String("busBandwidth", &summary.bus_bandwidth);
    comm.String("lastAllReduceBusBandwidth", &summary.last_all_reduce_bus_bandwidth);
    comm.Int("lastAllReduceBusBandwidthBytes", &summary.last_all_reduce_bus_bandwidth_bytes);
    comm.Time("lastProbeTime", &summary.last_probe_time);
    comm.String("preflight", &summary.preflight);
    comm.String("slowestRank", &summary.slowest_rank);
    comm.String("transport", &summary.transport);
    if (comm.Find("training") != nullptr) {
      const Reader item = comm.Object("training");
      TrainingCommunicationStatus training;
      item.String("collective", &training.collective);
      item.String("size", &training.size);
      item.String("busBandwidth", &training.bus_bandwidth);
      item.Int("busBandwidthBytes", &training.bus_bandwidth_bytes);
      item.Int("ranksReporting", &training.ranks_reporting);
      item.String("slowestRank", &training.slowest_rank);
      item.String("slowestRankBusBandwidth", &training.slowest_rank_bus_bandwidth);
      item.Int("slowestRankBusBandwidthBytes", &training.slowest_rank_bus_bandwidth_bytes);
      summary.training = training;
    }
    out.communication = summary;
  }
  return out;
}

json StatusToJson(const TrainingJobStatus& status) {
  json out = json::object();
  out["observedGeneration"] = status.observed_generation;
  if (!status.state.empty()) {
    out["state"] = status.state;
  }
  if (!status.conditions.empty()) {
    json conditions = json::array();
    for (const Condition& condition : status.conditions) {
      conditions.push_back(ConditionToJson(condition));
    }
    out["conditions"] = std::move(conditions);
  }
  if (status.ports.has_value()) {
    out["ports"] = {{"master", status.ports->master},
                    {"rendezvous", status.ports->rendezvous},
                    {"metrics", status.ports->metrics},
                    {"spare", status.ports->spare}};
  }
  if (status.ports_released) {
    out["portsReleased"] = true;
  }
  if (!status.master_addr.empty()) {
    out["masterAddr"] = status.master_addr;
  }
  out["replicas"] = {{"active", status.replicas.active},
                     {"ready", status.replicas.ready},
                     {"succeeded", status.replicas.succeeded},
                     {"failed", status.replicas.failed}};
  out["restarts"] = status.restarts;
  out["countedRestarts"] = status.counted_restarts;
  // Elastic jobs' fields, left out while empty so a rigid job's status reads as before.
  if (status.elastic_restarts != 0) {
    out["elasticRestarts"] = status.elastic_restarts;
  }
  if (status.below_min_replicas_since) {
    out["belowMinReplicasSince"] = FormatTime(*status.below_min_replicas_since);
  }
  if (!status.selector.empty()) {
    out["selector"] = status.selector;
  }
  if (status.next_restart_time) {
    out["nextRestartTime"] = FormatTime(*status.next_restart_time);
  }
  if (status.disruption) {
    json disruption = {{"attempt", status.disruption->attempt}, {"pod", status.disruption->pod}};
    if (!status.disruption->reason.empty()) {
      disruption["reason"] = status.disruption->reason;
    }
    if (!status.disruption->message.empty()) {
      disruption["message"] = status.disruption->message;
    }
    out["disruption"] = std::move(disruption);
  }
  if (status.start_time) {
    out["startTime"] = FormatTime(*status.start_time);
  }
  if (status.completion_time) {
    out["completionTime"] = FormatTime(*status.completion_time);
  }
  if (status.communication) {
    const CommunicationStatus& comm = *status.communication;
    json summary = json::object();
    if (!comm.backend.empty()) {
      summary["backend"] = comm.backend;
    }
    if (!comm.bus_bandwidth.empty()) {
      summary["busBandwidth"] = comm.bus_bandwidth;
    }
    if (!comm.last_all_reduce_bus_bandwidth.empty()) {
      summary["lastAllReduceBusBandwidth"] = comm.last_all_reduce_bus_bandwidth;
      summary["lastAllReduceBusBandwidthBytes"] = comm.last_all_reduce_bus_bandwidth_bytes;
    }
    if (comm.last_probe_time) {
      summary["lastProbeTime"] = FormatTime(*comm.last_probe_time);
    }
    if (!comm.preflight.empty()) {
      summary["preflight"] = comm.preflight;
    }
    if (!comm.slowest_rank.empty()) {
      summary["slowestRank"] = comm.slowest_rank;
    }
    if (!comm.transport.empty()) {
      summary["transport"] = comm.transport;
    }
    if (comm.training) {
      summary["training"] = TrainingToJson(*comm.training);
    }
    out["communication"] = std::move(summary);
  }
  return out;
}

TrainingJob TrainingJob::FromJson(const json& object, FieldErrors* errors) {
  TrainingJob job;
  if (!object.is_object()) {
    errors->push_back({"<root>", "a TrainingJob must be a JSON object, got " + Describe(object)});
    return job;
  }
  job.raw = object;
  const Reader root(object, "", errors);
  std::string api_version;
  std::string kind;
  root.String("apiVersion", &api_version);
  root.String("kind", &kind);
  if (api_version != kApiVersion) {
    errors->push_back({"apiVersion", "must be " + std::string(kApiVersion) + ", got \"" +
                                         api_version + "\""});
  }
  if (kind != kKind) {
    errors->push_back({"kind", "must be TrainingJob, got \"" + kind + "\""});
  }
  job.metadata = ParseMeta(root.Object("metadata"));
  if (root.Find("spec") == nullptr) {
    errors->push_back({"spec", "is required"});
  } else if (root.Object("spec").Find("replicas") == nullptr) {
    errors->push_back({"spec.replicas", "is required"});
  }
  job.spec = ParseSpec(root.Object("spec"));
  if (const json* status = root.Find("status")) {
    job.status = StatusFromJson(*status, errors);
  }
  return job;
}

json TrainingJob::ToJson() const {
  json out = raw.is_object() ? raw : json::object();
  out["apiVersion"] = kApiVersion;
  out["kind"] = kKind;
  json& meta = ObjectAt(out, "metadata");
  meta["name"] = metadata.name;
  if (!metadata.namespace_.empty()) {
    meta["namespace"] = metadata.namespace_;
  }

  json& spec_json = ObjectAt(out, "spec");
  spec_json["replicas"] = spec.replicas;
  spec_json["gpusPerReplica"] = spec.gpus_per_replica;
  SetOptional(spec_json, "processesPerReplica", spec.processes_per_replica);
  spec_json["template"] = spec.template_.is_null() ? json::object() : spec.template_;
  SetOptional(ObjectAt(spec_json, "networking"), "hostNetwork", spec.host_network);

  json& comm = ObjectAt(spec_json, "communication");
  comm["backend"] = BackendName(spec.communication.backend);
  comm["trainerStore"] = TrainerStoreName(spec.communication.trainer_store);
  json& preflight = ObjectAt(comm, "preflight");
  const PreflightSpec& pf = spec.communication.preflight;
  preflight["enabled"] = pf.enabled;
  preflight["minBytes"] = QuantityJson(preflight.value("minBytes", json()), pf.min_bytes);
  preflight["maxBytes"] = QuantityJson(preflight.value("maxBytes", json()), pf.max_bytes);
  preflight["stepFactor"] = pf.step_factor;
  preflight["minBusBandwidth"] =
      QuantityJson(preflight.value("minBusBandwidth", json()), pf.min_bus_bandwidth);
  preflight["timeoutSeconds"] = pf.timeout_seconds;
  json& monitor = ObjectAt(comm, "monitor");
  const MonitorSpec& mon = spec.communication.monitor;
  monitor["enabled"] = mon.enabled;
  monitor["intervalSeconds"] = mon.interval_seconds;
  monitor["messageBytes"] = QuantityJson(monitor.value("messageBytes", json()), mon.message_bytes);
  json& telemetry = ObjectAt(comm, "telemetry");
  telemetry["enabled"] = spec.communication.telemetry.enabled;
  telemetry["stallSeconds"] = spec.communication.telemetry.stall_seconds;
  telemetry["onStall"] = StallActionName(spec.communication.telemetry.on_stall);

  json& policy = ObjectAt(spec_json, "runPolicy");
  policy["backoffLimit"] = spec.run_policy.backoff_limit;
  SetOptional(policy, "activeDeadlineSeconds", spec.run_policy.active_deadline_seconds);
  SetOptional(policy, "ttlSecondsAfterFinished", spec.run_policy.ttl_seconds_after_finished);
  policy["suspend"] = spec.run_policy.suspend;
  policy["successPolicy"] = SuccessPolicyName(spec.run_policy.success_policy);
  json& failure = ObjectAt(policy, "failurePolicy");
  const FailurePolicy& fp = spec.run_policy.failure_policy;
  if (!fp.rules.empty() || (failure.contains("rules") && failure["rules"].is_array())) {
    failure["rules"] = RulesToJson(fp.rules, failure.value("rules", json()));
  }
  json& backoff = ObjectAt(failure, "restartBackoff");
  backoff["initialSeconds"] = fp.restart_backoff.initial_seconds;
  backoff["maxSeconds"] = fp.restart_backoff.max_seconds;
  // Written only when the user wrote it or asks for a provider: older objects stay as they were.
  const SchedulingPolicy& sp = spec.run_policy.scheduling_policy;
  if (sp != SchedulingPolicy{} || policy.contains("schedulingPolicy")) {
    json& scheduling = ObjectAt(policy, "schedulingPolicy");
    scheduling["provider"] = SchedulingProviderName(sp.provider);
    SetOptional(scheduling, "minAvailable", sp.min_available);
    SetOptional(scheduling, "scheduleTimeoutSeconds", sp.schedule_timeout_seconds);
    SetOptional(scheduling, "queue", sp.queue);
    SetOptional(scheduling, "priorityClassName", sp.priority_class_name);
    SetOptional(scheduling, "schedulerName", sp.scheduler_name);
    if (sp.topology.has_value()) {
      scheduling["topology"] = {{"mode", sp.topology->mode == TopologyMode::kRequired ? "Required" : "Preferred"},
                                {"key", sp.topology->key}};
    }
  }

  if (spec.elastic_policy.has_value()) {
    json& elastic = ObjectAt(spec_json, "elasticPolicy");
    elastic["minReplicas"] = spec.elastic_policy->min_replicas;
    elastic["maxReplicas"] = spec.elastic_policy->max_replicas;
    elastic["maxRestarts"] = spec.elastic_policy->max_restarts;
    elastic["minReplicasTimeoutSeconds"] = spec.elastic_policy->min_replicas_timeout_seconds;
  } else {
    spec_json.erase("elasticPolicy");
  }

  if (out.contains("status") || status != TrainingJobStatus{}) {
    out["status"] = StatusToJson(status);
  }
  return out;
}

std::string FormatTime(Time time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::array<char, 32> buffer{};
  std::strftime(buffer.data(), buffer.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer.data();
}

namespace {

// Reads exactly `width` digits at `pos`; -1 if any is not a digit.
int Digits(std::string_view text, std::size_t pos, std::size_t width) {
  if (pos + width > text.size()) {
    return -1;
  }
  int value = 0;
  for (std::size_t i = pos; i < pos + width; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return -1;
    }
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<Time> ParseTime(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS, an optional fraction, then Z or +HH:MM / -HH:MM.
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
      text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const int year = Digits(text, 0, 4);
  const int month = Digits(text, 5, 2);
  const int day = Digits(text, 8, 2);
  const int hour = Digits(text, 11, 2);
  const int minute = Digits(text, 14, 2);
  const int second = Digits(text, 17, 2);
  // system_clock counts nanoseconds in int64: about 1678 to 2262.
  if (year < 1678 || year > 2261 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  if (rest[0] == '.') {
    std::size_t i = 1;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      ++i;
    }
    if (i == 1) {
      return std::nullopt;
    }
    rest.remove_prefix(i);
  }
  int offset_seconds = 0;
  if (rest == "Z" || rest == "z") {
    offset_seconds = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const int hours = Digits(rest, 1, 2);
    const int minutes = Digits(rest, 4, 2);
    if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59) {
      return std::nullopt;
    }
    offset_seconds = (hours * 60 + minutes) * 60 * (rest[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) {
    return std::nullopt;
  }
  const auto midnight = std::chrono::sys_days{date};
  return Time{midnight} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second - offset_seconds};
}

}  // namespace ringleader::api
