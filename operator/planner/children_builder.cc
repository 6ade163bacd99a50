// Service, Secret and NetworkPolicy for a job, plus the metadata every child shares.
#include "operator/planner/children_builder.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sidecar/contract/contract.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;

std::string Base64(std::string_view bytes) {
  std::vector<unsigned char> out(4 * ((bytes.size() + 2) / 3) + 1);
  const int written = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(out.data()), static_cast<std::size_t>(written));
}

}  // namespace

std::string SecretName(const api::TrainingJob& job) { return job.metadata.name + "-ringleader-token"; }

std::string NetworkPolicyName(const api::TrainingJob& job) { return job.metadata.name + "-ringleader"; }

std::string MasterAddr(const api::TrainingJob& job, const PlannerConfig& config) {
  return job.metadata.name + "-0." + job.metadata.name + "." + job.metadata.namespace_ + ".svc." +
         config.cluster_domain;
}

json ChildMetadata(const api::TrainingJob& job, const std::string& name) {
  return {
      {"name", name},
      {"namespace", job.metadata.namespace_},
      {"labels",
       {{kJobNameLabel, job.metadata.name},
        {kJobUidLabel, job.metadata.uid},
        {kManagedByLabel, kManagedByValue}}},
      {"ownerReferences",
       json::array({{{"apiVersion", api::kApiVersion},
                     {"kind", api::kKind},
                     {"name", job.metadata.name},
                     {"uid", job.metadata.uid},
                     {"controller", true},
                     {"blockOwnerDeletion", true}}})},
  };
}

json BuildService(const api::TrainingJob& job, const api::JobPorts& ports) {
  json service_ports = json::array();
  const std::pair<contract::PortRole, std::int32_t> roles[] = {
      {contract::PortRole::kMaster, ports.master},
      {contract::PortRole::kRendezvous, ports.rendezvous},
      {contract::PortRole::kMetrics, ports.metrics},
      {contract::PortRole::kSpare, ports.spare}};
  for (const auto& [role, port] : roles) {
    service_ports.push_back({{"name", contract::PortRoleName(role)},
                             {"port", port},
                             {"targetPort", port},
                             {"protocol", "TCP"}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", ChildMetadata(job, job.metadata.name)},
      {"spec",
       {{"clusterIP", "None"},
        // Ranks must resolve each other before they are Ready: readiness waits for the preflight,
        // which needs the rendezvous, which needs DNS.
        {"publishNotReadyAddresses", true},
        {"selector", {{kJobNameLabel, job.metadata.name}, {kJobUidLabel, job.metadata.uid}}},
        {"ports", service_ports}}},
  };
}

json BuildSecret(const api::TrainingJob& job, const std::string& token) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", ChildMetadata(job, SecretName(job))},
      {"type", "Opaque"},
      {"data", {{contract::kTokenSecretKey, Base64(token)}}},
  };
}

namespace {

constexpr std::int32_t kHighestPort = 65535;

// TCP ports first..last as one NetworkPolicyPort (endPort only for a range); none when empty.
void AddTcpRange(json& ports, std::int32_t first, std::int32_t last) {
  if (first > last) {
    return;
  }
  json entry = {{"protocol", "TCP"}, {"port", first}};
  if (last > first) {
    entry["endPort"] = last;
  }
  ports.push_back(std::move(entry));
}

json JobPodSelector(const api::TrainingJob& job) {
  return {{"matchLabels", {{kJobNameLabel, job.metadata.name}, {kJobUidLabel, job.metadata.uid}}}};
}

}  // namespace

json BuildNetworkPolicy(const api::TrainingJob& job, const api::JobPorts& ports) {
  // The block's master and rendezvous ports are adjacent (contract::PortRole order); the
  // ranges below leave out exactly [low, high].
  const std::int32_t low = std::min(ports.master, ports.rendezvous);
  const std::int32_t high = std::max(ports.master, ports.rendezvous);
  json open_ports = json::array();
  AddTcpRange(open_ports, 1, low - 1);
  if (high - low > 1) {
    AddTcpRange(open_ports, low + 1, high - 1);  // never with today's block; kept exact regardless
  }
  AddTcpRange(open_ports, high + 1, kHighestPort);
  // No port: every port of the protocol. The store and the rendezvous speak only TCP.
  open_ports.push_back({{"protocol", "UDP"}});
  open_ports.push_back({{"protocol", "SCTP"}});
  return {
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata", ChildMetadata(job, NetworkPolicyName(job))},
      {"spec",
       {{"podSelector", JobPodSelector(job)},
        // Egress is left alone: a policy of type Ingress only says nothing about it.
        {"policyTypes", json::array({"Ingress"})},
        {"ingress",
         json::array({
             // The job's own Pods (this namespace): every port, the store's and NCCL's included.
             {{"from", json::array({{{"podSelector", JobPodSelector(job)}}})}},
             // Anyone: every port but the store's and the rendezvous's.
             {{"ports", std::move(open_ports)}},
         })}}},
  };
}

std::string PodLabelSelector(const api::TrainingJob& job) {
  return std::string(kJobNameLabel) + "=" + job.metadata.name + "," + std::string(kJobUidLabel) + "=" +
         job.metadata.uid;
}

bool IsControlledBy(const json& object, const api::TrainingJob& job) {
  // Looked up without copying: the planner asks this of every Pod on every re-plan.
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return false;
  }
  const auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) {
    return false;
  }
  for (const json& ref : *refs) {
    if (!ref.is_object()) {
      continue;
    }
    const auto controller = ref.find("controller");
    const auto uid = ref.find("uid");
    if (controller != ref.end() && *controller == true && uid != ref.end() &&
        *uid == job.metadata.uid) {
      return true;
    }
  }
  return false;
}

}  // namespace ringleader::planner
