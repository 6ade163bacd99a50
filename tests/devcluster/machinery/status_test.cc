// Tests for ApiError helpers and Status bodies: codes, reasons and the API server's wording.
#include "tests/devcluster/machinery/status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

struct ErrorCase {
  std::string label;
  ApiError error;
  int code;
  std::string reason;
  std::string message;
};

class StatusErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(StatusErrorTest, HasTheServersCodeReasonAndMessage) {
  const ErrorCase& c = GetParam();
  EXPECT_EQ(c.error.code, c.code);
  EXPECT_EQ(c.error.reason, c.reason);
  EXPECT_EQ(c.error.message, c.message);
  EXPECT_STREQ(c.error.what(), c.message.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Helpers, StatusErrorTest,
    ::testing::Values(
        ErrorCase{"NotFoundCustom", NotFound("trainingjobs.ringleader.dev", "x"), 404, "NotFound",
                  "trainingjobs.ringleader.dev \"x\" not found"},
        ErrorCase{"NotFoundCore", NotFound("pods", "x"), 404, "NotFound", "pods \"x\" not found"},
        ErrorCase{"AlreadyExists", AlreadyExists("pods", "x"), 409, "AlreadyExists",
                  "pods \"x\" already exists"},
        ErrorCase{"Conflict", Conflict("pods", "x", kObjectModified), 409, "Conflict",
                  "Operation cannot be fulfilled on pods \"x\": the object has been modified; "
                  "please apply your changes to the latest version and try again"},
        ErrorCase{"Gone", Gone("gone"), 410, "Gone", "gone"},
        ErrorCase{"TooOld", TooOldResourceVersion(5, 10), 410, "Expired",
                  "too old resource version: 5 (10)"},
        ErrorCase{"UnsupportedMediaType",
                  UnsupportedMediaType({"application/json-patch+json",
                                        "application/merge-patch+json",
                                        "application/apply-patch+yaml"}),
                  415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - accepted media types "
                  "include: application/json-patch+json, application/merge-patch+json, "
                  "application/apply-patch+yaml"},
        ErrorCase{"BadRequest", BadRequest("bad"), 400, "BadRequest", "bad"},
        ErrorCase{"Unauthorized", Unauthorized(), 401, "Unauthorized", "Unauthorized"},
        ErrorCase{"Forbidden", Forbidden("pods", "x", "no"), 403, "Forbidden",
                  "pods \"x\" is forbidden: no"},
        ErrorCase{"ForbiddenCollection", Forbidden("pods", "", "no"), 403, "Forbidden",
                  "pods is forbidden: no"},
        ErrorCase{"MethodNotAllowed", MethodNotAllowed("delete", "pods"), 405,
                  "MethodNotAllowed", "delete is not supported on resources of kind \"pods\""},
        ErrorCase{"TooLarge", RequestEntityTooLarge(), 413, "RequestEntityTooLarge",
                  "Request entity too large"},
        ErrorCase{"TooMany", TooManyRequests("slow down", 3), 429, "TooManyRequests",
                  "slow down"},
        ErrorCase{"Internal", InternalError("boom"), 500, "InternalError",
                  "Internal error occurred: boom"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param) { return param.param.label; });

TEST(StatusTest, NotFoundDetailsNameGroupAndResource) {
  EXPECT_EQ(NotFound("trainingjobs.ringleader.dev", "x").details,
            json({{"name", "x"}, {"group", "ringleader.dev"}, {"kind", "trainingjobs"}}));
  EXPECT_EQ(NotFound("pods", "x").details, json({{"name", "x"}, {"kind", "pods"}}));
}

TEST(StatusTest, InvalidWithOneErrorPrintsItAndListsACause) {
  ApiError error = Invalid("TrainingJob.ringleader.dev", "x",
                           {{"spec.replicas", "Invalid value: 0: spec.replicas in body should be "
                                              "greater than or equal to 1"}});
  EXPECT_EQ(error.code, 422);
  EXPECT_EQ(error.reason, "Invalid");
  EXPECT_EQ(error.message,
            "TrainingJob.ringleader.dev \"x\" is invalid: spec.replicas: Invalid value: 0: "
            "spec.replicas in body should be greater than or equal to 1");
  EXPECT_EQ(error.details["kind"], "TrainingJob");
  EXPECT_EQ(error.details["group"], "ringleader.dev");
  EXPECT_EQ(error.details["causes"],
            json::array({{{"reason", "FieldValueInvalid"},
                          {"message", "Invalid value: 0: spec.replicas in body should be greater "
                                      "than or equal to 1"},
                          {"field", "spec.replicas"}}}));
}

TEST(StatusTest, InvalidWithSeveralErrorsBracketsThemAndTypesEachCause) {
  ApiError error = Invalid("Pod", "p",
                           {{"spec.containers", "Required value"},
                            {"spec.restartPolicy", "Unsupported value: \"x\": supported values: "
                                                   "\"Always\""}});
  EXPECT_EQ(error.message,
            "Pod \"p\" is invalid: [spec.containers: Required value, spec.restartPolicy: "
            "Unsupported value: \"x\": supported values: \"Always\"]");
  EXPECT_EQ(error.details["causes"][0]["reason"], "FieldValueRequired");
  EXPECT_EQ(error.details["causes"][1]["reason"], "FieldValueNotSupported");
  EXPECT_FALSE(error.details.contains("group"));
}

TEST(StatusTest, StatusBodyHasTheFailureShape) {
  EXPECT_EQ(StatusBody(NotFound("pods", "x")),
            json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
              "message":"pods \"x\" not found","reason":"NotFound",
              "details":{"name":"x","kind":"pods"},"code":404})"));
}

TEST(StatusTest, StatusBodyOmitsEmptyDetails) {
  EXPECT_FALSE(StatusBody(BadRequest("bad")).contains("details"));
}

TEST(StatusTest, TooManyRequestsCarriesRetryAfter) {
  EXPECT_EQ(StatusBody(TooManyRequests("slow", 7))["details"]["retryAfterSeconds"], 7);
}

TEST(StatusTest, SuccessStatus) {
  EXPECT_EQ(SuccessStatus(), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
                                             "status":"Success"})"));
  EXPECT_EQ(SuccessStatus({{"name", "x"}})["details"]["name"], "x");
}

TEST(StatusTest, ApiErrorIsThrowableAsStdException) {
  try {
    throw NotFound("pods", "x");
  } catch (const std::exception& error) {
    EXPECT_STREQ(error.what(), "pods \"x\" not found");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
