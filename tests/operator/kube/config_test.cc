// kubeconfig and in-cluster loading, base64, and token-file rotation.
#include "operator/kube/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>

#include "tests/operator/kube/fake_clock.h"

namespace ringleader::kube {
namespace {

using testing::FakeClock;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("ringleader-kube-config-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path Write(const std::string& name, const std::string& contents) const {
    std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << contents;
    return file;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "hello CA" and "cert", "key" in base64.
constexpr const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: devcluster
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: aGVsbG8gQ0E=
- name: insecure
  cluster:
    server: https://10.0.0.1
    insecure-skip-tls-verify: true
- name: from-file
  cluster:
    server: https://example:443
    certificate-authority: ca.pem
contexts:
- name: dev
  context:
    cluster: devcluster
    user: admin
    namespace: jobs
- name: certs
  context:
    cluster: insecure
    user: cert-user
- name: file-ca
  context:
    cluster: from-file
    user: token-file-user
- name: dangling
  context:
    cluster: nowhere
    user: admin
users:
- name: admin
  user:
    token: s3cret
- name: cert-user
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: token-file-user
  user:
    tokenFile: token.txt
)";

TEST(KubeconfigTest, CurrentContextGivesServerCaDataTokenAndNamespace) {
  TempDir dir;
  FakeClock clock;
  Config config = LoadKubeconfig(dir.Write("config", kKubeconfig), "", clock);
  EXPECT_EQ(config.server, "https://127.0.0.1:6443");
  EXPECT_EQ(config.ca_pem, "hello CA");
  EXPECT_FALSE(config.insecure_skip_tls_verify);
  ASSERT_NE(config.token, nullptr);
  EXPECT_EQ(config.token->Token(), "s3cret");
  EXPECT_EQ(config.ns, "jobs");
}

TEST(KubeconfigTest, NamedContextWithClientCertificateDataAndInsecureCluster) {
  TempDir dir;
  FakeClock clock;
  Config config = LoadKubeconfig(dir.Write("config", kKubeconfig), "certs", clock);
  EXPECT_EQ(config.server, "https://10.0.0.1");
  EXPECT_TRUE(config.insecure_skip_tls_verify);
  EXPECT_EQ(config.client_cert_pem, "cert");
  EXPECT_EQ(config.client_key_pem, "key");
  EXPECT_EQ(config.token, nullptr);
  EXPECT_EQ(config.ns, "default");
}

TEST(KubeconfigTest, RelativeCaFileAndTokenFileResolveBesideTheKubeconfig) {
  TempDir dir;
  FakeClock clock;
  dir.Write("ca.pem", "CA FROM FILE");
  dir.Write("token.txt", "  file-token\n");
  Config config = LoadKubeconfig(dir.Write("config", kKubeconfig), "file-ca", clock);
  EXPECT_EQ(config.ca_pem, "CA FROM FILE");
  ASSERT_NE(config.token, nullptr);
  EXPECT_EQ(config.token->Token(), "file-token");
}

TEST(KubeconfigTest, ContextNamingAnUndefinedClusterIsAnErrorNamingFileAndCluster) {
  TempDir dir;
  const auto path = dir.Write("config", kKubeconfig);
  try {
    LoadKubeconfig(path, "dangling");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "kubeconfig " + path.string() +
                                         ": context \"dangling\" names cluster \"nowhere\", "
                                         "which is not defined");
  }
}

TEST(KubeconfigTest, UnknownContextMissingFileAndMissingCaFileAreErrors) {
  TempDir dir;
  const auto path = dir.Write("config", kKubeconfig);
  EXPECT_THROW(
      {
        try {
          LoadKubeconfig(path, "nope");
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("context \"nope\" is not defined"),
                    std::string::npos);
          throw;
        }
      },
      ConfigError);
  EXPECT_THROW(LoadKubeconfig(dir.path() / "absent"), ConfigError);
  try {
    LoadKubeconfig(path, "file-ca");  // ca.pem not written
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster \"from-file\": certificate-authority"),
              std::string::npos)
        << e.what();
  }
}

TEST(KubeconfigTest, BadBase64AndLoneClientCertificateAreErrors) {
  TempDir dir;
  const auto bad_b64 = dir.Write("bad-b64", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h", certificate-authority-data: "@@@"}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  try {
    LoadKubeconfig(bad_b64);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("certificate-authority-data is not valid base64"),
              std::string::npos)
        << e.what();
  }
  const auto lone_cert = dir.Write("lone-cert", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {client-certificate-data: Y2VydA==}}]
)");
  EXPECT_THROW(LoadKubeconfig(lone_cert), ConfigError);
}

