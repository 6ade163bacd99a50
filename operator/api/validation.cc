// TrainingJob validation: the CRD's schema bounds and CEL rules, plus what only the operator
// knows (its port range, the env names it reserves, the Pod fields it owns).
#include "operator/api/validation.h"

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "operator/api/quantity.h"
#include "sidecar/contract/contract.h"

namespace ringleader::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxReplicas = 16384;
constexpr std::int64_t kMaxPreflightBytes = std::int64_t{16} << 30;
constexpr std::int64_t kMaxMonitorBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMinMessageBytes = 4;  // one float32 element
// The failure policy's bounds, as batch/v1 Job's podFailurePolicy has them.
constexpr std::size_t kMaxFailureRules = 20;
constexpr std::size_t kMaxExitCodeValues = 255;
constexpr std::size_t kMaxPodConditionPatterns = 20;
constexpr std::size_t kMaxConditionTypeLength = 316;  // a 253-character prefix, '/', 63 characters
constexpr std::int64_t kMaxBackoffInitialSeconds = 3600;
constexpr std::int64_t kMaxBackoffSeconds = 86400;
constexpr std::int64_t kMaxElasticRestarts = 10000;

// Volumes the operator adds to every Pod.
constexpr std::string_view kTokenVolume = "ringleader-token";
constexpr std::string_view kRunVolume = "ringleader-run";
constexpr std::string_view kProfilerVolume = "ringleader-profiler";  // with telemetry on

class Checker {
 public:
  explicit Checker(FieldErrors* errors) : errors_(errors) {}

  void Range(const std::string& path, std::int64_t value, std::int64_t low, std::int64_t high) {
    if (value < low) {
      Add(path, "must be at least " + std::to_string(low) + ", got " + std::to_string(value));
    } else if (value > high) {
      Add(path, "must be at most " + std::to_string(high) + ", got " + std::to_string(value));
    }
  }
  void Add(std::string path, std::string message) {
    errors_->push_back({std::move(path), std::move(message)});
  }

 private:
  FieldErrors* errors_;
};

