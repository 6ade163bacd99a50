// The client-side token bucket, on a fake clock.
#include "operator/kube/rate_limiter.h"

#include <gtest/gtest.h>

#include "tests/operator/kube/fake_clock.h"

namespace ringleader::kube {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;

TEST(TokenBucketTest, BurstIsFreeThenOneTokenPerInterval) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(10, 3, clock);
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
  EXPECT_EQ(limiter.Reserve(), Clock::Duration::zero());
  EXPECT_EQ(limiter.Reserve(), milliseconds(100));
  EXPECT_EQ(limiter.Reserve(), milliseconds(200));
}

TEST(TokenBucketTest, RefillsWithTimeUpToBurst) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(20, 30, clock);
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(limiter.Reserve(), Clock::Duration::zero()) << i;
  }
  EXPECT_EQ(limiter.Reserve(), milliseconds(50));
  clock.Advance(std::chrono::seconds(100));  // refills to burst only
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(limiter.Reserve(), Clock::Duration::zero()) << i;
  }
  EXPECT_GT(limiter.Reserve(), Clock::Duration::zero());
}

TEST(TokenBucketTest, AcquireSleepsOnTheClockAndSustainsQps) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(5, 1, clock);
  const auto start = clock.Now();
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(limiter.Acquire());
  }
  // 1 free, then 10 more at 5 per second.
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(2));
}

TEST(TokenBucketTest, ZeroQpsIsUnlimited) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(0, 1, clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.Reserve(), Clock::Duration::zero());
  }
}

TEST(TokenBucketTest, StopInterruptsTheWait) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(1, 1, clock);
  std::stop_source stop;
  ASSERT_TRUE(limiter.Acquire(stop.get_token()));
  stop.request_stop();
  EXPECT_FALSE(limiter.Acquire(stop.get_token()));
}

}  // namespace
}  // namespace ringleader::kube
