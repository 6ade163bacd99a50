// Fault settings, the per-request decision and the Status bodies in the API server's words.
#include "tests/devcluster/faults.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

namespace ringleader::devcluster {
namespace {

// What kube-apiserver says about a stale resourceVersion (apierrors.NewConflict with
// registry.OptimisticLockErrorMsg).
constexpr std::string_view kObjectModified =
    "the object has been modified; please apply your changes to the latest version and try again";

[[noreturn]] void Invalid(const std::string& message) { throw std::invalid_argument(message); }

// StatusDetails for a resource: "kind" holds the resource, as the real server does.
nlohmann::json ResourceDetails(std::string_view group_resource, std::string_view name) {
  nlohmann::json details = nlohmann::json::object();
  const std::size_t dot = group_resource.find('.');
  details["name"] = std::string(name);
  if (dot != std::string_view::npos) {
    details["group"] = std::string(group_resource.substr(dot + 1));
  }
  details["kind"] = std::string(group_resource.substr(0, dot));
  return details;
}

}  // namespace

nlohmann::json InjectedError::StatusBody() const {
  nlohmann::json body = {{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"metadata", nlohmann::json::object()},
                         {"status", "Failure"},
                         {"message", message},
                         {"reason", reason}};
  if (details.is_object() && !details.empty()) {
    body["details"] = details;
  }
  body["code"] = code;
  return body;
}

void Faults::SetErrorRate(double rate, int code) {
  if (!(rate >= 0 && rate <= 1)) {
    Invalid("errorRate must be between 0 and 1");
  }
  if (code != 500 && code != 429) {
    Invalid("errorCode must be 500 or 429");
  }
  std::lock_guard lock(mu_);
  error_rate_ = rate;
  error_code_ = code;
}

void Faults::ConflictNextWrites(int n) {
  std::lock_guard lock(mu_);
  conflict_next_writes_ = n < 0 ? 0 : n;
}

void Faults::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard lock(mu_);
  latency_ = latency < std::chrono::milliseconds(0) ? std::chrono::milliseconds(0) : latency;
}

void Faults::CutWatchesEvery(int n) {
  std::lock_guard lock(mu_);
  cut_watches_every_ = n < 0 ? 0 : n;
}

void Faults::CutWatches() {
  std::function<void()> listener;
  {
    std::lock_guard lock(mu_);
    ++cut_epoch_;
    listener = on_cut_;
  }
  if (listener) {
    listener();
  }
}

void Faults::Compact() {
  std::lock_guard lock(mu_);
  compacted_rv_ = std::max(compacted_rv_, newest_rv_seen_);
}

void Faults::Reset() {
  std::lock_guard lock(mu_);
  error_rate_ = 0;
  error_code_ = 500;
  conflict_next_writes_ = 0;
  latency_ = std::chrono::milliseconds(0);
  cut_watches_every_ = 0;
}

nlohmann::json Faults::ToJson() const {
  std::lock_guard lock(mu_);
  return {{"errorRate", error_rate_},
          {"errorCode", error_code_},
          {"conflictNextWrites", conflict_next_writes_},
          {"latencyMs", latency_.count()},
          {"cutWatchesEvery", cut_watches_every_}};
}

