// The files a devcluster leaves for its clients: kubeconfig, ca.crt and token in the data dir.
#pragma once

#include <filesystem>
#include <string>

namespace ringleader::devcluster {

// A kubeconfig with one cluster, user and context, all named "devcluster", that is the current
// context: server URL, the CA as certificate-authority-data (base64), and the bearer token.
std::string KubeconfigYaml(const std::string& server_url, const std::string& ca_pem, const std::string& token);

// Writes `text` to `path` readable by its owner only (keys, tokens, kubeconfigs). Throws
// std::runtime_error naming the file it could not write.
void WritePrivateFile(const std::filesystem::path& path, const std::string& text);

// Writes DIR/kubeconfig, DIR/ca.crt and DIR/token (mode 0600), creating DIR if needed, and
// returns the kubeconfig's path. Throws std::runtime_error naming the file it could not write.
std::string WriteClientFiles(const std::string& dir, const std::string& server_url, const std::string& ca_pem,
                             const std::string& token);

}  // namespace ringleader::devcluster
