// The Reflector against an in-memory API with a scripted history: cut streams resume with no
// event missed or repeated, bookmarks move the resume point, 410 relists.
#include "operator/kube/watch_loop.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "tests/operator/kube/fake_clock.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;
using testing::FakeClock;

// A fake API serving one collection from an event log. Each watch first applies
// `writes_per_watch` scripted writes (writes racing with the watcher), then streams events
// after the asked-for version, at most `cut_after` before the "connection" is cut.
class FakeApi final : public Client {
 public:
  int cut_after = 1'000'000;
  int writes_per_watch = 0;
  bool send_bookmark_at_end = false;
  bool gone_as_error_event = false;
  std::vector<std::string> watch_versions;  // the resourceVersion each watch asked for
  std::deque<std::function<void()>> pending_writes;
  std::deque<ApiError> watch_failures;      // thrown by the next watches, in order
  std::function<void()> on_watch;            // runs as each watch starts

  void Create(const std::string& name, int seq) {
    ++rv_;
    json object = {{"metadata", {{"name", name}, {"resourceVersion", std::to_string(rv_)}}},
                   {"data", {{"seq", seq}}}};
    state_[name] = object;
    log_.push_back({rv_, WatchEvent{WatchEventType::kAdded, object}});
  }
  void Remove(const std::string& name) {
    ++rv_;
    json object = state_.at(name);
    object["metadata"]["resourceVersion"] = std::to_string(rv_);
    state_.erase(name);
    log_.push_back({rv_, WatchEvent{WatchEventType::kDeleted, object}});
  }
  // A write to some other collection: the version moves, this collection has no event.
  void BumpElsewhere() { ++rv_; }
  // Forgets history up to now: watches from older versions get 410.
  void Compact() { compacted_through_ = rv_; }
  int rv() const { return rv_; }

  ListResult List(const Resource&, const std::string&, const ListOptions&) override {
    ListResult result;
    for (const auto& [name, object] : state_) {
      result.items.push_back(object);
    }
    result.resource_version = std::to_string(rv_);
    return result;
  }

  WatchEnd Watch(const Resource&, const std::string&, const WatchOptions& options,
                 const WatchCallback& callback, std::stop_token stop) override {
    watch_versions.push_back(options.resource_version);
    if (on_watch) {
      on_watch();
    }
    if (stop.stop_requested()) {
      return WatchEnd::kStopped;
    }
    if (watch_versions.size() > 10'000) {
      ADD_FAILURE() << "reflector is spinning";
      throw std::runtime_error("spinning");
    }
    if (!watch_failures.empty()) {
      ApiError failure = watch_failures.front();
      watch_failures.pop_front();
      throw failure;
    }
    for (int i = 0; i < writes_per_watch && !pending_writes.empty(); ++i) {
      pending_writes.front()();
      pending_writes.pop_front();
    }
    const int from = std::stoi(options.resource_version);
    if (from < compacted_through_) {
      json status = {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"},
                     {"message", "too old resource version"}};
      if (gone_as_error_event) {
        callback(WatchEvent{WatchEventType::kError, status});
        return WatchEnd::kClosed;
      }
      throw ApiErrorFromResponse(410, status.dump());
    }
    int sent = 0;
    for (const auto& [rv, event] : log_) {
      if (rv <= from) {
        continue;
      }
      if (stop.stop_requested()) {
        return WatchEnd::kStopped;
      }
      if (sent == cut_after) {
        return WatchEnd::kClosed;  // cut mid-stream
      }
      ++sent;
      if (!callback(event)) {
        return WatchEnd::kStopped;
      }
    }
    if (send_bookmark_at_end) {
      callback(WatchEvent{WatchEventType::kBookmark,
                          {{"metadata", {{"resourceVersion", std::to_string(rv_)}}}}});
    }
    return WatchEnd::kClosed;
  }