void Faults::ApplyJson(const nlohmann::json& body) {
  if (!body.is_object()) {
    Invalid("the faults body must be a JSON object");
  }
  auto integer = [&](const char* key) {
    const auto& v = body.at(key);
    if (!v.is_number_integer()) {
      Invalid(std::string(key) + " must be an integer");
    }
    return v.get<long long>();
  };
  for (const auto& [key, value] : body.items()) {
    if (key != "errorRate" && key != "errorCode" && key != "conflictNextWrites" && key != "latencyMs" &&
        key != "cutWatchesEvery" && key != "cutWatches" && key != "compact" && key != "reset") {
      Invalid("unknown fault \"" + key + "\"");
    }
    if ((key == "cutWatches" || key == "compact" || key == "reset") && !value.is_boolean()) {
      Invalid(key + " must be a boolean");
    }
  }
  if (body.contains("reset") && body["reset"].get<bool>()) {
    Reset();
  }
  if (body.contains("errorRate") || body.contains("errorCode")) {
    const nlohmann::json current = ToJson();
    double rate = current["errorRate"].get<double>();
    int code = current["errorCode"].get<int>();
    if (body.contains("errorRate")) {
      if (!body["errorRate"].is_number()) {
        Invalid("errorRate must be a number");
      }
      rate = body["errorRate"].get<double>();
    }
    if (body.contains("errorCode")) {
      code = static_cast<int>(integer("errorCode"));
    }
    SetErrorRate(rate, code);
  }
  if (body.contains("conflictNextWrites")) {
    ConflictNextWrites(static_cast<int>(integer("conflictNextWrites")));
  }
  if (body.contains("latencyMs")) {
    SetLatency(std::chrono::milliseconds(integer("latencyMs")));
  }
  if (body.contains("cutWatchesEvery")) {
    CutWatchesEvery(static_cast<int>(integer("cutWatchesEvery")));
  }
  if (body.contains("compact") && body["compact"].get<bool>()) {
    Compact();
  }
  if (body.contains("cutWatches") && body["cutWatches"].get<bool>()) {
    CutWatches();
  }
}

std::optional<InjectedError> Faults::Decide(bool is_write, std::string_view group_resource,
                                            std::string_view name) {
  std::lock_guard lock(mu_);
  if (is_write && conflict_next_writes_ > 0) {
    --conflict_next_writes_;
    return InjectedError{409, "Conflict",
                         "Operation cannot be fulfilled on " + std::string(group_resource) + " \"" +
                             std::string(name) + "\": " + std::string(kObjectModified),
                         ResourceDetails(group_resource, name)};
  }
  if (error_rate_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < error_rate_) {
    if (error_code_ == 429) {
      return InjectedError{429, "TooManyRequests",
                           "too many requests (devcluster fault injection), please try again later",
                           {{"retryAfterSeconds", 1}}, 1};
    }
    const std::string what = "devcluster fault injection";
    return InjectedError{500, "InternalError", "Internal error occurred: " + what,
                         {{"causes", nlohmann::json::array({{{"message", what}}})}}};
  }
  return std::nullopt;
}

std::chrono::milliseconds Faults::latency() const {
  std::lock_guard lock(mu_);
  return latency_;
}

int Faults::cut_watches_every() const {
  std::lock_guard lock(mu_);
  return cut_watches_every_;
}

std::uint64_t Faults::cut_epoch() const {
  std::lock_guard lock(mu_);
  return cut_epoch_;
}

void Faults::ObserveResourceVersion(std::uint64_t rv) {
  std::lock_guard lock(mu_);
  newest_rv_seen_ = std::max(newest_rv_seen_, rv);
}

std::optional<InjectedError> Faults::ExpiredWatch(std::string_view resource_version) const {
  std::uint64_t rv = 0;
  const char* end = resource_version.data() + resource_version.size();
  if (resource_version.empty() || std::from_chars(resource_version.data(), end, rv).ptr != end ||
      rv == 0) {
    return std::nullopt;  // "" and "0" watch from now; the server judges anything unparsable
  }
  std::lock_guard lock(mu_);
  if (rv >= compacted_rv_) {
    return std::nullopt;
  }
  // As the watch cache words it: the requested version and the oldest one it still has.
  return InjectedError{410, "Expired",
                       "too old resource version: " + std::to_string(rv) + " (" +
                           std::to_string(compacted_rv_) + ")"};
}

void Faults::SetCutListener(std::function<void()> on_cut) {
  std::lock_guard lock(mu_);
  on_cut_ = std::move(on_cut);
}

}  // namespace ringleader::devcluster
