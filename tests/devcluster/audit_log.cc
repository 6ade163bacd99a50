// JSON lines, one per request.
#include "tests/devcluster/audit_log.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ringleader::devcluster {

AuditLog::AuditLog(const std::string& path) : out_(path, std::ios::app) {
  if (!out_) {
    throw std::runtime_error("devcluster: cannot open the audit log " + path);
  }
}

void AuditLog::Record(const UserInfo& user, const RequestAttributes& request, const Decision& decision) {
  const nlohmann::json line = {{"user", user.name},
                               {"groups", user.groups},
                               {"verb", request.verb},
                               {"apiGroup", request.api_group},
                               {"resource", request.resource},
                               {"subresource", request.subresource},
                               {"namespace", request.namespace_},
                               {"name", request.name},
                               {"path", request.path},
                               {"allowed", decision.allowed},
                               {"reason", decision.reason}};
  std::lock_guard lock(mu_);
  out_ << line.dump() << '\n';
  out_.flush();
}

}  // namespace ringleader::devcluster
