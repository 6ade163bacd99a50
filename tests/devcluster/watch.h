// Watch streams: one thread per open watch reads the store's event history and writes
// `{"type":...,"object":...}` lines to the client, never holding the store lock while writing.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tests/devcluster/faults.h"
#include "tests/devcluster/store.h"

namespace ringleader::devcluster {

// Where a watch's lines go. Implementations must not block for long: Send is called from the
// watch's own thread.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Sends one event line (newline included) and flushes it; false once the client is gone.
  virtual bool Send(const std::string& line) = 0;
  // Ends the response.
  virtual void Close() = 0;
};

struct WatchSpec {
  std::string resource;  // the store key
  // Namespace, label and field selectors together; an object that stops matching is DELETED.
  std::function<bool(const nlohmann::json&)> matches;
  // The object an event carries: the object itself or a one-row Table (`first`: the first event,
  // which carries the column definitions).
  std::function<nlohmann::json(const nlohmann::json&, bool first)> render;
  std::optional<std::uint64_t> from_rv;  // nullopt: the current objects as ADDED first
  bool bookmarks = false;
  std::chrono::steady_clock::time_point end;  // timeoutSeconds, or the server's cap
  std::string kind;         // for BOOKMARK objects
  std::string api_version;  // for BOOKMARK objects
};

class Watches {
 public:
  Watches(Store& store, Faults& faults, std::chrono::milliseconds bookmark_interval);
  Watches(const Watches&) = delete;
  Watches& operator=(const Watches&) = delete;
  ~Watches();

  // Streams to `sink` on a new thread until the spec's end, a fault cut, StopAll or the client
  // going away; closes the sink at the end. After StopAll it closes the sink at once.
  void Start(WatchSpec spec, std::unique_ptr<WatchSink> sink);
  // Ends every watch and joins the threads.
  void StopAll();
  // Threads not yet joined (finished ones are joined when the next watch starts).
  std::size_t ThreadsForTest();

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void Run(const WatchSpec& spec, WatchSink& sink);
  void ReapLocked();

  Store& store_;
  Faults& faults_;
  std::chrono::milliseconds bookmark_interval_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::list<Entry> threads_;
};

}  // namespace ringleader::devcluster
