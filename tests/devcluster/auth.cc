// Token generation and constant-time bearer checks.
#include "tests/devcluster/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace ringleader::devcluster {

std::string NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    throw std::runtime_error("devcluster: no randomness for the bearer token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

bool BearerMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (authorization.size() != kPrefix.size() + token.size() || authorization.substr(0, kPrefix.size()) != kPrefix ||
      token.empty()) {
    return false;
  }
  return CRYPTO_memcmp(authorization.data() + kPrefix.size(), token.data(), token.size()) == 0;
}

}  // namespace ringleader::devcluster
