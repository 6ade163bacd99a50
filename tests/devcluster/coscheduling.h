// devcluster's stand-in for scheduler-plugins' Coscheduling plugin, pure: which Pods form a gang
// (the PodGroup label), and the all-or-nothing decision for one PodGroup's pending Pods, worded as
// the plugin's PreFilter, Permit and PostFilter word it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ringleader::devcluster {

// The API facts of scheduler-plugins' coscheduling (apis/scheduling/v1alpha1).
inline constexpr const char* kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr const char* kPodGroupCrdName = "podgroups.scheduling.x-k8s.io";
inline constexpr const char* kPodGroupsKey = "scheduling.x-k8s.io/podgroups";  // devcluster's store key
// The profile name of scheduler-plugins' "as a second scheduler" install, where Coscheduling runs.
inline constexpr const char* kSchedulerPluginsName = "scheduler-plugins-scheduler";

// Whether `crd` (a CustomResourceDefinition, or null when there is none) makes the API server
// serve PodGroups: v1alpha1 served, Established, not being deleted.
bool ServesPodGroups(const nlohmann::json* crd);

// The Pod's PodGroup name from its label; "" when it has none.
std::string PodGroupName(const nlohmann::json& pod);

// The message for a Pod whose PodGroup does not exist: Permit's "PodGroup not found" when a node
// fits it (`fit_error` empty), else the FitError with PostFilter's "can not find pod group".
std::string PodGroupNotFoundMessage(const std::string& fit_error);

// What one pass does with a PodGroup's pending Pods. A pending Pod in neither list waits at Permit
// for siblings that are not pending (gated ones): the plugin changes nothing about it.
struct GangDecision {
  std::vector<std::pair<std::size_t, std::string>> bind;    // (index into pods, node)
  std::vector<std::pair<std::size_t, std::string>> refuse;  // (index into pods, PodScheduled message)
};

// Decides for `pending` (indices into `pods`, in the order the plugin's queue sort pops them) of
// `pod_group`, given `pods`: every Pod in the cluster, binds made earlier in the pass included.
// - Fewer than spec.minMember non-terminal Pods carry the label: each is refused with PreFilter's
//   "cannot find enough sibling pods".
// - Otherwise the pending Pods are placed one after another on a trial copy of the cluster (each
//   placed Pod's requests count for the next). When the group's bound non-terminal Pods plus the
//   placed ones reach minMember, the placed ones are bound and any that fit nowhere get the plain
//   FitError; when they do not, none is bound and every pending Pod gets the first misfit's
//   FitError with PostFilter's "PodGroup ... gets rejected" (left out, as the plugin leaves it out,
//   when at most 10% of minMember is missing).
GangDecision PlanGang(const nlohmann::json& pod_group, const std::vector<std::size_t>& pending,
                      const std::vector<nlohmann::json>& nodes, const std::vector<nlohmann::json>& pods);

}  // namespace ringleader::devcluster
