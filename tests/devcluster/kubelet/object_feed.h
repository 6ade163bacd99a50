// One kind of API object kept current in memory by a list-then-watch (kube::Reflector) on its own
// thread: the Pods bound to a node agent's Node, and cluster DNS's Services and EndpointSlices.
// Readers get the latest objects the watch delivered (they may be a moment stale).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/watch_loop.h"

namespace ringleader::devcluster::kubelet {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

class ObjectFeed final : private kube::ReflectorHandler {
 public:
  // Starts listing and watching. `on_change` (may be null) runs on the feed's thread after every
  // list and every change; it must be quick. `client` must outlive the feed.
  ObjectFeed(kube::Client& client, kube::ReflectorOptions options, std::function<void()> on_change);
  ObjectFeed(const ObjectFeed&) = delete;
  ObjectFeed& operator=(const ObjectFeed&) = delete;
  ~ObjectFeed();

  // Ends the watch and the thread; the objects stay readable. Idempotent.
  void Stop();
  // True once the first list arrived: from then on a missing object is really gone.
  bool Synced() const { return synced_.load(); }
  std::vector<ObjectPtr> Objects() const;
  // The object "namespace/name" ("name" for a cluster-scoped kind), or null.
  ObjectPtr Get(const std::string& key) const;

 private:
  void OnReplace(const std::vector<nlohmann::json>& items, const std::string& resource_version) override;
  void OnEvent(const kube::WatchEvent& event) override;

  kube::Reflector reflector_;
  const std::function<void()> on_change_;
  mutable std::mutex mu_;
  std::map<std::string, ObjectPtr> objects_;  // by key
  std::atomic<bool> synced_{false};
  std::jthread thread_;
};

// "namespace/name", or "name" for a cluster-scoped object.
std::string ObjectKey(const nlohmann::json& object);

}  // namespace ringleader::devcluster::kubelet
