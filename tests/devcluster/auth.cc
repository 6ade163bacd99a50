// Token generation, constant-time bearer checks and the token-to-user mapping.
#include "tests/devcluster/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <utility>

namespace ringleader::devcluster {
namespace {
constexpr std::string_view kBearer = "Bearer ";
}  // namespace

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
  if (authorization.size() != kBearer.size() + token.size() || authorization.substr(0, kBearer.size()) != kBearer ||
      token.empty()) {
    return false;
  }
  return CRYPTO_memcmp(authorization.data() + kBearer.size(), token.data(), token.size()) == 0;
}

Authenticator::Authenticator(std::string admin_token,
                             std::function<bool(const std::string&, const std::string&)> service_account_exists)
    : admin_token_(std::move(admin_token)), service_account_exists_(std::move(service_account_exists)) {}

std::optional<UserInfo> Authenticator::Authenticate(std::string_view authorization) const {
  if (BearerMatches(authorization, admin_token_)) {
    return UserInfo{"devcluster-admin", {"system:masters", "system:authenticated"}};
  }
  if (!authorization.starts_with(kBearer)) {
    return std::nullopt;
  }
  // Issued tokens are random 256-bit values, so a map lookup leaks nothing
  // useful by its timing.
  const std::string_view token = authorization.substr(kBearer.size());
  Issued issued;
  {
    std::lock_guard lock(mu_);
    const auto it = issued_.find(token);
    if (it == issued_.end()) {
      return std::nullopt;
    }
    issued = it->second;
  }
  if (std::chrono::system_clock::now() >= issued.expiry || !service_account_exists_(issued.ns, issued.name)) {
    return std::nullopt;
  }
  return UserInfo{"system:serviceaccount:" + issued.ns + ":" + issued.name,
                  {"system:serviceaccounts", "system:serviceaccounts:" + issued.ns, "system:authenticated"},
                  issued.ns,
                  issued.name};
}

std::string Authenticator::Issue(const std::string& ns, const std::string& name, std::chrono::seconds lifetime) {
  std::string token = NewToken();
  std::lock_guard lock(mu_);
  issued_[token] = {ns, name, std::chrono::system_clock::now() + lifetime};
  return token;
}

}  // namespace ringleader::devcluster