bool IsDnsLabel(std::string_view name) {
  if (name.empty() || name.size() > 63 || !(name.front() >= 'a' && name.front() <= 'z')) {
    return false;
  }
  if (name.back() == '-') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool IsReservedEnv(std::string_view name) {
  const auto& reserved = contract::env::kReservedTrainerEnv;
  return std::find(reserved.begin(), reserved.end(), name) != reserved.end() ||
         name.starts_with(contract::env::kReservedPrefix);
}

std::string Quoted(const json& value) {
  return value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
}

void CheckMetadata(const TrainingJob& job, Checker& check) {
  const std::string& name = job.metadata.name;
  if (name.empty()) {
    check.Add("metadata.name", "is required");
    return;
  }
  // Pod hostnames are <name>-<rank>, a 63-character DNS label. Pod names add -attempt-<k> from the
  // first gang restart on, but a Pod name is a DNS subdomain (253 characters): no room needed here.
  // An elastic job's largest rank is maxReplicas - 1, whatever its size today.
  const std::int64_t most_replicas =
      std::max(job.spec.replicas, job.spec.elastic_policy ? job.spec.elastic_policy->max_replicas : 0);
  const std::size_t suffix = std::to_string(std::max<std::int64_t>(most_replicas - 1, 0)).size() + 1;
  if (!IsDnsLabel(name)) {
    check.Add("metadata.name",
              "must be a DNS label (lowercase letters, digits and '-', starting with a letter), "
              "got \"" + name + "\"");
  } else if (name.size() + suffix > 63) {
    check.Add("metadata.name", "must be at most " + std::to_string(63 - suffix) +
                                   " characters so Pod hostnames <name>-<rank> fit in 63, got " +
                                   std::to_string(name.size()));
  }
}

void CheckPort(const std::string& path, const json& value, const ValidationOptions& options,
               Checker& check) {
  if (!value.is_number_integer()) {
    check.Add(path, "must be an integer, got " + Quoted(value));
    return;
  }
  const std::int64_t port = value.get<std::int64_t>();
  if (port < 1 || port > 65535) {
    check.Add(path, "must be between 1 and 65535, got " + std::to_string(port));
  } else if (port >= options.port_range_first && port <= options.port_range_last) {
    check.Add(path, "lies in ringleader's port range " + std::to_string(options.port_range_first) +
                        "-" + std::to_string(options.port_range_last) +
                        ", where it could collide with another job's ports; got " +
                        std::to_string(port));
  }
}

// The sidecar and the preflight init container: a user container of either name would collide
// with it, and plan.cc would read its status as ringleader's.
bool IsInjectedContainerName(const json& name) {
  return name == contract::kSidecarContainerName || name == contract::kPreflightContainerName;
}

std::string InjectedContainerMessage(const json& name) {
  return "\"" + name.get<std::string>() + "\" is the name of a container ringleader injects";
}

void CheckContainer(const json& container, const std::string& path,
                    const ValidationOptions& options, Checker& check) {
  if (!container.is_object()) {
    check.Add(path, "must be a container object, got " + Quoted(container));
    return;
  }
  const json name = container.value("name", json());
  if (!name.is_string() || name.get<std::string>().empty()) {
    check.Add(path + ".name", "is required");
  } else if (IsInjectedContainerName(name)) {
    check.Add(path + ".name", InjectedContainerMessage(name));
  }
  const json image = container.value("image", json());
  if (!image.is_string() || image.get<std::string>().empty()) {
    check.Add(path + ".image", "is required");
  }
  if (const json env = container.value("env", json()); !env.is_null()) {
    if (!env.is_array()) {
      check.Add(path + ".env", "must be a list, got " + Quoted(env));
    } else {
      for (std::size_t i = 0; i < env.size(); ++i) {
        const std::string entry = path + ".env[" + std::to_string(i) + "]";
        const json var_name = env[i].is_object() ? env[i].value("name", json()) : json();
        if (!var_name.is_string()) {
          check.Add(entry + ".name", "is required");
        } else if (IsReservedEnv(var_name.get<std::string>())) {
          check.Add(entry + ".name", var_name.get<std::string>() +
                                         " is set by ringleader for every trainer; remove it "
                                         "(ringleader never silently overrides user env)");
        }
      }
    }
  }
  if (const json ports = container.value("ports", json()); !ports.is_null()) {
    if (!ports.is_array()) {
      check.Add(path + ".ports", "must be a list, got " + Quoted(ports));
      return;
    }
    for (std::size_t i = 0; i < ports.size(); ++i) {
      const std::string entry = path + ".ports[" + std::to_string(i) + "]";
      if (!ports[i].is_object()) {
        check.Add(entry, "must be a port object, got " + Quoted(ports[i]));
        continue;
      }
      CheckPort(entry + ".containerPort", ports[i].value("containerPort", json()), options, check);
      if (ports[i].contains("hostPort")) {
        CheckPort(entry + ".hostPort", ports[i]["hostPort"], options, check);
      }
    }
  }
}

void CheckTemplate(const TrainingJob& job, const ValidationOptions& options, Checker& check) {
  const json& tmpl = job.spec.template_;
  if (!tmpl.is_object() || tmpl.empty()) {
    check.Add("spec.template", "is required: a PodTemplateSpec with at least one trainer container");
    return;
  }
  const json pod = tmpl.value("spec", json());
  if (!pod.is_object()) {
    check.Add("spec.template.spec", "is required: a Pod spec with at least one trainer container");
    return;
  }
  const json containers = pod.value("containers", json());
  if (!containers.is_array() || containers.empty()) {
    check.Add("spec.template.spec.containers", "must name at least one trainer container");
  } else {
    for (std::size_t i = 0; i < containers.size(); ++i) {
      CheckContainer(containers[i], "spec.template.spec.containers[" + std::to_string(i) + "]",
                     options, check);
    }
  }
  if (const json init = pod.value("initContainers", json()); init.is_array()) {
    for (std::size_t i = 0; i < init.size(); ++i) {
      if (const json name = init[i].is_object() ? init[i].value("name", json()) : json();
          IsInjectedContainerName(name)) {
        check.Add("spec.template.spec.initContainers[" + std::to_string(i) + "].name",
                  InjectedContainerMessage(name));
      }
    }
  }
  if (const json restart = pod.value("restartPolicy", json());
      !restart.is_null() && restart != "Never") {
    check.Add("spec.template.spec.restartPolicy",
              "must be Never or unset, because ringleader restarts the whole gang (see "
              "spec.runPolicy.backoffLimit); got " + Quoted(restart));
  }
  for (const char* owned : {"hostname", "subdomain"}) {
    if (pod.contains(owned)) {
      check.Add(std::string("spec.template.spec.") + owned,
                "is set by ringleader so each rank has a DNS name; remove it");
    }
  }
  if (pod.contains("hostNetwork")) {
    check.Add("spec.template.spec.hostNetwork",
              "use spec.networking.hostNetwork, so ringleader declares the job's host ports");
  }
  if (const json volumes = pod.value("volumes", json()); volumes.is_array()) {
    for (std::size_t i = 0; i < volumes.size(); ++i) {
      const json name = volumes[i].is_object() ? volumes[i].value("name", json()) : json();
      if (name == kTokenVolume || name == kRunVolume || name == kProfilerVolume) {
        check.Add("spec.template.spec.volumes[" + std::to_string(i) + "].name",
                  name.get<std::string>() + " is the name of a volume ringleader injects");
      }
    }
  }
}

void CheckCommunication(const TrainingJobSpec& spec, Checker& check) {
  const CommunicationSpec& comm = spec.communication;
  if (comm.backend == Backend::kNccl && spec.gpus_per_replica == 0) {
    check.Add("spec.communication.backend", "nccl needs spec.gpusPerReplica of at least 1");
  }
  const PreflightSpec& pf = comm.preflight;
  const std::string pre = "spec.communication.preflight.";
  check.Range(pre + "minBytes", pf.min_bytes, kMinMessageBytes, kMaxPreflightBytes);
  check.Range(pre + "maxBytes", pf.max_bytes, kMinMessageBytes, kMaxPreflightBytes);
  if (pf.min_bytes > pf.max_bytes) {
    check.Add(pre + "maxBytes", "must be at least minBytes (" + FormatQuantity(pf.min_bytes) +
                                    "), got " + FormatQuantity(pf.max_bytes));
  }
  check.Range(pre + "stepFactor", pf.step_factor, 2, 1024);
  check.Range(pre + "minBusBandwidth", pf.min_bus_bandwidth, 0, std::int64_t{1} << 50);
  check.Range(pre + "timeoutSeconds", pf.timeout_seconds, 1, 86400);
  const MonitorSpec& mon = comm.monitor;
  const std::string monitor = "spec.communication.monitor.";
  check.Range(monitor + "intervalSeconds", mon.interval_seconds, 5, 86400);
  check.Range(monitor + "messageBytes", mon.message_bytes, kMinMessageBytes, kMaxMonitorBytes);
  // Below 10 s a rank-0-only pause (logging, a small checkpoint) would pass for a stall.
  check.Range("spec.communication.telemetry.stallSeconds", comm.telemetry.stall_seconds, 10, 86400);
  if (comm.telemetry.on_stall == StallAction::kRestart && !comm.telemetry.enabled) {
    check.Add("spec.communication.telemetry.onStall",
              "Restart needs spec.communication.telemetry.enabled true (without the profiler "
              "plugin nothing detects a stall)");
  }
}

// A Kubernetes qualified name, as a Pod condition type is: [prefix/]name.
bool IsQualifiedName(const std::string& text) {
  static const std::regex kQualifiedName(
      "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
      "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$");
  return !text.empty() && text.size() <= kMaxConditionTypeLength && std::regex_match(text, kQualifiedName);
}

// Names a rule's containerName may take: the template's containers and ringleader's own two.
std::vector<std::string> ContainerNames(const json& tmpl) {
  std::vector<std::string> names = {std::string(contract::kSidecarContainerName),
                                    std::string(contract::kPreflightContainerName)};
  const json pod = tmpl.is_object() ? tmpl.value("spec", json()) : json();
  for (const char* list : {"containers", "initContainers"}) {
    const json containers = pod.is_object() ? pod.value(list, json()) : json();
    if (!containers.is_array()) {
      continue;
    }
    for (const json& container : containers) {
      if (container.is_object() && container.value("name", json()).is_string()) {
        names.push_back(container["name"].get<std::string>());
      }
    }
  }
  return names;
}

void CheckExitCodes(const ExitCodeRequirement& on, const std::string& path, const json& tmpl,
                    Checker& check) {
  if (on.container_name.has_value()) {
    const std::vector<std::string> names = ContainerNames(tmpl);
    if (std::find(names.begin(), names.end(), *on.container_name) == names.end()) {
      std::string known;
      for (const std::string& name : names) {
        known += (known.empty() ? "" : ", ") + name;
      }
      check.Add(path + ".containerName", "must name a container of the template or ringleader's (" +
                                             known + "), got \"" + *on.container_name + "\"");
    }
  }
  const std::string values = path + ".values";
  if (on.values.empty()) {
    check.Add(values, "must list at least one exit code");
  } else if (on.values.size() > kMaxExitCodeValues) {
    check.Add(values, "must list at most " + std::to_string(kMaxExitCodeValues) + " exit codes, got " +
                          std::to_string(on.values.size()));
  }
  for (std::size_t i = 0; i < on.values.size(); ++i) {
    const std::string item = values + "[" + std::to_string(i) + "]";
    const std::int64_t value = on.values[i];
    check.Range(item, value, 0, 255);
    if (value == 0 && on.op == ExitCodeOperator::kIn) {
      check.Add(item, "must not be 0 with the In operator: a container that exits 0 never matches");
    }
    if (i > 0 && value == on.values[i - 1]) {
      check.Add(item, "duplicates exit code " + std::to_string(value));
    } else if (i > 0 && value < on.values[i - 1]) {
      check.Add(item, "must be sorted in ascending order: " + std::to_string(value) + " follows " +
                          std::to_string(on.values[i - 1]));
    }
  }
}

void CheckFailurePolicy(const FailurePolicy& policy, const json& tmpl, Checker& check) {
  const std::string base = "spec.runPolicy.failurePolicy";
  if (policy.rules.size() > kMaxFailureRules) {
    check.Add(base + ".rules", "must have at most " + std::to_string(kMaxFailureRules) +
                                   " rules, got " + std::to_string(policy.rules.size()));
  }
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    const FailurePolicyRule& rule = policy.rules[i];
    const std::string path = base + ".rules[" + std::to_string(i) + "]";
    if (rule.on_exit_codes.has_value() == rule.on_pod_conditions.has_value()) {
      check.Add(path, "must set exactly one of onExitCodes and onPodConditions");
    }
    if (rule.on_exit_codes.has_value()) {
      CheckExitCodes(*rule.on_exit_codes, path + ".onExitCodes", tmpl, check);
    }
    if (!rule.on_pod_conditions.has_value()) {
      continue;
    }
    const std::vector<PodConditionPattern>& patterns = *rule.on_pod_conditions;
    if (patterns.empty() || patterns.size() > kMaxPodConditionPatterns) {
      check.Add(path + ".onPodConditions", "must list 1 to " + std::to_string(kMaxPodConditionPatterns) +
                                               " conditions, got " + std::to_string(patterns.size()));
    }
    for (std::size_t j = 0; j < patterns.size(); ++j) {
      const std::string item = path + ".onPodConditions[" + std::to_string(j) + "]";
      if (!IsQualifiedName(patterns[j].type)) {
        check.Add(item + ".type", "must be a Pod condition type such as DisruptionTarget (a qualified "
                                  "name), got \"" + patterns[j].type + "\"");
      }
      if (patterns[j].status != "True" && patterns[j].status != "False" &&
          patterns[j].status != "Unknown") {
        check.Add(item + ".status", "must be True, False or Unknown, got \"" + patterns[j].status + "\"");
      }
    }
  }
  const RestartBackoff& backoff = policy.restart_backoff;
  check.Range(base + ".restartBackoff.initialSeconds", backoff.initial_seconds, 0, kMaxBackoffInitialSeconds);
  check.Range(base + ".restartBackoff.maxSeconds", backoff.max_seconds, 0, kMaxBackoffSeconds);
  if (backoff.max_seconds < backoff.initial_seconds) {
    check.Add(base + ".restartBackoff.maxSeconds",
              "must be at least initialSeconds (" + std::to_string(backoff.initial_seconds) + "), got " +
                  std::to_string(backoff.max_seconds));
  }
}

