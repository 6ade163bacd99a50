// Object semantics: the write pipeline (metadata, status, schema, generation, no-op detection),
// deletion with finalizers and propagation, CRDs and namespaces.
#include "tests/devcluster/api.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>

#include "tests/devcluster/eviction.h"
#include "tests/devcluster/gc.h"
#include "tests/devcluster/graceful_deletion.h"
#include "tests/devcluster/machinery/crd_validation.h"
#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/machinery/patch.h"
#include "tests/devcluster/machinery/selectors.h"
#include "tests/devcluster/machinery/status.h"
#include "tests/devcluster/resource_quota.h"
#include "tests/devcluster/scheduling_gates.h"
#include "tests/support/cel/crd_rules.h"
#include "tests/support/structural_schema.h"

namespace ringleader::devcluster {
namespace {

const char* const kCrdKey = "apiextensions.k8s.io/customresourcedefinitions";
const char* const kNamespaceKey = "/namespaces";
const char* const kResourceQuotaKey = "/resourcequotas";

std::string Now() { return FormatTime(std::chrono::system_clock::now()); }

std::string MetaString(const nlohmann::json& object, const char* field) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return "";
  }
  const auto& meta = object["metadata"];
  return meta.contains(field) && meta[field].is_string() ? meta[field].get<std::string>() : "";
}

// The object as served under `info`'s version (stored objects of a multi-version CRD keep the
// version they were written in; with no conversion, only apiVersion differs).
nlohmann::json AsServed(const ResourceInfo& info, nlohmann::json object) {
  object["apiVersion"] = info.GroupVersion();
  object["kind"] = info.kind;
  return object;
}

