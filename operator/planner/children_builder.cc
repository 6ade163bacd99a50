// Service and Secret for a job, plus the metadata every child shares.
#include "operator/planner/children_builder.h"

#include <openssl/evp.h>

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
