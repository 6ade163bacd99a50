// The volumes whose files come from the API: secret, configMap and projected (ServiceAccount
// token, Secrets, ConfigMaps, downward API), the last being what the ServiceAccount admission
// plugin adds to every Pod as kube-api-access-*. The node agent reads them with its own identity;
// the Node authorizer lets it read exactly what its Pods use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ringleader::devcluster::kubelet {

struct VolumeSources {
  // The Secret or ConfigMap `name` of the Pod's namespace; nullopt while it does not exist. Throw
  // std::runtime_error when it cannot be read (yet: the Node authorizer learns of a new Pod a
  // moment after it is bound).
  std::function<std::optional<nlohmann::json>(const std::string& name)> secret;
  std::function<std::optional<nlohmann::json>(const std::string& name)> config_map;
  // A token of the Pod's ServiceAccount bound to the Pod (the TokenRequest API) for `audience`
  // ("" = the API server's own), valid `expiration_seconds`. Throws std::runtime_error when refused.
  std::function<std::string(const std::string& audience, std::int64_t expiration_seconds)> service_account_token;
};

// A ConfigMap's keys and contents: `data`, and `binaryData` decoded. Throws
// std::invalid_argument for binaryData that is not base64.
std::map<std::string, std::string> ConfigMapValues(const nlohmann::json& config_map);

// Whether `volume` (one entry of spec.volumes) is one of these kinds.
bool IsApiVolume(const nlohmann::json& volume);

// Writes the files of `volume` for `pod` into `dir`. Returns nullopt once written, or what the Pod
// waits for in the kubelet's words (`secret "x" not found`, `configmap "x" not found`, or why
// reading failed): the caller tries again later. A missing object of an optional source is no
// wait. Throws std::invalid_argument for a spec it cannot honour (bad modes or paths, a
// downward API field it does not know).
std::optional<std::string> WriteApiVolume(const nlohmann::json& pod, const nlohmann::json& volume,
                                          const std::filesystem::path& dir, const VolumeSources& sources);

}  // namespace ringleader::devcluster::kubelet
