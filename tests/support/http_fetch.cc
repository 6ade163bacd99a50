#include "tests/support/http_fetch.h"

#include <utility>

#include <cpprest/http_client.h>

#include <cstdio>
#include <exception>
#include <vector>

namespace ringleader::testing {

std::optional<HttpReply> HttpGet(const std::string& url, std::chrono::milliseconds timeout) {
  try {
    web::http::client::http_client_config config;
    config.set_timeout(timeout);
    web::http::client::http_client client(url, config);
    const web::http::http_response response = client.request(web::http::methods::GET).get();
    // Bytes, not extract_string: cpprestsdk's string path trips UBSan.
    const std::vector<unsigned char> body = response.extract_vector().get();
    return HttpReply{response.status_code(), std::string(body.begin(), body.end())};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string UrlEncode(const std::string& text) {
  std::string encoded;
  for (const unsigned char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '~';
    if (plain) {
      encoded += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      encoded += hex;
    }
  }
  return encoded;
}

}  // namespace ringleader::testing
