// Keeps a local view of one resource kind in step with the API server: list, then watch from
// the list's resourceVersion; resume from the last seen version when a stream ends or is cut;
// relist when that version has expired (410). client-go's Reflector, without the store.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "operator/kube/client.h"

namespace ringleader::kube {

// Receives the resource's state. Called from Run's thread only, never concurrently.
class ReflectorHandler {
 public:
  virtual ~ReflectorHandler() = default;
  // The complete current set after a (re)list; replaces everything known before.
  virtual void OnReplace(const std::vector<nlohmann::json>& items,
                         const std::string& resource_version) = 0;
  // One change after the last OnReplace or OnEvent: ADDED, MODIFIED or DELETED (never
  // BOOKMARK or ERROR). Each change is delivered once, in resourceVersion order, also across
  // cut streams.
  virtual void OnEvent(const WatchEvent& event) = 0;
};

struct ReflectorOptions {
  Resource resource;
  std::string ns;  // empty: all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  std::int64_t watch_timeout_seconds = 300;
  bool allow_bookmarks = true;
  // Applied to every listed item and watched object before the handler sees it (client-go's
  // SetTransform): an operator caching thousands of Pods keeps only the fields it reads.
  std::function<void(nlohmann::json&)> transform;
  // Waits after failed lists or watches, and after streams that end at once with nothing.
  BackoffPolicy backoff{.initial_delay = std::chrono::milliseconds(200),
                        .multiplier = 2.0,
                        .max_delay = std::chrono::milliseconds(30'000),
                        .jitter = 0.2,
                        .max_attempts = 0,
                        .deadline = std::chrono::milliseconds(0)};
};

class Reflector {
 public:
  // `client`, `handler` and `clock` must outlive the Reflector.
  Reflector(Client& client, ReflectorOptions options, ReflectorHandler& handler,
            Clock& clock = RealClock(), UniformRandom random = nullptr);

  // Lists and watches until `stop` is requested. Errors are retried with backoff (an expired
  // version by relisting); ApiErrors thrown by the handler are treated like server errors,
  // any other exception from the handler propagates.
  void Run(std::stop_token stop);

  // The version the next watch would start from; "" before the first list.
  std::string LastResourceVersion() const;

  struct Stats {
    int lists = 0;           // successful lists (the first included)
    int relists_on_gone = 0; // of those, caused by 410 Gone
    int watches = 0;         // watch streams started
    int errors = 0;          // failed lists/watches
  };
  Stats stats() const;

 private:
  enum class WatchOutcome { kResume, kRelist, kStopped };

  void ListOnce();
  WatchOutcome WatchOnce(std::stop_token stop);
  void SetResourceVersion(const std::string& rv);

  Client& client_;
  const ReflectorOptions options_;
  ReflectorHandler& handler_;
  Clock& clock_;
  Backoff backoff_;
  mutable std::mutex mutex_;
  std::string resource_version_;
  Stats stats_;
};

}  // namespace ringleader::kube
