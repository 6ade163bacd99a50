// Builds one rank's Pod from the user's template: the env contract in every trainer container
// (with spec.communication.trainerStore Sidecar, also what makes each trainer a client of the
// TCPStore that rank 0's sidecar serves on the master port), the ringleader sidecar as a native
// sidecar, the preflight as the last init container (holding the trainers' devices and fabric
// settings; the trainers start once it exits 0), the NCCL profiler plugin for the trainers
// (spec.communication.telemetry), DNS identity, volumes, ports (and host ports with hostNetwork)
// and GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/planner/plan.h"

namespace ringleader::planner {

// A rank's Pod of one attempt: <job>-<rank> for attempt 0, <job>-<rank>-attempt-<k> from the first
// gang restart on, so a failed rank's Pod kept for `kubectl logs` never holds the name the next
// attempt needs. A Pod name is a DNS subdomain (253 characters), so the suffix fits any job name
// the validation admits (at most 62 characters).
std::string PodName(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt);

// The DNS hostname of a rank's Pod in every attempt, <job>-<rank> (a 63-character label): with
// the subdomain <job> it gives the rank the same DNS name, and MASTER_ADDR the same value, in
// every attempt.
std::string PodHostname(const api::TrainingJob& job, std::int64_t rank);

// Whether the job's Pods use the node's network: spec.networking.hostNetwork, or the operator's
// default when the job leaves it unset.
bool HostNetwork(const api::TrainingJob& job, const PlannerConfig& config);

// The memory limit, in bytes, of a ringleader container that runs the probes `spec` enables (the
// preflight container: `spec` itself; the sidecar: its backend, monitor only). With Gloo the
// probes' buffers are host memory and grow with the largest message sent; with NCCL they are on
// the GPU, and the host holds pieces of fixed size. At least 1Gi.
std::int64_t SidecarMemoryLimitBytes(const api::TrainingJobSpec& spec);

// With telemetry on, the trainer containers whose own env names NCCL_PROFILER_PLUGIN, in template
// order: BuildPod leaves those alone (no plugin env, no plugin mount). Empty with telemetry off.
std::vector<std::string> TrainersWithOwnProfilerPlugin(const api::TrainingJob& job);

// What a Pod's preflight covers (RINGLEADER_PREFLIGHT_SCOPE, elastic jobs only). kJob: the
// attempt's initial Pods, created together, meet in one world of spec.replicas Pods. kPod: a Pod
// created later in the same attempt (an elastic job's scale-up, or a rank recreated alone) joins
// a world already training; its preflight covers its own ranks and its reach to rank 0's store.
enum class PreflightScope { kJob, kPod };

nlohmann::json BuildPod(const api::TrainingJob& job, std::int64_t rank, std::int64_t attempt,
                        const api::JobPorts& ports, const PlannerConfig& config,
                        PreflightScope scope = PreflightScope::kJob);

}  // namespace ringleader::planner
