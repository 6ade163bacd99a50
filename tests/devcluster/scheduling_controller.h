// devcluster's stand-in for kube-scheduler: the simulated Nodes, and a thread that binds pending
// Pods to them or records why none fits, level-based over the store.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/devcluster/devcluster.h"
#include "tests/devcluster/store.h"

namespace ringleader::devcluster {

// The core/v1 Node served for `config` (Ready, capacity = allocatable, 110 pods), created `now`.
nlohmann::json NodeObject(const NodeConfig& config, const std::string& now);

// One change a scheduling pass makes: the Pod to store (bound, or with PodScheduled=False) and,
// unless null, an Event about it to create (metadata.name left for the applier to choose).
struct SchedulingAction {
  nlohmann::json pod;
  nlohmann::json event;
};

// For each Pod without spec.nodeName that is not being deleted or finished: a Pod with scheduling
// gates is left alone (its PodScheduled=False/SchedulingGated is written by the API at create, as
// kube-apiserver does, scheduling_gates.h). The others meant for the default scheduler, or for scheduler-plugins' second scheduler when
// `pod_groups` is given (the PodGroup CRD is served; null when not), are taken oldest first: each is
// bound (spec.nodeName, PodScheduled=True, a Scheduled Event), the later Pods seeing it bound, or,
// when no node fits, gets PodScheduled=False with the reason - only when that condition changes, so
// a pass over an unchanged cluster plans nothing. Pods of scheduler-plugins-scheduler labelled into
// a PodGroup (`pod_groups` holds every PodGroup) are bound all or nothing (coscheduling.h), their
// group taking its turn at the PodGroup's creationTimestamp, as the plugin's queue sort orders them.
std::vector<SchedulingAction> PlanScheduling(const std::vector<nlohmann::json>& nodes,
                                             const std::vector<nlohmann::json>& pods, const std::string& now,
                                             const std::vector<nlohmann::json>* pod_groups = nullptr);

class SchedulingController {
 public:
  // Starts the thread: a pass at once and after every change to the store.
  explicit SchedulingController(Store& store);
  SchedulingController(const SchedulingController&) = delete;
  SchedulingController& operator=(const SchedulingController&) = delete;
  ~SchedulingController();

  // Ends the thread; idempotent.
  void Stop();

 private:
  void Run();
  void Pass();

  Store& store_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ringleader::devcluster
