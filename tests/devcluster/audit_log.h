// The audit log: one JSON line per request with who made it, its RBAC
// attributes and the authorization decision, so a test can hold a client's
// requests against the rules it was given.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include "tests/devcluster/auth.h"
#include "tests/devcluster/rbac.h"

namespace ringleader::devcluster {

class AuditLog {
 public:
  // Appends to `path`; throws std::runtime_error when it cannot be opened.
  explicit AuditLog(const std::string& path);

  // {"user","groups","verb","apiGroup","resource","subresource","namespace","name","path",
  //  "allowed","reason"}; flushed at once, so a reader sees every request
  //  answered so far.
  void Record(const UserInfo& user, const RequestAttributes& request, const Decision& decision);

 private:
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace ringleader::devcluster
