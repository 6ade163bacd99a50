// The watch loop: initial state, history replay, selector transitions, bookmarks, expiry, cuts.
#include "tests/devcluster/watch.h"

#include <algorithm>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

std::string EventLine(const char* type, const nlohmann::json& object) {
  return nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n";
}

// The object a watch reports for a change, given whether the old and new states match its
// selectors: entering the selection is ADDED, leaving it DELETED (the old state at the new RV).
std::optional<std::pair<const char*, nlohmann::json>> Translate(const StoredEvent& event,
                                                                const WatchSpec& spec) {
  const bool now = spec.matches(event.object);
  if (event.type != EventType::kModified) {
    if (!now) {
      return std::nullopt;
    }
    return std::make_pair(EventTypeName(event.type), event.object);
  }
  const bool before = spec.matches(event.previous);
  if (now && before) {
    return std::make_pair("MODIFIED", event.object);
  }
  if (now) {
    return std::make_pair("ADDED", event.object);
  }
  if (before) {
    nlohmann::json old = event.previous;
    old["metadata"]["resourceVersion"] = std::to_string(event.rv);
    return std::make_pair("DELETED", std::move(old));
  }
  return std::nullopt;
}

}  // namespace

Watches::Watches(Store& store, Faults& faults, std::chrono::milliseconds bookmark_interval)
    : store_(store), faults_(faults), bookmark_interval_(bookmark_interval) {}

Watches::~Watches() { StopAll(); }

void Watches::Start(WatchSpec spec, std::unique_ptr<WatchSink> sink) {
  std::lock_guard lock(mu_);
  ReapLocked();
  if (stopping_) {
    sink->Close();
    return;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<WatchSink> shared_sink(std::move(sink));
  threads_.push_back(Entry{std::thread([this, spec = std::move(spec), shared_sink, done] {
                             try {
                               Run(spec, *shared_sink);
                             } catch (const std::exception&) {
                               // The client sees the stream end and re-watches.
                             }
                             shared_sink->Close();
                             *done = true;
                           }),
                           done});
}

void Watches::ReapLocked() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (*it->done) {
      it->thread.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

void Watches::StopAll() {
  stopping_ = true;
  store_.Wake();
  std::list<Entry> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (Entry& entry : threads) {
    entry.thread.join();
  }
}

std::size_t Watches::ThreadsForTest() {
  std::lock_guard lock(mu_);
  ReapLocked();
  return threads_.size();
}

void Watches::Run(const WatchSpec& spec, WatchSink& sink) {
  const std::uint64_t epoch = faults_.cut_epoch();
  const int cut_every = faults_.cut_watches_every();
  int sent = 0;
  bool first = true;
  auto send = [&](const char* type, const nlohmann::json& object) {
    const bool ok = sink.Send(EventLine(type, spec.render(object, first)));
    first = false;
    ++sent;
    return ok && (cut_every <= 0 || sent < cut_every);
  };
  auto send_bookmark = [&](std::uint64_t rv) {
    nlohmann::json bookmark{{"kind", spec.kind},
                            {"apiVersion", spec.api_version},
                            {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
    return sink.Send(EventLine("BOOKMARK", bookmark));
  };

  std::uint64_t cursor = 0;
  if (spec.from_rv) {
    cursor = *spec.from_rv;
  } else {
    std::vector<nlohmann::json> initial;
    store_.Read([&](const Store::Txn& txn) {
      cursor = txn.rv();
      for (const nlohmann::json* object : txn.List(spec.resource, "")) {
        if (spec.matches(*object)) {
          initial.push_back(*object);
        }
      }
    });
    for (const nlohmann::json& object : initial) {
      if (!send("ADDED", object)) {
        return;
      }
    }
  }

  auto stop = [&] { return stopping_.load() || faults_.cut_epoch() != epoch; };
  auto next_bookmark = std::chrono::steady_clock::now() + bookmark_interval_;
  while (!stop()) {
    const auto deadline = spec.bookmarks ? std::min(spec.end, next_bookmark) : spec.end;
    Store::Batch batch = store_.WaitForEvents(cursor, deadline, stop);
    if (stop()) {
      return;
    }
    if (batch.expired) {
      sink.Send(EventLine("ERROR", StatusBody(TooOldResourceVersion(static_cast<long long>(cursor),
                                                                     static_cast<long long>(batch.oldest)))));
      return;
    }
    for (const EventPtr& event : batch.events) {
      if (event->resource != spec.resource) {
        continue;
      }
      if (auto translated = Translate(*event, spec)) {
        if (!send(translated->first, translated->second)) {
          return;
        }
      }
    }
    cursor = batch.rv;
    const auto now = std::chrono::steady_clock::now();
    if (now >= spec.end) {
      if (spec.bookmarks) {
        send_bookmark(cursor);
      }
      return;
    }
    if (spec.bookmarks && now >= next_bookmark) {
      if (!send_bookmark(cursor)) {
        return;
      }
      next_bookmark = now + bookmark_interval_;
    }
  }
}

}  // namespace ringleader::devcluster
