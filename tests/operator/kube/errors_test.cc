// Mapping API responses to typed errors.
#include "operator/kube/errors.h"

#include <gtest/gtest.h>

namespace ringleader::kube {
namespace {

std::string Status(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" +
         message + R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

TEST(ApiErrorTest, StatusBodiesMapToKinds) {
  struct Case {
    int code;
    const char* reason;
    ErrorKind kind;
  };
  const Case cases[] = {
      {404, "NotFound", ErrorKind::kNotFound},
      {409, "AlreadyExists", ErrorKind::kAlreadyExists},
      {409, "Conflict", ErrorKind::kConflict},
      {422, "Invalid", ErrorKind::kInvalid},
      {400, "BadRequest", ErrorKind::kBadRequest},
      {401, "Unauthorized", ErrorKind::kUnauthorized},
      {403, "Forbidden", ErrorKind::kForbidden},
      {410, "Expired", ErrorKind::kGone},
      {429, "TooManyRequests", ErrorKind::kTooManyRequests},
      {500, "InternalError", ErrorKind::kServerError},
      {503, "ServiceUnavailable", ErrorKind::kServerError},
      {504, "Timeout", ErrorKind::kTimeout},
      {500, "Timeout", ErrorKind::kTimeout},
      {415, "UnsupportedMediaType", ErrorKind::kUnsupportedMediaType},
      {405, "MethodNotAllowed", ErrorKind::kOther},
  };
  for (const Case& c : cases) {
    ApiError e = ApiErrorFromResponse(c.code, Status(c.code, c.reason, "msg"));
    EXPECT_EQ(e.kind(), c.kind) << c.code << " " << c.reason;
    EXPECT_EQ(e.code(), c.code);
    EXPECT_EQ(e.reason(), c.reason);
    EXPECT_EQ(e.message(), "msg");
  }
}

TEST(ApiErrorTest, ConflictKeepsTheServersMessage) {
  ApiError e = ApiErrorFromResponse(
      409, Status(409, "Conflict",
                  "Operation cannot be fulfilled on pods \\\"a\\\": the object has been "
                  "modified"));
  EXPECT_TRUE(IsConflict(e));
  EXPECT_FALSE(IsAlreadyExists(e));
  EXPECT_NE(std::string(e.what()).find("Conflict (409): Operation cannot be fulfilled"),
            std::string::npos)
      << e.what();
}

TEST(ApiErrorTest, NonStatusBodyBecomesTheMessageCut) {
  ApiError e = ApiErrorFromResponse(502, std::string(5000, 'x'));
  EXPECT_TRUE(IsServerError(e));
  EXPECT_EQ(e.message().size(), 1024u);
  EXPECT_EQ(e.reason(), "");
  EXPECT_TRUE(IsNotFound(ApiErrorFromResponse(404, "404 page not found")));
}

TEST(ApiErrorTest, WatchErrorStatusTakesItsCodeFromTheBody) {
  ApiError e = ApiErrorFromStatusJson(Status(410, "Expired", "too old resource version: 1 (5)"));
  EXPECT_TRUE(IsGone(e));
  EXPECT_EQ(e.code(), 410);
}

}  // namespace
}  // namespace ringleader::kube
