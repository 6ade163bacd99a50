// Secret, ConfigMap and projected volumes written from the objects the node agent reads.
#include "tests/devcluster/kubelet/api_volumes.h"

#include <map>
#include <stdexcept>

#include "operator/kube/config.h"
#include "tests/devcluster/kubelet/container_spec.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

// The kubelet's default when a serviceAccountToken projection names no expiration.
constexpr std::int64_t kDefaultTokenSeconds = 3600;

std::string Quoted(const std::string& kind, const std::string& name) { return kind + " \"" + name + "\""; }

// A label or annotation map as the downward API writes it: key="value" lines, sorted by key.
std::string KeyValueLines(const json& map) {
  std::string text;
  if (!map.is_object()) {
    return text;
  }
  for (const auto& [key, value] : map.items()) {
    text += key + "=" + json(value.is_string() ? value.get<std::string>() : "").dump() + "\n";
  }
  return text;
}

// The value of a downward API volume item's fieldRef.
std::string DownwardValue(const json& pod, const std::string& field_path) {
  const json meta = pod.value("metadata", json::object());
  if (field_path == "metadata.name" || field_path == "metadata.namespace" || field_path == "metadata.uid") {
    return meta.value(field_path.substr(9), "");
  }
  if (field_path == "metadata.labels" || field_path == "metadata.annotations") {
    return KeyValueLines(meta.value(field_path.substr(9), json::object()));
  }
  for (const char* map : {"labels", "annotations"}) {
    const std::string prefix = std::string("metadata.") + map + "['";
    if (field_path.rfind(prefix, 0) == 0 && field_path.size() > prefix.size() + 2 &&
        field_path.compare(field_path.size() - 2, 2, "']") == 0) {
      const std::string key = field_path.substr(prefix.size(), field_path.size() - prefix.size() - 2);
      const json values = meta.value(map, json::object());
      return values.contains(key) && values[key].is_string() ? values[key].get<std::string>() : "";
    }
  }
  throw std::invalid_argument("downward API volume: fieldRef \"" + field_path + "\" is not supported");
}

// The object a secret or configMap source names, or what the Pod waits for.
struct Fetched {
  std::optional<json> object;
  std::optional<std::string> waiting;
};

Fetched Fetch(const std::function<std::optional<json>(const std::string&)>& get, const std::string& kind,
              const json& source, const char* name_field) {
  const std::string name = source.value(name_field, "");
  try {
    Fetched fetched{get(name), std::nullopt};
    if (!fetched.object && !source.value("optional", false)) {
      fetched.waiting = Quoted(kind, name) + " not found";
    }
    return fetched;
  } catch (const std::runtime_error& e) {
    return {std::nullopt, "cannot read " + Quoted(kind, name) + ": " + e.what()};
  }
}

std::optional<std::string> WriteProjected(const json& pod, const json& projected, const std::filesystem::path& dir,
                                          const VolumeSources& sources) {
  const std::filesystem::perms default_mode = VolumeDefaultMode(projected, "projected volume");
  for (const json& source : projected.value("sources", json::array())) {
    if (source.contains("serviceAccountToken")) {
      const json& token = source["serviceAccountToken"];
      std::string value;
      try {
        value = sources.service_account_token(token.value("audience", ""),
                                              token.value("expirationSeconds", kDefaultTokenSeconds));
      } catch (const std::runtime_error& e) {
        return "cannot get a token for the Pod's service account: " + std::string(e.what());
      }
      const std::string path = token.value("path", "");
      WriteKeyFiles({{path, value}}, json::object(), default_mode, dir, "serviceAccountToken");
    } else if (source.contains("secret") || source.contains("configMap")) {
      const bool secret = source.contains("secret");
      const json& object_source = secret ? source["secret"] : source["configMap"];
      const std::string kind = secret ? "secret" : "configmap";
      Fetched fetched = Fetch(secret ? sources.secret : sources.config_map, kind, object_source, "name");
      if (fetched.waiting) {
        return fetched.waiting;
      }
      if (fetched.object) {
        WriteKeyFiles(secret ? SecretValues(*fetched.object) : ConfigMapValues(*fetched.object), object_source,
                      default_mode, dir, Quoted(kind, object_source.value("name", "")));
      }
    } else if (source.contains("downwardAPI")) {
      for (const json& item : source["downwardAPI"].value("items", json::array())) {
        if (!item.contains("fieldRef")) {
          throw std::invalid_argument("downward API volume item \"" + item.value("path", "") +
                                      "\": only fieldRef is supported");
        }
        const std::string path = item.value("path", "");
        json single = {{"items", json::array({{{"key", path}, {"path", path}}})}};
        if (item.contains("mode")) {
          single["items"][0]["mode"] = item["mode"];
        }
        WriteKeyFiles({{path, DownwardValue(pod, item["fieldRef"].value("fieldPath", ""))}}, single, default_mode,
                      dir, "downward API");
      }
    } else {
      throw std::invalid_argument("projected volume: only serviceAccountToken, secret, configMap and downwardAPI "
                                  "sources are supported");
    }
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, std::string> ConfigMapValues(const json& config_map) {
  std::map<std::string, std::string> values;
  const json data = config_map.value("data", json::object());
  for (const auto& [key, value] : data.items()) {
    values[key] = value.is_string() ? value.get<std::string>() : "";
  }
  const json binary = config_map.value("binaryData", json::object());
  for (const auto& [key, value] : binary.items()) {
    const std::optional<std::string> decoded =
        value.is_string() ? kube::DecodeBase64(value.get<std::string>()) : std::nullopt;
    if (!decoded) {
      throw std::invalid_argument("configmap key \"" + key + "\": binaryData is not base64");
    }
    values[key] = *decoded;
  }
  return values;
}

bool IsApiVolume(const json& volume) {
  return volume.contains("secret") || volume.contains("configMap") || volume.contains("projected");
}

std::optional<std::string> WriteApiVolume(const json& pod, const json& volume, const std::filesystem::path& dir,
                                          const VolumeSources& sources) {
  std::filesystem::create_directories(dir);
  if (volume.contains("projected")) {
    return WriteProjected(pod, volume["projected"], dir, sources);
  }
  const bool secret = volume.contains("secret");
  const json& source = secret ? volume["secret"] : volume["configMap"];
  const std::string kind = secret ? "secret" : "configmap";
  const Fetched fetched = Fetch(secret ? sources.secret : sources.config_map, kind, source,
                                secret ? "secretName" : "name");
  if (fetched.waiting) {
    return fetched.waiting;
  }
  if (fetched.object) {
    const std::string what = Quoted(kind, fetched.object->value("/metadata/name"_json_pointer, std::string()));
    WriteKeyFiles(secret ? SecretValues(*fetched.object) : ConfigMapValues(*fetched.object), source,
                  VolumeDefaultMode(source, what), dir, what);
  }
  return std::nullopt;
}

}  // namespace ringleader::devcluster::kubelet
