// PodStatusWriter: the queue of Pods with something to write, and the writes themselves.
#include "tests/devcluster/kubelet/pod_status_writer.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "operator/api/trainingjob.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kConflictRetries = 10;
constexpr std::chrono::milliseconds kFirstWriteRetry{100};
constexpr std::chrono::milliseconds kLastWriteRetry{5000};

std::string Uid(const json& object) {
  return object.is_object() && object.contains("metadata") ? object["metadata"].value("uid", "") : "";
}

// The name the kubelet's event recorder gives an Event: the object's name and the time in hex nanoseconds.
std::string EventName(const std::string& object_name) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".%llx", static_cast<unsigned long long>(nanos));
  return object_name + suffix;
}

}  // namespace

struct PodStatusWriter::Entry {
  PodRef pod;
  std::optional<PodView> view;
  std::uint64_t number = 0;    // of `view`
  std::uint64_t written = 0;   // the last number written (or given up: the Pod is gone)
  std::optional<json> event;   // to create once
  bool finish = false;         // delete the Pod once its status is written
  bool closed = false;         // finished or rejected: later views are ignored
  bool gone = false;           // deleted or replaced: nothing more to write
  Clock::time_point retry_at{};
  std::chrono::milliseconds backoff = kFirstWriteRetry;

  bool HasWork() const { return !gone && (written < number || event || finish); }
};

PodStatusWriter::PodStatusWriter(kube::Client& client, std::string node,
                                 std::function<ObjectPtr(const std::string& key)> cached)
    : client_(client), node_(std::move(node)), cached_(std::move(cached)) {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

PodStatusWriter::~PodStatusWriter() { Stop(); }

void PodStatusWriter::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::uint64_t PodStatusWriter::Set(const PodRef& pod, const PodView& view) {
  std::lock_guard lock(mu_);
  Entry& entry = entries_[pod.uid];
  if (entry.closed) {
    return entry.number;
  }
  entry.pod = pod;
  entry.view = view;
  entry.number = next_number_++;
  entry.retry_at = {};
  queued_ = true;
  wake_.notify_all();
  return entry.number;
}

bool PodStatusWriter::WaitWritten(const std::string& uid, std::uint64_t number, Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return written_.wait_until(lock, thread_.get_stop_token(), deadline, [&] {
    const auto it = entries_.find(uid);
    return it == entries_.end() || it->second.gone || it->second.written >= number;
  });
}

void PodStatusWriter::Reject(const PodRef& pod, const std::string& reason, const std::string& message) {
  PodView view;
  view.phase = "Failed";
  view.reason = reason;
  view.message = "Pod was rejected: " + message;
  const std::string now = api::FormatTime(std::chrono::system_clock::now());
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"namespace", pod.ns}, {"name", EventName(pod.name)}}},
                {"involvedObject",
                 {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", pod.ns}, {"name", pod.name}, {"uid", pod.uid}}},
                {"type", "Warning"},
                {"reason", reason},
                {"message", message},
                {"source", {{"component", "kubelet"}, {"host", node_}}},
                {"reportingComponent", "kubelet"},
                {"reportingInstance", node_},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  Set(pod, view);
  std::lock_guard lock(mu_);
  Entry& entry = entries_[pod.uid];
  entry.event = std::move(event);
  entry.closed = true;
  queued_ = true;
  wake_.notify_all();
}

void PodStatusWriter::Finish(const PodRef& pod, const std::optional<PodView>& last) {
  if (last) {
    Set(pod, *last);
  }
  std::lock_guard lock(mu_);
  Entry& entry = entries_[pod.uid];
  entry.pod = pod;
  entry.finish = true;
  entry.closed = true;
  entry.retry_at = {};
  queued_ = true;
  wake_.notify_all();
}

void PodStatusWriter::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  entries_.erase(uid);
  written_.notify_all();
}

std::string PodStatusWriter::LastError() {
  std::lock_guard lock(mu_);
  return last_error_;
}

void PodStatusWriter::NoteError(const std::string& what, const PodRef& pod, const std::exception& error) {
  std::lock_guard lock(mu_);
  last_error_ = what + " Pod " + pod.ns + "/" + pod.name + ": " + error.what();
}

