// The Reflector's list/watch/resume/relist loop.
#include "operator/kube/watch_loop.h"

namespace ringleader::kube {
namespace {

// An ERROR event's Status code (410 for an expired version), 0 when it has none.
int StatusCode(const nlohmann::json& status) {
  auto code = status.find("code");
  return code != status.end() && code->is_number_integer() ? code->get<int>() : 0;
}

}  // namespace

Reflector::Reflector(Client& client, ReflectorOptions options, ReflectorHandler& handler,
                     Clock& clock, UniformRandom random)
    : client_(client),
      options_(std::move(options)),
      handler_(handler),
      clock_(clock),
      backoff_(options_.backoff, random ? std::move(random) : DefaultUniformRandom()) {}

std::string Reflector::LastResourceVersion() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

Reflector::Stats Reflector::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Reflector::SetResourceVersion(const std::string& rv) {
  std::lock_guard lock(mutex_);
  resource_version_ = rv;
}

void Reflector::ListOnce() {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  ListResult list =
      ListAll(client_, options_.resource, options_.ns, list_options, options_.transform);
  handler_.OnReplace(list.items, list.resource_version);
  std::lock_guard lock(mutex_);
  resource_version_ = list.resource_version;
  ++stats_.lists;
}

Reflector::WatchOutcome Reflector::WatchOnce(std::stop_token stop) {
  WatchOptions watch_options;
  watch_options.resource_version = LastResourceVersion();
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.timeout_seconds = options_.watch_timeout_seconds;
  watch_options.allow_bookmarks = options_.allow_bookmarks;
  {
    std::lock_guard lock(mutex_);
    ++stats_.watches;
  }
  bool gone = false;
  std::optional<ApiError> stream_error;
  int delivered = 0;
  const Clock::TimePoint started = clock_.Now();
  client_.Watch(
      options_.resource, options_.ns, watch_options,
      [&](const WatchEvent& event) {
        switch (event.type) {
          case WatchEventType::kBookmark:
            SetResourceVersion(ResourceVersionOf(event.object));
            return true;
          case WatchEventType::kError:
            if (StatusCode(event.object) == 410) {
              gone = true;
            } else {
              stream_error = ApiErrorFromStatusJson(event.object.dump());
            }
            return false;
          case WatchEventType::kAdded:
          case WatchEventType::kModified:
          case WatchEventType::kDeleted:
            break;
        }
        if (options_.transform) {
          WatchEvent trimmed = event;
          options_.transform(trimmed.object);
          handler_.OnEvent(trimmed);
        } else {
          handler_.OnEvent(event);
        }
        // Recorded after delivery: a cut before this point re-delivers from the previous
        // version, a cut after it resumes past this event.
        const std::string rv = ResourceVersionOf(event.object);
        if (!rv.empty()) {
          SetResourceVersion(rv);
        }
        ++delivered;
        return true;
      },
      stop);
  if (stop.stop_requested()) {
    return WatchOutcome::kStopped;
  }
  if (gone) {
    return WatchOutcome::kRelist;
  }
  if (stream_error) {
    throw *stream_error;
  }
  if (delivered > 0) {
    backoff_.Reset();
  } else if (clock_.Now() - started < std::chrono::seconds(1)) {
    // A stream that closes at once with nothing in it: do not spin on it.
    clock_.SleepFor(backoff_.Next(), stop);
  }
  return WatchOutcome::kResume;
}

void Reflector::Run(std::stop_token stop) {
  bool need_list = true;
  while (!stop.stop_requested()) {
    try {
      if (need_list) {
        ListOnce();
        need_list = false;
        backoff_.Reset();
      }
      switch (WatchOnce(stop)) {
        case WatchOutcome::kStopped:
          return;
        case WatchOutcome::kRelist: {
          std::lock_guard lock(mutex_);
          ++stats_.relists_on_gone;
          need_list = true;
          break;
        }
        case WatchOutcome::kResume:
          break;
      }
    } catch (const ApiError& e) {
      {
        std::lock_guard lock(mutex_);
        ++stats_.errors;
        if (IsGone(e)) {
          ++stats_.relists_on_gone;
        }
      }
      if (IsGone(e)) {
        need_list = true;
        continue;  // an expired version: relist at once
      }
      // Without a version to resume from, only a list helps; otherwise keep the version.
      if (LastResourceVersion().empty()) {
        need_list = true;
      }
      clock_.SleepFor(backoff_.Next(), stop);
    }
  }
}

}  // namespace ringleader::kube
