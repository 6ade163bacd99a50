// What the kubelet's /containerLogs/<namespace>/<pod>/<container> answers (kube-apiserver proxies
// pods/log there): its query, which run of the container it reads, judged from the Pod's status as
// the kubelet's validateContainerLogStatus judges it, and the tail and byte limit. Pure; errors
// carry the HTTP status and the kubelet's own words.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/devcluster/kubelet/container_log.h"

namespace ringleader::devcluster::kubelet {

// A request the kubelet refuses: `code` (400, 404, 422) and the plain-text body it sends, which
// kube-apiserver hands on as the message of its own 400 (or 404) Status.
class LogRequestError : public std::runtime_error {
 public:
  LogRequestError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct LogRequest {
  bool previous = false;
  bool follow = false;
  std::optional<std::int64_t> tail_lines;
  std::optional<std::int64_t> limit_bytes;
};

// The query as the kubelet decodes it (v1.PodLogOptions; `tail` is the old name of tailLines,
// "all" meaning none). A value that does not parse is 400 `{"message": "Unable to decode
// query."}`, one ValidatePodLogOptions refuses 422 `{"message": "Invalid request."}`, as the
// kubelet answers. What this stand-in cannot serve is a 400 naming it: timestamps (its logs carry
// no times), sinceSeconds and sinceTime.
LogRequest ParseLogQuery(const std::map<std::string, std::string>& query);

// The run to serve for `container` of the Pod named `pod`, from the Pod's status (core/v1
// PodStatus JSON, as BuildPodStatus makes it). Throws LogRequestError 400 in the kubelet's words:
// `previous terminated container "x" in pod "y" not found`, `container "x" in pod "y" is waiting
// to start: ContainerCreating`, ...
ContainerRun LogRun(const nlohmann::json& status, const std::string& pod, const std::string& container,
                    bool previous);

// The last tail_lines lines of `text`, then at most limit_bytes bytes of them.
std::string TrimLog(const std::string& text, const LogRequest& request);

}  // namespace ringleader::devcluster::kubelet
