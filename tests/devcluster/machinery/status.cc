// Status bodies and the API server's error wording.
#include "tests/devcluster/machinery/status.h"

#include <utility>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// {"name": name, "group": group, "kind": resource} from "resource.group" (the server's
// StatusDetails for a resource error: "kind" holds the resource, as the real server does).
json ResourceDetails(std::string_view group_resource, std::string_view name) {
  json details = json::object();
  size_t dot = group_resource.find('.');
  details["name"] = std::string(name);
  if (dot != std::string_view::npos) {
    details["group"] = std::string(group_resource.substr(dot + 1));
  }
  details["kind"] = std::string(group_resource.substr(0, dot));
  return details;
}

}  // namespace

ApiError::ApiError(int code_in, std::string reason_in, std::string message_in, json details_in)
    : code(code_in),
      reason(std::move(reason_in)),
      message(std::move(message_in)),
      details(std::move(details_in)) {}

ApiError NotFound(std::string_view group_resource, std::string_view name) {
  return ApiError(404, "NotFound",
                  std::string(group_resource) + " \"" + std::string(name) + "\" not found",
                  ResourceDetails(group_resource, name));
}

ApiError AlreadyExists(std::string_view group_resource, std::string_view name) {
  return ApiError(409, "AlreadyExists",
                  std::string(group_resource) + " \"" + std::string(name) + "\" already exists",
                  ResourceDetails(group_resource, name));
}

ApiError Conflict(std::string_view group_resource, std::string_view name, std::string_view why) {
  return ApiError(409, "Conflict",
                  "Operation cannot be fulfilled on " + std::string(group_resource) + " \"" +
                      std::string(name) + "\": " + std::string(why),
                  ResourceDetails(group_resource, name));
}

ApiError Invalid(std::string_view qualified_kind, std::string_view name,
                 const std::vector<schema::SchemaError>& errors) {
  std::string message = std::string(qualified_kind) + " \"" + std::string(name) + "\" is invalid: ";
  if (errors.size() == 1) {
    message += errors[0].ToString();
  } else {
    message += "[";
    for (size_t i = 0; i < errors.size(); ++i) {
      message += (i == 0 ? "" : ", ") + errors[i].ToString();
    }
    message += "]";
  }
  json details = json::object();
  size_t dot = qualified_kind.find('.');
  details["name"] = std::string(name);
  if (dot != std::string_view::npos) {
    details["group"] = std::string(qualified_kind.substr(dot + 1));
  }
  details["kind"] = std::string(qualified_kind.substr(0, dot));
  json causes = json::array();
  for (const schema::SchemaError& error : errors) {
    causes.push_back(
        {{"reason", error.CauseType()}, {"message", error.message}, {"field", error.path}});
  }
  details["causes"] = std::move(causes);
  return ApiError(422, "Invalid", std::move(message), std::move(details));
}

ApiError Gone(std::string_view message) { return ApiError(410, "Gone", std::string(message)); }

ApiError Expired(std::string_view message) { return ApiError(410, "Expired", std::string(message)); }

ApiError TooOldResourceVersion(long long requested, long long oldest) {
  return Expired("too old resource version: " + std::to_string(requested) + " (" +
                 std::to_string(oldest) + ")");
}

ApiError UnsupportedMediaType(const std::vector<std::string>& accepted) {
  std::string message =
      "the body of the request was in an unknown format - accepted media types include: ";
  for (size_t i = 0; i < accepted.size(); ++i) {
    message += (i == 0 ? "" : ", ") + accepted[i];
  }
  return ApiError(415, "UnsupportedMediaType", std::move(message));
}

ApiError BadRequest(std::string_view message) {
  return ApiError(400, "BadRequest", std::string(message));
}

ApiError Unauthorized(std::string_view message) {
  return ApiError(401, "Unauthorized", std::string(message));
}

ApiError Forbidden(std::string_view group_resource, std::string_view name, std::string_view why) {
  std::string subject = std::string(group_resource);
  if (!name.empty()) {
    subject += " \"" + std::string(name) + "\"";
  }
  return ApiError(403, "Forbidden", subject + " is forbidden: " + std::string(why),
                  ResourceDetails(group_resource, name));
}

ApiError MethodNotAllowed(std::string_view verb, std::string_view group_resource) {
  return ApiError(405, "MethodNotAllowed",
                  std::string(verb) + " is not supported on resources of kind \"" +
                      std::string(group_resource) + "\"",
                  ResourceDetails(group_resource, ""));
}

ApiError RequestEntityTooLarge(std::string_view message) {
  return ApiError(413, "RequestEntityTooLarge", std::string(message));
}

ApiError TooManyRequests(std::string_view message, int retry_after_seconds) {
  return ApiError(429, "TooManyRequests", std::string(message),
                  {{"retryAfterSeconds", retry_after_seconds}});
}

ApiError InternalError(std::string_view what) {
  return ApiError(500, "InternalError", "Internal error occurred: " + std::string(what),
                  {{"causes", json::array({{{"message", std::string(what)}}})}});
}

json StatusBody(const ApiError& error) {
  json body = {{"kind", "Status"},          {"apiVersion", "v1"},
               {"metadata", json::object()}, {"status", "Failure"},
               {"message", error.message},   {"reason", error.reason}};
  if (error.details.is_object() && !error.details.empty()) {
    body["details"] = error.details;
  }
  body["code"] = error.code;
  return body;
}

json SuccessStatus(const json& details) {
  json body = {{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", json::object()},
               {"status", "Success"}};
  if (details.is_object() && !details.empty()) {
    body["details"] = details;
  }
  return body;
}

}  // namespace ringleader::devcluster
