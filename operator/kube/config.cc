// kubeconfig and in-cluster loading, and the token sources they produce.
#include "operator/kube/config.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string Trim(std::string text) {
  const char* kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string::npos) {
    return "";
  }
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

// The whole file, or nullopt with `error` set to strerror.
std::optional<std::string> ReadFile(const std::filesystem::path& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) {
    error = "read failed";
    return std::nullopt;
  }
  return out.str();
}

class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(std::string token) : token_(std::move(token)) {}
  std::string Token() override { return token_; }
  void Invalidate() override {}

 private:
  const std::string token_;
};

// Reads kubeconfig fields with errors that say where: "kubeconfig /x: user \"u\": ...".
class KubeconfigReader {
 public:
  KubeconfigReader(std::filesystem::path path, Clock& clock)
      : path_(std::move(path)), clock_(clock) {}

  Config Load(std::string_view context_override) {
    std::string error;
    std::optional<std::string> text = ReadFile(path_, error);
    if (!text) {
      Fail("cannot read: " + error);
    }
    json root;
    try {
      root = yaml::ParseYaml(*text);
    } catch (const yaml::YamlError& e) {
      Fail(e.what());
    }
    if (!root.is_object()) {
      Fail("not a mapping");
    }
    std::string context_name(context_override);
    if (context_name.empty()) {
      context_name = OptionalString(root, "current-context", "");
      if (context_name.empty()) {
        Fail("current-context is not set and no context was asked for");
      }
    }
    const json* context = FindNamed(root, "contexts", "context", context_name);
    if (context == nullptr) {
      Fail("context " + Quote(context_name) + " is not defined");
    }
    const std::string where = "context " + Quote(context_name);
    const std::string cluster_name = OptionalString(*context, "cluster", where);
    if (cluster_name.empty()) {
      Fail(where + " names no cluster");
    }
    const json* cluster = FindNamed(root, "clusters", "cluster", cluster_name);
    if (cluster == nullptr) {
      Fail(where + " names cluster " + Quote(cluster_name) + ", which is not defined");
    }
    Config config;
    config.ns = OptionalString(*context, "namespace", where);
    if (config.ns.empty()) {
      config.ns = "default";
    }
    LoadCluster(cluster_name, *cluster, config);
    const std::string user_name = OptionalString(*context, "user", where);
    if (!user_name.empty()) {
      const json* user = FindNamed(root, "users", "user", user_name);
      if (user == nullptr) {
        Fail(where + " names user " + Quote(user_name) + ", which is not defined");
      }
      LoadUser(user_name, *user, config);
    }
    return config;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw ConfigError("kubeconfig " + path_.string() + ": " + what);
  }

  // The `inner` object of the list entry whose name is `name` under root[list_key].
  const json* FindNamed(const json& root, const char* list_key, const char* inner,
                        const std::string& name) const {
    auto list = root.find(list_key);
    if (list == root.end() || list->is_null()) {
      return nullptr;
    }
    if (!list->is_array()) {
      Fail(std::string(list_key) + " is not a list");
    }
    for (const json& entry : *list) {
      if (entry.is_object() && entry.value("name", json()) == name) {
        auto body = entry.find(inner);
        if (body == entry.end() || body->is_null()) {
          static const json kEmpty = json::object();
          return &kEmpty;
        }
        if (!body->is_object()) {
          Fail(std::string(list_key) + " entry " + Quote(name) + ": " + inner +
               " is not a mapping");
        }
        return &*body;
      }
    }
    return nullptr;
  }

  std::string OptionalString(const json& object, const char* key,
                             const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      return "";
    }
    if (!it->is_string()) {
      Fail((where.empty() ? "" : where + ": ") + key + " is not a string");
    }
    return it->get<std::string>();
  }

  bool OptionalBool(const json& object, const char* key, const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      return false;
    }
    if (!it->is_boolean()) {
      Fail(where + ": " + key + " is not a boolean");
    }
    return it->get<bool>();
  }

  // field-data (base64) or field (a file path), whichever is set; data wins as in client-go.
  std::string DataOrFile(const json& object, const char* data_key, const char* file_key,
                         const std::string& where) const {
    const std::string data = OptionalString(object, data_key, where);
    if (!data.empty()) {
      std::optional<std::string> decoded = DecodeBase64(data);
      if (!decoded) {
        Fail(where + ": " + data_key + " is not valid base64");
      }
      return *decoded;
    }
    const std::string file = OptionalString(object, file_key, where);
    if (file.empty()) {
      return "";
    }
    std::string error;
    std::optional<std::string> contents = ReadFile(Resolve(file), error);
    if (!contents) {
      Fail(where + ": " + file_key + " " + Resolve(file).string() + ": cannot read: " + error);
    }
    return *contents;
  }

  std::filesystem::path Resolve(const std::string& file) const {
    std::filesystem::path p(file);
    return p.is_absolute() ? p : path_.parent_path() / p;
  }

  void LoadCluster(const std::string& name, const json& cluster, Config& config) const {
    const std::string where = "cluster " + Quote(name);
    std::string server = OptionalString(cluster, "server", where);
    if (server.empty()) {
      Fail(where + " has no server");
    }
    while (server.size() > 1 && server.back() == '/') {
      server.pop_back();
    }
    if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
      Fail(where + ": server " + Quote(server) + " is not an http(s) URL");
    }
    config.server = server;
    config.insecure_skip_tls_verify = OptionalBool(cluster, "insecure-skip-tls-verify", where);
    config.ca_pem =
        DataOrFile(cluster, "certificate-authority-data", "certificate-authority", where);
    if (config.insecure_skip_tls_verify && !config.ca_pem.empty()) {
      // client-go refuses this combination as ambiguous; so do we.
      Fail(where + ": insecure-skip-tls-verify and a certificate authority are both set");
    }
  }

  void LoadUser(const std::string& name, const json& user, Config& config) const {
    const std::string where = "user " + Quote(name);
    if (user.contains("exec") || user.contains("auth-provider")) {
      Fail(where + ": exec and auth-provider credential plugins are not supported");
    }
    config.client_cert_pem =
        DataOrFile(user, "client-certificate-data", "client-certificate", where);
    config.client_key_pem = DataOrFile(user, "client-key-data", "client-key", where);
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      Fail(where + ": client-certificate and client-key must be given together");
    }
    const std::string token = OptionalString(user, "token", where);
    const std::string token_file = OptionalString(user, "tokenFile", where);
    if (!token.empty()) {
      config.token = MakeStaticTokenSource(token);
    } else if (!token_file.empty()) {
      try {
        config.token = std::make_shared<FileTokenSource>(Resolve(token_file), clock_);
      } catch (const ConfigError& e) {
        Fail(where + ": tokenFile: " + e.what());
      }
    }
  }

  const std::filesystem::path path_;
  Clock& clock_;
};

}  // namespace