  json Get(const Resource&, const std::string&, const std::string&) override { return Unused(); }
  json Create(const Resource&, const std::string&, const json&) override { return Unused(); }
  json Update(const Resource&, const std::string&, const json&) override { return Unused(); }
  json UpdateStatus(const Resource&, const std::string&, const json&) override {
    return Unused();
  }
  json Patch(const Resource&, const std::string&, const std::string&, PatchType,
             const json&) override {
    return Unused();
  }
  json PatchStatus(const Resource&, const std::string&, const std::string&, PatchType,
                   const json&) override {
    return Unused();
  }
  json Delete(const Resource&, const std::string&, const std::string&,
              const DeleteOptions&) override {
    return Unused();
  }

 private:
  static json Unused() { throw std::logic_error("not used by the reflector"); }

  int rv_ = 0;
  int compacted_through_ = 0;
  std::map<std::string, json> state_;
  std::vector<std::pair<int, WatchEvent>> log_;
};

// Records what the reflector delivers; stops it once `stop_when` says so.
class Recorder final : public ReflectorHandler {
 public:
  explicit Recorder(std::stop_source& stop) : stop_(stop) {}
  std::function<bool(const Recorder&)> stop_when;
  std::vector<std::vector<json>> replaces;
  std::vector<WatchEvent> events;

  void OnReplace(const std::vector<json>& items, const std::string&) override {
    replaces.push_back(items);
    Check();
  }
  void OnEvent(const WatchEvent& event) override {
    events.push_back(event);
    Check();
  }

 private:
  void Check() {
    if (stop_when && stop_when(*this)) {
      stop_.request_stop();
    }
  }
  std::stop_source& stop_;
};

ReflectorOptions Options() {
  ReflectorOptions options;
  options.resource = ConfigMaps();
  options.ns = "ns";
  return options;
}

TEST(ReflectorTest, CutStreamsResumeWithNoEventMissedOrRepeated) {
  FakeApi api;
  api.cut_after = 3;
  api.writes_per_watch = 2;
  for (int seq = 1; seq <= 200; ++seq) {
    api.pending_writes.push_back([&api, seq] { api.Create("cm-" + std::to_string(seq), seq); });
  }
  FakeClock clock;
  std::stop_source stop;
  Recorder recorder(stop);
  recorder.stop_when = [](const Recorder& r) { return r.events.size() >= 200; };
  Reflector reflector(api, Options(), recorder, clock, [] { return 0.0; });
  reflector.Run(stop.get_token());

  ASSERT_EQ(recorder.events.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(recorder.events[i].object["data"]["seq"], i + 1) << "event " << i;
  }
  EXPECT_EQ(reflector.stats().lists, 1);
  EXPECT_GT(reflector.stats().watches, 60);
  // Every watch after the first resumed exactly where the previous delivery ended.
  for (std::size_t i = 1; i < api.watch_versions.size(); ++i) {
    EXPECT_GE(std::stoi(api.watch_versions[i]), std::stoi(api.watch_versions[i - 1]));
  }
}

TEST(ReflectorTest, ListThenWatchFromTheListsVersion) {
  FakeApi api;
  api.Create("a", 1);
  api.Create("b", 2);
  api.pending_writes.push_back([&api] { api.Remove("a"); });
  api.writes_per_watch = 1;
  FakeClock clock;
  std::stop_source stop;
  Recorder recorder(stop);
  recorder.stop_when = [](const Recorder& r) { return !r.events.empty(); };
  Reflector reflector(api, Options(), recorder, clock);
  reflector.Run(stop.get_token());

  ASSERT_EQ(recorder.replaces.size(), 1u);
  EXPECT_EQ(recorder.replaces[0].size(), 2u);
  EXPECT_EQ(api.watch_versions.front(), "2");
  ASSERT_EQ(recorder.events.size(), 1u);
  EXPECT_EQ(recorder.events[0].type, WatchEventType::kDeleted);
  EXPECT_EQ(reflector.LastResourceVersion(), "3");
}

