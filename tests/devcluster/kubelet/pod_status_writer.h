// The node agent's status manager: writes each Pod's status through pods/status as the kubelet's
// does, on one thread of its own so that no Pod worker waits on the API server. Only a Pod's latest
// view is written; a write starts from the watched copy of the Pod and, on a conflict (409), is
// retried on a fresh read. It also sends the rejection of a Pod (its status and a Warning Event)
// and the end of a graceful deletion (the last status, then DELETE with gracePeriodSeconds 0 and
// the Pod's uid as precondition).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "operator/kube/client.h"
#include "tests/devcluster/kubelet/object_feed.h"
#include "tests/devcluster/kubelet/pod_status.h"

namespace ringleader::devcluster::kubelet {

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
};

class PodStatusWriter {
 public:
  // `client` (the node's identity) must outlive the writer. `cached` returns the Pod
  // "namespace/name" as the agent's watch last saw it (null when it has none).
  PodStatusWriter(kube::Client& client, std::string node, std::function<ObjectPtr(const std::string& key)> cached);
  PodStatusWriter(const PodStatusWriter&) = delete;
  PodStatusWriter& operator=(const PodStatusWriter&) = delete;
  ~PodStatusWriter();

  // Ends the thread; what is still queued is dropped. Idempotent.
  void Stop();

  // Queues `view` as the Pod's status (replacing a queued older one). Returns its number for
  // WaitWritten. Ignored once the Pod was finished or rejected.
  std::uint64_t Set(const PodRef& pod, const PodView& view);
  // Waits until the status numbered `number` (or a later one) of Pod `uid` was written, or the
  // Pod is gone; false when `deadline` passed first.
  bool WaitWritten(const std::string& uid, std::uint64_t number, std::chrono::steady_clock::time_point deadline);
  // The kubelet's rejectPod: phase Failed, `reason`, "Pod was rejected: <message>", and a Warning
  // Event with the reason and message.
  void Reject(const PodRef& pod, const std::string& reason, const std::string& message);
  // The end of a deletion: `last` (when given) written, then the Pod deleted.
  void Finish(const PodRef& pod, const std::optional<PodView>& last);
  // Forgets a Pod that has left the node.
  void Forget(const std::string& uid);
  // The last failed write ("writing the status of Pod ns/name: ..."), "" when none failed yet.
  std::string LastError();

 private:
  struct Entry;
  enum class Outcome { kDone, kGone, kRetry };

  void Run(std::stop_token stop);
  // The Pod as the API server has it now; an empty object when this node may not see it (gone).
  nlohmann::json Fetch(const PodRef& pod);
  Outcome WriteStatus(const PodRef& pod, const PodView& view);
  Outcome CreateEvent(const PodRef& pod, const nlohmann::json& event);
  Outcome DeletePod(const PodRef& pod);
  void NoteError(const std::string& what, const PodRef& pod, const std::exception& error);

  kube::Client& client_;
  const std::string node_;
  const std::function<ObjectPtr(const std::string&)> cached_;
  std::mutex mu_;
  std::condition_variable_any wake_;     // work was queued
  std::condition_variable_any written_;  // a write ended
  std::map<std::string, Entry> entries_;  // by uid
  std::uint64_t next_number_ = 1;
  bool queued_ = false;  // work arrived since the thread last looked
  std::string last_error_;
  std::jthread thread_;
};

}  // namespace ringleader::devcluster::kubelet
