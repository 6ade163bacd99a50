#include "sidecar/rendezvous/auth.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ringleader::rendezvous {
namespace {

Nonce FixedNonce() {
  Nonce n{};
  for (std::size_t i = 0; i < n.size(); ++i) {
    n[i] = static_cast<std::uint8_t>(i * 7 + 1);
  }
  return n;
}

std::string Hex(const ProofBytes& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xF]);
  }
  return out;
}

TEST(RendezvousAuthTest, ProofVerifiesWithTheSameTokenNonceAndRank) {
  const Nonce nonce = FixedNonce();
  const ProofBytes proof = ComputeProof("s3cret-token", nonce, 5);
  EXPECT_TRUE(VerifyProof("s3cret-token", nonce, 5, proof));
  // Deterministic.
  EXPECT_EQ(ComputeProof("s3cret-token", nonce, 5), proof);
}

TEST(RendezvousAuthTest, ProofIsTheSpecifiedHmac) {
  // Known answer: HMAC-SHA256(key="key",
  //   "ringleader-rendezvous-v1" || 32 zero bytes || 00 00 01 02), computed independently with
  //   python3 -c 'import hmac,hashlib; print(hmac.new(b"key",
  //     b"ringleader-rendezvous-v1"+bytes(32)+bytes([0,0,1,2]), hashlib.sha256).hexdigest())'
  const Nonce zero{};
  EXPECT_EQ(Hex(ComputeProof("key", zero, 0x0102)),
            "da9704284435abd5fe6539aaee9623f5c62b9e081ea3352a206985e1b16f23fb");
}

TEST(RendezvousAuthTest, ProofFailsWithWrongToken) {
  const Nonce nonce = FixedNonce();
  const ProofBytes proof = ComputeProof("token-a", nonce, 1);
  EXPECT_FALSE(VerifyProof("token-b", nonce, 1, proof));
  EXPECT_FALSE(VerifyProof("token-a ", nonce, 1, proof));
  EXPECT_FALSE(VerifyProof("token-", nonce, 1, proof));
}

TEST(RendezvousAuthTest, ProofFailsWithDifferentNonce) {
  const Nonce nonce = FixedNonce();
  const ProofBytes proof = ComputeProof("token", nonce, 1);
  Nonce other = nonce;
  other[31] ^= 0x01;
  EXPECT_FALSE(VerifyProof("token", other, 1, proof));
}

TEST(RendezvousAuthTest, ProofFailsWithDifferentRank) {
  const Nonce nonce = FixedNonce();
  const ProofBytes proof = ComputeProof("token", nonce, 1);
  EXPECT_FALSE(VerifyProof("token", nonce, 0, proof));
  EXPECT_FALSE(VerifyProof("token", nonce, 2, proof));
  EXPECT_FALSE(VerifyProof("token", nonce, 0x01000001, proof));
}

TEST(RendezvousAuthTest, ProofFailsWithAnyFlippedBit) {
  const Nonce nonce = FixedNonce();
  const ProofBytes proof = ComputeProof("token", nonce, 3);
  for (std::size_t bit = 0; bit < proof.size() * 8; ++bit) {
    ProofBytes flipped = proof;
    flipped[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(VerifyProof("token", nonce, 3, flipped)) << "bit " << bit;
  }
}

TEST(RendezvousAuthTest, EmptyTokenAcceptsNobody) {
  const Nonce nonce = FixedNonce();
  EXPECT_FALSE(VerifyProof("", nonce, 0, ComputeProof("", nonce, 0)));
}

TEST(RendezvousAuthTest, TokenWithNulBytesIsUsedWhole) {
  const Nonce nonce = FixedNonce();
  const std::string token("ab\0cd", 5);
  const ProofBytes proof = ComputeProof(token, nonce, 0);
  EXPECT_TRUE(VerifyProof(token, nonce, 0, proof));
  EXPECT_FALSE(VerifyProof("ab", nonce, 0, proof));
}

TEST(RendezvousAuthTest, NoncesDiffer) {
  std::set<Nonce> seen;
  for (int i = 0; i < 100; ++i) {
    const std::optional<Nonce> n = MakeNonce();
    ASSERT_TRUE(n.has_value());
    EXPECT_TRUE(seen.insert(*n).second) << "repeated nonce at draw " << i;
  }
  EXPECT_NE(*seen.begin(), Nonce{});
}

TEST(RendezvousAuthTest, ProofTravelsInAProofMessage) {
  const Nonce nonce = *MakeNonce();
  Proof message;
  message.hmac = ComputeProof("token", nonce, 2);
  Result<Proof> decoded = Proof::Decode(message.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_TRUE(VerifyProof("token", nonce, 2, decoded.value().hmac));
}

Hello SomeHello() {
  Hello hello{1, 2, 3, 1'765'000'000'000};
  hello.nonce = FixedNonce();
  return hello;
}

TEST(RendezvousAuthTest, EarlyProofIsTheSpecifiedHmac) {
  // Known answer: HMAC-SHA256(key="key", "ringleader-rendezvous-v2-early" || rank 1 ||
  //   world_size 2 || attempt 3 (u32 each) || sent_at_ms 1765000000000 (i64) || 32 zero bytes),
  // computed independently with Python's hmac module.
  Hello hello{1, 2, 3, 1'765'000'000'000};
  EXPECT_EQ(Hex(ComputeEarlyProof("key", hello)),
            "5760f1e74b09fbb9d42419c90c4177bb8abcbd0e9abbdf53d16273a918236468");
}

TEST(RendezvousAuthTest, EarlyProofCoversEveryFieldOfTheHello) {
  Hello hello = SomeHello();
  hello.early_proof = ComputeEarlyProof("s3cret-token", hello);
  EXPECT_TRUE(VerifyEarlyProof("s3cret-token", hello));
  EXPECT_FALSE(VerifyEarlyProof("other-token", hello));
  EXPECT_FALSE(VerifyEarlyProof("", hello));
  const std::vector<std::function<void(Hello&)>> changes = {
      [](Hello& h) { h.rank = 0; },
      [](Hello& h) { h.world_size = 3; },
      [](Hello& h) { h.attempt = kAnyAttempt; },
      [](Hello& h) { h.sent_at_ms += 1; },
      [](Hello& h) { h.nonce[31] ^= 1; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    Hello changed = hello;
    changes[i](changed);
    EXPECT_FALSE(VerifyEarlyProof("s3cret-token", changed)) << "change " << i;
  }
}

// The two proofs use distinct labels, so neither can stand in for the other.
TEST(RendezvousAuthTest, AnEarlyProofIsNeverAChallengesProof) {
  Hello hello = SomeHello();
  hello.rank = 0;
  EXPECT_NE(ComputeEarlyProof("s3cret-token", hello),
            ComputeProof("s3cret-token", hello.nonce, hello.rank));
}

// The kept per-thread key must follow a change of token (a test process runs many stores).
TEST(RendezvousAuthTest, ProofsUnderAlternatingTokensStayCorrect) {
  const Nonce nonce = FixedNonce();
  const ProofBytes a = ComputeProof("token-a", nonce, 1);
  const ProofBytes b = ComputeProof("token-b", nonce, 1);
  EXPECT_NE(a, b);
  EXPECT_EQ(ComputeProof("token-a", nonce, 1), a);
  EXPECT_EQ(ComputeProof("token-b", nonce, 1), b);
  EXPECT_TRUE(VerifyProof("token-a", nonce, 1, a));
}

}  // namespace
}  // namespace ringleader::rendezvous