TEST(ReflectorTest, BookmarksMoveTheResumeVersion) {
  FakeApi api;
  api.Create("a", 1);
  api.send_bookmark_at_end = true;
  // Writes to other collections: nothing to deliver here, but the bookmark says how far on.
  api.pending_writes.push_back([&api] {
    api.BumpElsewhere();
    api.BumpElsewhere();
  });
  api.writes_per_watch = 1;
  FakeClock clock;
  std::stop_source stop;
  api.on_watch = [&] {
    if (api.watch_versions.size() == 2) {
      stop.request_stop();
    }
  };
  Recorder recorder(stop);
  Reflector reflector(api, Options(), recorder, clock);
  reflector.Run(stop.get_token());
  EXPECT_EQ(api.watch_versions, (std::vector<std::string>{"1", "3"}));
  EXPECT_TRUE(recorder.events.empty());
}

TEST(ReflectorTest, ExpiredVersionOnWatchStartRelists) {
  FakeApi api;
  api.Create("a", 1);
  api.pending_writes.push_back([&api] {
    api.Create("b", 2);
    api.Compact();
  });
  api.writes_per_watch = 1;
  api.cut_after = 0;  // the first watch is cut before delivering anything
  FakeClock clock;
  std::stop_source stop;
  Recorder recorder(stop);
  recorder.stop_when = [](const Recorder& r) { return r.replaces.size() == 2; };
  Reflector reflector(api, Options(), recorder, clock);
  reflector.Run(stop.get_token());
  ASSERT_EQ(recorder.replaces.size(), 2u);
  EXPECT_EQ(recorder.replaces[1].size(), 2u) << "the relist sees the write made meanwhile";
  EXPECT_EQ(reflector.stats().relists_on_gone, 1);
  EXPECT_EQ(reflector.stats().lists, 2);
}

TEST(ReflectorTest, ExpiredVersionAsAnErrorEventRelists) {
  FakeApi api;
  api.gone_as_error_event = true;
  api.Create("a", 1);
  api.pending_writes.push_back([&api] {
    api.Create("b", 2);
    api.Compact();
  });
  api.writes_per_watch = 1;
  api.cut_after = 0;
  FakeClock clock;
  std::stop_source stop;
  Recorder recorder(stop);
  recorder.stop_when = [](const Recorder& r) { return r.replaces.size() == 2; };
  Reflector reflector(api, Options(), recorder, clock);
  reflector.Run(stop.get_token());
  EXPECT_EQ(reflector.stats().relists_on_gone, 1);
  EXPECT_TRUE(recorder.events.empty());
}

TEST(ReflectorTest, FailedWatchBacksOffAndResumesWithoutRelisting) {
  FakeApi api;
  api.Create("a", 1);
  api.watch_failures.push_back(ApiError(ErrorKind::kServerError, 500, "", "boom"));
  api.watch_failures.push_back(ApiError(ErrorKind::kConnection, 0, "", "refused"));
  api.pending_writes.push_back([&api] { api.Create("b", 2); });
  api.writes_per_watch = 1;
  FakeClock clock;
  std::stop_source stop;
  Recorder recorder(stop);
  recorder.stop_when = [](const Recorder& r) { return r.events.size() == 1; };
  Reflector reflector(api, Options(), recorder, clock, [] { return 0.0; });
  reflector.Run(stop.get_token());
  EXPECT_EQ(reflector.stats().lists, 1);
  EXPECT_EQ(reflector.stats().errors, 2);
  EXPECT_EQ(clock.sleeps(), (std::vector<Clock::Duration>{std::chrono::milliseconds(200),
                                                           std::chrono::milliseconds(400)}));
  EXPECT_EQ(api.watch_versions, (std::vector<std::string>{"1", "1", "1"}));
  ASSERT_EQ(recorder.events.size(), 1u);
  EXPECT_EQ(recorder.events[0].object["metadata"]["name"], "b");
}

}  // namespace
}  // namespace ringleader::kube
