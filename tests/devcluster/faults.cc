// Fault settings and the per-request decision.
#include "tests/devcluster/faults.h"

#include <string>

namespace ringleader::devcluster {

void Faults::SetErrorRate(double rate, int code) {
  if (rate < 0 || rate > 1) {
    throw BadRequest("errorRate must be between 0 and 1");
  }
  if (code != 500 && code != 429) {
    throw BadRequest("errorCode must be 500 or 429");
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
  std::function<void()> hook;
  {
    std::lock_guard lock(mu_);
    ++cut_epoch_;
    hook = on_cut_;
  }
  if (hook) {
    hook();
  }
}

void Faults::Compact() {
  std::function<void()> hook;
  {
    std::lock_guard lock(mu_);
    hook = on_compact_;
  }
  if (hook) {
    hook();
  }
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
    throw BadRequest("the faults body must be a JSON object");
  }
  auto integer = [&](const char* key) {
    const auto& v = body.at(key);
    if (!v.is_number_integer()) {
      throw BadRequest(std::string(key) + " must be an integer");
    }
    return v.get<long long>();
  };
  for (const auto& [key, value] : body.items()) {
    if (key != "errorRate" && key != "errorCode" && key != "conflictNextWrites" && key != "latencyMs" &&
        key != "cutWatchesEvery" && key != "cutWatches" && key != "compact" && key != "reset") {
      throw BadRequest("unknown fault \"" + key + "\"");
    }
    if ((key == "cutWatches" || key == "compact" || key == "reset") && !value.is_boolean()) {
      throw BadRequest(key + " must be a boolean");
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
        throw BadRequest("errorRate must be a number");
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

std::optional<ApiError> Faults::Decide(bool is_write) {
  std::lock_guard lock(mu_);
  if (is_write && conflict_next_writes_ > 0) {
    --conflict_next_writes_;
    return Conflict("devcluster", "fault-injection", kObjectModified);
  }
  if (error_rate_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < error_rate_) {
    if (error_code_ == 429) {
      return TooManyRequests("too many requests (devcluster fault injection), please try again later", 1);
    }
    return InternalError("devcluster fault injection");
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

void Faults::SetHooksForServer(std::function<void()> on_cut, std::function<void()> on_compact) {
  std::lock_guard lock(mu_);
  on_cut_ = std::move(on_cut);
  on_compact_ = std::move(on_compact);
}

}  // namespace ringleader::devcluster
