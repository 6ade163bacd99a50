// The kubelet's container log request: query, run choice, tail and byte limit.
#include "tests/devcluster/kubelet/log_request.h"

#include <charconv>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

const LogRequestError kUndecodable(400, R"({"message": "Unable to decode query."})");
const LogRequestError kInvalid(422, R"({"message": "Invalid request."})");

std::string QueryValue(const std::map<std::string, std::string>& query, const char* key) {
  const auto it = query.find(key);
  return it == query.end() ? "" : it->second;
}

// Go's strconv.ParseBool, which the parameter codec uses; "" is false.
bool QueryBool(const std::map<std::string, std::string>& query, const char* key) {
  const std::string text = QueryValue(query, key);
  if (text.empty() || text == "0" || text == "f" || text == "F" || text == "false" || text == "FALSE" ||
      text == "False") {
    return false;
  }
  if (text == "1" || text == "t" || text == "T" || text == "true" || text == "TRUE" || text == "True") {
    return true;
  }
  throw kUndecodable;
}

std::optional<std::int64_t> QueryInt(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw kUndecodable;
  }
  return value;
}

const json* StatusOf(const json& status, const std::string& container) {
  for (const char* list : {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
    if (!status.is_object() || !status.contains(list) || !status[list].is_array()) {
      continue;
    }
    for (const json& entry : status[list]) {
      if (entry.is_object() && entry.value("name", "") == container) {
        return &entry;
      }
    }
  }
  return nullptr;
}

bool Has(const json& status, const char* state, const char* which) {
  return status.contains(state) && status[state].is_object() && status[state].contains(which) &&
         status[state][which].is_object();
}

}  // namespace

LogRequest ParseLogQuery(const std::map<std::string, std::string>& query) {
  LogRequest request;
  request.previous = QueryBool(query, "previous");
  request.follow = QueryBool(query, "follow");
  const bool timestamps = QueryBool(query, "timestamps");
  std::string tail = QueryValue(query, "tailLines");
  if (const std::string old = QueryValue(query, "tail"); !old.empty()) {
    tail = old == "all" ? "" : old;
  }
  request.tail_lines = QueryInt(tail);
  request.limit_bytes = QueryInt(QueryValue(query, "limitBytes"));
  const std::optional<std::int64_t> since_seconds = QueryInt(QueryValue(query, "sinceSeconds"));
  const bool since_time = !QueryValue(query, "sinceTime").empty();
  if ((request.tail_lines && *request.tail_lines < 0) || (request.limit_bytes && *request.limit_bytes < 1) ||
      (since_seconds && *since_seconds < 1) || (since_seconds && since_time)) {
    throw kInvalid;
  }
  // The stand-in appends raw output to a file per container: no time per line.
  if (timestamps) {
    throw LogRequestError(400,
                          "devcluster's node agent cannot serve container logs with timestamps=true: it keeps a "
                          "container's output without the time of each line");
  }
  if (since_seconds || since_time) {
    throw LogRequestError(400, std::string("devcluster's node agent cannot serve container logs with ") +
                                   (since_time ? "sinceTime" : "sinceSeconds") +
                                   ": it keeps a container's output without the time of each line");
  }
  return request;
}

ContainerRun LogRun(const json& status, const std::string& pod, const std::string& container, bool previous) {
  const std::string quoted = "\"" + container + "\" in pod \"" + pod + "\"";
  const json* entry = StatusOf(status, container);
  if (entry == nullptr) {
    throw LogRequestError(400, "container " + quoted + " is not available");
  }
  const bool last_terminated = Has(*entry, "lastState", "terminated");
  // A run waiting to restart has not started: the last run on file is the one lastState shows.
  const bool current_run = Has(*entry, "state", "running") || Has(*entry, "state", "terminated");
  if (previous) {
    if (!last_terminated) {
      throw LogRequestError(400, "previous terminated container " + quoted + " not found");
    }
    return current_run ? ContainerRun::kBeforeLast : ContainerRun::kLast;
  }
  if (current_run || last_terminated) {
    return ContainerRun::kLast;
  }
  if (Has(*entry, "state", "waiting")) {
    throw LogRequestError(400, "container " + quoted + " is waiting to start: " +
                                   (*entry)["state"]["waiting"].value("reason", ""));
  }
  throw LogRequestError(400, "container " + quoted + " is waiting to start - no logs yet");
}

std::string TrimLog(const std::string& text, const LogRequest& request) {
  std::size_t begin = 0;
  if (request.tail_lines) {
    // Count line ends back from the end; a last line without one is a line too.
    std::size_t lines = 0;
    std::size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') {
      --pos;
    }
    begin = text.size();
    if (*request.tail_lines > 0) {
      begin = 0;
      while (pos > 0) {
        if (text[pos - 1] == '\n' && ++lines == static_cast<std::size_t>(*request.tail_lines)) {
          begin = pos;
          break;
        }
        --pos;
      }
    }
  }
  std::string out = text.substr(begin);
  if (request.limit_bytes && static_cast<std::uint64_t>(*request.limit_bytes) < out.size()) {
    out.resize(static_cast<std::size_t>(*request.limit_bytes));
  }
  return out;
}

}  // namespace ringleader::devcluster::kubelet
