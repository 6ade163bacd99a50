// Kubeconfig rendering and the client files in the data dir.
#include "tests/devcluster/kubeconfig.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace ringleader::devcluster {
namespace {

std::string Base64(const std::string& data) {
  std::vector<unsigned char> out(4 * ((data.size() + 2) / 3) + 1);
  int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  return std::string(out.begin(), out.begin() + n);
}

}  // namespace

void WritePrivateFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    throw std::runtime_error("devcluster: cannot write " + path.string());
  }
  ::chmod(path.c_str(), 0600);
}

std::string KubeconfigYaml(const std::string& server_url, const std::string& ca_pem, const std::string& token) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: devcluster\n"
         "  cluster:\n"
         "    server: " + server_url + "\n"
         "    certificate-authority-data: " + Base64(ca_pem) + "\n"
         "users:\n"
         "- name: devcluster\n"
         "  user:\n"
         "    token: " + token + "\n"
         "contexts:\n"
         "- name: devcluster\n"
         "  context:\n"
         "    cluster: devcluster\n"
         "    user: devcluster\n"
         "    namespace: default\n"
         "current-context: devcluster\n"
         "preferences: {}\n";
}

std::string WriteClientFiles(const std::string& dir, const std::string& server_url, const std::string& ca_pem,
                             const std::string& token) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("devcluster: cannot create data dir " + dir + ": " + ec.message());
  }
  std::filesystem::path base(dir);
  WritePrivateFile(base / "ca.crt", ca_pem);
  WritePrivateFile(base / "token", token + "\n");
  WritePrivateFile(base / "kubeconfig", KubeconfigYaml(server_url, ca_pem, token));
  return (base / "kubeconfig").string();
}

}  // namespace ringleader::devcluster
