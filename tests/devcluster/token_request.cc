// TokenRequest: checks the ServiceAccount, reads the request (JSON, YAML, or protobuf as kubectl
// sends it), issues the token, answers as kube-apiserver does.
#include "tests/devcluster/token_request.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/machinery/protobuf_body.h"

namespace ringleader::devcluster {
namespace {

constexpr std::string_view kApiVersion = "authentication.k8s.io/v1";
constexpr std::string_view kKind = "TokenRequest";
constexpr std::string_view kQualifiedKind = "TokenRequest.authentication.k8s.io";

nlohmann::json ParseBody(const Request& request) {
  if (request.body.empty()) {
    return nlohmann::json::object();
  }
  const std::string type = MediaType(request.content_type);
  if (type == kProtobufMediaType) {
    return DecodeProtobufObject(request.body, kApiVersion, kKind);
  }
  nlohmann::json body;
  if (type == "application/json" || type.empty()) {
    try {
      body = nlohmann::json::parse(request.body);
    } catch (const nlohmann::json::parse_error& e) {
      throw BadRequest(std::string("json: cannot unmarshal the TokenRequest: ") + e.what());
    }
  } else if (type == "application/yaml") {
    try {
      body = yaml::ParseYaml(request.body);
    } catch (const std::exception& e) {
      throw BadRequest(std::string("yaml: ") + e.what());
    }
  } else {
    throw UnsupportedMediaType({"application/json", "application/yaml", std::string(kProtobufMediaType)});
  }
  if (!body.is_object()) {
    throw BadRequest("the body of the request must be a TokenRequest object");
  }
  if (body.contains("apiVersion") && body["apiVersion"] != kApiVersion) {
    throw BadRequest("the API version in the data (" + body["apiVersion"].dump() +
                     ") does not match the expected API version (" + std::string(kApiVersion) + ")");
  }
  if (body.contains("kind") && body["kind"] != kKind) {
    throw BadRequest("the kind in the data (" + body["kind"].dump() + ") does not match the expected kind (" +
                     std::string(kKind) + ")");
  }
  return body;
}

// spec.<name>, or nullopt when it is absent or null.
std::optional<nlohmann::json> SpecField(const nlohmann::json& spec, const char* name) {
  const auto it = spec.find(name);
  return it == spec.end() || it->is_null() ? std::nullopt : std::optional<nlohmann::json>(*it);
}

[[noreturn]] void NotA(const char* field, const char* type) {
  throw BadRequest(std::string("json: cannot unmarshal spec.") + field + " of the TokenRequest: it must be " + type);
}

std::string StringIn(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) {
    return "";
  }
  if (!it->is_string()) {
    throw BadRequest(std::string("json: cannot unmarshal spec.boundObjectRef.") + name + ": it must be a string");
  }
  return it->get<std::string>();
}

// Checks spec.boundObjectRef as kube-apiserver's TokenRequest storage does (the object exists, its
// uid matches, a Pod runs as this ServiceAccount), then refuses it: devcluster's tokens are not
// revoked when a bound object is deleted, so it cannot honour the binding.
[[noreturn]] void RefuseBoundObject(const nlohmann::json& ref, const std::string& ns,
                                    const std::string& service_account, const Api& api, const Catalog& catalog) {
  const std::string kind = StringIn(ref, "kind");
  const std::string api_version = StringIn(ref, "apiVersion");
  const std::string name = StringIn(ref, "name");
  const std::string uid = StringIn(ref, "uid");
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const char* plural = kind == "Pod" ? "pods" : kind == "Secret" ? "secrets" : kind == "Node" ? "nodes" : nullptr;
  if (!group.empty() || plural == nullptr) {
    throw BadRequest("cannot bind token to object of type " + group + "/" + version + ", Kind=" + kind);
  }
  const ResourceInfo info = *catalog.Find("", "v1", plural);
  const nlohmann::json object = api.Get(info, info.namespaced ? ns : "", name);
  const nlohmann::json spec = object.value("spec", nlohmann::json::object());
  if (kind == "Pod" && spec.value("serviceAccountName", std::string()) != service_account) {
    throw BadRequest("cannot bind token for serviceaccount \"" + service_account +
                     "\" to pod running with different serviceaccount name.");
  }
  if (!uid.empty() && uid != object.value("metadata", nlohmann::json::object()).value("uid", std::string())) {
    throw Conflict(kind, name,
                   "the UID in the bound object reference (" + uid +
                       ") does not match the UID in record. The object might have been deleted and then recreated");
  }
  throw BadRequest("devcluster cannot bind a token to " + kind + " \"" + name +
                   "\": its tokens are not revoked when a bound object is deleted, so spec.boundObjectRef is "
                   "refused rather than ignored");
}

}  // namespace

