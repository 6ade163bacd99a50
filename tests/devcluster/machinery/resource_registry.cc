// The served resource types, CRD conversion, aggregated discovery and OpenAPI v3 documents.
#include "tests/devcluster/machinery/resource_registry.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "tests/devcluster/machinery/crd_validation.h"
#include "tests/devcluster/machinery/jsonpath.h"
#include "tests/devcluster/machinery/openapi_meta.h"
#include "tests/devcluster/machinery/status.h"
#include "tests/support/cel/crd_rules.h"
#include "tests/devcluster/machinery/table.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

const std::vector<std::string>& AllVerbs() {
  static const std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get",
                                                 "list",   "patch",  "update",           "watch"};
  return verbs;
}

// ---- Printer columns ---------------------------------------------------------------------

const json* FindPath(const json& object, std::initializer_list<const char*> path) {
  const json* node = &object;
  for (const char* key : path) {
    if (!node->is_object()) {
      return nullptr;
    }
    auto it = node->find(key);
    if (it == node->end()) {
      return nullptr;
    }
    node = &*it;
  }
  return node;
}

const json& Array(const json& object, std::initializer_list<const char*> path) {
  static const json kEmpty = json::array();
  const json* node = FindPath(object, path);
  return node != nullptr && node->is_array() ? *node : kEmpty;
}

std::string String(const json& object, std::initializer_list<const char*> path) {
  const json* node = FindPath(object, path);
  return node != nullptr && node->is_string() ? node->get<std::string>() : "";
}

long long Integer(const json& object, std::initializer_list<const char*> path) {
  const json* node = FindPath(object, path);
  return node != nullptr && node->is_number() ? node->get<long long>() : 0;
}

PrinterColumn AgeColumn() {
  return {"Age", "date", ".metadata.creationTimestamp",
          "CreationTimestamp is a timestamp representing the server time when this object was "
          "created.",
          0, "", nullptr};
}

PrinterColumn Computed(std::string name, std::string type, std::string description, int priority,
                       std::function<json(const json&, Time)> compute) {
  return {std::move(name), std::move(type), "", std::move(description), priority, "",
          std::move(compute)};
}

// Whether the Pod's init container `name` is a native sidecar (restartPolicy: Always).
bool IsRestartableInit(const json& pod, const std::string& name) {
  for (const json& container : Array(pod, {"spec", "initContainers"})) {
    if (container.value("name", "") == name) {
      return container.value("restartPolicy", "") == "Always";
    }
  }
  return false;
}

