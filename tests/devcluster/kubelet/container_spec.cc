// Computes a container's local launch from core/v1 JSON and writes key-file volumes; see
// container_spec.h for the Kubernetes semantics kept and the ones simplified.
#include "tests/devcluster/kubelet/container_spec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

constexpr int kDefaultSecretMode = 0644;

std::string StringAt(const json& object, const json::json_pointer& pointer) {
  const json value = object.value(pointer, json());
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::string ContainerName(const json& container) { return container.value("name", std::string("<unnamed>")); }

// "repo:tag" and "repo@sha256:..." -> "repo"; a ':' before the last '/' is a registry port.
std::string Repository(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  const std::size_t slash = repo.rfind('/');
  const std::size_t colon = repo.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repo.resize(colon);
  }
  return repo;
}

std::filesystem::path ProgramFor(const json& container, const ImageMap& images) {
  const std::string image = container.value("image", std::string());
  if (auto it = images.programs.find(image); it != images.programs.end()) {
    return it->second;
  }
  if (auto it = images.programs.find(Repository(image)); it != images.programs.end()) {
    return it->second;
  }
  throw std::invalid_argument("container \"" + ContainerName(container) + "\": image \"" + image +
                              "\" is not mapped to a local program");
}

// `metadata.labels['key']` -> the label's value ("" when absent), as the downward API does.
bool SubscriptedField(const std::string& field_path, const std::string& prefix, std::string& key) {
  if (field_path.size() < prefix.size() + 4 || field_path.compare(0, prefix.size(), prefix) != 0 ||
      field_path.compare(prefix.size(), 2, "['") != 0 || field_path.compare(field_path.size() - 2, 2, "']") != 0) {
    return false;
  }
  key = field_path.substr(prefix.size() + 2, field_path.size() - prefix.size() - 4);
  return true;
}

std::string FieldRefValue(const json& pod, const std::string& field_path, const LaunchContext& context,
                          const std::string& variable, const std::string& container_name) {
  using P = json::json_pointer;
  std::string key;
  if (SubscriptedField(field_path, "metadata.labels", key)) {
    return StringAt(pod, P("/metadata/labels") / key);
  }
  if (SubscriptedField(field_path, "metadata.annotations", key)) {
    return StringAt(pod, P("/metadata/annotations") / key);
  }
  if (field_path == "metadata.name") {
    return StringAt(pod, P("/metadata/name"));
  }
  if (field_path == "metadata.namespace") {
    return StringAt(pod, P("/metadata/namespace"));
  }
  if (field_path == "metadata.uid") {
    return StringAt(pod, P("/metadata/uid"));
  }
  if (field_path == "spec.nodeName") {
    return context.node_name.empty() ? StringAt(pod, P("/spec/nodeName")) : context.node_name;
  }
  if (field_path == "spec.serviceAccountName") {
    return StringAt(pod, P("/spec/serviceAccountName"));
  }
  if (field_path == "status.podIP") {
    return context.pod_ip;
  }
  if (field_path == "status.hostIP") {
    return context.host_ip.empty() ? StringAt(pod, P("/status/hostIP")) : context.host_ip;
  }
  throw std::invalid_argument("container \"" + container_name + "\": env " + variable + ": fieldRef \"" + field_path +
                              "\" is not supported");
}

// The values of a Secret (`secret`) or ConfigMap the context holds, or null when it does not exist.
const std::map<std::string, std::string>* ObjectValues(const LaunchContext& context, bool secret,
                                                       const std::string& name) {
  const auto& objects = secret ? context.secrets : context.config_maps;
  const auto it = objects.find(name);
  return it == objects.end() ? nullptr : &it->second;
}

