#include "tests/e2e/audit_log.h"

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

namespace ringleader::testing {

using nlohmann::json;

std::vector<AuditedRequest> ReadAuditLog(const std::filesystem::path& log) {
  std::vector<AuditedRequest> out;
  std::set<std::string> seen;  // auditIDs
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    const json event = json::parse(line, nullptr, false);
    if (!event.is_object()) {
      continue;
    }
    const std::string stage = event.value("stage", "");
    const bool first_seen = seen.insert(event.value("auditID", "")).second;
    if ((stage != "ResponseStarted" && stage != "ResponseComplete") || !first_seen) {
      continue;
    }
    AuditedRequest request;
    request.user = event.value("user", json::object()).value("username", "");
    request.verb = event.value("verb", "");
    const json object = event.value("objectRef", json::object());
    request.api_group = object.value("apiGroup", "");
    request.resource = object.value("resource", "");
    request.subresource = object.value("subresource", "");
    request.namespace_ = object.value("namespace", "");
    request.name = object.value("name", "");
    const std::string uri = event.value("requestURI", "");
    request.path = uri.substr(0, uri.find('?'));
    request.code = event.value("responseStatus", json::object()).value("code", 0);
    request.allowed =
        event.value("annotations", json::object()).value("authorization.k8s.io/decision", "") == "allow";
    out.push_back(std::move(request));
  }
  return out;
}

std::string Describe(const AuditedRequest& request) {
  if (!request.resource_request()) {
    return request.verb + " " + request.path;
  }
  return request.verb + " " + request.resource + (request.subresource.empty() ? "" : "/" + request.subresource) +
         (request.api_group.empty() ? "" : "." + request.api_group) +
         (request.namespace_.empty() ? "" : " in " + request.namespace_) +
         (request.name.empty() ? "" : " named " + request.name);
}

}  // namespace ringleader::testing