std::string Base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string Unbase64(const std::string& data) {
  std::string out(3 * (data.size() / 4) + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  if (n < 0 || data.empty() || data.size() % 4 != 0) {
    throw BadRequest("continue key is not valid: illegal base64 data");
  }
  std::size_t len = static_cast<std::size_t>(n);
  for (auto it = data.rbegin(); it != data.rend() && *it == '=' && len > 0; ++it) {
    --len;
  }
  out.resize(len);
  return out;
}

NameRule NameRuleFor(const ResourceInfo& info) {
  if (info.group.empty() && info.plural == "namespaces") {
    return NameRule::kDnsLabel;
  }
  return info.group.empty() && info.plural == "services" ? NameRule::kDns1035Label : NameRule::kDnsSubdomain;
}

// Strict field validation happens while the server decodes the body, before admission and
// validation: a field the schema does not define is a 400 (kubectl sends fieldValidation=Strict).
void RejectUnknownFields(const ResourceInfo& info, const nlohmann::json& object, const WriteOptions& options) {
  if (!info.is_custom || !info.schema.is_object() || options.field_validation != "Strict") {
    return;
  }
  const schema::ValidationResult result = schema::Validate(object, info.schema);
  if (result.unknown_fields.empty()) {
    return;
  }
  std::string message;
  for (const std::string& field : result.unknown_fields) {
    message += (message.empty() ? "" : ", ") + std::string("unknown field \"") + field + "\"";
  }
  throw BadRequest(info.kind + " in version \"" + info.version + "\" cannot be handled as a " + info.kind +
                   ": strict decoding error: " + message);
}

// Prunes, defaults and validates a custom resource against its schema, then runs its CEL rules
// unless a schema error makes that pointless (the server's hasBlockingErr), as the API server
// does, adding the field errors to `errors` (the caller reports them all in one 422). `old` is the
// stored object on update (for transition rules and ratcheting), null on create.
void NormalizeCustomResource(const ResourceInfo& info, nlohmann::json& object, const nlohmann::json* old,
                             std::vector<schema::SchemaError>& errors) {
  if (!info.is_custom || !info.schema.is_object()) {
    return;
  }
  schema::Prune(object, info.schema);
  schema::ApplyDefaults(object, info.schema);
  schema::ValidationResult result = schema::Validate(object, info.schema);
  const bool blocks_cel = result.BlocksCel();
  errors.insert(errors.end(), std::make_move_iterator(result.errors.begin()),
                std::make_move_iterator(result.errors.end()));
  if (info.rules == nullptr || !cel::HasRules(*info.rules)) {
    return;
  }
  if (blocks_cel) {
    errors.push_back(schema::CelRulesSkipped());
    return;
  }
  cel::RuleEvaluation evaluation = cel::ValidateRules(*info.rules, object, old != nullptr ? *old : nlohmann::json());
  errors.insert(errors.end(), std::make_move_iterator(evaluation.errors.begin()),
                std::make_move_iterator(evaluation.errors.end()));
}

// NamespaceLifecycle admission: nothing is created in a namespace that does not exist.
void RequireNamespace(const Store::Txn& txn, const ResourceInfo& info, const std::string& ns) {
  if (info.namespaced && txn.Get(kNamespaceKey, "", ns) == nullptr) {
    throw NotFound("namespaces", ns);
  }
}

// What the real server fills in for a few built-ins on create.
void ApplyBuiltinCreateDefaults(const ResourceInfo& info, nlohmann::json& object, std::uint64_t serial) {
  if (!info.group.empty()) {
    return;
  }
  if (info.plural == "pods") {
    object["status"] = {{"phase", "Pending"}};
    AddSchedulingGatedCondition(object);  // in the create's answer, as the Pod strategy writes it
  } else if (info.plural == "namespaces") {
    object["spec"]["finalizers"] = {"kubernetes"};
    object["status"] = {{"phase", "Active"}};
    object["metadata"]["labels"]["kubernetes.io/metadata.name"] = object["metadata"]["name"];
  } else if (info.plural == "services") {
    auto& spec = object["spec"];
    if (!spec.contains("type")) {
      spec["type"] = "ClusterIP";
    }
    if (!spec.contains("clusterIP") || spec["clusterIP"] == "") {
      spec["clusterIP"] = "10.96." + std::to_string((serial / 250) % 250) + "." + std::to_string(serial % 250 + 2);
    }
    if (!spec.contains("clusterIPs") && spec["clusterIP"].is_string()) {
      spec["clusterIPs"] = {spec["clusterIP"]};
    }
    if (!spec.contains("sessionAffinity")) {
      spec["sessionAffinity"] = "None";
    }
  }
}

// Ports of a Service get protocol TCP and targetPort = port unless given, a Secret type Opaque
// (also on update).
void ApplyBuiltinDefaults(const ResourceInfo& info, nlohmann::json& object) {
  if (info.group.empty() && info.plural == "secrets" && (!object.contains("type") || object["type"] == "")) {
    object["type"] = "Opaque";
  }
  if (info.group.empty() && info.plural == "services" && object.contains("spec") &&
      object["spec"].contains("ports") && object["spec"]["ports"].is_array()) {
    for (auto& port : object["spec"]["ports"]) {
      if (!port.is_object()) {
        continue;
      }
      if (!port.contains("protocol")) {
        port["protocol"] = "TCP";
      }
      if (!port.contains("targetPort") && port.contains("port")) {
        port["targetPort"] = port["port"];
      }
    }
  }
}

// The ResourceQuotas devcluster admits are the ones it can enforce (resource_quota.h).
void ValidateBuiltin(const ResourceInfo& info, const nlohmann::json& object, std::vector<schema::SchemaError>& errors) {
  if (info.group.empty() && info.plural == "resourcequotas") {
    std::vector<schema::SchemaError> quota = QuotaSpecErrors(object);
    errors.insert(errors.end(), std::make_move_iterator(quota.begin()), std::make_move_iterator(quota.end()));
  }
}

// ResourceQuota admission, inside the create's transaction so two creates cannot both take the
// last unit: 403 `pods "x" is forbidden: exceeded quota: ...` as kube-apiserver answers.
void AdmitQuota(const Store::Txn& txn, const ResourceInfo& info, const std::string& ns, const std::string& name,
                const nlohmann::json& object) {
  if (!info.namespaced) {
    return;
  }
  QuotaAdmission admission{info.plural, info.group, &object, {}, txn.List(kResourceQuotaKey, ns),
                           std::chrono::system_clock::now()};
  if (admission.quotas.empty()) {
    return;
  }
  admission.existing = txn.List(StoreKey(info), ns);
  if (const std::string why = QuotaRefusal(admission); !why.empty()) {
    throw Forbidden(info.GroupResource(), name, why);
  }
}

bool IsPods(const ResourceInfo& info) { return info.group.empty() && info.plural == "pods"; }

bool IsCrd(const ResourceInfo& info) {
  return info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions";
}

// Validates a CRD write as the server does (throws 400 or 422), then defaults it (storedVersions
// and the status kept on update) and sets the conditions its controllers would: names accepted,
// established.
void AdmitCrd(nlohmann::json& crd, const nlohmann::json* old_crd) {
  ResourceRegistry::FromCrd(crd, old_crd, cel::CrdCelCompilers());
  DefaultCrd(crd, old_crd);
  nlohmann::json& status = crd["status"];
  status["acceptedNames"] = crd["spec"].value("names", nlohmann::json::object());
  if (!status.contains("conditions")) {
    const std::string now = Now();
    status["conditions"] = {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"},
                             {"message", "no conflicts found"}, {"lastTransitionTime", now}},
                            {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"},
                             {"message", "the initial names have been accepted"}, {"lastTransitionTime", now}}};
  }
}

