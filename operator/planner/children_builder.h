// The objects a job owns besides its Pods: the headless Service that gives every rank a DNS name,
// and the Secret holding the job token the sidecars authenticate with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/planner/plan.h"

namespace ringleader::planner {

std::string SecretName(const api::TrainingJob& job);
// <job>-0.<job>.<namespace>.svc.<cluster domain>: rank 0's stable DNS name.
std::string MasterAddr(const api::TrainingJob& job, const PlannerConfig& config);

// metadata shared by every child: namespace, labels, and a controller owner reference so
// Kubernetes garbage-collects the child with the job.
nlohmann::json ChildMetadata(const api::TrainingJob& job, const std::string& name);

nlohmann::json BuildService(const api::TrainingJob& job, const api::JobPorts& ports);
nlohmann::json BuildSecret(const api::TrainingJob& job, const std::string& token);

// True when `object` has a controller owner reference naming this job's uid.
bool IsControlledBy(const nlohmann::json& object, const api::TrainingJob& job);

}  // namespace ringleader::planner
