// ResolveLaunch table-style (argv, env with the downward API and $(VAR), mounts, errors), the
// unprivileged path rewrite and the Secret volume writer.
#include "tests/devcluster/kubelet/container_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json Pod() {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "demo-0"},
            {"namespace", "team-a"},
            {"uid", "1234-abcd"},
            {"labels", {{"app", "demo"}, {"app.kubernetes.io/name", "trainer"}}},
            {"annotations", {{"note", "hello"}}}}},
          {"spec", {{"nodeName", "node-1"}, {"serviceAccountName", "runner"}}},
          {"status", {{"hostIP", "192.168.1.5"}}}};
}

ImageMap Images() { return ImageMap{.programs = {{"trainer", "/opt/trainer"}, {"busybox:1.36", "/bin/sh"}}}; }

LaunchContext Context() {
  return LaunchContext{
      .pod_ip = "10.244.0.7", .node_name = "", .volume_dirs = {{"data", "/srv/data"}, {"run", "/srv/run"}}};
}

json EnvEntry(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

json FieldEnv(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", path}}}}}};
}

std::string InvalidArgumentText(const json& pod, const json& container) {
  try {
    ResolveLaunch(pod, container, Images(), Context());
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

TEST(ResolveLaunchTest, ImageProgramIsTheExecutableAndCommandTailThenArgsAreArgv) {
  const json container = {{"name", "main"},
                          {"image", "trainer:v2"},
                          {"command", {"python", "-u", "train.py"}},
                          {"args", {"--epochs", "3"}},
                          {"workingDir", "/workspace"}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), Context());
  EXPECT_EQ(spec.program, "/opt/trainer");
  EXPECT_EQ(spec.args, (std::vector<std::string>{"-u", "train.py", "--epochs", "3"}));
  EXPECT_EQ(spec.working_dir, "/workspace");
}

TEST(ResolveLaunchTest, ImageMatchesExactlyOrByRepositoryWithoutTagOrDigest) {
  struct Case {
    std::string image;
    std::string program;
  };
  for (const Case& c : {Case{"busybox:1.36", "/bin/sh"}, Case{"trainer", "/opt/trainer"},
                        Case{"trainer:latest", "/opt/trainer"}, Case{"trainer@sha256:abcd", "/opt/trainer"}}) {
    const json container = {{"name", "main"}, {"image", c.image}};
    EXPECT_EQ(ResolveLaunch(Pod(), container, Images(), Context()).program, c.program) << c.image;
  }
}

TEST(ResolveLaunchTest, UnmappedImageNamesContainerAndImage) {
  const std::string text = InvalidArgumentText(Pod(), {{"name", "side"}, {"image", "registry:5000/busybox"}});
  EXPECT_NE(text.find("\"side\""), std::string::npos) << text;
  EXPECT_NE(text.find("registry:5000/busybox"), std::string::npos) << text;
}

TEST(ResolveLaunchTest, EnvValuesExpandEarlierVariablesOnly) {
  struct Case {
    std::string value;
    std::string expected;
  };
  const Case cases[] = {
      {"$(A)-x", "1-x"},         // defined earlier
      {"$(LATER)", "$(LATER)"},  // defined later: left as written
      {"$(NOPE)", "$(NOPE)"},    // undefined
      {"$$(A)", "$(A)"},         // escaped
      {"a$b", "a$b"},            // a lone $ stays
      {"cost $", "cost $"},      // trailing $
      {"$(A", "$(A"},            // unclosed
      {"$(A)$(B)", "12"},
  };
  for (const Case& c : cases) {
    const json container = {
        {"name", "main"},
        {"image", "trainer"},
        {"env", {EnvEntry("A", "1"), EnvEntry("B", "2"), EnvEntry("X", c.value), EnvEntry("LATER", "late")}}};
    EXPECT_EQ(ResolveLaunch(Pod(), container, Images(), Context()).env.at("X"), c.expected) << c.value;
  }
}

TEST(ResolveLaunchTest, CommandAndArgsExpandFromTheWholeEnv) {
  const json container = {
      {"name", "main"},
      {"image", "trainer"},
      {"command", {"run", "--addr=$(MASTER_ADDR):$(PORT)"}},
      {"args", {"$(POD_IP)", "$$(PORT)", "$(HOSTNAME)"}},
      {"env", {EnvEntry("MASTER_ADDR", "demo-0.demo"), EnvEntry("PORT", "29500"), FieldEnv("POD_IP", "status.podIP")}}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), Context());
  // HOSTNAME is a default, not one of the container's env entries, so it stays unexpanded.
  EXPECT_EQ(spec.args, (std::vector<std::string>{"--addr=demo-0.demo:29500", "10.244.0.7", "$(PORT)", "$(HOSTNAME)"}));
}

TEST(ResolveLaunchTest, DownwardApiFieldRefs) {
  struct Case {
    std::string field_path;
    std::string expected;
  };
  const Case cases[] = {
      {"metadata.name", "demo-0"},
      {"metadata.namespace", "team-a"},
      {"metadata.uid", "1234-abcd"},
      {"metadata.labels['app']", "demo"},
      {"metadata.labels['app.kubernetes.io/name']", "trainer"},
      {"metadata.labels['missing']", ""},
      {"metadata.annotations['note']", "hello"},
      {"spec.nodeName", "node-1"},
      {"spec.serviceAccountName", "runner"},
      {"status.podIP", "10.244.0.7"},
      {"status.hostIP", "192.168.1.5"},
  };
  for (const Case& c : cases) {
    const json container = {{"name", "main"}, {"image", "trainer"}, {"env", {FieldEnv("V", c.field_path)}}};
    EXPECT_EQ(ResolveLaunch(Pod(), container, Images(), Context()).env.at("V"), c.expected) << c.field_path;
  }
}

TEST(ResolveLaunchTest, ContextNodeNameAndHostIpWinOverThePod) {
  LaunchContext context = Context();
  context.node_name = "node-2";
  context.host_ip = "192.168.1.9";
  const json container = {{"name", "main"},
                          {"image", "trainer"},
                          {"env", {FieldEnv("NODE", "spec.nodeName"), FieldEnv("HOST", "status.hostIP")}}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), context);
  EXPECT_EQ(spec.env.at("NODE"), "node-2");
  EXPECT_EQ(spec.env.at("HOST"), "192.168.1.9");
}