// The Service environment, the container's envFrom, then its own `env` entries, resolved in
// order (no defaults).
std::map<std::string, std::string> ContainerEnv(const json& pod, const json& container, const LaunchContext& context) {
  const std::string container_name = ContainerName(container);
  const std::string ns = StringAt(pod, "/metadata/namespace"_json_pointer);
  const auto refused = [&](const std::string& why) {
    return std::invalid_argument("container \"" + container_name + "\": " + why);
  };
  std::map<std::string, std::string> env = context.service_env;
  for (const json& source : container.value("envFrom", json::array())) {
    const bool secret = source.contains("secretRef");
    if (!secret && !source.contains("configMapRef")) {
      throw refused("envFrom: only configMapRef and secretRef are supported");
    }
    const json& ref = secret ? source["secretRef"] : source["configMapRef"];
    const std::string name = ref.value("name", std::string());
    const std::map<std::string, std::string>* values = ObjectValues(context, secret, name);
    if (values == nullptr) {
      if (ref.value("optional", false)) {
        continue;
      }
      throw refused(std::string(secret ? "secret" : "configmap") + " \"" + name + "\" not found");
    }
    const std::string prefix = source.value("prefix", std::string());
    for (const auto& [key, value] : *values) {
      env[prefix + key] = value;
    }
  }
  for (const json& entry : container.value("env", json::array())) {
    const std::string name = entry.value("name", std::string());
    if (!entry.contains("valueFrom")) {
      env[name] = ExpandVariables(entry.value("value", std::string()), env);
      continue;
    }
    const json& source = entry["valueFrom"];
    if (source.contains("fieldRef") && source.size() == 1) {
      env[name] =
          FieldRefValue(pod, source["fieldRef"].value("fieldPath", std::string()), context, name, container_name);
      continue;
    }
    const bool secret = source.contains("secretKeyRef");
    if (source.size() != 1 || (!secret && !source.contains("configMapKeyRef"))) {
      throw refused("env " + name + ": only valueFrom.fieldRef, .secretKeyRef and .configMapKeyRef are supported");
    }
    const json& ref = secret ? source["secretKeyRef"] : source["configMapKeyRef"];
    const std::string object = ref.value("name", std::string());
    const std::string key = ref.value("key", std::string());
    const bool optional = ref.value("optional", false);
    const std::map<std::string, std::string>* values = ObjectValues(context, secret, object);
    if (values == nullptr) {
      if (optional) {
        continue;
      }
      throw refused("env " + name + ": " + (secret ? "secret" : "configmap") + " \"" + object + "\" not found");
    }
    const auto value = values->find(key);
    if (value == values->end()) {
      if (optional) {
        continue;
      }
      throw refused("env " + name + ": couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") + ns +
                    "/" + object);
    }
    env[name] = value->second;
  }
  return env;
}

std::vector<std::string> Argv(const json& container, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv;
  const json command = container.value("command", json::array());
  for (std::size_t i = 1; i < command.size(); ++i) {
    argv.push_back(ExpandVariables(command[i].get<std::string>(), env));
  }
  for (const json& arg : container.value("args", json::array())) {
    argv.push_back(ExpandVariables(arg.get<std::string>(), env));
  }
  return argv;
}

// A relative path that stays below its base: no root, no "..".
bool IsContainedRelative(const std::filesystem::path& path) {
  if (path.empty() || path.is_absolute()) {
    return false;
  }
  return std::none_of(path.begin(), path.end(), [](const std::filesystem::path& part) { return part == ".."; });
}

