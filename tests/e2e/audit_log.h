// The real API server's audit log (audit.k8s.io/v1 Events, one JSON object per line, level
// Metadata) as the end-to-end tests read it: one record per request, who made it, on what, and
// the answer.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ringleader::testing {

struct AuditedRequest {
  std::string user;  // user.username
  std::string verb;  // get, list, watch, create, update, patch, delete, ...
  // objectRef; all empty for a non-resource request (discovery, /version).
  std::string api_group;
  std::string resource;  // plural: "pods"
  std::string subresource;
  std::string namespace_;
  std::string name;
  std::string path;  // requestURI without its query
  int code = 0;      // responseStatus.code
  // annotations["authorization.k8s.io/decision"] == "allow": RBAC (or the Node authorizer)
  // allowed it, whatever admission then answered.
  bool allowed = false;

  bool resource_request() const { return !resource.empty(); }
};

// Every request the log records, once each (by auditID), oldest first: a watch or other
// long-running request as soon as its response started (stage ResponseStarted; it may still be
// open), any other when it completed. A line the server is still writing is skipped.
std::vector<AuditedRequest> ReadAuditLog(const std::filesystem::path& log);

// "create pods in default named x", "update trainingjobs/status.ringleader.dev in default named
// y", "get /version": for failure messages.
std::string Describe(const AuditedRequest& request);

}  // namespace ringleader::testing
