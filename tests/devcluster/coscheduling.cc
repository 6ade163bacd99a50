// The gang decision and the Coscheduling plugin's messages.
#include "tests/devcluster/coscheduling.h"

#include <cstdint>
#include <initializer_list>

#include "tests/devcluster/json_field.h"
#include "tests/devcluster/scheduler.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

std::string Text(const json& object, std::initializer_list<const char*> path) {
  const json& value = Field(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

// Terminal Pods are outside the scheduler's informer, so neither siblings nor assigned.
bool Terminal(const json& pod) {
  const std::string phase = Text(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

// kube-scheduler's FitError appends each extension point's message as " <message>.".
std::string WithPostFilter(const std::string& fit_error, const std::string& post_filter) {
  return post_filter.empty() ? fit_error : fit_error + " " + post_filter + ".";
}

// Coscheduling's PostFilter: it rejects the group unless enough of it is assigned already or the
// gap to minMember is at most 10% (then the waiting Pods keep waiting and it says nothing).
std::string PostFilterMessage(const std::string& group_key, std::int64_t min_member, std::int64_t assigned,
                              const std::string& pod_name) {
  if (assigned >= min_member || 10 * (min_member - assigned) <= min_member) {
    return "";
  }
  return "PodGroup " + group_key + " gets rejected due to Pod " + pod_name + " is unschedulable even after PostFilter";
}

}  // namespace

bool ServesPodGroups(const json* crd) {
  if (crd == nullptr || !Field(*crd, {"metadata", "deletionTimestamp"}).is_null()) {
    return false;
  }
  bool established = false;
  const json& conditions = Field(*crd, {"status", "conditions"});
  if (conditions.is_array()) {
    for (const json& condition : conditions) {
      established = established || (Text(condition, {"type"}) == "Established" && Text(condition, {"status"}) == "True");
    }
  }
  const json& versions = Field(*crd, {"spec", "versions"});
  if (!established || !versions.is_array()) {
    return false;
  }
  for (const json& version : versions) {
    if (Text(version, {"name"}) == "v1alpha1" && Field(version, {"served"}) == true) {
      return true;
    }
  }
  return false;
}

std::string PodGroupName(const json& pod) { return Text(pod, {"metadata", "labels", kPodGroupLabel}); }

std::string PodGroupNotFoundMessage(const std::string& fit_error) {
  return fit_error.empty() ? "PodGroup not found" : WithPostFilter(fit_error, "can not find pod group");
}

GangDecision PlanGang(const json& pod_group, const std::vector<std::size_t>& pending, const std::vector<json>& nodes,
                      const std::vector<json>& pods) {
  GangDecision decision;
  const std::string ns = Text(pod_group, {"metadata", "namespace"});
  const std::string name = Text(pod_group, {"metadata", "name"});
  const std::string group_key = ns + "/" + name;
  const json& min_member_field = Field(pod_group, {"spec", "minMember"});
  const std::int64_t min_member = min_member_field.is_number_integer() ? min_member_field.get<std::int64_t>() : 0;
  auto pod_name = [&](std::size_t i) { return Text(pods[i], {"metadata", "name"}); };

  if (nodes.empty()) {  // kube-scheduler stops before any plugin runs
    for (std::size_t i : pending) {
      decision.refuse.emplace_back(i, "no nodes available to schedule pods");
    }
    return decision;
  }

  std::int64_t siblings = 0;  // what PreFilter lists: non-terminal Pods with the label
  std::int64_t bound = 0;     // what Permit and PostFilter count as assigned
  for (const json& pod : pods) {
    if (Text(pod, {"metadata", "namespace"}) != ns || PodGroupName(pod) != name || Terminal(pod)) {
      continue;
    }
    ++siblings;
    bound += Text(pod, {"spec", "nodeName"}).empty() ? 0 : 1;
  }
  const std::string nodes_prefix = "0/" + std::to_string(nodes.size()) + " nodes are available:";
  if (siblings < min_member) {
    for (std::size_t i : pending) {
      const std::string pre_filter = "pre-filter pod " + pod_name(i) + " cannot find enough sibling pods, " +
                                     "current pods number: " + std::to_string(siblings) +
                                     ", minMember of group: " + std::to_string(min_member);
      decision.refuse.emplace_back(i, WithPostFilter(nodes_prefix + " " + pre_filter + ".",
                                                     PostFilterMessage(group_key, min_member, bound, pod_name(i))));
    }
    return decision;
  }

  // The trial: each placed Pod holds its node for the Pods after it, as assumed Pods do.
  std::vector<json> trial = pods;
  std::vector<std::pair<std::size_t, std::string>> placed;
  std::vector<std::pair<std::size_t, std::string>> misfits;  // (index, FitError)
  std::string group_message;                                 // from the first misfit
  for (std::size_t i : pending) {
    const ScheduleResult result = Schedule(trial[i], nodes, trial);
    if (!result.node.empty()) {
      trial[i]["spec"]["nodeName"] = result.node;
      placed.emplace_back(i, result.node);
      continue;
    }
    if (misfits.empty()) {
      const auto assigned = bound + static_cast<std::int64_t>(placed.size());
      group_message = WithPostFilter(result.message, PostFilterMessage(group_key, min_member, assigned, pod_name(i)));
    }
    misfits.emplace_back(i, result.message);
  }
  if (bound + static_cast<std::int64_t>(placed.size()) >= min_member) {
    decision.bind = std::move(placed);
    decision.refuse = std::move(misfits);
    return decision;
  }
  if (!misfits.empty()) {
    for (std::size_t i : pending) {
      decision.refuse.emplace_back(i, group_message);
    }
  }
  return decision;
}

}  // namespace ringleader::devcluster