std::optional<Response> ServeTokenRequest(const Request& request, const Api& api, const Catalog& catalog,
                                          Authenticator& authenticator) {
  const auto& seg = request.segments;
  if (seg.size() != 7 || seg[0] != "api" || seg[1] != "v1" || seg[2] != "namespaces" || seg[4] != "serviceaccounts" ||
      seg[6] != "token") {
    return std::nullopt;
  }
  if (request.method != "POST") {
    throw MethodNotAllowed(request.method, "serviceaccounts/token");
  }
  const std::string& ns = seg[3];
  const std::string& name = seg[5];
  // 404 when the ServiceAccount does not exist.
  api.Get(*catalog.Find("", "v1", "serviceaccounts"), ns, name);
  const nlohmann::json body = ParseBody(request);
  const nlohmann::json spec =
      body.contains("spec") && !body["spec"].is_null() ? body["spec"] : nlohmann::json::object();
  if (!spec.is_object()) {
    throw BadRequest("json: cannot unmarshal spec of the TokenRequest: it must be an object");
  }

  long long seconds = 3600;  // kube-apiserver's default
  if (const auto requested = SpecField(spec, "expirationSeconds")) {
    if (!requested->is_number_integer()) {
      NotA("expirationSeconds", "an integer");
    }
    seconds = requested->get<long long>();
  }
  const std::string prefix = "Invalid value: " + std::to_string(seconds) + ": ";
  if (seconds < 600) {
    throw Invalid(kQualifiedKind, "",
                  {{"spec.expirationSeconds", prefix + "may not specify a duration less than 10 minutes"}});
  }
  if (seconds > (1LL << 32)) {
    throw Invalid(kQualifiedKind, "",
                  {{"spec.expirationSeconds", prefix + "may not specify a duration larger than 2^32 seconds"}});
  }
  nlohmann::json audiences = nlohmann::json::array({"https://kubernetes.default.svc.cluster.local"});
  if (const auto requested = SpecField(spec, "audiences")) {
    if (!requested->is_array() ||
        !std::all_of(requested->begin(), requested->end(), [](const nlohmann::json& a) { return a.is_string(); })) {
      NotA("audiences", "a list of strings");
    }
    if (!requested->empty()) {
      audiences = *requested;
    }
  }
  if (const auto ref = SpecField(spec, "boundObjectRef")) {
    if (!ref->is_object()) {
      NotA("boundObjectRef", "an object");
    }
    RefuseBoundObject(*ref, ns, name, api, catalog);
  }

  const auto lifetime = std::chrono::seconds(seconds);
  const std::string token = authenticator.Issue(ns, name, lifetime);
  const auto expiry = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() + lifetime);
  const nlohmann::json answer = {
      {"kind", kKind},
      {"apiVersion", kApiVersion},
      {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", nullptr}}},
      {"spec", {{"audiences", audiences}, {"expirationSeconds", seconds}, {"boundObjectRef", nullptr}}},
      {"status", {{"token", token}, {"expirationTimestamp", FormatTime(expiry)}}}};
  return JsonResponse(201, answer);
}

}  // namespace ringleader::devcluster
