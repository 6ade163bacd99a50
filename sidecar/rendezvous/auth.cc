#include "sidecar/rendezvous/auth.h"

#include <cassert>
#include <climits>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace ringleader::rendezvous {

std::optional<Nonce> MakeNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return std::nullopt;
  }
  return nonce;
}

ProofBytes ComputeProof(std::string_view token, const Nonce& nonce, std::uint32_t rank) {
  std::array<std::uint8_t, kProofLabel.size() + kNonceBytes + 4> message{};
  std::size_t at = 0;
  for (char c : kProofLabel) {
    message[at++] = static_cast<std::uint8_t>(c);
  }
  for (std::uint8_t b : nonce) {
    message[at++] = b;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    message[at++] = static_cast<std::uint8_t>((rank >> shift) & 0xFF);
  }
  assert(at == message.size());

  // HMAC needs a non-null key pointer even for an empty key.
  static constexpr unsigned char kEmpty = 0;
  const void* key = token.empty() ? &kEmpty : static_cast<const void*>(token.data());
  assert(token.size() <= static_cast<std::size_t>(INT_MAX));

  ProofBytes proof{};
  unsigned int length = 0;
  const unsigned char* done = HMAC(EVP_sha256(), key, static_cast<int>(token.size()),
                                   message.data(), message.size(), proof.data(), &length);
  // HMAC-SHA256 with a valid digest cannot fail short of memory exhaustion.
  assert(done != nullptr && length == proof.size());
  (void)done;
  return proof;
}

bool VerifyProof(std::string_view token, const Nonce& nonce, std::uint32_t rank,
                 const ProofBytes& proof) {
  if (token.empty()) {
    return false;
  }
  const ProofBytes expected = ComputeProof(token, nonce, rank);
  return CRYPTO_memcmp(expected.data(), proof.data(), expected.size()) == 0;
}

}  // namespace ringleader::rendezvous
