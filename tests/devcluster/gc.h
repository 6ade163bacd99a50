// Owner-reference garbage collection, run inside the write transaction after every delete so
// that dependents are gone by the time the owner's DELETE returns.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "tests/devcluster/store.h"

namespace ringleader::devcluster {

// How the collector changes objects, so that deletes keep their side effects (a CRD's custom
// resources, a Namespace's contents). `key` is the store key.
struct GcActions {
  std::function<void(const std::string& key, const nlohmann::json& object)> remove;
  std::function<void(const std::string& key, nlohmann::json object)> put;
};

// Until nothing changes: deletes objects whose owners (metadata.ownerReferences uids) are all
// gone or being deleted in the foreground (foreground again if they have dependents themselves);
// drops references to gone owners from objects that still have a live owner; and finishes
// foreground deletions (finalizer foregroundDeletion) whose dependents are gone. `now` is the
// deletionTimestamp to set.
void CollectGarbage(Store::Txn& txn, const GcActions& actions, const std::string& now);

}  // namespace ringleader::devcluster
