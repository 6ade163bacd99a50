// The backoff schedule, Retry-After parsing and the retry decision table.
#include "operator/kube/retry.h"

#include <gtest/gtest.h>

namespace ringleader::kube {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesFromInitialAndCapsAtMax) {
  BackoffPolicy policy{.initial_delay = milliseconds(100), .multiplier = 2.0,
                       .max_delay = milliseconds(1000), .jitter = 0.0};
  EXPECT_EQ(BackoffDelay(policy, 0, 0.5), milliseconds(100));
  EXPECT_EQ(BackoffDelay(policy, 1, 0.5), milliseconds(200));
  EXPECT_EQ(BackoffDelay(policy, 3, 0.5), milliseconds(800));
  EXPECT_EQ(BackoffDelay(policy, 4, 0.5), milliseconds(1000));
  EXPECT_EQ(BackoffDelay(policy, 60, 0.5), milliseconds(1000));
}

TEST(BackoffTest, JitterStretchesByTheDrawAndStaysUnderMax) {
  BackoffPolicy policy{.initial_delay = milliseconds(100), .multiplier = 2.0,
                       .max_delay = milliseconds(1000), .jitter = 0.5};
  EXPECT_EQ(BackoffDelay(policy, 0, 0.0), milliseconds(100));
  EXPECT_EQ(BackoffDelay(policy, 0, 0.5), milliseconds(125));
  EXPECT_EQ(BackoffDelay(policy, 2, 0.5), milliseconds(500));
  EXPECT_EQ(BackoffDelay(policy, 3, 0.9), milliseconds(1000));
}

TEST(BackoffTest, SequenceAdvancesAndResets) {
  BackoffPolicy policy{.initial_delay = milliseconds(10), .jitter = 0.0};
  Backoff backoff(policy, [] { return 0.0; });
  EXPECT_EQ(backoff.Next(), milliseconds(10));
  EXPECT_EQ(backoff.Next(), milliseconds(20));
  EXPECT_EQ(backoff.Next(), milliseconds(40));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), milliseconds(10));
}

TEST(BackoffTest, DefaultRandomIsInUnitInterval) {
  UniformRandom random = DefaultUniformRandom();
  for (int i = 0; i < 1000; ++i) {
    const double u = random();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(RetryAfterTest, ParsesDeltaSecondsOnly) {
  EXPECT_EQ(ParseRetryAfter("3"), std::chrono::seconds(3));
  EXPECT_EQ(ParseRetryAfter(" 0 "), std::chrono::seconds(0));
  EXPECT_EQ(ParseRetryAfter("999999"), std::chrono::seconds(3600));
  EXPECT_EQ(ParseRetryAfter(""), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1.5"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
}

TEST(RetryDecisionTest, IdempotentRequestsRetryConnection429And5xx) {
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 0}), RetryReason::kConnection);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 429}), RetryReason::kTooManyRequests);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 500}), RetryReason::kServerError);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 503}), RetryReason::kServerError);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 501}), std::nullopt);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 409}), std::nullopt);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 404}), std::nullopt);
  EXPECT_EQ(RetryReasonFor(true, {.http_code = 0, .tls_failure = true}), std::nullopt);
}

TEST(RetryDecisionTest, NonIdempotentRequestsRetryOnlyARefusedConnection) {
  EXPECT_EQ(RetryReasonFor(false, {.http_code = 0, .connection_refused = true}),
            RetryReason::kConnection);
  EXPECT_EQ(RetryReasonFor(false, {.http_code = 0}), std::nullopt);
  EXPECT_EQ(RetryReasonFor(false, {.http_code = 500}), std::nullopt);
  EXPECT_EQ(RetryReasonFor(false, {.http_code = 429}), std::nullopt);
}

}  // namespace
}  // namespace ringleader::kube