void CheckRunPolicy(const RunPolicy& policy, Checker& check) {
  check.Range("spec.runPolicy.backoffLimit", policy.backoff_limit, 0, 1000);
  if (policy.active_deadline_seconds) {
    check.Range("spec.runPolicy.activeDeadlineSeconds", *policy.active_deadline_seconds, 1,
                std::int64_t{1} << 40);
  }
  if (policy.ttl_seconds_after_finished) {
    check.Range("spec.runPolicy.ttlSecondsAfterFinished", *policy.ttl_seconds_after_finished, 0,
                INT32_MAX);
  }
}

// A DNS subdomain (RFC 1123), as names of cluster objects (queues, priority classes) and
// scheduler names are.
bool IsDnsSubdomain(const std::string& text) {
  static const std::regex kSubdomain("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  return !text.empty() && text.size() <= 253 && std::regex_match(text, kSubdomain);
}

// The template's own labels or annotations may not set what the provider's Pods get from ringleader.
void CheckProviderKeys(const TrainingJob& job, const std::vector<std::string_view>& labels,
                       const std::vector<std::string_view>& annotations, Checker& check) {
  const json& tmpl = job.spec.template_;
  const json meta = tmpl.is_object() ? tmpl.value("metadata", json()) : json();
  const std::string provider(SchedulingProviderName(job.spec.run_policy.scheduling_policy.provider));
  for (const auto& [list, keys] : {std::pair{"labels", &labels}, std::pair{"annotations", &annotations}}) {
    const json present = meta.is_object() ? meta.value(list, json()) : json();
    for (const std::string_view key : *keys) {
      if (present.is_object() && present.contains(key)) {
        check.Add("spec.template.metadata." + std::string(list) + "." + std::string(key),
                  "is set by ringleader on every Pod with spec.runPolicy.schedulingPolicy.provider " + provider +
                      "; remove it");
      }
    }
  }
}

void CheckSchedulingPolicy(const TrainingJob& job, Checker& check) {
  const SchedulingPolicy& policy = job.spec.run_policy.scheduling_policy;
  const std::string base = "spec.runPolicy.schedulingPolicy.";
  const std::string provider(SchedulingProviderName(policy.provider));
  if (policy.min_available.has_value()) {
    check.Range(base + "minAvailable", *policy.min_available, 1, std::max<std::int64_t>(job.spec.replicas, 1));
  }
  if (policy.schedule_timeout_seconds.has_value()) {
    if (policy.provider != SchedulingProvider::kCoscheduling) {
      check.Add(base + "scheduleTimeoutSeconds",
                "applies only to provider Coscheduling (the PodGroup's scheduleTimeoutSeconds), got provider " +
                    provider);
    } else {
      check.Range(base + "scheduleTimeoutSeconds", *policy.schedule_timeout_seconds, 1, INT32_MAX);
    }
  }
  if (policy.queue.has_value()) {
    if (policy.provider == SchedulingProvider::kKueue) {
      check.Add(base + "queue", "is not used with provider Kueue: put the LocalQueue's name in the TrainingJob's "
                                "label " + std::string(kKueueQueueLabel) + " instead");
    } else if (policy.provider != SchedulingProvider::kVolcano) {
      check.Add(base + "queue", "applies only to provider Volcano (the PodGroup's queue), got provider " + provider);
    } else if (!IsDnsSubdomain(*policy.queue)) {
      check.Add(base + "queue", "must be a Volcano Queue's name (a DNS subdomain), got \"" + *policy.queue + "\"");
    }
  }
  if (policy.priority_class_name.has_value()) {
    if (policy.provider != SchedulingProvider::kVolcano) {
      check.Add(base + "priorityClassName",
                "applies only to provider Volcano (the PodGroup's priorityClassName); with " + provider +
                    " set spec.template.spec.priorityClassName");
    } else if (!IsDnsSubdomain(*policy.priority_class_name)) {
      check.Add(base + "priorityClassName",
                "must be a PriorityClass name (a DNS subdomain), got \"" + *policy.priority_class_name + "\"");
    }
  }
  if (policy.topology.has_value()) {
    if (policy.provider != SchedulingProvider::kKubernetes && policy.provider != SchedulingProvider::kKueue) {
      check.Add(base + "topology",
                "applies only to providers Kubernetes (the PodGroup's topology constraint) and Kueue (its "
                "topology-aware scheduling), got provider " + provider);
    } else if (policy.provider == SchedulingProvider::kKubernetes &&
               policy.topology->mode == TopologyMode::kPreferred) {
      check.Add(base + "topology.mode",
                "Preferred cannot be expressed with provider Kubernetes: a PodGroup's topology constraint puts "
                "all its Pods in one domain or none; use Required, or provider Kueue");
    }
    if (!IsQualifiedName(policy.topology->key)) {
      check.Add(base + "topology.key", "must be a node label key such as topology.kubernetes.io/zone, got \"" +
                                           policy.topology->key + "\"");
    }
  }
  if (policy.scheduler_name.has_value() && !IsDnsSubdomain(*policy.scheduler_name)) {
    check.Add(base + "schedulerName", "must be a scheduler name (a DNS subdomain), got \"" + *policy.scheduler_name + "\"");
  }
  // The Pods get one scheduler; a template that names another would be silently overridden.
  const json pod = job.spec.template_.is_object() ? job.spec.template_.value("spec", json()) : json();
  const json own = pod.is_object() ? pod.value("schedulerName", json()) : json();
  if (const std::optional<std::string> effective = policy.EffectiveSchedulerName();
      effective.has_value() && own.is_string() && own.get<std::string>() != *effective) {
    check.Add("spec.template.spec.schedulerName",
              "is \"" + own.get<std::string>() + "\", but spec.runPolicy.schedulingPolicy" +
                  (policy.scheduler_name.has_value() ? ".schedulerName" : ".provider " + provider) +
                  " schedules the Pods with \"" + *effective + "\"; remove one or make them equal");
  }
  // Kueue's webhook refuses a queue name that is no DNS-1123 subdomain, long after the job was
  // accepted; refused here (and by crds/ringleader.dev_kueue-queue-name-policy.yaml at apply).
  if (const auto queue = job.metadata.labels.find(std::string(kKueueQueueLabel));
      queue != job.metadata.labels.end() && !queue->second.empty() &&
      (queue->second.size() > 63 || !IsDnsSubdomain(queue->second))) {
    check.Add("metadata.labels." + std::string(kKueueQueueLabel),
              "must be a LocalQueue name, a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting "
              "and ending with a letter or digit), as Kueue requires; got \"" + queue->second + "\"");
  }
  switch (policy.provider) {
    case SchedulingProvider::kNone:
      break;
    case SchedulingProvider::kCoscheduling:
      CheckProviderKeys(job, {kCoschedulingPodGroupLabel}, {}, check);
      break;
    case SchedulingProvider::kVolcano:
      CheckProviderKeys(job, {}, {kVolcanoGroupNameAnnotation}, check);
      break;
    case SchedulingProvider::kKubernetes:
      // Each attempt's Pods join that attempt's PodGroup; a template's own group would be overridden.
      if (pod.is_object() && pod.contains("schedulingGroup")) {
        check.Add("spec.template.spec.schedulingGroup",
                  "is set by ringleader on every Pod with spec.runPolicy.schedulingPolicy.provider Kubernetes "
                  "(the attempt's PodGroup); remove it");
      }
      break;
    case SchedulingProvider::kKueue: {
      const auto queue = job.metadata.labels.find(std::string(kKueueQueueLabel));
      if (queue == job.metadata.labels.end() || queue->second.empty()) {
        check.Add("metadata.labels." + std::string(kKueueQueueLabel),
                  "is required with spec.runPolicy.schedulingPolicy.provider Kueue: the name of the LocalQueue "
                  "the gang waits in");
      }
      // Kueue admits a group of plain Pods only once pod-group-total-count Pods exist, all of them.
      if (policy.min_available.has_value() && *policy.min_available != job.spec.replicas) {
        check.Add(base + "minAvailable",
                  "must equal spec.replicas (" + std::to_string(job.spec.replicas) +
                      ") or be unset with provider Kueue, which admits a group of Pods whole; got " +
                      std::to_string(*policy.min_available));
      }
      if (job.metadata.name.size() > kMaxKueueJobNameLength) {
        check.Add("metadata.name", "must be at most " + std::to_string(kMaxKueueJobNameLength) +
                                       " characters with provider Kueue, so the Pod group name <name>-<uid8>-<attempt> "
                                       "fits in a 63-character label; got " +
                                       std::to_string(job.metadata.name.size()));
      }
      CheckProviderKeys(job, {kKueueQueueLabel, kKueuePodGroupNameLabel},
                        {kKueuePodGroupTotalCountAnnotation, kKueueRetriableInGroupAnnotation, kKueueRoleHashAnnotation,
                         kKueueRequiredTopologyAnnotation, kKueuePreferredTopologyAnnotation,
                         kKueuePodIndexLabelAnnotation},
                        check);
      break;
    }
  }
}

// torchrun under either name: the console script, or `python -m torch.distributed.run`.
bool LaunchesTorchrun(const json& container) {
  for (const char* list : {"command", "args"}) {
    const json words = container.value(list, json());
    if (!words.is_array()) {
      continue;
    }
    for (const json& word : words) {
      if (word.is_string() && (word.get<std::string>().find("torchrun") != std::string::npos ||
                               word.get<std::string>().find("torch.distributed.run") != std::string::npos)) {
        return true;
      }
    }
  }
  return false;
}

// spec.elasticPolicy, as the CRD's CEL rules check it, and the trainers' torchrun, which CEL
// cannot see (the template's containers are kept as the user wrote them).
void CheckElasticPolicy(const TrainingJob& job, Checker& check) {
  if (!job.spec.elastic_policy.has_value()) {
    return;
  }
  const ElasticPolicy& elastic = *job.spec.elastic_policy;
  const std::string base = "spec.elasticPolicy.";
  check.Range(base + "minReplicas", elastic.min_replicas, 1, kMaxReplicas);
  check.Range(base + "maxReplicas", elastic.max_replicas, 1, kMaxReplicas);
  check.Range(base + "maxRestarts", elastic.max_restarts, 0, kMaxElasticRestarts);
  check.Range(base + "minReplicasTimeoutSeconds", elastic.min_replicas_timeout_seconds, 1, 86400);
  if (elastic.min_replicas > elastic.max_replicas) {
    check.Add(base + "minReplicas", "must be at most maxReplicas (" + std::to_string(elastic.max_replicas) +
                                        "), got " + std::to_string(elastic.min_replicas));
  }
  if (job.spec.replicas < elastic.min_replicas) {
    check.Add("spec.replicas", "must be at least elasticPolicy.minReplicas (" +
                                   std::to_string(elastic.min_replicas) + "), got " +
                                   std::to_string(job.spec.replicas));
  } else if (job.spec.replicas > elastic.max_replicas) {
    check.Add("spec.replicas", "must be at most elasticPolicy.maxReplicas (" +
                                   std::to_string(elastic.max_replicas) + "), got " +
                                   std::to_string(job.spec.replicas));
  }
  const SchedulingProvider provider = job.spec.run_policy.scheduling_policy.provider;
  if (provider != SchedulingProvider::kNone && provider != SchedulingProvider::kKueue) {
    check.Add("spec.elasticPolicy", "elastic jobs support spec.runPolicy.schedulingPolicy.provider None and "
                                    "Kueue only (Coscheduling, Volcano and Kubernetes are untested with elastic "
                                    "jobs), got provider " + std::string(SchedulingProviderName(provider)));
  }
  if (job.spec.communication.trainer_store == TrainerStore::kTrainer) {
    check.Add("spec.communication.trainerStore",
              "must be Sidecar for an elastic job: torchrun's c10d rendezvous lives on the sidecar's store, "
              "which outlives any rank; got Trainer");
  }
  // A container without a command runs its image's ENTRYPOINT, which cannot be seen from here:
  // it is accepted (docs/api-reference.md says so).
  const json pod = job.spec.template_.is_object() ? job.spec.template_.value("spec", json()) : json();
  const json containers = pod.is_object() ? pod.value("containers", json()) : json();
  if (!containers.is_array()) {
    return;
  }
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& container = containers[i];
    if (container.is_object() && container.value("command", json()).is_array() && !LaunchesTorchrun(container)) {
      check.Add("spec.template.spec.containers[" + std::to_string(i) + "].command",
                "elastic jobs must launch with torchrun (or python -m torch.distributed.run), which re-forms the "
                "world when a Pod joins or leaves; neither command nor args name it");
    }
  }
}

}  // namespace

FieldErrors Validate(const TrainingJob& job, const ValidationOptions& options) {
  FieldErrors errors;
  Checker check(&errors);
  CheckMetadata(job, check);
  const TrainingJobSpec& spec = job.spec;
  check.Range("spec.replicas", spec.replicas, 1, kMaxReplicas);
  check.Range("spec.gpusPerReplica", spec.gpus_per_replica, 0, 64);
  if (spec.processes_per_replica) {
    check.Range("spec.processesPerReplica", *spec.processes_per_replica, 1, 256);
  }
  CheckTemplate(job, options, check);
  CheckCommunication(spec, check);
  CheckRunPolicy(spec.run_policy, check);
  CheckFailurePolicy(spec.run_policy.failure_policy, spec.template_, check);
  CheckSchedulingPolicy(job, check);
  CheckElasticPolicy(job, check);
  return errors;
}

FieldErrors ParseAndValidate(const nlohmann::json& object, const ValidationOptions& options,
                             TrainingJob* job) {
  FieldErrors errors;
  *job = TrainingJob::FromJson(object, &errors);
  FieldErrors semantic = Validate(*job, options);
  errors.insert(errors.end(), semantic.begin(), semantic.end());
  return errors;
}

}  // namespace ringleader::api