void PodStatusWriter::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    // The next Pod with work that is due, or how long until one is.
    std::optional<std::string> due;
    Clock::time_point next = Clock::time_point::max();
    PodRef pod;
    std::optional<PodView> view;
    std::uint64_t number = 0;
    std::optional<json> event;
    bool finish = false;
    {
      std::unique_lock lock(mu_);
      const Clock::time_point now = Clock::now();
      for (auto& [uid, entry] : entries_) {
        if (!entry.HasWork()) {
          continue;
        }
        if (entry.retry_at <= now) {
          due = uid;
          break;
        }
        next = std::min(next, entry.retry_at);
      }
      if (!due) {
        const auto until = next == Clock::time_point::max() ? now + std::chrono::hours(1) : next;
        wake_.wait_until(lock, stop, until, [this] { return queued_; });
        queued_ = false;
        continue;
      }
      Entry& entry = entries_[*due];
      pod = entry.pod;
      if (entry.written < entry.number) {
        view = entry.view;
        number = entry.number;
      }
      event = entry.event;
      finish = entry.finish;
    }

    Outcome outcome = Outcome::kDone;
    if (view) {
      outcome = WriteStatus(pod, *view);
    }
    bool event_sent = false;
    if (outcome == Outcome::kDone && event) {
      // Best effort, as the kubelet's event recorder: a refused Event is not retried.
      CreateEvent(pod, *event);
      event_sent = true;
    }
    // The DELETE waits for the newest status: a view queued meanwhile is written first.
    bool deleted = false;
    bool newer = false;
    {
      std::lock_guard lock(mu_);
      const auto it = entries_.find(*due);
      newer = it != entries_.end() && it->second.number > number && view.has_value();
    }
    if (outcome == Outcome::kDone && finish && !newer) {
      outcome = DeletePod(pod);
      deleted = outcome != Outcome::kRetry;
    }

    std::lock_guard lock(mu_);
    const auto it = entries_.find(*due);
    if (it == entries_.end()) {
      continue;  // forgotten meanwhile
    }
    Entry& entry = it->second;
    if (event_sent) {
      entry.event.reset();
    }
    if (outcome == Outcome::kGone || deleted) {
      entry.gone = true;
    } else if (outcome == Outcome::kRetry) {
      entry.retry_at = Clock::now() + entry.backoff;
      entry.backoff = std::min(entry.backoff * 2, kLastWriteRetry);
    } else {
      entry.written = std::max(entry.written, number);
      entry.backoff = kFirstWriteRetry;
    }
    written_.notify_all();
  }
}

json PodStatusWriter::Fetch(const PodRef& pod) {
  try {
    return client_.Get(kube::Pods(), pod.ns, pod.name);
  } catch (const kube::ApiError& e) {
    // The Node authorizer knows only Pods bound to this node: for one deleted since, it answers
    // 403 ("no relationship found") where an admin would get 404.
    if (kube::IsForbidden(e)) {
      return json::object();
    }
    throw;
  }
}

PodStatusWriter::Outcome PodStatusWriter::WriteStatus(const PodRef& pod, const PodView& view) {
  try {
    json current;
    const ObjectPtr cached = cached_(pod.ns + "/" + pod.name);
    if (cached && Uid(*cached) == pod.uid) {
      current = *cached;
    } else {
      current = Fetch(pod);
    }
    for (int attempt = 0;; ++attempt) {
      if (Uid(current) != pod.uid) {
        return Outcome::kGone;  // replaced by a Pod of the same name
      }
      const json old_status = current.value("status", json::object());
      json status = BuildPodStatus(view, old_status, api::FormatTime(std::chrono::system_clock::now()));
      if (status == old_status) {
        return Outcome::kDone;
      }
      current["status"] = std::move(status);
      try {
        client_.UpdateStatus(kube::Pods(), pod.ns, current);
        return Outcome::kDone;
      } catch (const kube::ApiError& e) {
        if (!kube::IsConflict(e) || attempt >= kConflictRetries) {
          throw;
        }
      }
      current = Fetch(pod);
    }
  } catch (const kube::ApiError& e) {
    if (kube::IsNotFound(e)) {
      return Outcome::kGone;
    }
    NoteError("writing the status of", pod, e);
    return Outcome::kRetry;
  } catch (const std::exception& e) {
    NoteError("writing the status of", pod, e);
    return Outcome::kRetry;
  }
}

PodStatusWriter::Outcome PodStatusWriter::CreateEvent(const PodRef& pod, const json& event) {
  try {
    client_.Create(kube::Events(), pod.ns, event);
    return Outcome::kDone;
  } catch (const std::exception& e) {
    NoteError("creating an Event for", pod, e);
    return Outcome::kRetry;
  }
}

PodStatusWriter::Outcome PodStatusWriter::DeletePod(const PodRef& pod) {
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = pod.uid;
  try {
    client_.Delete(kube::Pods(), pod.ns, pod.name, options);
    return Outcome::kDone;
  } catch (const kube::ApiError& e) {
    // Gone already, or replaced (the uid precondition fails with a conflict): nothing of ours is left.
    if (kube::IsNotFound(e) || kube::IsConflict(e)) {
      return Outcome::kGone;
    }
    NoteError("deleting", pod, e);
    return Outcome::kRetry;
  } catch (const std::exception& e) {
    NoteError("deleting", pod, e);
    return Outcome::kRetry;
  }
}

}  // namespace ringleader::devcluster::kubelet
