// Graceful deletion of Pods, as kube-apiserver's rest.BeforeDelete runs it with the Pod strategy's
// CheckGracefulDelete: a DELETE of a bound, unfinished Pod marks it (deletionTimestamp = now +
// grace) and leaves it to its kubelet, which stops the containers and then deletes it with grace
// 0; a second DELETE may shorten the grace period, never lengthen it.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace ringleader::devcluster {

// What the API server's Pod strategy takes when spec.terminationGracePeriodSeconds is unset (the
// API's defaulting writes 30; devcluster does not default Pod specs).
inline constexpr std::int64_t kDefaultTerminationGracePeriodSeconds = 30;

enum class PodDeletionStep {
  kNow,       // remove it now (finalizers permitting), as any other object
  kGraceful,  // store `pod`, marked; the kubelet finishes the deletion
  kPending,   // already terminating at least as soon as asked: nothing changes
};

struct PodDeletion {
  PodDeletionStep step = PodDeletionStep::kNow;
  // kGraceful: the Pod with deletionTimestamp, deletionGracePeriodSeconds and generation + 1.
  // kNow: the Pod as finalizers would keep it (a terminating Pod cut to grace 0 carries its
  // moved deletionTimestamp and deletionGracePeriodSeconds 0). kPending: the Pod unchanged.
  nlohmann::json pod;
};

// `grace_period_seconds` is DeleteOptions.gracePeriodSeconds, nullopt when not given.
PodDeletion PlanPodDeletion(const nlohmann::json& pod, std::optional<std::int64_t> grace_period_seconds,
                            std::chrono::system_clock::time_point now);

// DeleteOptions.gracePeriodSeconds: nullopt when absent or null. Throws ApiError 400 (worded as
// the server's JSON decoder words it) when it is not an integer.
std::optional<std::int64_t> GracePeriodSeconds(const nlohmann::json& delete_options);

}  // namespace ringleader::devcluster
