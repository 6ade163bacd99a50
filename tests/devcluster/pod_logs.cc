// Pod logs: options, container and run choice, tail and byte limit.
#include "tests/devcluster/pod_logs.h"

#include <charconv>
#include <vector>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

std::string LogQuery(const std::map<std::string, std::string>& query, const char* key) {
  const auto it = query.find(key);
  return it == query.end() ? "" : it->second;
}

// Go's strconv.LogBool, which the parameter codec uses.
bool LogBool(const std::string& text, const char* name) {
  if (text.empty() || text == "1" || text == "t" || text == "T" || text == "true" || text == "TRUE" ||
      text == "True") {
    return !text.empty();
  }
  if (text == "0" || text == "f" || text == "F" || text == "false" || text == "FALSE" || text == "False") {
    return false;
  }
  throw BadRequest(std::string("invalid ") + name + ": strconv.LogBool: parsing \"" + text + "\": invalid syntax");
}

std::optional<std::int64_t> LogInt(const std::string& text, const char* name) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw BadRequest(std::string("invalid ") + name + ": strconv.LogInt: parsing \"" + text +
                     "\": invalid syntax");
  }
  return value;
}

const json& LogArray(const json& object, const char* outer, const char* inner) {
  static const json kEmpty = json::array();
  if (!object.is_object() || !object.contains(outer) || !object[outer].is_object()) {
    return kEmpty;
  }
  const json& parent = object[outer];
  return parent.contains(inner) && parent[inner].is_array() ? parent[inner] : kEmpty;
}

std::string LogString(const json& object, const char* outer, const char* inner) {
  if (!object.is_object() || !object.contains(outer) || !object[outer].is_object()) {
    return "";
  }
  const json& parent = object[outer];
  return parent.contains(inner) && parent[inner].is_string() ? parent[inner].get<std::string>() : "";
}

const json* LogStatusOf(const json& pod, const std::string& container) {
  for (const char* list : {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
    for (const json& status : LogArray(pod, "status", list)) {
      if (status.is_object() && status.value("name", "") == container) {
        return &status;
      }
    }
  }
  return nullptr;
}

bool LogHas(const json& status, const char* state, const char* which) {
  return status.contains(state) && status[state].is_object() && status[state].contains(which) &&
         status[state][which].is_object();
}

}  // namespace

