// A test's view of some resources in one namespace, kept by Reflectors (list, then watch), for
// waiting on conditions: WaitFor checks its condition again after every change they see, so a
// test waits for the cluster to change instead of sleeping between polls.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/watch_loop.h"

namespace ringleader::testing {

class ClusterWatch {
 public:
  // Lists and watches each of `resources` in `ns` through `client`, which must outlive this.
  ClusterWatch(kube::Client& client, const std::vector<kube::Resource>& resources, const std::string& ns) {
    for (const kube::Resource& resource : resources) {
      feeds_.push_back(std::make_unique<Feed>(*this, client, resource, ns));
    }
    for (auto& feed : feeds_) {
      feed->Start();
    }
  }
  ClusterWatch(const ClusterWatch&) = delete;
  ClusterWatch& operator=(const ClusterWatch&) = delete;

  // The objects of `resource` as last seen.
  std::vector<nlohmann::json> List(const kube::Resource& resource) const {
    std::lock_guard lock(mutex_);
    std::vector<nlohmann::json> items;
    if (const auto it = objects_.find(resource.plural); it != objects_.end()) {
      for (const auto& [name, object] : it->second) {
        items.push_back(object);
      }
    }
    return items;
  }

  std::size_t Count(const kube::Resource& resource) const {
    std::lock_guard lock(mutex_);
    const auto it = objects_.find(resource.plural);
    return it == objects_.end() ? 0 : it->second.size();
  }

  std::optional<nlohmann::json> Get(const kube::Resource& resource, const std::string& name) const {
    std::lock_guard lock(mutex_);
    if (const auto it = objects_.find(resource.plural); it != objects_.end()) {
      if (const auto found = it->second.find(name); found != it->second.end()) {
        return found->second;
      }
    }
    return std::nullopt;
  }

  // Waits until `condition` holds, checking it now and again after each change seen (or
  // Notify), until `timeout`. A kube::ApiError thrown by `condition` counts as "not yet".
  bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    while (true) {
      const std::uint64_t changes = changes_;
      lock.unlock();
      try {
        if (condition()) {
          return true;
        }
      } catch (const kube::ApiError&) {
        // not there yet
      }
      lock.lock();
      if (!changed_.wait_until(lock, deadline, [&] { return changes_ != changes; })) {
        return false;
      }
    }
  }

  // For a change WaitFor's condition depends on that no watch sees (a thread's own state).
  void Notify() {
    std::lock_guard lock(mutex_);
    ++changes_;
    changed_.notify_all();
  }

 private:
  class Feed final : public kube::ReflectorHandler {
   public:
    Feed(ClusterWatch& owner, kube::Client& client, const kube::Resource& resource, const std::string& ns)
        : owner_(owner), plural_(resource.plural), reflector_(client, Options(resource, ns), *this) {}

    void Start() {
      thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
    }
    void OnReplace(const std::vector<nlohmann::json>& items, const std::string&) override {
      std::lock_guard lock(owner_.mutex_);
      auto& objects = owner_.objects_[plural_];
      objects.clear();
      for (const nlohmann::json& item : items) {
        objects[Name(item)] = item;
      }
      owner_.ChangedLocked();
    }
    void OnEvent(const kube::WatchEvent& event) override {
      std::lock_guard lock(owner_.mutex_);
      auto& objects = owner_.objects_[plural_];
      if (event.type == kube::WatchEventType::kDeleted) {
        objects.erase(Name(event.object));
      } else {
        objects[Name(event.object)] = event.object;
      }
      owner_.ChangedLocked();
    }

   private:
    static kube::ReflectorOptions Options(const kube::Resource& resource, const std::string& ns) {
      kube::ReflectorOptions options;
      options.resource = resource;
      options.ns = ns;
      return options;
    }
    static std::string Name(const nlohmann::json& object) {
      return object.value("metadata", nlohmann::json::object()).value("name", "");
    }

    ClusterWatch& owner_;
    const std::string plural_;
    kube::Reflector reflector_;
    std::jthread thread_;  // last: stopped and joined before the reflector goes
  };

  void ChangedLocked() {
    ++changes_;
    changed_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t changes_ = 0;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;  // plural -> name -> object
  std::vector<std::unique_ptr<Feed>> feeds_;  // last: their threads stop before the rest goes
};

}  // namespace ringleader::testing
