// devcluster's storage: every object of every resource in memory under one mutex, a global
// monotonic resourceVersion, and a bounded history of change events that watches read from.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ringleader::devcluster {

enum class EventType { kAdded, kModified, kDeleted };
const char* EventTypeName(EventType type);

struct StoredEvent {
  std::uint64_t rv;
  std::string resource;     // the registry key the object lives under, e.g. "ringleader.dev/trainingjobs"
  EventType type;
  nlohmann::json object;    // after the change; for kDeleted the last state, carrying the deletion's RV
  nlohmann::json previous;  // before the change for kModified (selectors need both), else null
};
using EventPtr = std::shared_ptr<const StoredEvent>;

class Store {
 public:
  // Keeps the last `history_limit` events; a watch from an older resourceVersion is expired.
  explicit Store(std::size_t history_limit);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The view of the objects a Read or Write callback gets; valid only inside the callback.
  class Txn {
   public:
    const nlohmann::json* Get(const std::string& resource, const std::string& ns, const std::string& name) const;
    // Sorted by (namespace, name); `ns` empty means every namespace.
    std::vector<const nlohmann::json*> List(const std::string& resource, const std::string& ns) const;
    // Every object of every resource, with the resource it lives under (for garbage collection).
    std::vector<std::pair<std::string, const nlohmann::json*>> All() const;
    std::uint64_t rv() const;

    // Write transactions only. Stores `object` (namespace and name from its metadata) under the
    // next resourceVersion, recording ADDED or MODIFIED; returns the stored object.
    nlohmann::json Put(const std::string& resource, nlohmann::json object);
    // Removes the object, recording DELETED; returns its last state with the deletion's RV.
    nlohmann::json Remove(const std::string& resource, const std::string& ns, const std::string& name);

   private:
    friend class Store;
    Txn(Store& store, bool writable) : store_(store), writable_(writable) {}
    Store& store_;
    bool writable_;
  };

  // Runs `fn` with the store locked. Writes made in it are visible to watches once it returns.
  void Write(const std::function<void(Txn&)>& fn);
  void Read(const std::function<void(const Txn&)>& fn) const;
  std::uint64_t CurrentRv() const;

  struct Batch {
    std::vector<EventPtr> events;  // every event with after < rv <= this->rv, in order
    std::uint64_t rv = 0;          // the store's resourceVersion when the batch was taken
    bool expired = false;          // events after `after` were already dropped from the history
    std::uint64_t oldest = 0;      // the oldest resourceVersion a watch may still start from
  };
  // Waits until there are events after `after`, `deadline` passes or `stop()` turns true (checked
  // whenever the store changes or Wake() is called), then returns what is there.
  Batch WaitForEvents(std::uint64_t after, std::chrono::steady_clock::time_point deadline,
                      const std::function<bool()>& stop) const;
  // Drops the whole history: watches from any resourceVersion before now are expired.
  void Compact();
  // Makes every WaitForEvents re-check its stop condition.
  void Wake();

 private:
  using Key = std::pair<std::string, std::string>;  // (namespace, name)
  void Record(std::string resource, EventType type, nlohmann::json object, nlohmann::json previous);

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, std::map<Key, nlohmann::json>> objects_;
  std::deque<EventPtr> history_;
  std::size_t history_limit_;
  std::uint64_t rv_ = 1;
  std::uint64_t compacted_rv_ = 1;  // history holds every event with rv > compacted_rv_
};

}  // namespace ringleader::devcluster