PodLogOptions ParsePodLogOptions(const std::map<std::string, std::string>& query, const std::string& pod_name) {
  PodLogOptions options;
  options.container = LogQuery(query, "container");
  options.previous = LogBool(LogQuery(query, "previous"), "previous");
  options.tail_lines = LogInt(LogQuery(query, "tailLines"), "tailLines");
  options.limit_bytes = LogInt(LogQuery(query, "limitBytes"), "limitBytes");
  const std::optional<std::int64_t> since_seconds = LogInt(LogQuery(query, "sinceSeconds"), "sinceSeconds");
  const bool since_time = !LogQuery(query, "sinceTime").empty();
  std::vector<schema::SchemaError> errors;
  if (options.tail_lines && *options.tail_lines < 0) {
    errors.push_back({"tailLines", "Invalid value: " + std::to_string(*options.tail_lines) +
                                       ": must be greater than or equal to 0"});
  }
  if (options.limit_bytes && *options.limit_bytes < 1) {
    errors.push_back(
        {"limitBytes", "Invalid value: " + std::to_string(*options.limit_bytes) + ": must be greater than 0"});
  }
  if (since_seconds && since_time) {
    errors.push_back({"", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"});
  } else if (since_seconds && *since_seconds < 1) {
    errors.push_back(
        {"sinceSeconds", "Invalid value: " + std::to_string(*since_seconds) + ": must be greater than 0"});
  }
  if (!errors.empty()) {
    throw Invalid("PodLogOptions", pod_name, errors);
  }
  // devcluster's kubelet appends raw output to a file: no time per line, no stream to follow.
  for (const char* unsupported : {"follow", "timestamps"}) {
    if (LogBool(LogQuery(query, unsupported), unsupported)) {
      throw BadRequest(std::string("devcluster cannot serve pods/log with ") + unsupported +
                       "=true: its kubelet keeps a container's output as a plain file, without times and "
                       "without a stream to follow");
    }
  }
  if (since_seconds || since_time) {
    throw BadRequest(std::string("devcluster cannot serve pods/log with ") +
                     (since_time ? "sinceTime" : "sinceSeconds") +
                     ": its kubelet keeps a container's output without the time of each line");
  }
  return options;
}

std::string LogContainer(const json& pod, const std::string& requested) {
  const std::string pod_name = LogString(pod, "metadata", "name");
  std::vector<std::string> names;  // in the order the server visits them
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    for (const json& container : LogArray(pod, "spec", list)) {
      if (container.is_object()) {
        names.push_back(container.value("name", ""));
      }
    }
  }
  if (!requested.empty()) {
    for (const std::string& name : names) {
      if (name == requested) {
        return requested;
      }
    }
    throw BadRequest("container " + requested + " is not valid for pod " + pod_name);
  }
  const json& containers = LogArray(pod, "spec", "containers");
  if (containers.size() == 1 && containers[0].is_object()) {
    return containers[0].value("name", "");
  }
  if (containers.empty()) {
    throw BadRequest("a container name must be specified for pod " + pod_name);
  }
  std::string listed;  // Go prints a []string as [a b c]
  for (const std::string& name : names) {
    listed += (listed.empty() ? "" : " ") + name;
  }
  throw BadRequest("a container name must be specified for pod " + pod_name + ", choose one of: [" + listed + "]");
}

kubelet::ContainerRun LogRun(const json& pod, const std::string& container, bool previous) {
  const std::string pod_name = LogString(pod, "metadata", "name");
  const std::string quoted = "\"" + container + "\" in pod \"" + pod_name + "\"";
  const json* status = LogStatusOf(pod, container);
  if (status == nullptr) {
    throw BadRequest("container " + quoted + " is not available");
  }
  const bool last_terminated = LogHas(*status, "lastState", "terminated");
  // A run waiting to restart has not started: the last run on file is the one lastState shows.
  const bool current_run = LogHas(*status, "state", "running") || LogHas(*status, "state", "terminated");
  if (previous) {
    if (!last_terminated) {
      throw BadRequest("previous terminated container " + quoted + " not found");
    }
    return current_run ? kubelet::ContainerRun::kBeforeLast : kubelet::ContainerRun::kLast;
  }
  if (current_run || last_terminated) {
    return kubelet::ContainerRun::kLast;
  }
  if (LogHas(*status, "state", "waiting")) {
    throw BadRequest("container " + quoted + " is waiting to start: " +
                     (*status)["state"]["waiting"].value("reason", ""));
  }
  throw BadRequest("container " + quoted + " is waiting to start - no logs yet");
}

std::string TrimLog(const std::string& text, const PodLogOptions& options) {
  std::size_t begin = 0;
  if (options.tail_lines) {
    // Count line ends back from the end; a last line without one is a line too.
    std::size_t lines = 0;
    std::size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') {
      --pos;
    }
    begin = text.size();
    if (*options.tail_lines > 0) {
      begin = 0;
      while (pos > 0) {
        if (text[pos - 1] == '\n' && ++lines == static_cast<std::size_t>(*options.tail_lines)) {
          begin = pos;
          break;
        }
        --pos;
      }
    }
  }
  std::string out = text.substr(begin);
  if (options.limit_bytes && static_cast<std::uint64_t>(*options.limit_bytes) < out.size()) {
    out.resize(static_cast<std::size_t>(*options.limit_bytes));
  }
  return out;
}

std::string ReadPodLog(const json& pod, const PodLogOptions& options, const std::filesystem::path& kubelet_root) {
  const std::string container = LogContainer(pod, options.container);
  if (LogString(pod, "spec", "nodeName").empty()) {
    return "";  // no node yet: the server answers with nothing
  }
  if (kubelet_root.empty()) {
    throw InternalError("devcluster runs no kubelet (start it with --run-pods) to read the logs of pod " +
                        LogString(pod, "metadata", "name"));
  }
  const kubelet::ContainerRun run = LogRun(pod, container, options.previous);
  const std::filesystem::path dir = kubelet::PodDirectory(kubelet_root, LogString(pod, "metadata", "namespace"),
                                                          LogString(pod, "metadata", "name"),
                                                          LogString(pod, "metadata", "uid"));
  return TrimLog(kubelet::ReadContainerRun(dir, container, run), options);
}

}  // namespace ringleader::devcluster