std::vector<Mount> Mounts(const json& container, const LaunchContext& context) {
  const std::string container_name = ContainerName(container);
  std::vector<Mount> mounts;
  for (const json& entry : container.value("volumeMounts", json::array())) {
    const std::string volume = entry.value("name", std::string());
    auto it = context.volume_dirs.find(volume);
    if (it == context.volume_dirs.end()) {
      throw std::invalid_argument("container \"" + container_name + "\": volume \"" + volume +
                                  "\" has no host directory");
    }
    Mount mount{.host = it->second,
                .path = entry.value("mountPath", std::string()),
                .read_only = entry.value("readOnly", false)};
    if (const std::string sub_path = entry.value("subPath", std::string()); !sub_path.empty()) {
      if (!IsContainedRelative(sub_path)) {
        throw std::invalid_argument("container \"" + container_name + "\": volume \"" + volume + "\": subPath \"" +
                                    sub_path + "\" leaves the volume");
      }
      mount.host /= sub_path;
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// `value` when it is `mount_path` or below it: the same path under `host`.
bool RewritePrefix(std::string& value, const std::string& mount_path, const std::filesystem::path& host) {
  if (mount_path.empty() || value.compare(0, mount_path.size(), mount_path) != 0) {
    return false;
  }
  const std::string rest = value.substr(mount_path.size());
  if (!rest.empty() && rest.front() != '/' && mount_path.back() != '/') {
    return false;
  }
  value = host.string() + rest;
  return true;
}

std::string Base64Decode(const std::string& encoded, const std::string& key) {
  std::string input;
  // Kubernetes serves data as standard base64 without line breaks; tolerate them anyway.
  std::copy_if(encoded.begin(), encoded.end(), std::back_inserter(input),
               [](char c) { return c != '\n' && c != '\r'; });
  if (input.empty()) {
    return {};
  }
  if (input.size() % 4 != 0) {
    throw std::invalid_argument("secret key \"" + key + "\": data is not base64");
  }
  std::string out(input.size() / 4 * 3, '\0');
  const int written =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(input.data()), static_cast<int>(input.size()));
  if (written < 0) {
    throw std::invalid_argument("secret key \"" + key + "\": data is not base64");
  }
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t size = static_cast<std::size_t>(written);
  for (auto it = input.rbegin(); it != input.rend() && *it == '='; ++it) {
    --size;
  }
  out.resize(size);
  return out;
}

std::filesystem::perms Mode(const json& value, const std::string& what) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > 0777) {
    throw std::invalid_argument(what + ": mode must be an integer in 0..0777 (511)");
  }
  return static_cast<std::filesystem::perms>(value.get<int>());
}

void WriteFile(const std::filesystem::path& path, const std::string& content, std::filesystem::perms mode) {
  std::filesystem::create_directories(path.parent_path());
  // An earlier write may have left the file read-only for its owner.
  std::filesystem::remove(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  std::filesystem::permissions(path, mode, std::filesystem::perm_options::replace);
}

}  // namespace

std::string ExpandVariables(const std::string& input, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(input.size());
  std::size_t i = 0;
  while (i < input.size()) {
    if (input[i] != '$' || i + 1 == input.size()) {
      out += input[i++];
      continue;
    }
    const char next = input[i + 1];
    if (next == '$') {
      out += '$';
      i += 2;
    } else if (next == '(') {
      const std::size_t close = input.find(')', i + 2);
      if (close == std::string::npos) {
        // An unclosed reference is literal text.
        out += "$(";
        i += 2;
        continue;
      }
      const std::string name = input.substr(i + 2, close - i - 2);
      auto it = vars.find(name);
      out += it != vars.end() ? it->second : "$(" + name + ")";
      i = close + 1;
    } else {
      out += '$';
      out += next;
      i += 2;
    }
  }
  return out;
}

EnvObjectNames EnvObjects(const json& container) {
  EnvObjectNames names;
  for (const json& source : container.value("envFrom", json::array())) {
    if (source.contains("secretRef")) {
      names.secrets.insert(source["secretRef"].value("name", std::string()));
    } else if (source.contains("configMapRef")) {
      names.config_maps.insert(source["configMapRef"].value("name", std::string()));
    }
  }
  for (const json& entry : container.value("env", json::array())) {
    const json source = entry.value("valueFrom", json::object());
    if (source.contains("secretKeyRef")) {
      names.secrets.insert(source["secretKeyRef"].value("name", std::string()));
    } else if (source.contains("configMapKeyRef")) {
      names.config_maps.insert(source["configMapKeyRef"].value("name", std::string()));
    }
  }
  return names;
}

std::map<std::string, std::string> KubernetesServiceEnv(const std::string& host, int port) {
  if (host.empty()) {
    return {};
  }
  const std::string number = std::to_string(port);
  const std::string address = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::string url = "tcp://" + address + ":" + number;
  const std::string prefix = "KUBERNETES_PORT_" + number + "_TCP";
  return {{"KUBERNETES_SERVICE_HOST", host},
          {"KUBERNETES_SERVICE_PORT", number},
          {"KUBERNETES_SERVICE_PORT_HTTPS", number},
          {"KUBERNETES_PORT", url},
          {prefix, url},
          {prefix + "_PROTO", "tcp"},
          {prefix + "_PORT", number},
          {prefix + "_ADDR", host}};
}

