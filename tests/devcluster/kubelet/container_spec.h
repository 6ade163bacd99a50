// How devcluster's kubelet launches one container of a Pod as a local process: the program, argv,
// env and mounts computed from core/v1 JSON (pure), and the writer of key-file volumes (Secret,
// ConfigMap, projected).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringleader::devcluster::kubelet {

// Docker's default PATH, which images without their own ENV PATH get.
inline constexpr const char* kDefaultContainerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Container images stand for local programs. A container's image matches a key exactly
// ("trainer:v2") or by its repository without tag and digest ("trainer").
struct ImageMap {
  std::map<std::string, std::filesystem::path> programs;
};

// What the kubelet knows about the Pod's placement.
struct LaunchContext {
  std::string pod_ip;                                        // status.podIP
  std::string node_name;                                     // spec.nodeName; "" = the Pod's spec.nodeName
  std::map<std::string, std::filesystem::path> volume_dirs;  // volume name -> host dir
  // status.hostIP; "" = the Pod's status.hostIP. Defaulted so designated initializers may omit it.
  std::string host_ip = {};
  // What the runtime adds to this container's environment for its devices (DeviceEnvironment):
  // set before the container's own `env`, which may override it, and not seen by $(VAR).
  std::map<std::string, std::string> device_env = {};
  // The Service environment the kubelet gives every container (KubernetesServiceEnv): before
  // the container's own `env`, which may override it and whose $(VAR) references see it.
  std::map<std::string, std::string> service_env = {};
  // The keys and values of the Secrets and ConfigMaps that `env` and `envFrom` refer to, by
  // object name (EnvObjects lists them); a name absent here is an object that does not exist.
  std::map<std::string, std::map<std::string, std::string>> secrets = {};
  std::map<std::string, std::map<std::string, std::string>> config_maps = {};
};

// What the kubelet puts in every container's environment for the `kubernetes` Service, always
// (enableServiceLinks only governs the other Services'): KUBERNETES_SERVICE_HOST,
// KUBERNETES_SERVICE_PORT, KUBERNETES_SERVICE_PORT_HTTPS and KUBERNETES_PORT* naming host:port,
// which client libraries' in-cluster configuration reads. Empty when host is "".
std::map<std::string, std::string> KubernetesServiceEnv(const std::string& host, int port);

// The Secrets and ConfigMaps a container's env (valueFrom.secretKeyRef, .configMapKeyRef) and
// envFrom (secretRef, configMapRef) name: the kubelet reads them before the container starts.
struct EnvObjectNames {
  std::set<std::string> secrets;
  std::set<std::string> config_maps;
};
EnvObjectNames EnvObjects(const nlohmann::json& container);

struct Mount {
  std::filesystem::path host;  // a directory, or a file when the mount uses a subPath to one
  std::string path;            // mountPath inside the container
  bool read_only = false;
};

struct LaunchSpec {
  std::filesystem::path program;                // executed as argv[0]
  std::vector<std::string> args;                // argv[1..]
  std::map<std::string, std::string> env;       // the process's whole environment
  std::vector<Mount> mounts;                    // in volumeMounts order
  std::string working_dir;                      // "" = the launcher's working directory
  std::map<std::string, int> named_ports = {};  // ports[].name -> containerPort, for probes
};

// The launch of `container` (one entry of the Pod's containers or initContainers).
//  - program: the image's program, always. Kubernetes' `command` replaces the image's entrypoint;
//    here the program stands for the whole image, so command[0] is dropped and argv[1..] is
//    command[1..] followed by `args`, each with $(VAR) expanded from the container's `env`.
//  - env: PATH, HOME=/root and HOSTNAME (spec.hostname, else metadata.name), context.device_env
//    (NVIDIA_VISIBLE_DEVICES and the like, as the device plugin's Allocate answer),
//    context.service_env, then the `env` list
//    in order (a later entry replaces an earlier one of the same name): `value` with $(VAR)
//    expanded from earlier entries, or valueFrom.fieldRef (metadata.name, .namespace, .uid,
//    .labels['k'], .annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP,
//    status.hostIP), valueFrom.secretKeyRef or .configMapKeyRef (from context.secrets and
//    .config_maps). `envFrom` (configMapRef, secretRef, with prefix) comes before `env`, as the
//    kubelet orders them. A missing object or key that is not `optional` throws in the kubelet's
//    words (`secret "x" not found`, `couldn't find key k in Secret ns/x`); other valueFrom sources
//    are not supported.
//  - mounts: volumeMounts through context.volume_dirs, with subPath and readOnly.
// Throws std::invalid_argument naming the container and what it cannot launch: an unmapped
// image, an unsupported env source (naming the variable), a volume without a dir.
LaunchSpec ResolveLaunch(const nlohmann::json& pod, const nlohmann::json& container, const ImageMap& images,
                         const LaunchContext& context);

// Kubernetes' $(VAR) expansion: $(NAME) becomes vars[NAME] when defined and stays as written
// otherwise; $$ becomes $; any other $ is kept.
std::string ExpandVariables(const std::string& input, const std::map<std::string, std::string>& vars);

// The unprivileged launch: without a mount namespace the container sees host paths, so each
// env value, arg and the working dir that is a mount's path or lies below it is rewritten to the
// host path (the deepest mount wins). Mounts are kept for the record.
LaunchSpec MapMountPathsToHost(LaunchSpec spec);

// Writes `values` (key -> content) as files into `dir` (created if missing), as the kubelet
// writes a Secret's or a ConfigMap's keys: every key, or only `source.items` (key -> relative
// path, optional mode) when listed. Modes are permission bits as JSON numbers (288 = 0440); an
// item's `mode` beats `default_mode`. `what` names the source in errors ("secret \"x\""). Throws
// std::invalid_argument for a missing item key (unless source.optional), a mode outside 0..0777 or
// a path that is absolute or climbs out with "..".
void WriteKeyFiles(const std::map<std::string, std::string>& values, const nlohmann::json& source,
                   std::filesystem::perms default_mode, const std::filesystem::path& dir, const std::string& what);

// A volume source's defaultMode, 0644 (420) when absent. Throws std::invalid_argument naming `what`.
std::filesystem::perms VolumeDefaultMode(const nlohmann::json& source, const std::string& what);

// A Secret's keys and contents: `data` (base64) with `stringData` over it. Throws
// std::invalid_argument for bad base64.
std::map<std::string, std::string> SecretValues(const nlohmann::json& secret);

// Writes a Secret volume's files into `dir`: SecretValues through WriteKeyFiles, with the volume's
// defaultMode (420 = 0644 when absent).
void WriteSecretVolume(const nlohmann::json& secret, const nlohmann::json& volume_source,
                       const std::filesystem::path& dir);

}  // namespace ringleader::devcluster::kubelet