std::vector<std::string> Finalizers(const nlohmann::json& object) {
  std::vector<std::string> out;
  if (object.contains("metadata") && object["metadata"].contains("finalizers") &&
      object["metadata"]["finalizers"].is_array()) {
    for (const auto& f : object["metadata"]["finalizers"]) {
      if (f.is_string()) {
        out.push_back(f.get<std::string>());
      }
    }
  }
  return out;
}

// A deleted object goes once its finalizers are gone, unless a grace period still runs (a Pod
// its kubelet has not stopped yet), as the store's shouldDeleteDuringUpdate decides.
bool GoesOnUpdate(const nlohmann::json& object) {
  const nlohmann::json& meta = object["metadata"];
  if (!meta.contains("deletionTimestamp") || !Finalizers(object).empty()) {
    return false;
  }
  const auto grace = meta.find("deletionGracePeriodSeconds");
  return grace == meta.end() || !grace->is_number_integer() || grace->get<std::int64_t>() == 0;
}

// One write transaction: puts and removes with their side effects on CRDs and namespaces.
class Writer {
 public:
  Writer(Store::Txn& txn, Catalog& catalog, bool dry_run) : txn_(txn), catalog_(catalog), dry_run_(dry_run) {}

  Store::Txn& txn() { return txn_; }

  nlohmann::json Put(const std::string& key, nlohmann::json object) {
    if (dry_run_) {
      return object;
    }
    nlohmann::json stored = txn_.Put(key, std::move(object));
    if (key == kCrdKey) {
      const auto& spec = stored["spec"];
      catalog_.SetCrd(spec.value("group", std::string()), spec["names"].value("plural", std::string()),
                      ResourceRegistry::ServedVersions(stored));
    }
    return stored;
  }

  nlohmann::json Remove(const std::string& key, const std::string& ns, const std::string& name) {
    if (dry_run_) {
      const nlohmann::json* current = txn_.Get(key, ns, name);
      return current == nullptr ? nlohmann::json() : *current;
    }
    nlohmann::json removed = txn_.Remove(key, ns, name);
    if (removed.is_null()) {
      return removed;
    }
    if (key == kCrdKey) {
      const std::string group = removed["spec"].value("group", std::string());
      const std::string plural = removed["spec"]["names"].value("plural", std::string());
      catalog_.SetCrd(group, plural, {});
      RemoveAll(group + "/" + plural, "");
    } else if (key == kNamespaceKey) {
      std::set<std::string> keys;
      for (const auto& entry : txn_.All()) {
        keys.insert(entry.first);
      }
      keys.erase(kNamespaceKey);
      for (const std::string& other_key : keys) {
        RemoveAll(other_key, name);
      }
    }
    return removed;
  }

  // Removes an object now, or marks it (deletionTimestamp) when finalizers hold it. `target` is
  // `stored` with what the delete changes (finalizers, a shortened grace period).
  WriteResult DeleteOrMark(const std::string& key, const nlohmann::json& stored, nlohmann::json target) {
    if (!Finalizers(target).empty()) {
      if (!target["metadata"].contains("deletionTimestamp")) {
        target["metadata"]["deletionTimestamp"] = Now();
        target["metadata"]["deletionGracePeriodSeconds"] = 0;
      }
      if (SameObject(stored, target)) {
        return {202, stored};
      }
      return {202, Put(key, std::move(target))};
    }
    return {200, Remove(key, MetaString(target, "namespace"), MetaString(target, "name"))};
  }

  void CollectGarbageNow() {
    if (dry_run_) {
      return;
    }
    GcActions actions{
        [this](const std::string& key, const nlohmann::json& object) {
          Remove(key, MetaString(object, "namespace"), MetaString(object, "name"));
        },
        [this](const std::string& key, nlohmann::json object) {
          if (txn_.Get(key, MetaString(object, "namespace"), MetaString(object, "name")) != nullptr) {
            Put(key, std::move(object));
          }
        }};
    CollectGarbage(txn_, actions, Now());
  }

