// The garbage collector's sweep.
#include "tests/devcluster/gc.h"

#include <map>
#include <set>
#include <vector>

#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster {
namespace {

constexpr const char* kForeground = "foregroundDeletion";

std::string Uid(const nlohmann::json& object) {
  return object["metadata"].value("uid", std::string());
}

bool Deleting(const nlohmann::json& object) { return object["metadata"].contains("deletionTimestamp"); }

bool HasFinalizer(const nlohmann::json& object, const std::string& finalizer) {
  const auto& meta = object["metadata"];
  if (!meta.contains("finalizers") || !meta["finalizers"].is_array()) {
    return false;
  }
  for (const auto& f : meta["finalizers"]) {
    if (f == finalizer) {
      return true;
    }
  }
  return false;
}

bool HasFinalizers(const nlohmann::json& object) {
  const auto& meta = object["metadata"];
  return meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty();
}

struct Action {
  bool remove;
  std::string key;
  nlohmann::json object;
};

}  // namespace

void CollectGarbage(Store::Txn& txn, const GcActions& actions, const std::string& now) {
  for (int round = 0; round < 1000; ++round) {
    const auto all = txn.All();
    std::map<std::string, const nlohmann::json*> by_uid;
    std::set<std::string> owners_with_dependents;
    for (const auto& [key, object] : all) {
      by_uid[Uid(*object)] = object;
      for (const std::string& owner : OwnerUids(*object)) {
        owners_with_dependents.insert(owner);
      }
    }

    std::vector<Action> todo;
    for (const auto& [key, object] : all) {
      const std::string uid = Uid(*object);
      const std::vector<std::string> owners = OwnerUids(*object);
      if (!owners.empty()) {
        bool solid = false;
        bool dangling = false;
        bool foreground = false;
        for (const std::string& owner : owners) {
          const auto it = by_uid.find(owner);
          if (it == by_uid.end()) {
            dangling = true;
          } else if (Deleting(*it->second) && HasFinalizer(*it->second, kForeground)) {
            foreground = true;
          } else {
            solid = true;
          }
        }
        if (!solid) {
          if (!Deleting(*object)) {
            nlohmann::json copy = *object;
            if (foreground && owners_with_dependents.count(uid) != 0) {
              copy["metadata"]["finalizers"].push_back(kForeground);
            }
            if (HasFinalizers(copy)) {
              copy["metadata"]["deletionTimestamp"] = now;
              copy["metadata"]["deletionGracePeriodSeconds"] = 0;
              todo.push_back({false, key, std::move(copy)});
            } else {
              todo.push_back({true, key, std::move(copy)});
            }
          }
          continue;
        }
        if (dangling) {
          nlohmann::json copy = *object;
          nlohmann::json kept = nlohmann::json::array();
          for (const auto& ref : copy["metadata"]["ownerReferences"]) {
            if (by_uid.count(ref.value("uid", std::string())) != 0) {
              kept.push_back(ref);
            }
          }
          copy["metadata"]["ownerReferences"] = std::move(kept);
          todo.push_back({false, key, std::move(copy)});
          continue;
        }
      }
      if (Deleting(*object) && HasFinalizer(*object, kForeground) && owners_with_dependents.count(uid) == 0) {
        nlohmann::json copy = *object;
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& f : copy["metadata"]["finalizers"]) {
          if (f != kForeground) {
            kept.push_back(f);
          }
        }
        copy["metadata"]["finalizers"] = std::move(kept);
        const bool done = copy["metadata"]["finalizers"].empty();
        if (done) {
          copy["metadata"].erase("finalizers");
        }
        todo.push_back({done, key, std::move(copy)});
      }
    }
    if (todo.empty()) {
      return;
    }
    for (Action& action : todo) {
      if (action.remove) {
        actions.remove(action.key, action.object);
      } else {
        actions.put(action.key, std::move(action.object));
      }
    }
  }
}

}  // namespace ringleader::devcluster