std::shared_ptr<TokenSource> MakeStaticTokenSource(std::string token) {
  return std::make_shared<StaticTokenSource>(std::move(token));
}

FileTokenSource::FileTokenSource(std::filesystem::path path, Clock& clock,
                                 Clock::Duration check_interval)
    : path_(std::move(path)), clock_(clock), check_interval_(check_interval) {
  std::lock_guard lock(mutex_);
  if (!ReadLocked()) {
    throw ConfigError("token file " + path_.string() + ": cannot read: " + std::strerror(errno));
  }
  last_check_ = clock_.Now();
}

bool FileTokenSource::ReadLocked() {
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(path_, ec);
  if (ec) {
    errno = ec.value();
    return false;
  }
  auto size = std::filesystem::file_size(path_, ec);
  if (ec) {
    errno = ec.value();
    return false;
  }
  if (reads_ > 0 && mtime == mtime_ && size == size_) {
    return true;
  }
  std::string error;
  std::optional<std::string> contents = ReadFile(path_, error);
  if (!contents) {
    return false;
  }
  token_ = Trim(std::move(*contents));
  mtime_ = mtime;
  size_ = size;
  ++reads_;
  return true;
}

std::string FileTokenSource::Token() {
  std::lock_guard lock(mutex_);
  const Clock::TimePoint now = clock_.Now();
  if (force_check_ || now - last_check_ >= check_interval_) {
    ReadLocked();  // on failure keep serving the last good token
    last_check_ = now;
    force_check_ = false;
  }
  return token_;
}

void FileTokenSource::Invalidate() {
  std::lock_guard lock(mutex_);
  force_check_ = true;
}

int FileTokenSource::reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

Config LoadKubeconfig(const std::filesystem::path& path, std::string_view context, Clock& clock) {
  return KubeconfigReader(path, clock).Load(context);
}

Config LoadInCluster(const InClusterOptions& options) {
  auto getenv = [&](const std::string& name) -> std::optional<std::string> {
    if (options.getenv) {
      return options.getenv(name);
    }
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  const std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    throw ConfigError(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not "
        "running in a Pod?)");
  }
  Config config;
  const bool ipv6 = host->find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;

  const std::filesystem::path dir = options.service_account_dir;
  Clock& clock = options.clock != nullptr ? *options.clock : RealClock();
  try {
    config.token = std::make_shared<FileTokenSource>(dir / "token", clock);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("in-cluster: ") + e.what());
  }
  std::string error;
  std::optional<std::string> ca = ReadFile(dir / "ca.crt", error);
  if (!ca) {
    throw ConfigError("in-cluster: CA file " + (dir / "ca.crt").string() +
                      ": cannot read: " + error);
  }
  config.ca_pem = *ca;
  if (std::optional<std::string> ns = ReadFile(dir / "namespace", error)) {
    std::string trimmed = Trim(*ns);
    if (!trimmed.empty()) {
      config.ns = trimmed;
    }
  }
  return config;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  static const std::array<int, 256> kValues = [] {
    std::array<int, 256> values{};
    values.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) {
      values[static_cast<unsigned char>(alphabet[i])] = i;
    }
    return values;
  }();
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t buffer = 0;
  int bits = 0;
  int padding = 0;
  std::size_t symbols = 0;
  for (char ch : text) {
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
      continue;
    }
    ++symbols;
    if (ch == '=') {
      ++padding;
      continue;
    }
    const int value = kValues[static_cast<unsigned char>(ch)];
    if (value < 0 || padding > 0) {
      return std::nullopt;  // bad symbol, or data after padding
    }
    buffer = (buffer << 6) | static_cast<std::uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (symbols % 4 != 0 || padding > 2) {
    return std::nullopt;
  }
  return out;
}

}  // namespace ringleader::kube
