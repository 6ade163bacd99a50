// pods/log: what kube-apiserver's LogREST (its options, its choice of container) and the kubelet
// (which container run, its tail) answer, read from the files devcluster's kubelet writes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "tests/devcluster/kubelet/container_log.h"

namespace ringleader::devcluster {

struct PodLogOptions {
  std::string container;  // "" lets the server choose when the Pod has one container
  bool previous = false;
  std::optional<std::int64_t> tail_lines;
  std::optional<std::int64_t> limit_bytes;
};

// PodLogOptions from the query. Throws ApiError: 400 for a value that does not parse, 422
// `PodLogOptions "<pod>" is invalid: ...` as ValidatePodLogOptions words it, and 400 naming what
// devcluster lacks for follow, timestamps, sinceSeconds and sinceTime (its logs carry no times
// and it does not stream).
PodLogOptions ParsePodLogOptions(const std::map<std::string, std::string>& query, const std::string& pod_name);

// The container the request reads (the API server's validateContainer): the named one, which may
// be an init container, or the only app container. Throws ApiError 400 in the server's words.
std::string LogContainer(const nlohmann::json& pod, const std::string& requested);

// The run whose output the kubelet serves, judged from the Pod's status as the kubelet's
// validateContainerLogStatus judges it. Throws ApiError 400 in the kubelet's words.
kubelet::ContainerRun LogRun(const nlohmann::json& pod, const std::string& container, bool previous);

// The last tail_lines lines of `text`, then at most limit_bytes bytes of them.
std::string TrimLog(const std::string& text, const PodLogOptions& options);

// The answer for a Pod: "" for a Pod no node runs yet, else the chosen run's output, trimmed.
// `kubelet_root` is the kubelet's root directory ("" when devcluster runs no kubelet: a bound Pod
// then has nobody to ask, a 500). Throws ApiError.
std::string ReadPodLog(const nlohmann::json& pod, const PodLogOptions& options,
                       const std::filesystem::path& kubelet_root);

}  // namespace ringleader::devcluster
