// Typed failures of the Kubernetes client. Every Client verb reports failure by throwing
// ApiError (after its retries); callers branch on the kind with the Is* helpers.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringleader::kube {

enum class ErrorKind {
  kNotFound,              // 404
  kAlreadyExists,         // 409 with reason AlreadyExists
  kConflict,              // 409 otherwise (stale resourceVersion, failed precondition)
  kInvalid,               // 422
  kBadRequest,            // 400
  kUnauthorized,          // 401
  kForbidden,             // 403
  kGone,                  // 410 (resourceVersion too old, expired continue token)
  kTooManyRequests,       // 429
  kServerError,           // 5xx other than a server-side timeout
  kUnsupportedMediaType,  // 415
  kTimeout,               // 504, reason Timeout, or no answer in time
  kConnection,            // no HTTP answer: refused, reset, TLS failure
  kOther,                 // any other status, or a response that is not Kubernetes JSON
};

// "NotFound", "Conflict", ...
std::string_view ErrorKindName(ErrorKind kind);

class ApiError : public std::runtime_error {
 public:
  // `code` is the HTTP status, 0 when no response arrived. `reason` and `message` are the
  // server's Status fields when it sent one.
  ApiError(ErrorKind kind, int code, std::string reason, std::string message);

  ErrorKind kind() const { return kind_; }
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  int code_;
  std::string reason_;
  std::string message_;
};

// The kind for an HTTP status and the Status `reason` (reason wins where it is more precise:
// 409 AlreadyExists, 504/500 Timeout, 410 Expired).
ErrorKind KindForStatus(int http_code, std::string_view reason);

// An ApiError from a non-2xx response. A body that is a Kubernetes Status gives reason and
// message (and its `code` when the HTTP code is missing); any other body becomes the message,
// cut to 1 KiB.
ApiError ApiErrorFromResponse(int http_code, std::string_view body);

// An ApiError from a Status object (as carried by a watch ERROR event).
ApiError ApiErrorFromStatusJson(std::string_view status_json);

inline bool IsNotFound(const ApiError& e) { return e.kind() == ErrorKind::kNotFound; }
inline bool IsAlreadyExists(const ApiError& e) { return e.kind() == ErrorKind::kAlreadyExists; }
inline bool IsConflict(const ApiError& e) { return e.kind() == ErrorKind::kConflict; }
inline bool IsInvalid(const ApiError& e) { return e.kind() == ErrorKind::kInvalid; }
inline bool IsBadRequest(const ApiError& e) { return e.kind() == ErrorKind::kBadRequest; }
inline bool IsUnauthorized(const ApiError& e) { return e.kind() == ErrorKind::kUnauthorized; }
inline bool IsForbidden(const ApiError& e) { return e.kind() == ErrorKind::kForbidden; }
inline bool IsGone(const ApiError& e) { return e.kind() == ErrorKind::kGone; }
inline bool IsTooManyRequests(const ApiError& e) {
  return e.kind() == ErrorKind::kTooManyRequests;
}
inline bool IsServerError(const ApiError& e) { return e.kind() == ErrorKind::kServerError; }
inline bool IsTimeout(const ApiError& e) { return e.kind() == ErrorKind::kTimeout; }
inline bool IsConnection(const ApiError& e) { return e.kind() == ErrorKind::kConnection; }

}  // namespace ringleader::kube
