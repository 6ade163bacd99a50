// Certificate generation with OpenSSL 3: EC keys, X.509v3 extensions that Go's verifier accepts.
#include "tests/devcluster/tls.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>

#include <functional>
#include <memory>
#include <stdexcept>

namespace ringleader::devcluster {
namespace {

struct PkeyFree { void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); } };
struct X509Free { void operator()(X509* p) const { X509_free(p); } };
struct BioFree { void operator()(BIO* p) const { BIO_free(p); } };
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Bio = std::unique_ptr<BIO, BioFree>;

[[noreturn]] void Fail(const std::string& step) {
  char buf[256] = {0};
  unsigned long code = ERR_get_error();
  if (code != 0) {
    ERR_error_string_n(code, buf, sizeof(buf));
  }
  throw std::runtime_error("devcluster TLS: " + step + " failed" + (code != 0 ? ": " + std::string(buf) : ""));
}

Pkey NewKey() {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr);
  if (ctx == nullptr) {
    Fail("EVP_PKEY_CTX_new_id");
  }
  EVP_PKEY* key = nullptr;
  bool ok = EVP_PKEY_keygen_init(ctx) > 0 &&
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) > 0 &&
            EVP_PKEY_keygen(ctx, &key) > 0;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    Fail("EC key generation");
  }
  return Pkey(key);
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    Fail("extension " + value);
  }
  int rc = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (rc != 1) {
    Fail("X509_add_ext");
  }
}

Cert NewCert(const std::string& common_name, EVP_PKEY* key) {
  Cert cert(X509_new());
  if (!cert) {
    Fail("X509_new");
  }
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) {
    Fail("RAND_bytes");
  }
  serial[0] &= 0x7f;  // a positive serial, as RFC 5280 asks
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) == nullptr) {
    BN_free(bn);
    Fail("serial number");
  }
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string org = "ringleader devcluster";
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org.c_str()), -1,
                             -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
  if (X509_set_pubkey(cert.get(), key) != 1) {
    Fail("X509_set_pubkey");
  }
  return cert;
}

std::string ToPem(const std::function<int(BIO*)>& write) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) {
    Fail("PEM encoding");
  }
  std::string out(BIO_ctrl_pending(bio.get()), '\0');
  if (!out.empty() && BIO_read(bio.get(), out.data(), static_cast<int>(out.size())) != static_cast<int>(out.size())) {
    Fail("BIO_read");
  }
  return out;
}

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Certificates GenerateCertificates(const std::vector<std::string>& hosts) {
  Pkey ca_key = NewKey();
  Cert ca = NewCert("devcluster-ca", ca_key.get());
  X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get()));
  AddExtension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  AddExtension(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
  if (X509_sign(ca.get(), ca_key.get(), EVP_sha256()) == 0) {
    Fail("signing the CA");
  }

  Pkey server_key = NewKey();
  Cert server = NewCert("devcluster", server_key.get());
  X509_set_issuer_name(server.get(), X509_get_subject_name(ca.get()));
  std::string sans;
  for (const std::string& host : hosts) {
    sans += (sans.empty() ? "" : ",") + std::string(IsIp(host) ? "IP:" : "DNS:") + host;
  }
  AddExtension(server.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(server.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExtension(server.get(), ca.get(), NID_ext_key_usage, "serverAuth");
  AddExtension(server.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
  if (!sans.empty()) {
    AddExtension(server.get(), ca.get(), NID_subject_alt_name, sans);
  }
  if (X509_sign(server.get(), ca_key.get(), EVP_sha256()) == 0) {
    Fail("signing the server certificate");
  }

  Certificates out;
  out.ca_cert_pem = ToPem([&](BIO* b) { return PEM_write_bio_X509(b, ca.get()); });
  out.server_cert_pem = ToPem([&](BIO* b) { return PEM_write_bio_X509(b, server.get()); });
  out.server_key_pem = ToPem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, server_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  return out;
}

SigningKey GenerateSigningKey() {
  Pkey key = NewKey();
  SigningKey out;
  out.private_key_pem = ToPem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  out.public_key_pem = ToPem([&](BIO* b) { return PEM_write_bio_PUBKEY(b, key.get()); });
  return out;
}

}  // namespace ringleader::devcluster
