// Mapping HTTP statuses and Kubernetes Status bodies to typed ApiErrors.
#include "operator/kube/errors.h"

#include <nlohmann/json.hpp>

namespace ringleader::kube {
namespace {

constexpr std::size_t kMaxMessageBytes = 1024;

std::string Describe(ErrorKind kind, int code, const std::string& message) {
  std::string text = std::string(ErrorKindName(kind));
  if (code != 0) {
    text += " (" + std::to_string(code) + ")";
  }
  if (!message.empty()) {
    text += ": " + message;
  }
  return text;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  if (it != object.end() && it->is_string()) {
    return it->get<std::string>();
  }
  return "";
}

}  // namespace

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kBadRequest:
      return "BadRequest";
    case ErrorKind::kUnauthorized:
      return "Unauthorized";
    case ErrorKind::kForbidden:
      return "Forbidden";
    case ErrorKind::kGone:
      return "Gone";
    case ErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case ErrorKind::kServerError:
      return "ServerError";
    case ErrorKind::kUnsupportedMediaType:
      return "UnsupportedMediaType";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kConnection:
      return "Connection";
    case ErrorKind::kOther:
      return "Other";
  }
  return "Other";
}

ApiError::ApiError(ErrorKind kind, int code, std::string reason, std::string message)
    : std::runtime_error(Describe(kind, code, message)),
      kind_(kind),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)) {}

ErrorKind KindForStatus(int http_code, std::string_view reason) {
  if (reason == "AlreadyExists") {
    return ErrorKind::kAlreadyExists;
  }
  if (reason == "Timeout" || reason == "ServerTimeout") {
    return ErrorKind::kTimeout;
  }
  if (reason == "Expired" || reason == "Gone") {
    return ErrorKind::kGone;
  }
  switch (http_code) {
    case 400:
      return ErrorKind::kBadRequest;
    case 401:
      return ErrorKind::kUnauthorized;
    case 403:
      return ErrorKind::kForbidden;
    case 404:
      return ErrorKind::kNotFound;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kGone;
    case 415:
      return ErrorKind::kUnsupportedMediaType;
    case 422:
      return ErrorKind::kInvalid;
    case 429:
      return ErrorKind::kTooManyRequests;
    case 504:
      return ErrorKind::kTimeout;
    default:
      break;
  }
  if (http_code >= 500 && http_code <= 599) {
    return ErrorKind::kServerError;
  }
  return ErrorKind::kOther;
}

ApiError ApiErrorFromResponse(int http_code, std::string_view body) {
  nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && StringField(status, "kind") == "Status") {
    int code = http_code;
    auto code_it = status.find("code");
    if (code == 0 && code_it != status.end() && code_it->is_number_integer()) {
      code = code_it->get<int>();
    }
    std::string reason = StringField(status, "reason");
    std::string message = StringField(status, "message");
    const ErrorKind kind = KindForStatus(code, reason);
    return ApiError(kind, code, std::move(reason), std::move(message));
  }
  const ErrorKind kind = KindForStatus(http_code, "");
  return ApiError(kind, http_code, "", std::string(body.substr(0, kMaxMessageBytes)));
}

ApiError ApiErrorFromStatusJson(std::string_view status_json) {
  return ApiErrorFromResponse(0, status_json);
}

}  // namespace ringleader::kube
