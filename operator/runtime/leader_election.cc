// Leader election on a Lease: acquire or renew with resourceVersion-guarded writes, judge
// another holder's expiry on this replica's own clock, step down when renewals stop working.
#include "operator/runtime/leader_election.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <thread>

namespace ringleader::runtime {
namespace {

using nlohmann::json;

// metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits.
std::string FormatMicroTime(std::chrono::system_clock::time_point time) {
  const auto micros = std::chrono::floor<std::chrono::microseconds>(time.time_since_epoch());
  const auto seconds = std::chrono::floor<std::chrono::seconds>(micros);
  const std::time_t whole = seconds.count();
  std::tm utc{};
  gmtime_r(&whole, &utc);
  // Sized for any int fields, so the compiler can see nothing is cut off.
  std::array<char, 96> text{};
  std::snprintf(text.data(), text.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ",
                utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                utc.tm_sec, static_cast<int>((micros - seconds).count()));
  return text.data();
}

std::string StringAt(const json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t IntegerAt(const json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

// What must stay unchanged for lease_duration before another holder counts as gone.
json RecordOf(const json& lease) {
  const json spec = lease.value("spec", json::object());
  return {{"holderIdentity", StringAt(spec, "holderIdentity")},
          {"renewTime", StringAt(spec, "renewTime")},
          {"leaseDurationSeconds", IntegerAt(spec, "leaseDurationSeconds")},
          {"resourceVersion", StringAt(lease.value("metadata", json::object()), "resourceVersion")}};
}

}  // namespace

std::string DefaultIdentity() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') {
    return "unknown_" + std::to_string(getpid());
  }
  return std::string(host.data()) + "_" + std::to_string(getpid());
}

LeaderElector::LeaderElector(kube::Client& client, LeaderElectionOptions options,
                             kube::Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {
  if (options_.identity.empty()) {
    options_.identity = DefaultIdentity();
  }
}

void LeaderElector::Run(std::stop_token stop,
                        const std::function<void(std::stop_token)>& on_started_leading) {
  if (stop.stop_requested()) {
    return;
  }
  while (!TryAcquireOrRenew()) {
    if (!clock_.SleepFor(options_.retry_period, stop)) {
      return;
    }
  }
  if (stop.stop_requested()) {
    Release();
    return;
  }

  // Wakes the renew loop early: the caller's stop, or on_started_leading returning by itself.
  std::stop_source wake;
  std::stop_callback forward_stop(stop, [&wake] { wake.request_stop(); });
  leader_.store(true);
  kube::Clock::TimePoint last_renewal = clock_.Now();
  std::jthread leading([&on_started_leading, &wake](std::stop_token leading_stop) {
    on_started_leading(leading_stop);
    wake.request_stop();
  });

  bool lost = false;
  while (clock_.SleepFor(options_.retry_period, wake.get_token())) {
    if (TryAcquireOrRenew()) {
      last_renewal = clock_.Now();
      continue;
    }
    // Another replica writing itself in as holder means it already believes it leads.
    const std::string holder = StringAt(observed_record_, "holderIdentity");
    const bool taken = !holder.empty() && holder != options_.identity;
    if (taken || clock_.Now() - last_renewal >= options_.renew_deadline) {
      lost = true;
      break;
    }
  }
  if (lost) {
    leader_.store(false);
  }
  leading.request_stop();
  leading.join();
  if (!lost) {
    // Stopped, or on_started_leading finished: hand the Lease over at once.
    Release();
    leader_.store(false);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  const auto duration_seconds = static_cast<std::int64_t>(options_.lease_duration.count());
  try {
    json lease;
    try {
      lease = client_.Get(kube::Leases(), options_.lease_namespace, options_.lease_name);
    } catch (const kube::ApiError& e) {
      if (!kube::IsNotFound(e)) {
        return false;
      }
      json created = client_.Create(
          kube::Leases(), options_.lease_namespace,
          {{"apiVersion", kube::Leases().ApiVersion()},
           {"kind", "Lease"},
           {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
           {"spec",
            {{"holderIdentity", options_.identity},
             {"leaseDurationSeconds", duration_seconds},
             {"acquireTime", now},
             {"renewTime", now},
             {"leaseTransitions", 0}}}});
      observed_record_ = RecordOf(created);
      observed_time_ = clock_.Now();
      return true;
    }

    json record = RecordOf(lease);
    if (record != observed_record_) {
      observed_record_ = std::move(record);
      observed_time_ = clock_.Now();
    }
    json& spec = lease["spec"];
    if (!spec.is_object()) {
      spec = json::object();
    }
    const std::string holder = StringAt(spec, "holderIdentity");
    if (!holder.empty() && holder != options_.identity) {
      // The holder's own duration when it promised longer than ours.
      const auto expiry = std::max<kube::Clock::Duration>(
          options_.lease_duration,
          std::chrono::seconds(IntegerAt(observed_record_, "leaseDurationSeconds")));
      if (clock_.Now() - observed_time_ < expiry) {
        return false;
      }
    }

    if (holder != options_.identity) {
      spec["acquireTime"] = now;
      spec["leaseTransitions"] = IntegerAt(spec, "leaseTransitions") + 1;
    } else if (!spec.contains("acquireTime")) {
      spec["acquireTime"] = now;
    }
    spec["holderIdentity"] = options_.identity;
    spec["leaseDurationSeconds"] = duration_seconds;
    spec["renewTime"] = now;
    // `lease` still carries the resourceVersion we read, so a concurrent writer wins with 409.
    json updated = client_.Update(kube::Leases(), options_.lease_namespace, lease);
    observed_record_ = RecordOf(updated);
    observed_time_ = clock_.Now();
    return true;
  } catch (const kube::ApiError&) {
    // Conflict or AlreadyExists: another candidate won the race. Anything else: the API
    // server is unreachable or failing; either way this attempt did not get the Lease.
    return false;
  } catch (const json::exception&) {
    return false;  // a Lease we cannot read is one we do not hold
  }
}

void LeaderElector::Release() {
  try {
    json lease = client_.Get(kube::Leases(), options_.lease_namespace, options_.lease_name);
    json& spec = lease["spec"];
    if (!spec.is_object() || StringAt(spec, "holderIdentity") != options_.identity) {
      return;
    }
    const std::string now = FormatMicroTime(std::chrono::system_clock::now());
    spec["holderIdentity"] = "";
    spec["leaseDurationSeconds"] = 1;
    spec["acquireTime"] = now;
    spec["renewTime"] = now;
    client_.Update(kube::Leases(), options_.lease_namespace, lease);
  } catch (const kube::ApiError&) {
    // Best effort: without the release a standby takes over after lease_duration instead.
  } catch (const nlohmann::json::exception&) {
  }
}

}  // namespace ringleader::runtime
