#include "sidecar/rendezvous/auth.h"

#include <cassert>
#include <climits>
#include <string>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

namespace ringleader::rendezvous {

std::optional<Nonce> MakeNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return std::nullopt;
  }
  return nonce;
}

namespace {

// Fills a fixed-size message field by field, big-endian.
template <std::size_t N>
class MessageBytes {
 public:
  void Text(std::string_view text) {
    for (char c : text) {
      bytes_[at_++] = static_cast<std::uint8_t>(c);
    }
  }
  void Raw(const std::array<std::uint8_t, kNonceBytes>& raw) {
    for (std::uint8_t b : raw) {
      bytes_[at_++] = b;
    }
  }
  void BigEndian(std::uint64_t value, int bytes) {
    for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
      bytes_[at_++] = static_cast<std::uint8_t>((value >> shift) & 0xFF);
    }
  }
  const std::array<std::uint8_t, N>& Done() const {
    assert(at_ == N);
    return bytes_;
  }

 private:
  std::array<std::uint8_t, N> bytes_{};
  std::size_t at_ = 0;
};

// HMAC-SHA256 under one token, kept keyed for the thread: OpenSSL's one-shot HMAC() fetches the
// digest and keys a fresh context on every call (4.6 us a proof here), where a kept context
// restarts from its keyed state (0.6 us). Every rank computes a proof and rank 0's server checks
// one per connection, tens of thousands at a job's start.
class KeyedMac {
 public:
  KeyedMac() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)) {
    if (mac_ != nullptr) {
      ctx_ = EVP_MAC_CTX_new(mac_);
    }
  }
  ~KeyedMac() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  KeyedMac(const KeyedMac&) = delete;
  KeyedMac& operator=(const KeyedMac&) = delete;

  // The thread's context; nullptr if OpenSSL could not make one.
  static KeyedMac* ForThread() {
    thread_local KeyedMac mac;
    return mac.ctx_ != nullptr ? &mac : nullptr;
  }

  // False if OpenSSL failed, leaving proof to the caller's fallback.
  bool Compute(std::string_view token, const std::uint8_t* message, std::size_t size,
               ProofBytes* proof) {
    if (!keyed_ || token != token_) {
      char digest[] = "SHA256";
      const OSSL_PARAM params[] = {
          OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
          OSSL_PARAM_construct_end()};
      static constexpr unsigned char kEmpty = 0;  // a non-null key even when it is empty
      const auto* key = token.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(token.data());
      keyed_ = EVP_MAC_init(ctx_, key, token.size(), params) == 1;
      token_ = token;
      if (!keyed_) {
        return false;
      }
    } else if (EVP_MAC_init(ctx_, nullptr, 0, nullptr) != 1) {  // the key set before
      keyed_ = false;
      return false;
    }
    std::size_t length = 0;
    if (EVP_MAC_update(ctx_, message, size) != 1 ||
        EVP_MAC_final(ctx_, proof->data(), &length, proof->size()) != 1 ||
        length != proof->size()) {
      keyed_ = false;
      return false;
    }
    return true;
  }

 private:
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;
  std::string token_;
  bool keyed_ = false;
};

template <std::size_t N>
ProofBytes Hmac(std::string_view token, const std::array<std::uint8_t, N>& message) {
  ProofBytes proof{};
  if (KeyedMac* mac = KeyedMac::ForThread();
      mac != nullptr && mac->Compute(token, message.data(), message.size(), &proof)) {
    return proof;
  }
  // HMAC needs a non-null key pointer even for an empty key.
  static constexpr unsigned char kEmpty = 0;
  const void* key = token.empty() ? &kEmpty : static_cast<const void*>(token.data());
  assert(token.size() <= static_cast<std::size_t>(INT_MAX));

  unsigned int length = 0;
  const unsigned char* done = HMAC(EVP_sha256(), key, static_cast<int>(token.size()),
                                   message.data(), message.size(), proof.data(), &length);
  // HMAC-SHA256 with a valid digest cannot fail short of memory exhaustion.
  assert(done != nullptr && length == proof.size());
  (void)done;
  return proof;
}

}  // namespace

ProofBytes ComputeProof(std::string_view token, const Nonce& nonce, std::uint32_t rank) {
  MessageBytes<kProofLabel.size() + kNonceBytes + 4> message;
  message.Text(kProofLabel);
  message.Raw(nonce);
  message.BigEndian(rank, 4);
  return Hmac(token, message.Done());
}

ProofBytes ComputeEarlyProof(std::string_view token, const Hello& hello) {
  MessageBytes<kEarlyProofLabel.size() + 3 * 4 + 8 + kNonceBytes> message;
  message.Text(kEarlyProofLabel);
  message.BigEndian(hello.rank, 4);
  message.BigEndian(hello.world_size, 4);
  message.BigEndian(hello.attempt, 4);
  message.BigEndian(static_cast<std::uint64_t>(hello.sent_at_ms), 8);
  message.Raw(hello.nonce);
  return Hmac(token, message.Done());
}

bool VerifyEarlyProof(std::string_view token, const Hello& hello) {
  if (token.empty()) {
    return false;
  }
  const ProofBytes expected = ComputeEarlyProof(token, hello);
  return CRYPTO_memcmp(expected.data(), hello.early_proof.data(), expected.size()) == 0;
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
