// Where the API server is and how to authenticate to it: from a kubeconfig file or from the
// Pod's service account (in-cluster). Errors name the file and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "operator/kube/clock.h"

namespace ringleader::kube {

// A kubeconfig or in-cluster setup that cannot be used; what() names the file and field.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bearer token for each request. Thread-safe.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The token to send now; empty sends no Authorization header.
  virtual std::string Token() = 0;
  // The server answered 401: look at the token's source again before the next Token().
  virtual void Invalidate() = 0;
};

// A fixed token (kubeconfig `token`).
std::shared_ptr<TokenSource> MakeStaticTokenSource(std::string token);

// A token file that is rotated underneath us (projected service-account tokens, kubeconfig
// `tokenFile`). Token() stats the file at most once per `check_interval` and re-reads it when
// its mtime or size changed; Invalidate() forces the check at the next Token(). Surrounding
// whitespace is trimmed. The file must be readable at construction (ConfigError otherwise);
// a later failed read keeps the last good token.
class FileTokenSource final : public TokenSource {
 public:
  FileTokenSource(std::filesystem::path path, Clock& clock,
                  Clock::Duration check_interval = std::chrono::seconds(1));
  std::string Token() override;
  void Invalidate() override;

  // How many times the file was read, for tests of the re-read policy.
  int reads() const;

 private:
  bool ReadLocked();

  const std::filesystem::path path_;
  Clock& clock_;
  const Clock::Duration check_interval_;
  mutable std::mutex mutex_;
  std::string token_;
  std::filesystem::file_time_type mtime_{};
  std::uintmax_t size_ = 0;
  Clock::TimePoint last_check_{};
  bool force_check_ = false;
  int reads_ = 0;
};

struct Config {
  std::string server;                   // "https://10.0.0.1:443", no trailing slash
  std::string ca_pem;                   // empty: the system's roots
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;          // client certificate (chain) for mutual TLS
  std::string client_key_pem;           // its private key; set exactly when client_cert_pem is
  std::shared_ptr<TokenSource> token;   // null: no bearer token
  std::string ns = "default";           // the context's or service account's namespace
};

// The kubeconfig at `path`, for `context` (empty: current-context). Relative file paths in it
// are relative to the kubeconfig's directory. `clock` drives tokenFile re-reads and must
// outlive the returned Config's token source.
Config LoadKubeconfig(const std::filesystem::path& path, std::string_view context = {},
                      Clock& clock = RealClock());

struct InClusterOptions {
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // Reads an environment variable; null uses std::getenv.
  std::function<std::optional<std::string>(const std::string&)> getenv;
  Clock* clock = nullptr;  // null: RealClock()
};

// In-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
// service account's token (re-read as it rotates), ca.crt and namespace beside it.
Config LoadInCluster(const InClusterOptions& options = {});

// Strict standard base64 (whitespace ignored), for the *-data fields. nullopt when invalid.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace ringleader::kube
