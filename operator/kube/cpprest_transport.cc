// The Transport on cpprestsdk's asio client: TLS set up through the ssl-context callback,
// streaming bodies read as they arrive.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cpprest/http_client.h>

#include <cerrno>
#include <vector>

#include "operator/kube/transport.h"

namespace ringleader::kube {
namespace {

namespace http = web::http;
using http::client::http_client;
using http::client::http_client_config;

// Counts the PEM certificates in `pem`; 0 when there are none or one is malformed.
int CountCertificates(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                &BIO_free);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();  // the loop always ends with a "no start line" error
  return count;
}

bool HasPrivateKey(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                &BIO_free);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  if (key == nullptr) {
    return false;
  }
  EVP_PKEY_free(key);
  return true;
}

web::uri ParseServer(const std::string& server) {
  try {
    web::uri uri(server);
    if (uri.scheme() != "https" && uri.scheme() != "http") {
      throw ConfigError("server " + server + ": not an http(s) URL");
    }
    return uri;
  } catch (const web::uri_exception& e) {
    throw ConfigError("server " + server + ": " + e.what());
  }
}

TransportError MapException(const std::exception& e) {
  if (const auto* h = dynamic_cast<const http::http_exception*>(&e)) {
    const int code = h->error_code().value();
    const std::string what = h->what();
    if (what.find("SSL") != std::string::npos || what.find("certificate") != std::string::npos) {
      return TransportError(TransportError::Kind::kTls, "TLS: " + what);
    }
    // cpprestsdk reports a refused connect as EHOSTUNREACH.
    if (code == ECONNREFUSED || code == EHOSTUNREACH) {
      return TransportError(TransportError::Kind::kRefused, "connection refused: " + what);
    }
    if (code == ETIMEDOUT) {
      return TransportError(TransportError::Kind::kTimeout, "timed out: " + what);
    }
    return TransportError(TransportError::Kind::kConnection, what);
  }
  if (dynamic_cast<const pplx::task_canceled*>(&e) != nullptr) {
    return TransportError(TransportError::Kind::kCancelled, "cancelled");
  }
  return TransportError(TransportError::Kind::kConnection, e.what());
}

class CpprestTransport final : public Transport {
 public:
  CpprestTransport(const Config& config, const TransportOptions& options)
      : options_(options),
        base_uri_(ParseServer(config.server)),
        client_(base_uri_, MakeClientConfig(config, options.request_timeout)),
        stream_config_(MakeClientConfig(config, options.stream_idle_timeout)) {}

  HttpResponse Send(const HttpRequest& request) override {
    try {
      http::http_response response = client_.request(ToCpprest(request)).get();
      HttpResponse out;
      out.status = response.status_code();
      out.retry_after = Header(response, "Retry-After");
      out.body = response.extract_utf8string(true).get();
      return out;
    } catch (const std::exception& e) {
      throw MapException(e);
    }
  }

  StreamResult Stream(const HttpRequest& request,
                      const std::function<void(std::string_view)>& on_data,
                      std::stop_token stop) override {
    // A client per stream: its timeout is the long idle timeout, and a cancelled stream's
    // connection is not put back into a pool others use.
    http_client client(base_uri_, stream_config_);
    pplx::cancellation_token_source cancel;
    std::stop_callback on_stop(stop, [&cancel] { cancel.cancel(); });
    StreamResult result;
    http::http_response response;
    try {
      response = client.request(ToCpprest(request), cancel.get_token()).get();
      result.response.status = response.status_code();
      result.response.retry_after = Header(response, "Retry-After");
      if (result.response.status < 200 || result.response.status > 299) {
        result.response.body = response.extract_utf8string(true).get();
        return result;
      }
    } catch (const std::exception& e) {
      throw MapException(e);
    }
    auto body = response.body().streambuf();
    std::vector<std::uint8_t> buffer(64 * 1024);
    while (!stop.stop_requested()) {
      std::size_t n = 0;
      try {
        // getn waits for the whole count, so wait for one byte, then take what else is there.
        n = body.getn(buffer.data(), 1).get();
        if (n == 0) {
          return result;  // clean end of body
        }
        const std::size_t more = std::min(body.in_avail(), buffer.size() - 1);
        if (more > 0) {
          n += body.getn(buffer.data() + 1, more).get();
        }
      } catch (const std::exception&) {
        result.cut = !stop.stop_requested();
        return result;
      }
      on_data(std::string_view(reinterpret_cast<const char*>(buffer.data()), n));
    }
    return result;
  }

 private:
  static http_client_config MakeClientConfig(const Config& config,
                                             std::chrono::seconds timeout) {
    http_client_config client_config;
    client_config.set_timeout(timeout);
    client_config.set_validate_certificates(!config.insecure_skip_tls_verify);
    if (!config.ca_pem.empty() && CountCertificates(config.ca_pem) == 0) {
      throw ConfigError("certificate authority: no PEM certificate found");
    }
    if (!config.client_cert_pem.empty()) {
      if (CountCertificates(config.client_cert_pem) == 0) {
        throw ConfigError("client certificate: no PEM certificate found");
      }
      if (!HasPrivateKey(config.client_key_pem)) {
        throw ConfigError("client key: no PEM private key found");
      }
    }
    client_config.set_ssl_context_callback(
        [ca = config.ca_pem, cert = config.client_cert_pem, key = config.client_key_pem,
         insecure = config.insecure_skip_tls_verify](boost::asio::ssl::context& context) {
          context.set_options(boost::asio::ssl::context::no_sslv2 |
                              boost::asio::ssl::context::no_sslv3 |
                              boost::asio::ssl::context::no_tlsv1 |
                              boost::asio::ssl::context::no_tlsv1_1);
          if (!ca.empty() && !insecure) {
            // Trust only the configured CA, not the system roots cpprestsdk loaded.
            SSL_CTX_set_cert_store(context.native_handle(), X509_STORE_new());
            context.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
          }
          if (!cert.empty()) {
            context.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()));
            context.use_private_key(boost::asio::buffer(key.data(), key.size()),
                                    boost::asio::ssl::context::pem);
          }
        });
    return client_config;
  }

  http::http_request ToCpprest(const HttpRequest& request) const {
    http::http_request out{http::method(request.method)};
    out.set_request_uri(web::uri(request.target));
    out.headers().add("Accept", "application/json");
    out.headers().add("User-Agent", options_.user_agent);
    if (!request.bearer_token.empty()) {
      out.headers().add("Authorization", "Bearer " + request.bearer_token);
    }
    if (!request.body.empty() || !request.content_type.empty()) {
      // The byte-vector body, not the string one: cpprestsdk's string overload reads a char
      // buffer through a uint8_t stream type, which UBSan rightly reports.
      out.headers().set_content_type(request.content_type);
      out.set_body(std::vector<unsigned char>(request.body.begin(), request.body.end()));
    }
    return out;
  }

  static std::string Header(const http::http_response& response, const char* name) {
    auto it = response.headers().find(name);
    return it == response.headers().end() ? "" : it->second;
  }

  const TransportOptions options_;
  const web::uri base_uri_;
  http_client client_;
  const http_client_config stream_config_;
};

}  // namespace

std::unique_ptr<Transport> MakeCpprestTransport(const Config& config,
                                                const TransportOptions& options) {
  return std::make_unique<CpprestTransport>(config, options);
}

}  // namespace ringleader::kube