 private:
  void RemoveAll(const std::string& key, const std::string& ns) {
    std::vector<std::pair<std::string, std::string>> names;
    for (const nlohmann::json* object : txn_.List(key, ns)) {
      names.emplace_back(MetaString(*object, "namespace"), MetaString(*object, "name"));
    }
    for (const auto& [object_ns, name] : names) {
      txn_.Remove(key, object_ns, name);
    }
  }

  Store::Txn& txn_;
  Catalog& catalog_;
  bool dry_run_;
};

std::string NamespaceFor(const ResourceInfo& info, const std::string& url_ns) {
  return info.namespaced ? (url_ns.empty() ? "default" : url_ns) : "";
}

// Checks kind/apiVersion and namespace against the request and fills them in.
void CheckIdentity(const ResourceInfo& info, const std::string& ns, nlohmann::json& body) {
  if (!body.is_object()) {
    throw BadRequest("the body of the request must be a JSON object");
  }
  if (body.contains("apiVersion") && body["apiVersion"] != info.GroupVersion()) {
    const auto other = body["apiVersion"].is_string() ? body["apiVersion"].get<std::string>() : body["apiVersion"].dump();
    // Another served version of the same group/plural is stored as-is (no conversion needed).
    if (other.rfind(info.group.empty() ? "" : info.group + "/", 0) != 0) {
      throw BadRequest("the API version in the data (" + other + ") does not match the expected API version (" +
                       info.GroupVersion() + ")");
    }
  }
  if (body.contains("kind") && body["kind"] != info.kind) {
    throw BadRequest("the kind in the data (" + body["kind"].dump() + ") does not match the expected kind (" +
                     info.kind + ")");
  }
  body["apiVersion"] = body.value("apiVersion", info.GroupVersion());
  body["kind"] = info.kind;
  if (!body.contains("metadata") || !body["metadata"].is_object()) {
    if (body.contains("metadata") && !body["metadata"].is_null()) {
      throw BadRequest("metadata must be an object");
    }
    body["metadata"] = nlohmann::json::object();
  }
  auto& meta = body["metadata"];
  if (info.namespaced) {
    if (meta.contains("namespace") && meta["namespace"].is_string() && !meta["namespace"].get<std::string>().empty() &&
        meta["namespace"] != ns) {
      throw BadRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
}

}  // namespace

Api::Api(Store& store, Catalog& catalog) : store_(store), catalog_(catalog) {}

nlohmann::json Api::Get(const ResourceInfo& info, const std::string& ns, const std::string& name) const {
  nlohmann::json out;
  store_.Read([&](const Store::Txn& txn) {
    const nlohmann::json* object = txn.Get(StoreKey(info), NamespaceFor(info, ns), name);
    if (object != nullptr) {
      out = *object;
    }
  });
  if (out.is_null()) {
    throw NotFound(info.GroupResource(), name);
  }
  return AsServed(info, std::move(out));
}

ListResult Api::List(const ResourceInfo& info, const std::string& ns, const ListOptions& options) const {
  const LabelSelector labels = LabelSelector::Parse(options.label_selector);
  const FieldSelector fields = FieldSelector::Parse(options.field_selector);
  std::string start_ns;
  std::string start_name;
  if (!options.continue_token.empty()) {
    nlohmann::json token;
    try {
      token = nlohmann::json::parse(Unbase64(options.continue_token));
      start_ns = token.at("ns").get<std::string>();
      start_name = token.at("name").get<std::string>();
    } catch (const nlohmann::json::exception&) {
      throw BadRequest("continue key is not valid");
    }
  }
  ListResult result;
  store_.Read([&](const Store::Txn& txn) {
    result.resource_version = std::to_string(txn.rv());
    std::vector<const nlohmann::json*> matched;
    for (const nlohmann::json* object : txn.List(StoreKey(info), info.namespaced ? ns : "")) {
      if (!options.continue_token.empty()) {
        const auto key = std::make_pair(MetaString(*object, "namespace"), MetaString(*object, "name"));
        if (key <= std::make_pair(start_ns, start_name)) {
          continue;
        }
      }
      const nlohmann::json& meta = (*object)["metadata"];
      if (labels.Matches(meta.value("labels", nlohmann::json())) && fields.Matches(*object)) {
        matched.push_back(object);
      }
    }
    const std::size_t take = options.limit == 0 ? matched.size() : std::min(options.limit, matched.size());
    for (std::size_t i = 0; i < take; ++i) {
      result.items.push_back(AsServed(info, *matched[i]));
    }
    if (take < matched.size()) {
      const nlohmann::json& last = *matched[take - 1];
      result.continue_token = Base64(
          nlohmann::json{{"rv", result.resource_version}, {"ns", MetaString(last, "namespace")}, {"name", MetaString(last, "name")}}
              .dump());
      result.remaining_items = static_cast<long long>(matched.size() - take);
    }
  });
  return result;
}

nlohmann::json Api::ListBody(const ResourceInfo& info, const ListResult& list) {
  nlohmann::json body{{"kind", info.list_kind},
                      {"apiVersion", info.GroupVersion()},
                      {"metadata", {{"resourceVersion", list.resource_version}}},
                      {"items", list.items}};
  if (!list.continue_token.empty()) {
    body["metadata"]["continue"] = list.continue_token;
    body["metadata"]["remainingItemCount"] = list.remaining_items;
  }
  return body;
}

WriteResult Api::Create(const ResourceInfo& info, const std::string& url_ns, nlohmann::json body,
                        const WriteOptions& options) {
  const std::string ns = NamespaceFor(info, url_ns);
  CheckIdentity(info, ns, body);
  RejectUnknownFields(info, body, options);
  store_.Read([&](const Store::Txn& txn) { RequireNamespace(txn, info, ns); });
  auto& meta = body["metadata"];
  std::string name = MetaString(body, "name");
  if (name.empty() && !MetaString(body, "generateName").empty()) {
    name = GenerateName(MetaString(body, "generateName"));
    meta["name"] = name;
  }
  for (const char* server_owned : {"uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                                   "creationTimestamp", "generation", "managedFields", "selfLink"}) {
    meta.erase(server_owned);
  }
  if (info.has_status && info.is_custom) {
    body.erase("status");
  }
  ApplyBuiltinDefaults(info, body);
  if (IsCrd(info)) {
    AdmitCrd(body, nullptr);  // its name is checked with the rest of the CRD
  } else {
    // Every field error of the object in one 422, as the server's strategy reports them.
    std::vector<schema::SchemaError> errors = NameErrors(name, NameRuleFor(info));
    NormalizeCustomResource(info, body, nullptr, errors);
    ValidateBuiltin(info, body, errors);
    if (IsPods(info)) {
      std::vector<schema::SchemaError> gates = SchedulingGateCreateErrors(body);
      errors.insert(errors.end(), std::make_move_iterator(gates.begin()), std::make_move_iterator(gates.end()));
    }
    if (!errors.empty()) {
      throw Invalid(info.QualifiedKind(), name, errors);
    }
  }

  WriteResult result{201, nullptr};
  store_.Write([&](Store::Txn& txn) {
    RequireNamespace(txn, info, ns);  // it may have gone since the check above
    AdmitQuota(txn, info, ns, name, body);  // admission runs before storage finds the name taken
    if (txn.Get(StoreKey(info), ns, name) != nullptr) {
      throw AlreadyExists(info.GroupResource(), name);
    }
    nlohmann::json& m = body["metadata"];
    m["uid"] = NewUid();
    m["creationTimestamp"] = Now();
    m["generation"] = 1;
    ApplyBuiltinCreateDefaults(info, body, txn.rv());
    Writer writer(txn, catalog_, options.dry_run);
    result.object = writer.Put(StoreKey(info), std::move(body));
    // Kubernetes' garbage collector deletes a dependent created after its owners were gone (a
    // controller acting on a stale cache does that): the create succeeds, the object then goes.
    if (!options.dry_run && OwnersAllGone(txn, result.object, ns)) {
      writer.Remove(StoreKey(info), ns, name);
    }
  });
  return result;
}

bool Api::OwnersAllGone(Store::Txn& txn, const nlohmann::json& object, const std::string& ns) const {
  const auto& meta = object["metadata"];
  if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array() ||
      meta["ownerReferences"].empty()) {
    return false;
  }
  for (const nlohmann::json& ref : meta["ownerReferences"]) {
    const std::string api_version = ref.value("apiVersion", "");
    const auto slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    const std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    const auto owner_info = catalog_.FindKind(group, version, ref.value("kind", ""));
    if (!owner_info) {
      return false;  // a kind we do not serve: not ours to judge
    }
    const nlohmann::json* owner =
        txn.Get(StoreKey(*owner_info), owner_info->namespaced ? ns : "", ref.value("name", ""));
    if (owner != nullptr && MetaString(*owner, "uid") == ref.value("uid", "")) {
      return false;
    }
  }
  return true;
}

namespace {

// The update pipeline shared by PUT and PATCH, inside the write transaction.
WriteResult CommitUpdate(Writer& writer, const ResourceInfo& info, const nlohmann::json& current,
                         nlohmann::json candidate, const std::string& subresource, const WriteOptions& options,
                         bool require_resource_version) {
  const std::string name = MetaString(current, "name");
  if (!candidate.is_object()) {
    throw BadRequest("the body of the request must be a JSON object");
  }
  if (!candidate.contains("metadata") || !candidate["metadata"].is_object()) {
    candidate["metadata"] = nlohmann::json::object();
  }
  const std::string wanted_rv = MetaString(candidate, "resourceVersion");
  if (!wanted_rv.empty() && wanted_rv != MetaString(current, "resourceVersion")) {
    throw Conflict(info.GroupResource(), name, kObjectModified);
  }
  if (wanted_rv.empty() && require_resource_version && info.is_custom) {
    throw Invalid(info.QualifiedKind(), name,
                  {{"metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update"}});
  }
  if (!MetaString(candidate, "name").empty() && MetaString(candidate, "name") != name) {
    throw BadRequest("the name of the object (" + MetaString(candidate, "name") +
                     ") does not match the name on the URL (" + name + ")");
  }

  nlohmann::json next;
  if (subresource == "status") {
    next = current;
    if (candidate.contains("status")) {
      next["status"] = candidate["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = std::move(candidate);
    if (info.has_status) {
      if (current.contains("status")) {
        next["status"] = current["status"];
      } else {
        next.erase("status");
      }
    }
    // The server owns these; a client cannot change them.
    auto& meta = next["metadata"];
    for (const char* owned : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                              "namespace", "name", "generation"}) {
      if (current["metadata"].contains(owned)) {
        meta[owned] = current["metadata"][owned];
      } else {
        meta.erase(owned);
      }
    }
    meta.erase("managedFields");
  }
  next["apiVersion"] = current.value("apiVersion", info.GroupVersion());
  next["kind"] = info.kind;
  next["metadata"]["resourceVersion"] = current["metadata"].value("resourceVersion", std::string());
  ApplyBuiltinDefaults(info, next);
  RejectUnknownFields(info, next, options);
  std::vector<schema::SchemaError> errors;
  NormalizeCustomResource(info, next, &current, errors);
  if (subresource.empty()) {
    ValidateBuiltin(info, next, errors);
    if (IsPods(info)) {
      // Gates can only be removed once the Pod exists.
      std::vector<schema::SchemaError> gates = SchedulingGateUpdateErrors(current, next);
      errors.insert(errors.end(), std::make_move_iterator(gates.begin()), std::make_move_iterator(gates.end()));
    }
  }
  if (!errors.empty()) {
    throw Invalid(info.QualifiedKind(), name, errors);
  }
  if (IsCrd(info)) {
    AdmitCrd(next, &current);
  }
  if (SpecChanged(current, next)) {
    next["metadata"]["generation"] = current["metadata"].value("generation", 1) + 1;
  }
  if (SameObject(current, next)) {
    return {200, current};
  }
  const std::string key = StoreKey(info);
  if (GoesOnUpdate(next)) {
    WriteResult removed{200, writer.Remove(key, MetaString(current, "namespace"), name)};
    writer.CollectGarbageNow();
    return removed;
  }
  return {200, writer.Put(key, std::move(next))};
}

}  // namespace

WriteResult Api::Update(const ResourceInfo& info, const std::string& url_ns, const std::string& name,
                        const std::string& subresource, nlohmann::json body, const WriteOptions& options) {
  const std::string ns = NamespaceFor(info, url_ns);
  CheckIdentity(info, ns, body);
  WriteResult result{200, nullptr};
  store_.Write([&](Store::Txn& txn) {
    const nlohmann::json* current = txn.Get(StoreKey(info), ns, name);
    if (current == nullptr) {
      throw NotFound(info.GroupResource(), name);
    }
    Writer writer(txn, catalog_, options.dry_run);
    result = CommitUpdate(writer, info, *current, std::move(body), subresource, options, true);
  });
  result.object = AsServed(info, std::move(result.object));
  return result;
}

WriteResult Api::Patch(const ResourceInfo& info, const std::string& url_ns, const std::string& name,
                       const std::string& subresource, const std::string& content_type, const nlohmann::json& patch,
                       const WriteOptions& options) {
  const std::string ns = NamespaceFor(info, url_ns);
  const bool apply = content_type.rfind(std::string(kApplyPatch), 0) == 0;
  bool missing = false;
  WriteResult result{200, nullptr};
  store_.Write([&](Store::Txn& txn) {
    const nlohmann::json* current = txn.Get(StoreKey(info), ns, name);
    if (current == nullptr) {
      missing = true;
      return;
    }
    nlohmann::json patched = ApplyPatch(*current, content_type, patch, PatchSchema::Builtin(), info.is_custom);
    Writer writer(txn, catalog_, options.dry_run);
    result = CommitUpdate(writer, info, *current, std::move(patched), subresource, options, false);
  });
  if (missing) {
    if (!apply || !subresource.empty()) {
      throw NotFound(info.GroupResource(), name);
    }
    nlohmann::json body = patch;
    if (!body.is_object()) {
      throw BadRequest("the apply patch must be an object");
    }
    if (!body.contains("metadata") || !body["metadata"].is_object()) {
      body["metadata"] = nlohmann::json::object();
    }
    if (!MetaString(body, "name").empty() && MetaString(body, "name") != name) {
      throw BadRequest("the name of the object (" + MetaString(body, "name") +
                       ") does not match the name on the URL (" + name + ")");
    }
    body["metadata"]["name"] = name;
    return Create(info, url_ns, std::move(body), options);
  }
  result.object = AsServed(info, std::move(result.object));
  return result;
}

WriteResult Api::Delete(const ResourceInfo& info, const std::string& url_ns, const std::string& name,
                        const nlohmann::json& delete_options, bool dry_run) {
  const std::string ns = NamespaceFor(info, url_ns);
  std::string policy = "Background";
  nlohmann::json preconditions;
  if (delete_options.is_object()) {
    if (delete_options.contains("orphanDependents") && delete_options["orphanDependents"].is_boolean()) {
      policy = delete_options["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    }
    if (delete_options.contains("propagationPolicy") && delete_options["propagationPolicy"].is_string()) {
      policy = delete_options["propagationPolicy"].get<std::string>();
    }
    preconditions = delete_options.value("preconditions", nlohmann::json());
  }
  if (policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    throw Invalid("DeleteOptions", "",
                  {{"propagationPolicy", "Unsupported value: \"" + policy +
                                             "\": supported values: \"Foreground\", \"Background\", \"Orphan\""}});
  }
  const std::optional<std::int64_t> grace = GracePeriodSeconds(delete_options);
  WriteResult result{200, nullptr};
  store_.Write([&](Store::Txn& txn) {
    const std::string key = StoreKey(info);
    const nlohmann::json* found = txn.Get(key, ns, name);
    if (found == nullptr) {
      throw NotFound(info.GroupResource(), name);
    }
    const nlohmann::json current = *found;
    if (preconditions.is_object()) {
      const std::string want_uid = preconditions.value("uid", std::string());
      const std::string want_rv = preconditions.value("resourceVersion", std::string());
      if (!want_uid.empty() && want_uid != MetaString(current, "uid")) {
        throw Conflict(info.GroupResource(), name,
                       "Precondition failed: UID in precondition: " + want_uid +
                           ", UID in object meta: " + MetaString(current, "uid"));
      }
      if (!want_rv.empty() && want_rv != MetaString(current, "resourceVersion")) {
        throw Conflict(info.GroupResource(), name,
                       "Precondition failed: ResourceVersion in precondition: " + want_rv +
                           ", ResourceVersion in object meta: " + MetaString(current, "resourceVersion"));
      }
    }
    Writer writer(txn, catalog_, dry_run);
    std::optional<PodDeletion> pod_deletion;
    if (IsPods(info)) {
      pod_deletion = PlanPodDeletion(current, grace, std::chrono::system_clock::now());
      if (pod_deletion->step == PodDeletionStep::kPending) {
        result = {200, current};  // already terminating; the Pod store answers with the object
        return;
      }
    }
    const std::string uid = MetaString(current, "uid");
    nlohmann::json target = current;
    if (policy == "Orphan" && !dry_run) {
      std::vector<std::pair<std::string, nlohmann::json>> orphans;
      for (const auto& [other_key, object] : txn.All()) {
        const auto owners = OwnerUids(*object);
        if (std::find(owners.begin(), owners.end(), uid) != owners.end()) {
          nlohmann::json copy = *object;
          nlohmann::json kept = nlohmann::json::array();
          for (const auto& ref : copy["metadata"]["ownerReferences"]) {
            if (ref.value("uid", std::string()) != uid) {
              kept.push_back(ref);
            }
          }
          copy["metadata"]["ownerReferences"] = std::move(kept);
          orphans.emplace_back(other_key, std::move(copy));
        }
      }
      for (auto& [other_key, object] : orphans) {
        writer.Put(other_key, std::move(object));
      }
    }
    if (policy == "Foreground" && !current["metadata"].contains("deletionTimestamp")) {
      const auto finalizers = Finalizers(target);
      if (std::find(finalizers.begin(), finalizers.end(), "foregroundDeletion") == finalizers.end()) {
        target["metadata"]["finalizers"].push_back("foregroundDeletion");
      }
    }
    if (pod_deletion) {
      // The grace period's marks (and, when it is cut to 0, the moved deadline) on the target.
      for (const char* field : {"deletionTimestamp", "deletionGracePeriodSeconds", "generation"}) {
        if (pod_deletion->pod["metadata"].contains(field)) {
          target["metadata"][field] = pod_deletion->pod["metadata"][field];
        }
      }
      if (pod_deletion->step == PodDeletionStep::kGraceful) {
        result = {200, writer.Put(key, std::move(target))};
        return;
      }
    }
    result = writer.DeleteOrMark(key, current, std::move(target));
    writer.CollectGarbageNow();
    // A foreground deletion whose dependents were already gone finishes in the same call.
    if (result.code == 202 && !dry_run && txn.Get(key, ns, name) == nullptr) {
      result.code = 200;
    }
  });
  result.object = AsServed(info, std::move(result.object));
  return result;
}

WriteResult Api::Evict(const std::string& url_ns, const std::string& name, const nlohmann::json& body,
                       bool dry_run) {
  const ResourceInfo pods = *catalog_.Find("", "v1", "pods");
  const std::string ns = NamespaceFor(pods, url_ns);
  EvictionRequest request = ParseEviction(body, ns, name, dry_run);
  GracePeriodSeconds(request.delete_options);  // a malformed one is refused before anything changes
  store_.Write([&](Store::Txn& txn) {
    const nlohmann::json* found = txn.Get(StoreKey(pods), ns, name);
    if (found == nullptr) {
      throw NotFound(pods.GroupResource(), name);
    }
    CheckEvictionPreconditions(*found, request.delete_options);
    if (request.dry_run) {
      return;
    }
    nlohmann::json marked = WithEvictionCondition(*found, std::chrono::system_clock::now());
    if (SameObject(*found, marked)) {
      return;
    }
    Writer writer(txn, catalog_, false);
    const nlohmann::json stored = writer.Put(StoreKey(pods), std::move(marked));
    // The condition moved the resourceVersion; a precondition on it now means the new one.
    nlohmann::json& preconditions = request.delete_options["preconditions"];
    if (preconditions.is_object() && preconditions.contains("resourceVersion")) {
      preconditions["resourceVersion"] = stored["metadata"]["resourceVersion"];
    } else if (preconditions.is_null()) {
      request.delete_options.erase("preconditions");
    }
  });
  Delete(pods, ns, name, request.delete_options, request.dry_run);
  return {201, EvictionSucceeded()};
}

nlohmann::json Api::DeleteCollection(const ResourceInfo& info, const std::string& ns, const ListOptions& options,
                                     const nlohmann::json& delete_options) {
  ListOptions all = options;
  all.limit = 0;
  all.continue_token.clear();
  ListResult list = List(info, ns, all);
  ListResult deleted;
  for (const nlohmann::json& item : list.items) {
    try {
      deleted.items.push_back(
          Delete(info, MetaString(item, "namespace"), MetaString(item, "name"), delete_options, false).object);
    } catch (const ApiError& error) {
      if (error.code != 404) {
        throw;
      }
    }
  }
  deleted.resource_version = std::to_string(store_.CurrentRv());
  return ListBody(info, deleted);
}

void Api::EnsureNamespace(const std::string& name) {
  std::optional<ResourceInfo> info = catalog_.Find("", "v1", "namespaces");
  if (!info) {
    return;
  }
  bool exists = false;
  store_.Read([&](const Store::Txn& txn) { exists = txn.Get(kNamespaceKey, "", name) != nullptr; });
  if (exists) {
    return;
  }
  try {
    Create(*info, "", nlohmann::json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}}, {});
  } catch (const ApiError& error) {
    if (error.code != 409) {
      throw;
    }
  }
}

}  // namespace ringleader::devcluster