LaunchSpec ResolveLaunch(const json& pod, const json& container, const ImageMap& images, const LaunchContext& context) {
  LaunchSpec spec;
  spec.program = ProgramFor(container, images);
  const std::map<std::string, std::string> container_env = ContainerEnv(pod, container, context);
  spec.args = Argv(container, container_env);
  std::string hostname = StringAt(pod, "/spec/hostname"_json_pointer);
  if (hostname.empty()) {
    hostname = StringAt(pod, "/metadata/name"_json_pointer);
  }
  spec.env = {{"PATH", kDefaultContainerPath}, {"HOME", "/root"}, {"HOSTNAME", hostname}};
  for (const auto& [name, value] : context.device_env) {
    spec.env[name] = value;
  }
  for (const auto& [name, value] : container_env) {
    spec.env[name] = value;
  }
  spec.mounts = Mounts(container, context);
  spec.working_dir = container.value("workingDir", std::string());
  for (const json& port : container.value("ports", json::array())) {
    if (port.contains("name") && port.contains("containerPort")) {
      spec.named_ports[port["name"].get<std::string>()] = port["containerPort"].get<int>();
    }
  }
  return spec;
}

LaunchSpec MapMountPathsToHost(LaunchSpec spec) {
  std::vector<const Mount*> deepest_first;
  for (const Mount& mount : spec.mounts) {
    deepest_first.push_back(&mount);
  }
  std::stable_sort(deepest_first.begin(), deepest_first.end(),
                   [](const Mount* a, const Mount* b) { return a->path.size() > b->path.size(); });
  auto rewrite = [&](std::string& value) {
    for (const Mount* mount : deepest_first) {
      if (RewritePrefix(value, mount->path, mount->host)) {
        return;
      }
    }
  };
  for (auto& [name, value] : spec.env) {
    rewrite(value);
  }
  for (std::string& arg : spec.args) {
    rewrite(arg);
  }
  rewrite(spec.working_dir);
  return spec;
}

void WriteKeyFiles(const std::map<std::string, std::string>& values, const json& source,
                   std::filesystem::perms default_mode, const std::filesystem::path& dir, const std::string& what) {
  std::filesystem::create_directories(dir);
  if (!source.contains("items") || !source["items"].is_array() || source["items"].empty()) {
    for (const auto& [key, value] : values) {
      if (!IsContainedRelative(key)) {
        throw std::invalid_argument(what + ": key \"" + key + "\" is not a file name");
      }
      WriteFile(dir / key, value, default_mode);
    }
    return;
  }
  const bool optional = source.value("optional", false);
  for (const json& item : source["items"]) {
    const std::string key = item.value("key", std::string());
    const std::string path = item.value("path", std::string());
    auto it = values.find(key);
    if (it == values.end()) {
      if (optional) {
        continue;
      }
      throw std::invalid_argument(what + ": no key \"" + key + "\"");
    }
    if (!IsContainedRelative(path)) {
      throw std::invalid_argument(what + ": item path \"" + path + "\" leaves the volume");
    }
    const std::filesystem::perms mode =
        item.contains("mode") ? Mode(item["mode"], what + " item \"" + key + "\"") : default_mode;
    WriteFile(dir / path, it->second, mode);
  }
}

std::filesystem::perms VolumeDefaultMode(const json& source, const std::string& what) {
  return source.contains("defaultMode") ? Mode(source["defaultMode"], what + " defaultMode")
                                        : static_cast<std::filesystem::perms>(kDefaultSecretMode);
}

std::map<std::string, std::string> SecretValues(const json& secret) {
  std::map<std::string, std::string> values;
  // Named locals: items() refers into its object, which must outlive the loop.
  const json data = secret.value("data", json::object());
  const json string_data = secret.value("stringData", json::object());
  for (const auto& [key, value] : data.items()) {
    values[key] = Base64Decode(value.get<std::string>(), key);
  }
  // The API server merges stringData over data on write; honour it when a caller passes it.
  for (const auto& [key, value] : string_data.items()) {
    values[key] = value.get<std::string>();
  }
  return values;
}

void WriteSecretVolume(const json& secret, const json& volume_source, const std::filesystem::path& dir) {
  const std::string what = "secret \"" + StringAt(secret, "/metadata/name"_json_pointer) + "\"";
  WriteKeyFiles(SecretValues(secret), volume_source, VolumeDefaultMode(volume_source, what), dir, what);
}

}  // namespace ringleader::devcluster::kubelet