// The STATUS column as kubectl's pod printer derives it, for the common cases.
json PodStatus(const json& pod) {
  std::string reason = String(pod, {"status", "phase"});
  if (std::string status_reason = String(pod, {"status", "reason"}); !status_reason.empty()) {
    reason = status_reason;
  }
  // A Pod carrying PodScheduled with reason SchedulingGated reads SchedulingGated.
  for (const json& condition : Array(pod, {"status", "conditions"})) {
    if (String(condition, {"type"}) == "PodScheduled" && String(condition, {"reason"}) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }
  bool initializing = false;
  const json& init_statuses = Array(pod, {"status", "initContainerStatuses"});
  size_t init_count = Array(pod, {"spec", "initContainers"}).size();
  for (size_t i = 0; i < init_statuses.size(); ++i) {
    const json& state = init_statuses[i].value("state", json::object());
    if (state.contains("terminated") && Integer(state, {"terminated", "exitCode"}) == 0) {
      continue;
    }
    // A native sidecar that has started lets the Pod go on, as kubectl's printer counts it.
    if (IsRestartableInit(pod, init_statuses[i].value("name", "")) && init_statuses[i].value("started", false)) {
      continue;
    }
    initializing = true;
    if (state.contains("terminated")) {
      std::string why = String(state, {"terminated", "reason"});
      reason = "Init:" + (why.empty() ? "ExitCode:" + std::to_string(Integer(
                                                          state, {"terminated", "exitCode"}))
                                      : why);
    } else if (std::string why = String(state, {"waiting", "reason"});
               !why.empty() && why != "PodInitializing") {
      reason = "Init:" + why;
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_count);
    }
    break;
  }
  if (!initializing) {
    bool has_running = false;
    const json& statuses = Array(pod, {"status", "containerStatuses"});
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const json& state = it->value("state", json::object());
      if (std::string why = String(state, {"waiting", "reason"}); !why.empty()) {
        reason = why;
      } else if (state.contains("terminated")) {
        std::string why_terminated = String(state, {"terminated", "reason"});
        reason = !why_terminated.empty()
                     ? why_terminated
                     : "ExitCode:" + std::to_string(Integer(state, {"terminated", "exitCode"}));
      } else if (state.contains("running") && it->value("ready", false)) {
        has_running = true;
      }
    }
    if (reason == "Completed" && has_running) {
      reason = "Running";
    }
  }
  if (FindPath(pod, {"metadata", "deletionTimestamp"}) != nullptr) {
    reason = String(pod, {"status", "reason"}) == "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

// READY counts native sidecars with the containers, as kubectl does.
json PodReady(const json& pod) {
  size_t ready = 0;
  size_t total = Array(pod, {"spec", "containers"}).size();
  for (const json& container : Array(pod, {"spec", "initContainers"})) {
    total += container.value("restartPolicy", "") == "Always" ? 1 : 0;
  }
  for (const json& status : Array(pod, {"status", "containerStatuses"})) {
    ready += status.value("ready", false) ? 1 : 0;
  }
  for (const json& status : Array(pod, {"status", "initContainerStatuses"})) {
    ready += IsRestartableInit(pod, status.value("name", "")) && status.value("ready", false) ? 1 : 0;
  }
  return std::to_string(ready) + "/" + std::to_string(total);
}

json PodRestarts(const json& pod, Time now) {
  long long restarts = 0;
  std::optional<Time> last;
  for (const json& status : Array(pod, {"status", "containerStatuses"})) {
    restarts += Integer(status, {"restartCount"});
    if (std::optional<Time> finished =
            ParseTime(String(status, {"lastState", "terminated", "finishedAt"}));
        finished && (!last || *finished > *last)) {
      last = finished;
    }
  }
  std::string text = std::to_string(restarts);
  if (restarts > 0 && last) {
    text += " (" + HumanDuration(now - *last) + " ago)";
  }
  return text;
}

json OrNone(std::string text) { return text.empty() ? json("<none>") : json(std::move(text)); }

json ServiceExternalIp(const json& service) {
  std::string type = String(service, {"spec", "type"});
  std::vector<std::string> ips;
  for (const json& ip : Array(service, {"spec", "externalIPs"})) {
    ips.push_back(ip.is_string() ? ip.get<std::string>() : ip.dump());
  }
  if (type == "ExternalName") {
    return String(service, {"spec", "externalName"});
  }
  if (type == "LoadBalancer") {
    for (const json& ingress : Array(service, {"status", "loadBalancer", "ingress"})) {
      std::string address = ingress.value("ip", ingress.value("hostname", ""));
      if (!address.empty()) {
        ips.push_back(address);
      }
    }
    if (ips.empty()) {
      return "<pending>";
    }
  }
  std::string joined;
  for (const std::string& ip : ips) {
    joined += (joined.empty() ? "" : ",") + ip;
  }
  return OrNone(joined);
}

json ServicePorts(const json& service) {
  std::string text;
  for (const json& port : Array(service, {"spec", "ports"})) {
    std::string entry = std::to_string(port.value("port", 0));
    if (port.contains("nodePort")) {
      entry += ":" + std::to_string(port.value("nodePort", 0));
    }
    entry += "/" + port.value("protocol", std::string("TCP"));
    text += (text.empty() ? "" : ",") + entry;
  }
  return OrNone(text);
}

json Selector(const json& object, std::initializer_list<const char*> path) {
  const json* selector = FindPath(object, path);
  std::string text;
  if (selector != nullptr && selector->is_object()) {
    for (const auto& [key, value] : selector->items()) {  // nlohmann objects iterate sorted
      text += (text.empty() ? "" : ",") + key + "=" +
              (value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return OrNone(text);
}

json NodeStatus(const json& node) {
  std::string status = "Unknown";
  for (const json& condition : Array(node, {"status", "conditions"})) {
    if (condition.value("type", "") == "Ready") {
      status = condition.value("status", "") == "True" ? "Ready" : "NotReady";
    }
  }
  if (node.is_object() && FindPath(node, {"spec", "unschedulable"}) != nullptr &&
      FindPath(node, {"spec", "unschedulable"})->is_boolean() &&
      FindPath(node, {"spec", "unschedulable"})->get<bool>()) {
    status += ",SchedulingDisabled";
  }
  return status;
}

// ---- Schemas ------------------------------------------------------------------------------

json StringProperty(std::string description) {
  return {{"type", "string"}, {"description", std::move(description)}};
}

json OpenObject(std::string description) {
  return {{"type", "object"},
          {"description", std::move(description)},
          {"x-kubernetes-preserve-unknown-fields", true}};
}

// A permissive schema for a built-in kind: unknown fields are kept, and apiVersion, kind,
// metadata and `extra` are typed and described for kubectl explain.
json BuiltinSchema(const std::string& description, json extra = json::object()) {
  json properties = {
      {"apiVersion",
       StringProperty("APIVersion defines the versioned schema of this representation of an "
                      "object.")},
      {"kind", StringProperty("Kind is a string value representing the REST resource this "
                              "object represents.")},
      // Structural schemas may only restrict metadata's name and generateName (not even describe
      // it); OpenApiDocument publishes it as ObjectMeta.
      {"metadata", {{"type", "object"}}},
  };
  for (auto& [key, value] : extra.items()) {
    properties[key] = value;
  }
  return {{"type", "object"},
          {"description", description},
          {"x-kubernetes-preserve-unknown-fields", true},
          {"properties", std::move(properties)}};
}

json SpecAndStatus(const std::string& what) {
  return {{"spec", OpenObject("Spec defines the desired behavior of the " + what + ".")},
          {"status", OpenObject("Status is the most recently observed status of the " + what +
                                ".")}};
}

ResourceInfo Builtin(std::string group, std::string kind, std::string plural,
                     std::vector<std::string> short_names, bool namespaced, bool has_status,
                     json schema, std::vector<PrinterColumn> columns = {AgeColumn()}) {
  ResourceInfo info;
  info.group = std::move(group);
  info.version = "v1";
  info.kind = kind;
  info.list_kind = kind + "List";
  info.plural = std::move(plural);
  info.singular = kind;
  std::transform(info.singular.begin(), info.singular.end(), info.singular.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  info.short_names = std::move(short_names);
  info.namespaced = namespaced;
  info.has_status = has_status;
  info.schema = std::move(schema);
  info.columns = std::move(columns);
  return info;
}

// ---- Versions and names -------------------------------------------------------------------

// Kubernetes version priority: GA before beta before alpha, higher numbers first, then others
// alphabetically. Returns true when a sorts before b.
bool VersionBefore(const std::string& a, const std::string& b) {
  auto parse = [](const std::string& version) {
    // (stability 3=GA 2=beta 1=alpha 0=other, major, minor)
    struct Parsed {
      int stability = 0;
      long major = 0, minor = 0;
    } parsed;
    if (version.size() < 2 || version[0] != 'v' || !std::isdigit(static_cast<unsigned char>(version[1]))) {
      return parsed;
    }
    size_t i = 1;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
      parsed.major = parsed.major * 10 + (version[i++] - '0');
    }
    std::string rest = version.substr(i);
    size_t digits = 0;
    if (rest.empty()) {
      parsed.stability = 3;
      return parsed;
    }
    if (rest.starts_with("beta")) {
      parsed.stability = 2;
      digits = 4;
    } else if (rest.starts_with("alpha")) {
      parsed.stability = 1;
      digits = 5;
    } else {
      return decltype(parsed){};
    }
    for (size_t j = digits; j < rest.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(rest[j]))) {
        return decltype(parsed){};
      }
      parsed.minor = parsed.minor * 10 + (rest[j] - '0');
    }
    return parsed;
  };
  auto pa = parse(a);
  auto pb = parse(b);
  if (pa.stability != pb.stability) {
    return pa.stability > pb.stability;
  }
  if (pa.stability == 0) {
    return a < b;
  }
  if (pa.major != pb.major) {
    return pa.major > pb.major;
  }
  return pa.minor > pb.minor;
}

// The OpenAPI component name of a kind: io.k8s.api.apps.v1.Deployment for built-ins,
// reversed group for custom resources (dev.ringleader.v1.TrainingJob).
std::string SchemaName(const ResourceInfo& info, const std::string& kind) {
  if (info.is_custom) {
    std::string reversed;
    size_t end = info.group.size();
    while (true) {
      size_t dot = info.group.rfind('.', end == 0 ? 0 : end - 1);
      size_t start = dot == std::string::npos ? 0 : dot + 1;
      reversed += (reversed.empty() ? "" : ".") + info.group.substr(start, end - start);
      if (dot == std::string::npos) {
        break;
      }
      end = dot;
    }
    return reversed + "." + info.version + "." + kind;
  }
  if (info.group == "apiextensions.k8s.io") {
    return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + info.version + "." + kind;
  }
  std::string short_group =
      info.group.empty() ? "core" : info.group.substr(0, info.group.find('.'));
  return "io.k8s.api." + short_group + "." + info.version + "." + kind;
}

std::string UpperHexSha256(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw InternalError("sha256 failed");
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0x0f];
  }
  return hex;
}

