// Kubernetes `Status` error bodies, and ApiError: the one exception type devcluster's API machinery
// throws and the HTTP layer turns into a Status response.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/structural_schema.h"

namespace ringleader::devcluster {

// An API failure as the API server reports it. `reason` is a metav1.StatusReason (NotFound,
// AlreadyExists, Conflict, Invalid, BadRequest, Unauthorized, Forbidden, MethodNotAllowed, Gone,
// Expired, UnsupportedMediaType, RequestEntityTooLarge, TooManyRequests, InternalError).
struct ApiError : std::exception {
  ApiError(int code_in, std::string reason_in, std::string message_in,
           nlohmann::json details_in = nlohmann::json::object());

  const char* what() const noexcept override { return message.c_str(); }

  int code;
  std::string reason;
  std::string message;
  nlohmann::json details;  // metav1.StatusDetails; an empty object when there are none
};

// The message tail of a resourceVersion conflict.
inline constexpr std::string_view kObjectModified =
    "the object has been modified; please apply your changes to the latest version and try again";

// `group_resource` is "pods" for the core group or "trainingjobs.ringleader.dev".
// 404 `trainingjobs.ringleader.dev "x" not found`.
ApiError NotFound(std::string_view group_resource, std::string_view name);
// 409 `pods "x" already exists`.
ApiError AlreadyExists(std::string_view group_resource, std::string_view name);
// 409 `Operation cannot be fulfilled on pods "x": <why>` (usually kObjectModified).
ApiError Conflict(std::string_view group_resource, std::string_view name, std::string_view why);
// 422 `TrainingJob.ringleader.dev "x" is invalid: spec.replicas: Invalid value: ...` (several
// errors print as "[a, b]"), with details.causes[] {reason, message, field}. `qualified_kind` is
// "Pod" for the core group or "TrainingJob.ringleader.dev".
ApiError Invalid(std::string_view qualified_kind, std::string_view name,
                 const std::vector<schema::SchemaError>& errors);
// 410 reason Gone.
ApiError Gone(std::string_view message);
// 410 reason Expired, what a watch or list from a compacted resourceVersion gets.
ApiError Expired(std::string_view message);
// 410 Expired "too old resource version: 5 (10)".
ApiError TooOldResourceVersion(long long requested, long long oldest);
// 415 "the body of the request was in an unknown format - accepted media types include: a, b".
ApiError UnsupportedMediaType(const std::vector<std::string>& accepted);
ApiError BadRequest(std::string_view message);
ApiError Unauthorized(std::string_view message = "Unauthorized");
// 403 `pods "x" is forbidden: <why>` (no name: `pods is forbidden: <why>`).
ApiError Forbidden(std::string_view group_resource, std::string_view name, std::string_view why);
// 405 `delete is not supported on resources of kind "pods"`.
ApiError MethodNotAllowed(std::string_view verb, std::string_view group_resource);
ApiError RequestEntityTooLarge(std::string_view message = "Request entity too large");
// 429 with details.retryAfterSeconds (the HTTP layer also sets a Retry-After header).
ApiError TooManyRequests(std::string_view message, int retry_after_seconds);
// 500 "Internal error occurred: <what>".
ApiError InternalError(std::string_view what);

// The Status body for an error:
// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message",...,"code"}.
nlohmann::json StatusBody(const ApiError& error);
// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",...}, as a DELETE of an
// already-gone object or a deletecollection answers; `details` is omitted when empty.
nlohmann::json SuccessStatus(const nlohmann::json& details = nlohmann::json::object());

}  // namespace ringleader::devcluster