TEST(KubeconfigTest, NoCurrentContextAndExecPluginsAreErrors) {
  TempDir dir;
  EXPECT_THROW(LoadKubeconfig(dir.Write("empty", "clusters: []\n")), ConfigError);
  const auto exec = dir.Write("exec", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {exec: {command: aws}}}]
)");
  EXPECT_THROW(LoadKubeconfig(exec), ConfigError);
}

class InClusterTest : public ::testing::Test {
 protected:
  InClusterOptions Options() {
    InClusterOptions options;
    options.service_account_dir = dir_.path();
    options.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    options.clock = &clock_;
    return options;
  }

  TempDir dir_;
  FakeClock clock_;
  std::map<std::string, std::string> env_{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                          {"KUBERNETES_SERVICE_PORT", "443"}};
};

TEST_F(InClusterTest, ReadsServiceEnvTokenCaAndNamespace) {
  dir_.Write("token", "sa-token\n");
  dir_.Write("ca.crt", "CLUSTER CA");
  dir_.Write("namespace", "training\n");
  Config config = LoadInCluster(Options());
  EXPECT_EQ(config.server, "https://10.96.0.1:443");
  EXPECT_EQ(config.ca_pem, "CLUSTER CA");
  EXPECT_EQ(config.ns, "training");
  EXPECT_EQ(config.token->Token(), "sa-token");
}

TEST_F(InClusterTest, Ipv6HostIsBracketed) {
  env_["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  dir_.Write("token", "t");
  dir_.Write("ca.crt", "CA");
  EXPECT_EQ(LoadInCluster(Options()).server, "https://[fd00::1]:443");
}

TEST_F(InClusterTest, MissingEnvOrTokenIsAnError) {
  dir_.Write("ca.crt", "CA");
  EXPECT_THROW(LoadInCluster(Options()), ConfigError);  // no token file
  dir_.Write("token", "t");
  env_.erase("KUBERNETES_SERVICE_PORT");
  EXPECT_THROW(LoadInCluster(Options()), ConfigError);
}

TEST_F(InClusterTest, RotatedTokenIsReadAtMostOncePerSecond) {
  const auto token_path = dir_.Write("token", "first");
  dir_.Write("ca.crt", "CA");
  Config config = LoadInCluster(Options());
  auto* source = dynamic_cast<FileTokenSource*>(config.token.get());
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->Token(), "first");

  dir_.Write("token", "second-token");
  std::filesystem::last_write_time(
      token_path, std::filesystem::last_write_time(token_path) + std::chrono::seconds(5));
  clock_.Advance(std::chrono::milliseconds(500));
  EXPECT_EQ(source->Token(), "first") << "re-read before a second passed";
  clock_.Advance(std::chrono::milliseconds(500));
  EXPECT_EQ(source->Token(), "second-token");
  EXPECT_EQ(source->reads(), 2);

  clock_.Advance(std::chrono::seconds(3));
  EXPECT_EQ(source->Token(), "second-token");
  EXPECT_EQ(source->reads(), 2) << "unchanged file must not be re-read";
}

TEST_F(InClusterTest, InvalidateAfterUnauthorizedRereadsAtOnce) {
  const auto token_path = dir_.Write("token", "old");
  dir_.Write("ca.crt", "CA");
  Config config = LoadInCluster(Options());
  EXPECT_EQ(config.token->Token(), "old");
  dir_.Write("token", "new");
  std::filesystem::last_write_time(
      token_path, std::filesystem::last_write_time(token_path) + std::chrono::seconds(5));
  EXPECT_EQ(config.token->Token(), "old");
  config.token->Invalidate();
  EXPECT_EQ(config.token->Token(), "new");
}

TEST(FileTokenSourceTest, KeepsLastGoodTokenWhenTheFileVanishes) {
  TempDir dir;
  FakeClock clock;
  const auto path = dir.Write("token", "good");
  FileTokenSource source(path, clock);
  std::filesystem::remove(path);
  clock.Advance(std::chrono::seconds(2));
  EXPECT_EQ(source.Token(), "good");
}

TEST(Base64Test, DecodesStandardAndRejectsGarbage) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_EQ(DecodeBase64("aGVsbG8"), std::nullopt);   // length not a multiple of 4
  EXPECT_EQ(DecodeBase64("aGV*bG8="), std::nullopt);  // bad symbol
  EXPECT_EQ(DecodeBase64("aG=sbG8="), std::nullopt);  // data after padding
}

}  // namespace
}  // namespace ringleader::kube
