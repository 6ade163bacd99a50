// The objects a job owns besides its Pods: the headless Service that gives every rank a DNS name,
// the Secret holding the job token the sidecars authenticate with, and the NetworkPolicy that
// keeps the trainers' store and the rendezvous port to the job's own Pods.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/trainingjob.h"
#include "operator/planner/plan.h"

namespace ringleader::planner {

std::string SecretName(const api::TrainingJob& job);
// <job>-ringleader.
std::string NetworkPolicyName(const api::TrainingJob& job);
// <job>-0.<job>.<namespace>.svc.<cluster domain>: rank 0's stable DNS name.
std::string MasterAddr(const api::TrainingJob& job, const PlannerConfig& config);

// metadata shared by every child: namespace, labels, and a controller owner reference so
// Kubernetes garbage-collects the child with the job.
nlohmann::json ChildMetadata(const api::TrainingJob& job, const std::string& name);

nlohmann::json BuildService(const api::TrainingJob& job, const api::JobPorts& ports);
nlohmann::json BuildSecret(const api::TrainingJob& job, const std::string& token);

// A networking.k8s.io/v1 NetworkPolicy selecting the job's Pods (by job name and uid). Ingress to
// the master port (the trainers' TCPStore, which has no authentication of its own) and the
// rendezvous port is admitted only from the job's own Pods; the job's Pods reach every port of
// each other (NCCL and Gloo connect on ports the kernel picks); from anywhere else every other
// TCP port (as ranges with endPort) and all of UDP and SCTP stay open, as without a policy.
nlohmann::json BuildNetworkPolicy(const api::TrainingJob& job, const api::JobPorts& ports);

// The label selector of the job's Pods in its string form, "ringleader.dev/job-name=<job>,
// ringleader.dev/job-uid=<uid>" (the labels every Pod of the job carries, as the Service selects
// them): status.selector, which the scale subresource's labelSelectorPath names for an HPA.
std::string PodLabelSelector(const api::TrainingJob& job);

// True when `object` has a controller owner reference naming this job's uid.
bool IsControlledBy(const nlohmann::json& object, const api::TrainingJob& job);

}  // namespace ringleader::planner
