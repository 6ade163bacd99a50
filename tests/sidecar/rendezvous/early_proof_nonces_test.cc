#include "sidecar/rendezvous/early_proof_nonces.h"

#include <gtest/gtest.h>

namespace ringleader::rendezvous {
namespace {

Nonce NonceOf(std::uint8_t first) {
  Nonce nonce{};
  nonce[0] = first;
  nonce[9] = 7;  // beyond the bytes the hash reads
  return nonce;
}

constexpr std::int64_t kWindow = 30'000;
constexpr std::int64_t kNow = 1'765'000'000'000;

TEST(EarlyProofNoncesTest, WelcomesANonceOnceInsideTheWindow) {
  EarlyProofNonces nonces(kWindow);
  EXPECT_TRUE(nonces.Admit(NonceOf(1), kNow, kNow));
  EXPECT_FALSE(nonces.Admit(NonceOf(1), kNow, kNow + 5));
  EXPECT_TRUE(nonces.Admit(NonceOf(2), kNow, kNow + 5));
  EXPECT_EQ(nonces.size(), 2U);
}

TEST(EarlyProofNoncesTest, RefusesHellosSentOutsideTheWindowEitherWay) {
  EarlyProofNonces nonces(kWindow);
  EXPECT_TRUE(nonces.Admit(NonceOf(1), kNow - kWindow, kNow));
  EXPECT_TRUE(nonces.Admit(NonceOf(2), kNow + kWindow, kNow));
  EXPECT_FALSE(nonces.Admit(NonceOf(3), kNow - kWindow - 1, kNow));
  EXPECT_FALSE(nonces.Admit(NonceOf(4), kNow + kWindow + 1, kNow));
  EXPECT_EQ(nonces.size(), 2U);
}

// A nonce is forgotten only once its Hello could no longer be welcomed anyway.
TEST(EarlyProofNoncesTest, ForgetsANonceOnlyWhenItsHelloHasLeftTheWindow) {
  EarlyProofNonces nonces(kWindow);
  ASSERT_TRUE(nonces.Admit(NonceOf(1), kNow, kNow));
  EXPECT_FALSE(nonces.Admit(NonceOf(1), kNow, kNow + kWindow));
  EXPECT_EQ(nonces.size(), 1U);
  EXPECT_FALSE(nonces.Admit(NonceOf(1), kNow, kNow + kWindow + 1));  // stale by now
  EXPECT_EQ(nonces.size(), 0U);
}

TEST(EarlyProofNoncesTest, AFullMemoryWelcomesNoMoreUntilNoncesExpire) {
  EarlyProofNonces nonces(kWindow, 2);
  EXPECT_TRUE(nonces.Admit(NonceOf(1), kNow, kNow));
  EXPECT_TRUE(nonces.Admit(NonceOf(2), kNow + 10, kNow));
  EXPECT_FALSE(nonces.Admit(NonceOf(3), kNow, kNow));
  EXPECT_TRUE(nonces.Admit(NonceOf(3), kNow + kWindow + 5, kNow + kWindow + 5));
  EXPECT_EQ(nonces.size(), 2U);
}

TEST(EarlyProofNoncesTest, ANegativeWindowWelcomesNothing) {
  EarlyProofNonces nonces(-1);
  EXPECT_FALSE(nonces.Admit(NonceOf(1), kNow, kNow));
  EXPECT_EQ(nonces.size(), 0U);
}

}  // namespace
}  // namespace ringleader::rendezvous
