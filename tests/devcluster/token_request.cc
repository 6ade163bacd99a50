// TokenRequest: checks the ServiceAccount, issues the token, answers as
// kube-apiserver does.
#include "tests/devcluster/token_request.h"

#include <chrono>

#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster {

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
  nlohmann::json body = nlohmann::json::object();
  // kubectl sends its TokenRequest as protobuf, which devcluster does not
  // decode: such a request gets the defaults (an hour, the cluster's audience).
  // JSON bodies are read.
  if (!request.body.empty() && MediaType(request.content_type) != "application/vnd.kubernetes.protobuf") {
    try {
      body = nlohmann::json::parse(request.body);
    } catch (const nlohmann::json::parse_error& e) {
      throw BadRequest(std::string("json: cannot unmarshal the TokenRequest: ") + e.what());
    }
  }
  // The spec's fields, read once; anything but an object counts as an empty spec.
  const nlohmann::json spec = body.is_object() && body.value("spec", nlohmann::json()).is_object()
                                  ? body["spec"]
                                  : nlohmann::json::object();
  long long seconds = 3600;
  if (const nlohmann::json requested = spec.value("expirationSeconds", nlohmann::json());
      !requested.is_null()) {
    if (!requested.is_number_integer()) {
      throw BadRequest("spec.expirationSeconds must be an integer");
    }
    seconds = requested.get<long long>();
    if (seconds < 600) {
      throw BadRequest("spec.expirationSeconds: Invalid value: " + std::to_string(seconds) +
                       ": may not specify a duration less than 10 minutes");
    }
  }
  const auto lifetime = std::chrono::seconds(seconds);
  const std::string token = authenticator.Issue(ns, name, lifetime);
  const auto expiry = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() + lifetime);
  nlohmann::json audiences = spec.value("audiences", nlohmann::json());
  if (!audiences.is_array() || audiences.empty()) {
    audiences = nlohmann::json::array({"https://kubernetes.default.svc.cluster.local"});
  }
  const nlohmann::json answer = {
      {"kind", "TokenRequest"},
      {"apiVersion", "authentication.k8s.io/v1"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", nullptr}}},
      {"spec", {{"audiences", audiences}, {"expirationSeconds", seconds}, {"boundObjectRef", nullptr}}},
      {"status", {{"token", token}, {"expirationTimestamp", FormatTime(expiry)}}}};
  return JsonResponse(201, answer);
}

}  // namespace ringleader::devcluster
