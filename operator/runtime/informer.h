// An informer: a Reflector feeding a thread-safe cache of one resource kind (in one or more
// namespaces), with an optional index and change handlers - client-go's SharedIndexInformer,
// reduced to what the operator uses. Objects are held as shared immutable JSON, so readers
// never copy them, or, for kinds with many objects, as CBOR bytes parsed on every read.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/watch_loop.h"
#include "operator/runtime/liveness.h"

namespace ringleader::runtime {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// "namespace/name" (or "name" for cluster-scoped objects).
std::string ObjectKey(const nlohmann::json& object);

struct InformerOptions {
  kube::Resource resource;
  // One reflector per namespace; empty: one for all namespaces.
  std::vector<std::string> namespaces;
  std::string label_selector;
  std::int64_t page_size = 500;
  std::int64_t watch_timeout_seconds = 300;
  std::function<void(nlohmann::json&)> transform;
  // Index values of an object (e.g. the key of the TrainingJob that owns it); ByIndex finds
  // objects by them.
  std::function<std::vector<std::string>(const nlohmann::json&)> index;
  // Keep each object as CBOR bytes and parse it again on every read (a trimmed Pod: about 600
  // bytes instead of 4.4 KB of parsed JSON, for 5 us per read). For kinds with thousands of
  // objects that are read a few at a time by index or key (Pods), not for those listed whole.
  bool compact = false;
};

// Called after the cache changed: `before` null for an add, `after` null for a delete.
// Runs on a reflector thread; must be quick (enqueue a key).
using ChangeHandler = std::function<void(const ObjectPtr& before, const ObjectPtr& after)>;

class Informer {
 public:
  Informer(kube::Client& client, InformerOptions options);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers must be added before Start.
  void AddHandler(ChangeHandler handler);
  void Start();
  void Stop();
  // True once every namespace has been listed once.
  bool HasSynced() const;
  // One entry per namespace loop ("pods in namespace ml", "pods in all namespaces") whose step
  // count grows with every list, watch started, event and failed attempt. Empty before Start.
  // Never waits for a handler or the cache.
  std::vector<LoopProgress> Progress() const;

  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<ObjectPtr> ByIndex(const std::string& value) const;
  std::size_t Size() const;

 private:
  class NamespaceFeed;
  void Replace(const std::string& ns, const std::vector<nlohmann::json>& items);
  void Apply(const kube::WatchEvent& event);
  // One cached object: parsed, or its CBOR bytes when options_.compact.
  struct Entry {
    ObjectPtr parsed;
    std::vector<std::uint8_t> cbor;
  };
  Entry Store(const ObjectPtr& object) const;
  static ObjectPtr Load(const Entry& entry);
  void Put(std::string key, ObjectPtr object, std::vector<std::pair<ObjectPtr, ObjectPtr>>* changes);
  void Remove(const std::string& key, std::vector<std::pair<ObjectPtr, ObjectPtr>>* changes);
  void Notify(const std::vector<std::pair<ObjectPtr, ObjectPtr>>& changes);

  kube::Client& client_;
  const InformerOptions options_;
  std::vector<ChangeHandler> handlers_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> objects_;
  std::unordered_map<std::string, std::set<std::string>> index_;  // index value -> keys
  std::vector<std::unique_ptr<NamespaceFeed>> feeds_;
  std::atomic<int> unsynced_{0};
};

}  // namespace ringleader::runtime