TEST(ResolveLaunchTest, UnsupportedEnvSourcesNameTheVariable) {
  const json resource_ref = {{"name", "CPUS"}, {"valueFrom", {{"resourceFieldRef", {{"resource", "limits.cpu"}}}}}};
  EXPECT_NE(InvalidArgumentText(Pod(), {{"name", "main"}, {"image", "trainer"}, {"env", {resource_ref}}}).find("CPUS"),
            std::string::npos);
  const std::string bad_field =
      InvalidArgumentText(Pod(), {{"name", "main"}, {"image", "trainer"}, {"env", {FieldEnv("CPU", "spec.cpu")}}});
  EXPECT_NE(bad_field.find("CPU"), std::string::npos) << bad_field;
  EXPECT_NE(bad_field.find("spec.cpu"), std::string::npos) << bad_field;
}

// The preflight container copies the trainers' envFrom: the kubelet resolves it before `env`.
TEST(ResolveLaunchTest, SecretsAndConfigMapsFeedEnvFromAndKeyRefsAndMissingOnesAreNamed) {
  LaunchContext context = Context();
  context.secrets["creds"] = {{"token", "s3cr3t"}};
  context.config_maps["nccl"] = {{"NCCL_DEBUG", "INFO"}, {"LEVEL", "from-config"}};
  const json container = json::parse(R"({"name": "main", "image": "trainer",
      "envFrom": [{"configMapRef": {"name": "nccl"}}, {"secretRef": {"name": "creds"}, "prefix": "S_"},
                  {"configMapRef": {"name": "absent", "optional": true}}],
      "env": [{"name": "LEVEL", "value": "own"},
              {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
              {"name": "DEBUG", "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "NCCL_DEBUG"}}},
              {"name": "MAYBE", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": true}}}]})");
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), context);
  EXPECT_EQ(spec.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(spec.env.at("S_token"), "s3cr3t");
  EXPECT_EQ(spec.env.at("LEVEL"), "own");
  EXPECT_EQ(spec.env.at("TOKEN"), "s3cr3t");
  EXPECT_EQ(spec.env.at("DEBUG"), "INFO");
  EXPECT_EQ(spec.env.count("MAYBE"), 0u);
  const EnvObjectNames names = EnvObjects(container);
  EXPECT_EQ(names.secrets, (std::set<std::string>{"creds"}));
  EXPECT_EQ(names.config_maps, (std::set<std::string>{"absent", "nccl"}));

  const json missing_key = json::parse(R"({"name": "main", "image": "trainer",
      "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]})");
  EXPECT_NE(InvalidArgumentText(Pod(), missing_key).find("secret \"creds\" not found"), std::string::npos);
  std::string text;
  try {
    ResolveLaunch(Pod(), missing_key, Images(), context);
  } catch (const std::invalid_argument& e) {
    text = e.what();
  }
  EXPECT_NE(text.find("couldn't find key k in Secret "), std::string::npos) << text;
  const json missing_object =
      json::parse(R"({"name": "main", "image": "trainer", "envFrom": [{"configMapRef": {"name": "c"}}]})");
  EXPECT_NE(InvalidArgumentText(Pod(), missing_object).find("configmap \"c\" not found"), std::string::npos);
}

TEST(ResolveLaunchTest, DefaultsAndHostnameAndLaterEntriesWin) {
  const json container = {{"name", "main"}, {"image", "trainer"}};
  const LaunchSpec plain = ResolveLaunch(Pod(), container, Images(), Context());
  EXPECT_EQ(plain.env, (std::map<std::string, std::string>{
                           {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                           {"HOME", "/root"},
                           {"HOSTNAME", "demo-0"}}));

  json pod = Pod();
  pod["spec"]["hostname"] = "rank-0";
  const json overriding = {{"name", "main"},
                           {"image", "trainer"},
                           {"env", {EnvEntry("PATH", "/opt/bin"), EnvEntry("X", "1"), EnvEntry("X", "2")}}};
  const LaunchSpec spec = ResolveLaunch(pod, overriding, Images(), Context());
  EXPECT_EQ(spec.env.at("HOSTNAME"), "rank-0");
  EXPECT_EQ(spec.env.at("PATH"), "/opt/bin");
  EXPECT_EQ(spec.env.at("X"), "2");
}

// The `kubernetes` Service's variables, which in-cluster clients read, come before the
// container's own env, which may override them and whose $(VAR) sees them, as in the kubelet.
TEST(ResolveLaunchTest, KubernetesServiceEnvComesBeforeTheContainersOwn) {
  LaunchContext context = Context();
  context.service_env = KubernetesServiceEnv("10.200.0.2", 41234);
  const json container = {{"name", "main"},
                          {"image", "trainer"},
                          {"args", {"--server=https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}},
                          {"env", {EnvEntry("KUBERNETES_SERVICE_PORT_HTTPS", "443")}}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), context);
  EXPECT_EQ(spec.env.at("KUBERNETES_SERVICE_HOST"), "10.200.0.2");
  EXPECT_EQ(spec.env.at("KUBERNETES_SERVICE_PORT"), "41234");
  EXPECT_EQ(spec.env.at("KUBERNETES_SERVICE_PORT_HTTPS"), "443");
  EXPECT_EQ(spec.env.at("KUBERNETES_PORT"), "tcp://10.200.0.2:41234");
  EXPECT_EQ(spec.env.at("KUBERNETES_PORT_41234_TCP_ADDR"), "10.200.0.2");
  EXPECT_EQ(spec.args, (std::vector<std::string>{"--server=https://10.200.0.2:41234"}));
  EXPECT_TRUE(KubernetesServiceEnv("", 443).empty());
}

// The device plugin's env comes before the container's own, as the kubelet orders them, and
// $(VAR) does not see it.
TEST(ResolveLaunchTest, DeviceEnvIsSetAndTheContainersOwnEnvMayOverrideIt) {
  LaunchContext context = Context();
  context.device_env = {{"NVIDIA_VISIBLE_DEVICES", "2,3"}, {"RINGLEADER_DEVCLUSTER_DEVICES_RDMA_X", "1"}};
  const json container = {{"name", "main"},
                          {"image", "trainer"},
                          {"env", {EnvEntry("RINGLEADER_DEVCLUSTER_DEVICES_RDMA_X", "7"),
                                   EnvEntry("SEEN", "$(NVIDIA_VISIBLE_DEVICES)")}}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), context);
  EXPECT_EQ(spec.env.at("NVIDIA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(spec.env.at("RINGLEADER_DEVCLUSTER_DEVICES_RDMA_X"), "7");
  EXPECT_EQ(spec.env.at("SEEN"), "$(NVIDIA_VISIBLE_DEVICES)");
}

TEST(ResolveLaunchTest, MountsComeFromVolumeDirsWithSubPathAndReadOnly) {
  const json container = {{"name", "main"},
                          {"image", "trainer"},
                          {"ports", {{{"name", "metrics"}, {"containerPort", 9090}}, {{"containerPort", 80}}}},
                          {"volumeMounts",
                           {{{"name", "data"}, {"mountPath", "/data"}},
                            {{"name", "run"}, {"mountPath", "/var/run/rl"}, {"readOnly", true}},
                            {{"name", "data"}, {"mountPath", "/etc/conf"}, {"subPath", "conf/app"}}}}};
  const LaunchSpec spec = ResolveLaunch(Pod(), container, Images(), Context());
  ASSERT_EQ(spec.mounts.size(), 3u);
  EXPECT_EQ(spec.mounts[0].host, "/srv/data");
  EXPECT_EQ(spec.mounts[0].path, "/data");
  EXPECT_FALSE(spec.mounts[0].read_only);
  EXPECT_EQ(spec.mounts[1].host, "/srv/run");
  EXPECT_TRUE(spec.mounts[1].read_only);
  EXPECT_EQ(spec.mounts[2].host, "/srv/data/conf/app");
  EXPECT_EQ(spec.named_ports, (std::map<std::string, int>{{"metrics", 9090}}));
}

TEST(ResolveLaunchTest, MissingVolumeDirOrEscapingSubPathIsAnError) {
  const json missing = {
      {"name", "main"}, {"image", "trainer"}, {"volumeMounts", {{{"name", "cache"}, {"mountPath", "/c"}}}}};
  EXPECT_NE(InvalidArgumentText(Pod(), missing).find("\"cache\""), std::string::npos);
  const json escaping = {{"name", "main"},
                         {"image", "trainer"},
                         {"volumeMounts", {{{"name", "data"}, {"mountPath", "/c"}, {"subPath", "../etc"}}}}};
  EXPECT_NE(InvalidArgumentText(Pod(), escaping).find("subPath"), std::string::npos);
}

TEST(MapMountPathsToHostTest, RewritesValuesAtOrBelowAMountPathDeepestFirst) {
  LaunchSpec spec;
  spec.mounts = {Mount{.host = "/h/run", .path = "/var/run/rl"},
                 Mount{.host = "/h/token", .path = "/var/run/rl/token"}};
  spec.env = {{"A", "/var/run/rl/contract.json"},
              {"B", "/var/run/rl/token/t"},
              {"C", "/var/run/rlx"},
              {"D", "x=/var/run/rl"},
              {"E", "/var/run/rl"}};
  spec.args = {"/var/run/rl/token", "--file=/var/run/rl/a"};
  spec.working_dir = "/var/run/rl";
  const LaunchSpec mapped = MapMountPathsToHost(spec);
  EXPECT_EQ(mapped.env.at("A"), "/h/run/contract.json");
  EXPECT_EQ(mapped.env.at("B"), "/h/token/t");
  EXPECT_EQ(mapped.env.at("C"), "/var/run/rlx");   // a sibling, not below
  EXPECT_EQ(mapped.env.at("D"), "x=/var/run/rl");  // only a leading path is rewritten
  EXPECT_EQ(mapped.env.at("E"), "/h/run");
  EXPECT_EQ(mapped.args, (std::vector<std::string>{"/h/token", "--file=/var/run/rl/a"}));
  EXPECT_EQ(mapped.working_dir, "/h/run");
}

class SecretVolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("rl-secret-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string Read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }
  static int Mode(const std::filesystem::path& path) {
    return static_cast<int>(std::filesystem::status(path).permissions() & std::filesystem::perms::mask);
  }

  std::filesystem::path dir_;
};

json Secret() {
  // "token-value" and "a\0b" (binary) in base64, plus one stringData key.
  return {{"metadata", {{"name", "creds"}}},
          {"data", {{"token", "dG9rZW4tdmFsdWU="}, {"bin", "YQBi"}, {"one", "eA=="}}},
          {"stringData", {{"plain", "text"}}}};
}

TEST_F(SecretVolumeTest, WritesEveryKeyDecodedWithDefaultMode) {
  WriteSecretVolume(Secret(), {{"secretName", "creds"}}, dir_);
  EXPECT_EQ(Read(dir_ / "token"), "token-value");
  EXPECT_EQ(Read(dir_ / "bin"), std::string("a\0b", 3));
  EXPECT_EQ(Read(dir_ / "one"), "x");
  EXPECT_EQ(Read(dir_ / "plain"), "text");
  EXPECT_EQ(Mode(dir_ / "token"), 0644);
}

TEST_F(SecretVolumeTest, DefaultModeIsDecimalPermissionBits) {
  WriteSecretVolume(Secret(), {{"secretName", "creds"}, {"defaultMode", 288}}, dir_);
  EXPECT_EQ(Mode(dir_ / "token"), 0440);
}

TEST_F(SecretVolumeTest, ItemsSelectKeysPathsAndModes) {
  const json source = {
      {"secretName", "creds"},
      {"defaultMode", 256},
      {"items", {{{"key", "token"}, {"path", "auth/token"}, {"mode", 384}}, {{"key", "plain"}, {"path", "p"}}}}};
  WriteSecretVolume(Secret(), source, dir_);
  EXPECT_EQ(Read(dir_ / "auth/token"), "token-value");
  EXPECT_EQ(Mode(dir_ / "auth/token"), 0600);
  EXPECT_EQ(Mode(dir_ / "p"), 0400);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "bin"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "token"));
}

TEST_F(SecretVolumeTest, BadInputIsRefused) {
  EXPECT_THROW(WriteSecretVolume(Secret(), {{"items", {{{"key", "nope"}, {"path", "x"}}}}}, dir_),
               std::invalid_argument);
  EXPECT_NO_THROW(
      WriteSecretVolume(Secret(), {{"optional", true}, {"items", {{{"key", "nope"}, {"path", "x"}}}}}, dir_));
  EXPECT_THROW(WriteSecretVolume(Secret(), {{"items", {{{"key", "token"}, {"path", "../x"}}}}}, dir_),
               std::invalid_argument);
  EXPECT_THROW(WriteSecretVolume(Secret(), {{"items", {{{"key", "token"}, {"path", "/etc/x"}}}}}, dir_),
               std::invalid_argument);
  EXPECT_THROW(WriteSecretVolume(Secret(), {{"defaultMode", 4096}}, dir_), std::invalid_argument);
  EXPECT_THROW(WriteSecretVolume({{"data", {{"k", "not base64!"}}}}, json::object(), dir_), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