json Gvk(const std::string& group, const std::string& version, const std::string& kind) {
  return {{"group", group}, {"version", version}, {"kind", kind}};
}

json QueryParameter(const std::string& name, const std::string& description,
                    const std::string& type = "string") {
  return {{"name", name},
          {"in", "query"},
          {"description", description},
          {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

json PathParameter(const std::string& name, const std::string& description) {
  return {{"name", name},
          {"in", "path"},
          {"description", description},
          {"required", true},
          {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json Operation(const std::string& action, const std::string& operation_id, const json& gvk,
               const std::string& response_schema, json parameters, json request_body = nullptr) {
  json operation = {
      {"operationId", operation_id},
      {"parameters", std::move(parameters)},
      {"responses",
       {{"200",
         {{"description", "OK"},
          {"content", {{"application/json", {{"schema", Ref(response_schema)}}}}}}},
        {"401", {{"description", "Unauthorized"}}}}},
      {"x-kubernetes-action", action},
      {"x-kubernetes-group-version-kind", gvk},
  };
  if (!request_body.is_null()) {
    operation["requestBody"] = std::move(request_body);
  }
  return operation;
}

json WriteParameters() {
  return json::array(
      {QueryParameter("dryRun", "When present, indicates that modifications should not be "
                                "persisted."),
       QueryParameter("fieldManager", "fieldManager is a name associated with the actor or "
                                      "entity that is making these changes."),
       QueryParameter("fieldValidation",
                      "fieldValidation instructs the server on how to handle objects in the "
                      "request containing unknown or duplicate fields. Valid values are: Ignore, "
                      "Warn, Strict.")});
}

json JsonBody(const std::string& schema) {
  return {{"required", true},
          {"content", {{"application/json", {{"schema", Ref(schema)}}}}}};
}

// get, put and patch on an object or its status.
json ItemOperations(const ResourceInfo& info, const json& gvk, const std::string& schema,
                    const std::string& suffix, bool with_delete) {
  json patch_parameters = WriteParameters();
  patch_parameters.push_back(QueryParameter(
      "force", "Force is going to \"force\" Apply requests.", "boolean"));
  json patch_content = json::object();
  std::vector<std::string> patch_types = {"application/apply-patch+yaml",
                                          "application/json-patch+json",
                                          "application/merge-patch+json"};
  if (!info.is_custom) {
    patch_types.push_back("application/strategic-merge-patch+json");
  }
  for (const std::string& type : patch_types) {
    patch_content[type] = {{"schema", Ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")}};
  }
  json operations = {
      {"get", Operation("get", "read" + info.kind + suffix, gvk, schema, json::array())},
      {"put", Operation("put", "replace" + info.kind + suffix, gvk, schema, WriteParameters(),
                        JsonBody(schema))},
      {"patch", Operation("patch", "patch" + info.kind + suffix, gvk, schema,
                          std::move(patch_parameters),
                          {{"required", true}, {"content", std::move(patch_content)}})},
  };
  if (with_delete) {
    operations["delete"] =
        Operation("delete", "delete" + info.kind, gvk, "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
                  json::array({QueryParameter("gracePeriodSeconds", "The duration in seconds "
                                                                    "before the object should "
                                                                    "be deleted.",
                                              "integer"),
                               QueryParameter("propagationPolicy",
                                              "Whether and how garbage collection will be "
                                              "performed.")}));
  }
  return operations;
}

json ListParameters() {
  return json::array(
      {QueryParameter("labelSelector", "A selector to restrict the list of returned objects by "
                                       "their labels."),
       QueryParameter("fieldSelector", "A selector to restrict the list of returned objects by "
                                       "their fields."),
       QueryParameter("limit", "limit is a maximum number of responses to return.", "integer"),
       QueryParameter("continue", "The continue option should be set when retrieving more "
                                  "results from the server."),
       QueryParameter("resourceVersion", "resourceVersion sets a constraint on what resource "
                                         "versions a request may be served from."),
       QueryParameter("watch", "Watch for changes to the described resources.", "boolean"),
       QueryParameter("allowWatchBookmarks", "allowWatchBookmarks requests watch events with "
                                             "type \"BOOKMARK\".",
                      "boolean"),
       QueryParameter("timeoutSeconds", "Timeout for the list/watch call.", "integer")});
}

// ---- CRDs ---------------------------------------------------------------------------------

std::vector<std::string> Strings(const json& value) {
  std::vector<std::string> out;
  if (value.is_array()) {
    for (const json& item : value) {
      if (item.is_string()) {
        out.push_back(item.get<std::string>());
      }
    }
  }
  return out;
}

std::string JsonString(const json& object, const char* key) {
  if (!object.is_object()) {
    return "";
  }
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string ResourceInfo::GroupVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceInfo::GroupResource() const {
  return group.empty() ? plural : plural + "." + group;
}

std::string ResourceInfo::QualifiedKind() const {
  return group.empty() ? kind : kind + "." + group;
}

std::vector<SubresourceInfo> ResourceInfo::DiscoverySubresources() const {
  std::vector<SubresourceInfo> all = subresources;
  if (has_status) {
    all.push_back({"status", "", "", kind, {"get", "patch", "update"}});
  }
  std::sort(all.begin(), all.end(),
            [](const SubresourceInfo& a, const SubresourceInfo& b) { return a.name < b.name; });
  return all;
}

ResourceRegistry ResourceRegistry::WithBuiltins() {
  ResourceRegistry registry;
  auto column = [](std::string name, std::string type, std::string path, std::string description,
                   int priority = 0) {
    return PrinterColumn{std::move(name), std::move(type), std::move(path),
                         std::move(description), priority, "", nullptr};
  };

  registry.Add(Builtin("", "Namespace", "namespaces", {"ns"}, false, true,
                       BuiltinSchema("Namespace provides a scope for Names.",
                                     SpecAndStatus("Namespace")),
                       {column("Status", "string", ".status.phase",
                               "The current lifecycle phase of the namespace."),
                        AgeColumn()}));
  ResourceInfo pods = Builtin(
      "", "Pod", "pods", {"po"}, true, true,
      BuiltinSchema("Pod is a collection of containers that can run on a host.",
                    SpecAndStatus("pod")),
      {Computed("Ready", "string", "The aggregate readiness state of this pod for accepting "
                                   "traffic.",
                0, [](const json& pod, Time) { return PodReady(pod); }),
       Computed("Status", "string", "The aggregate status of the containers in this pod.", 0,
                [](const json& pod, Time) { return PodStatus(pod); }),
       Computed("Restarts", "string", "The number of times the containers in this pod have been "
                                      "restarted and when the last container in this pod has "
                                      "restarted.",
                0, PodRestarts),
       AgeColumn(),
       Computed("IP", "string", "IP address allocated to the pod. Routable at least within the "
                                "cluster.",
                1, [](const json& pod, Time) { return OrNone(String(pod, {"status", "podIP"})); }),
       Computed("Node", "string", "Name of the Node this pod is scheduled onto.", 1,
                [](const json& pod, Time) { return OrNone(String(pod, {"spec", "nodeName"})); })});
  // The Pod subresources devcluster serves (eviction.h, pod_logs.h); kubectl drain evicts only
  // when /api/v1 lists pods/eviction with its group and version, else it deletes.
  pods.subresources = {{"eviction", "policy", "v1", "Eviction", {"create"}}, {"log", "", "", "Pod", {"get"}}};
  registry.Add(std::move(pods));
  registry.Add(Builtin(
      "", "Service", "services", {"svc"}, true, true,
      BuiltinSchema("Service is a named abstraction of software service (for example, mysql) "
                    "consisting of local port (for example 3306) that the proxy listens on, and "
                    "the selector that determines which pods will answer requests sent through "
                    "the proxy.",
                    SpecAndStatus("service")),
      {Computed("Type", "string", "The type of the service.", 0,
                [](const json& svc, Time) {
                  std::string type = String(svc, {"spec", "type"});
                  return json(type.empty() ? "ClusterIP" : type);
                }),
       Computed("Cluster-IP", "string", "The IP address of the service.", 0,
                [](const json& svc, Time) { return OrNone(String(svc, {"spec", "clusterIP"})); }),
       Computed("External-IP", "string", "The external IP address of the service.", 0,
                [](const json& svc, Time) { return ServiceExternalIp(svc); }),
       Computed("Port(s)", "string", "The ports on which the service is exposed.", 0,
                [](const json& svc, Time) { return ServicePorts(svc); }),
       AgeColumn(),
       Computed("Selector", "string", "Route service traffic to pods with label keys and values "
                                      "matching this selector.",
                1, [](const json& svc, Time) { return Selector(svc, {"spec", "selector"}); })}));
  json data = {{"data", {{"type", "object"},
                         {"description", "Data contains the configuration data."},
                         {"additionalProperties", {{"type", "string"}}}}}};
  registry.Add(Builtin("", "Secret", "secrets", {}, true, false,
                       BuiltinSchema("Secret holds secret data of a certain type.", data),
                       {column("Type", "string", ".type", "The type of the secret."),
                        Computed("Data", "integer", "The number of data entries.", 0,
                                 [](const json& secret, Time) {
                                   const json* entries = FindPath(secret, {"data"});
                                   return json(entries != nullptr && entries->is_object()
                                                   ? entries->size()
                                                   : 0);
                                 }),
                        AgeColumn()}));
  registry.Add(Builtin("", "ConfigMap", "configmaps", {"cm"}, true, false,
                       BuiltinSchema("ConfigMap holds configuration data for pods to consume.",
                                     data),
                       {Computed("Data", "integer", "The number of data entries.", 0,
                                 [](const json& config_map, Time) {
                                   const json* entries = FindPath(config_map, {"data"});
                                   return json(entries != nullptr && entries->is_object()
                                                   ? entries->size()
                                                   : 0);
                                 }),
                        AgeColumn()}));
  registry.Add(Builtin("", "ResourceQuota", "resourcequotas", {"quota"}, true, true,
                       BuiltinSchema("ResourceQuota sets aggregate quota restrictions enforced per "
                                     "namespace",
                                     SpecAndStatus("ResourceQuota")),
                       {AgeColumn()}));
  registry.Add(Builtin(
      "", "Event", "events", {"ev"}, true, false,
      BuiltinSchema("Event is a report of an event somewhere in the cluster.",
                    {{"involvedObject", OpenObject("The object that this event is about.")},
                     {"reason", StringProperty("This should be a short, machine understandable "
                                               "string that gives the reason for the "
                                               "transition into the object's current status.")},
                     {"message", StringProperty("A human-readable description of the status of "
                                                "this operation.")},
                     {"type", StringProperty("Type of this event (Normal, Warning).")}}),
      {column("Type", "string", ".type", "Type of this event."),
       column("Reason", "string", ".reason", "The reason for the event."),
       Computed("Object", "string", "The object this event is about.", 0,
                [](const json& event, Time) {
                  std::string kind = String(event, {"involvedObject", "kind"});
                  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) {
                    return static_cast<char>(std::tolower(c));
                  });
                  return json(kind + "/" + String(event, {"involvedObject", "name"}));
                }),
       column("Message", "string", ".message", "A human-readable description of the event."),
       AgeColumn()}));
  ResourceInfo service_accounts = Builtin("", "ServiceAccount", "serviceaccounts", {"sa"}, true, false,
                                          BuiltinSchema("ServiceAccount binds together a name, a principal that "
                                                        "can be authenticated and authorized, and a set of secrets."));
  // The TokenRequest API (token_request.h), which kubectl create token posts to.
  service_accounts.subresources = {{"token", "authentication.k8s.io", "v1", "TokenRequest", {"create"}}};
  registry.Add(std::move(service_accounts));
  registry.Add(Builtin(
      "", "Node", "nodes", {"no"}, false, true,
      BuiltinSchema("Node is a worker node in Kubernetes.", SpecAndStatus("node")),
      {Computed("Status", "string", "The status of the node.", 0,
                [](const json& node, Time) { return NodeStatus(node); }),
       AgeColumn(),
       column("Version", "string", ".status.nodeInfo.kubeletVersion",
              "Kubelet version reported by the node.")}));
  registry.Add(Builtin(
      "apps", "Deployment", "deployments", {"deploy"}, true, true,
      BuiltinSchema("Deployment enables declarative updates for Pods and ReplicaSets.",
                    SpecAndStatus("Deployment")),
      {Computed("Ready", "string", "Number of the pod with ready state.", 0,
                [](const json& deployment, Time) {
                  const json* replicas = FindPath(deployment, {"spec", "replicas"});
                  long long wanted = replicas != nullptr && replicas->is_number()
                                         ? replicas->get<long long>()
                                         : 1;
                  return json(std::to_string(Integer(deployment, {"status", "readyReplicas"})) +
                              "/" + std::to_string(wanted));
                }),
       Computed("Up-to-date", "integer", "Total number of non-terminated pods targeted by this "
                                         "deployment that have the desired template spec.",
                0,
                [](const json& deployment, Time) {
                  return json(Integer(deployment, {"status", "updatedReplicas"}));
                }),
       Computed("Available", "integer", "Total number of available pods (ready for at least "
                                        "minReadySeconds) targeted by this deployment.",
                0,
                [](const json& deployment, Time) {
                  return json(Integer(deployment, {"status", "availableReplicas"}));
                }),
       AgeColumn()}));
  registry.Add(Builtin("coordination.k8s.io", "Lease", "leases", {}, true, false,
                       BuiltinSchema("Lease defines a lease concept.",
                                     {{"spec", OpenObject("spec contains the specification of "
                                                          "the Lease.")}}),
                       {column("Holder", "string", ".spec.holderIdentity",
                               "holderIdentity contains the identity of the holder of a current "
                               "lease."),
                        AgeColumn()}));
  json rules = {{"rules", {{"type", "array"},
                           {"description", "Rules holds all the PolicyRules for this role."},
                           {"items", OpenObject("PolicyRule holds information that describes a "
                                                "policy rule.")}}}};
  json binding = {
      {"roleRef", OpenObject("RoleRef can reference a Role in the current namespace or a "
                             "ClusterRole in the global namespace.")},
      {"subjects", {{"type", "array"},
                    {"description", "Subjects holds references to the objects the role applies "
                                    "to."},
                    {"items", OpenObject("Subject contains a reference to the object or user "
                                         "identities a role binding applies to.")}}}};
  const std::string rbac = "rbac.authorization.k8s.io";
  registry.Add(Builtin(rbac, "Role", "roles", {}, true, false,
                       BuiltinSchema("Role is a namespaced, logical grouping of PolicyRules.",
                                     rules)));
  registry.Add(Builtin(rbac, "ClusterRole", "clusterroles", {}, false, false,
                       BuiltinSchema("ClusterRole is a cluster level, logical grouping of "
                                     "PolicyRules.",
                                     rules)));
  registry.Add(Builtin(rbac, "RoleBinding", "rolebindings", {}, true, false,
                       BuiltinSchema("RoleBinding references a role, but does not contain it.",
                                     binding),
                       {column("Role", "string", ".roleRef.name", "The role bound."),
                        AgeColumn()}));
  registry.Add(Builtin(rbac, "ClusterRoleBinding", "clusterrolebindings", {}, false, false,
                       BuiltinSchema("ClusterRoleBinding references a ClusterRole, but does not "
                                     "contain it.",
                                     binding),
                       {column("Role", "string", ".roleRef.name", "The role bound."),
                        AgeColumn()}));
  ResourceInfo crd = Builtin(
      "apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions",
      {"crd", "crds"}, false, true,
      BuiltinSchema("CustomResourceDefinition represents a resource that should be exposed on "
                    "the API server.",
                    SpecAndStatus("CustomResourceDefinition")),
      {column("Created At", "date", ".metadata.creationTimestamp",
              "CreationTimestamp is a timestamp representing the server time when this object "
              "was created.")});
  crd.columns[0].type = "string";
  crd.columns[0].compute = [](const json& object, Time) -> json {
    std::string created = String(object, {"metadata", "creationTimestamp"});
    return created.empty() ? json(nullptr) : json(created);
  };
  registry.Add(std::move(crd));
  for (const std::unique_ptr<ResourceInfo>& info : registry.resources_) {
    if (info->kind == "ClusterRole" || info->kind == "Role" || info->kind == "RoleBinding" ||
        info->kind == "ClusterRoleBinding" || info->kind == "Event" || info->kind == "Lease" ||
        info->kind == "Node" || info->kind == "Namespace" ||
        info->kind == "CustomResourceDefinition") {
      continue;
    }
    info->categories = {"all"};
  }
  return registry;
}

void ResourceRegistry::Add(ResourceInfo info) {
  for (std::unique_ptr<ResourceInfo>& existing : resources_) {
    if (existing->group == info.group && existing->version == info.version &&
        existing->plural == info.plural) {
      existing = std::make_unique<ResourceInfo>(std::move(info));
      return;
    }
  }
  resources_.push_back(std::make_unique<ResourceInfo>(std::move(info)));
}

void ResourceRegistry::Remove(const std::string& group, const std::string& plural) {
  std::erase_if(resources_, [&](const std::unique_ptr<ResourceInfo>& info) {
    return info->group == group && info->plural == plural;
  });
}

const ResourceInfo* ResourceRegistry::Find(const std::string& group, const std::string& version,
                                           const std::string& plural) const {
  for (const std::unique_ptr<ResourceInfo>& info : resources_) {
    if (info->group == group && info->version == version && info->plural == plural) {
      return info.get();
    }
  }
  return nullptr;
}

const ResourceInfo* ResourceRegistry::FindKind(const std::string& group,
                                               const std::string& version,
                                               const std::string& kind) const {
  for (const std::unique_ptr<ResourceInfo>& info : resources_) {
    if (info->group == group && info->version == version && info->kind == kind) {
      return info.get();
    }
  }
  return nullptr;
}

std::vector<const ResourceInfo*> ResourceRegistry::All() const {
  std::vector<const ResourceInfo*> all;
  for (const std::unique_ptr<ResourceInfo>& info : resources_) {
    all.push_back(info.get());
  }
  return all;
}

std::vector<ResourceInfo> ResourceRegistry::FromCrd(
    const json& crd, const json* old_crd, const schema::CelCompilerFactory& new_cel_compiler) {
  if (std::string error = CrdDecodeError(crd); !error.empty()) {
    throw BadRequest(error);
  }
  json defaulted = crd;
  DefaultCrd(defaulted, old_crd);
  std::vector<schema::SchemaError> errors = ValidateCrd(defaulted, old_crd, new_cel_compiler);
  // devcluster does not serve /scale: a CRD the server would accept that asks for it is refused
  // rather than half served.
  const json& versions = Array(defaulted, {"spec", "versions"});
  for (std::size_t i = 0; errors.empty() && i < versions.size(); ++i) {
    if (const json* scale = FindPath(versions[i], {"subresources", "scale"}); scale != nullptr && !scale->is_null()) {
      errors.push_back({"spec.versions[" + std::to_string(i) + "].subresources.scale",
                        "Forbidden: devcluster does not serve the scale subresource"});
    }
  }
  if (!errors.empty()) {
    std::string name = defaulted.is_object()
                           ? JsonString(defaulted.value("metadata", json::object()), "name")
                           : "";
    throw Invalid("CustomResourceDefinition.apiextensions.k8s.io", name, errors);
  }
  return ServedVersions(defaulted);
}

std::vector<ResourceInfo> ResourceRegistry::ServedVersions(const json& crd) {
  const json& spec = crd["spec"];
  const json names = spec.value("names", json::object());
  std::vector<ResourceInfo> infos;
  for (const json& version : spec.value("versions", json::array())) {
    if (!version.value("served", false)) {
      continue;
    }
    ResourceInfo info;
    info.group = JsonString(spec, "group");
    info.version = JsonString(version, "name");
    info.kind = JsonString(names, "kind");
    info.list_kind = JsonString(names, "listKind");
    info.plural = JsonString(names, "plural");
    info.singular = JsonString(names, "singular");
    info.short_names = Strings(names.value("shortNames", json::array()));
    info.categories = Strings(names.value("categories", json::array()));
    info.namespaced = JsonString(spec, "scope") != "Cluster";
    const json* subresources = FindPath(version, {"subresources"});
    info.has_status = subresources != nullptr && FindPath(*subresources, {"status"}) != nullptr &&
                      !FindPath(*subresources, {"status"})->is_null();
    const json* schema = FindPath(version, {"schema", "openAPIV3Schema"});
    info.schema = schema != nullptr ? *schema : json::object();
    info.rules = cel::CompileSchemaRules(info.schema);
    info.is_custom = true;
    // tableconvertor.New: columns up to the first whose JSONPath does not parse.
    for (const json& column : Array(version, {"additionalPrinterColumns"})) {
      PrinterColumn printer;
      printer.name = JsonString(column, "name");
      printer.type = JsonString(column, "type");
      printer.json_path = JsonString(column, "jsonPath");
      printer.description = JsonString(column, "description");
      if (printer.description.empty()) {
        printer.description =
            "Custom resource definition column (in JSONPath format): " + printer.json_path;
      }
      printer.format = JsonString(column, "format");
      printer.priority = column.is_object() && column.value("priority", json(0)).is_number_integer()
                             ? column.value("priority", 0)
                             : 0;
      if (!JsonPathParseError("{" + printer.json_path + "}").empty()) {
        break;
      }
      info.columns.push_back(std::move(printer));
    }
    if (Array(version, {"additionalPrinterColumns"}).empty()) {
      info.columns.push_back(AgeColumn());
    }
    infos.push_back(std::move(info));
  }
  std::stable_sort(infos.begin(), infos.end(), [](const ResourceInfo& a, const ResourceInfo& b) {
    return VersionBefore(a.version, b.version);
  });
  return infos;
}

json ResourceRegistry::AggregatedDiscovery(bool core) const {
  // group -> version -> resources, groups in registration order.
  std::vector<std::string> group_order;
  std::map<std::string, std::map<std::string, std::vector<const ResourceInfo*>>> groups;
  for (const std::unique_ptr<ResourceInfo>& info : resources_) {
    if (info->group.empty() != core) {
      continue;
    }
    if (!groups.contains(info->group)) {
      group_order.push_back(info->group);
    }
    groups[info->group][info->version].push_back(info.get());
  }
  json items = json::array();
  for (const std::string& group : group_order) {
    std::vector<std::string> versions;
    for (const auto& [version, resources] : groups[group]) {
      versions.push_back(version);
    }
    std::sort(versions.begin(), versions.end(), VersionBefore);
    json version_items = json::array();
    for (const std::string& version : versions) {
      std::vector<const ResourceInfo*> resources = groups[group][version];
      std::sort(resources.begin(), resources.end(),
                [](const ResourceInfo* a, const ResourceInfo* b) { return a->plural < b->plural; });
      json resource_items = json::array();
      for (const ResourceInfo* info : resources) {
        json kind = Gvk(info->group, info->version, info->kind);
        json resource = {{"resource", info->plural},
                         {"responseKind", kind},
                         {"scope", info->namespaced ? "Namespaced" : "Cluster"},
                         {"singularResource", info->singular},
                         {"verbs", AllVerbs()}};
        if (!info->short_names.empty()) {
          resource["shortNames"] = info->short_names;
        }
        if (!info->categories.empty()) {
          resource["categories"] = info->categories;
        }
        json subresources = json::array();
        for (const SubresourceInfo& sub : info->DiscoverySubresources()) {
          // A CRD's subresources name their kind in full (apiextensions' discovery); a built-in's
          // leave out the group and version of a kind that is the resource's own.
          const bool own = sub.group.empty() && sub.version.empty();
          json response_kind = own && info->is_custom ? kind : Gvk(sub.group, sub.version, sub.kind);
          subresources.push_back(
              {{"subresource", sub.name}, {"responseKind", std::move(response_kind)}, {"verbs", sub.verbs}});
        }
        if (!subresources.empty()) {
          resource["subresources"] = std::move(subresources);
        }
        resource_items.push_back(std::move(resource));
      }
      version_items.push_back(
          {{"version", version}, {"resources", std::move(resource_items)}, {"freshness", "Current"}});
    }
    items.push_back({{"metadata", {{"name", group}}}, {"versions", std::move(version_items)}});
  }
  return {{"kind", "APIGroupDiscoveryList"},
          {"apiVersion", "apidiscovery.k8s.io/v2"},
          {"metadata", json::object()},
          {"items", std::move(items)}};
}

json ResourceRegistry::OpenApiIndex() const {
  std::set<std::string> group_versions;
  for (const std::unique_ptr<ResourceInfo>& info : resources_) {
    group_versions.insert(info->GroupVersion());
  }
  json paths = json::object();
  for (const std::string& group_version : group_versions) {
    std::string key = group_version.find('/') == std::string::npos ? "api/" + group_version
                                                                   : "apis/" + group_version;
    std::string hash = UpperHexSha256(OpenApiDocument(group_version).dump());
    paths[key] = {{"serverRelativeURL", "/openapi/v3/" + key + "?hash=" + hash}};
  }
  return {{"paths", std::move(paths)}};
}

json ResourceRegistry::OpenApiDocument(const std::string& group_version) const {
  json paths = json::object();
  json schemas = json::object();
  bool found = false;
  for (const std::unique_ptr<ResourceInfo>& info_ptr : resources_) {
    const ResourceInfo& info = *info_ptr;
    if (info.GroupVersion() != group_version) {
      continue;
    }
    found = true;
    json gvk = Gvk(info.group, info.version, info.kind);
    std::string schema_name = SchemaName(info, info.kind);
    std::string list_name = SchemaName(info, info.list_kind);
    json schema = info.schema.is_object() ? info.schema : json{{"type", "object"}};
    // As the server publishes every kind (apiextensions' builder for custom ones): TypeMeta's
    // apiVersion and kind, and ObjectMeta by reference, so that clients (kubectl apply's patch
    // computation, kubectl explain) see metadata's fields.
    schema = WithKubeNativeProperties(std::move(schema));
    schema["x-kubernetes-group-version-kind"] = json::array({gvk});
    schemas[schema_name] = std::move(schema);
    if (info.is_custom) {
      schemas[list_name] = ListSchema(info.list_kind, info.kind, info.plural, schema_name);
      schemas[list_name]["x-kubernetes-group-version-kind"] =
          json::array({Gvk(info.group, info.version, info.list_kind)});
    } else {
      schemas[list_name] = {
          {"type", "object"},
          {"description", info.list_kind + " is a list of " + info.kind + "."},
          {"required", json::array({"items"})},
          {"properties",
           {{"apiVersion", StringProperty("APIVersion defines the versioned schema of this "
                                          "representation of an object.")},
            {"kind", StringProperty("Kind is a string value representing the REST resource this "
                                    "object represents.")},
            {"metadata", OpenObject("Standard list metadata.")},
            {"items", {{"type", "array"}, {"items", Ref(schema_name)}}}}},
          {"x-kubernetes-group-version-kind",
           json::array({Gvk(info.group, info.version, info.list_kind)})}};
    }

    std::string prefix =
        info.group.empty() ? "/api/" + info.version : "/apis/" + info.group + "/" + info.version;
    std::string collection =
        prefix + (info.namespaced ? "/namespaces/{namespace}/" : "/") + info.plural;
    json namespace_parameter = PathParameter("namespace",
                                             "object name and auth scope, such as "
                                             "for teams and projects");
    json name_parameter = PathParameter("name", "name of the " + info.kind);
    json collection_parameters = json::array();
    if (info.namespaced) {
      collection_parameters.push_back(namespace_parameter);
    }
    json item_parameters = collection_parameters;
    item_parameters.push_back(name_parameter);

    json collection_item = {
        {"get", Operation("list", "list" + info.kind, gvk, list_name, ListParameters())},
        {"post", Operation("post", "create" + info.kind, gvk, schema_name, WriteParameters(),
                           JsonBody(schema_name))},
        {"parameters", collection_parameters}};
    paths[collection] = std::move(collection_item);
    json item = ItemOperations(info, gvk, schema_name, "", true);
    item["parameters"] = item_parameters;
    paths[collection + "/{name}"] = std::move(item);
    if (info.has_status) {
      json status = ItemOperations(info, gvk, schema_name, "Status", false);
      status["parameters"] = item_parameters;
      paths[collection + "/{name}/status"] = std::move(status);
    }
    if (info.namespaced) {
      paths[prefix + "/" + info.plural] = {
          {"get", Operation("list", "list" + info.kind + "ForAllNamespaces", gvk, list_name,
                            ListParameters())}};
    }
  }
  if (!found) {
    throw ApiError(404, "NotFound", "the server could not find the requested resource");
  }
  json meta_components = MetaV1Components();
  for (auto& [name, component] : meta_components.items()) {
    schemas[name] = std::move(component);
  }
  schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Patch"] = {
      {"type", "object"},
      {"description", "Patch is provided to give a concrete name and type to the Kubernetes "
                      "PATCH request body."}};
  schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Status"] = {
      {"type", "object"},
      {"description", "Status is a return value for calls that don't return other objects."},
      {"x-kubernetes-preserve-unknown-fields", true},
      {"x-kubernetes-group-version-kind", json::array({Gvk("", "v1", "Status")})}};
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
          {"paths", std::move(paths)},
          {"components", {{"schemas", std::move(schemas)}}}};
}

}  // namespace ringleader::devcluster
