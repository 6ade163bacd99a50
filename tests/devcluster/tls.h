// A throwaway certificate authority and a server certificate signed by it, generated in memory
// at start-up so that clients (kubectl, the operator's client) can verify devcluster over HTTPS.
#pragma once

#include <string>
#include <vector>

namespace ringleader::devcluster {

struct Certificates {
  std::string ca_cert_pem;      // what clients trust (kubeconfig certificate-authority-data)
  std::string server_cert_pem;  // signed by the CA
  std::string server_key_pem;   // PKCS#8, unencrypted
};

// Generates a P-256 CA (valid one year) and a server certificate for `hosts`: entries that parse
// as IPv4/IPv6 addresses become IP SANs, the rest DNS SANs. Throws std::runtime_error naming the
// OpenSSL step that failed.
Certificates GenerateCertificates(const std::vector<std::string>& hosts);

// A P-256 key pair on its own, e.g. for signing service-account tokens.
struct SigningKey {
  std::string private_key_pem;  // PKCS#8, unencrypted
  std::string public_key_pem;   // SubjectPublicKeyInfo
};
SigningKey GenerateSigningKey();

}  // namespace ringleader::devcluster
