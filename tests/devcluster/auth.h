// Authentication: devcluster's own admin token (in the kubeconfig it writes),
// and ServiceAccount tokens it issues through the TokenRequest API (`kubectl
// create token`), so a client can act as a ServiceAccount and be held to its
// RBAC rules.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::devcluster {

// 32 random bytes as 64 lowercase hex characters. Throws std::runtime_error if
// the system has no randomness to give.
std::string NewToken();

// True when `authorization` (the Authorization header's value) is "Bearer
// <token>" with exactly this token; the comparison takes the same time wherever
// the first difference is.
bool BearerMatches(std::string_view authorization, std::string_view token);

// Who a request is from, as Kubernetes' user.Info names it.
struct UserInfo {
  std::string name;                            // "devcluster-admin", "system:serviceaccount:NS:NAME"
  std::vector<std::string> groups;             // "system:masters", "system:serviceaccounts", ...
  std::string service_account_namespace = {};  // set for ServiceAccounts
  std::string service_account_name = {};
};

class Authenticator {
 public:
  // `service_account_exists(ns, name)` is asked on each use of an issued token:
  // deleting the ServiceAccount revokes its tokens, as with Kubernetes' bound
  // tokens.
  Authenticator(std::string admin_token,
                std::function<bool(const std::string&, const std::string&)> service_account_exists);

  // The user behind an Authorization header, or nullopt (401) for a missing,
  // unknown or expired token.
  std::optional<UserInfo> Authenticate(std::string_view authorization) const;
  // A new token for the ServiceAccount, valid for `lifetime`.
  std::string Issue(const std::string& ns, const std::string& name, std::chrono::seconds lifetime);

 private:
  struct Issued {
    std::string ns;
    std::string name;
    std::chrono::system_clock::time_point expiry;
  };
  std::string admin_token_;
  std::function<bool(const std::string&, const std::string&)> service_account_exists_;
  mutable std::mutex mu_;
  std::map<std::string, Issued, std::less<>> issued_;
};

}  // namespace ringleader::devcluster
