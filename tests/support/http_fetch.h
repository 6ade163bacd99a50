// A plain HTTP GET for integration tests (scraping sidecars, querying Prometheus' API), behind a
// small header so only one file of the tests compiles cpprestsdk's client.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ringleader::testing {

struct HttpReply {
  int status = 0;
  std::string body;
};

// GETs `url` (e.g. "http://127.0.0.1:9090/api/v1/query?query=up"; the caller percent-encodes
// the query); nullopt when no reply came within `timeout` (refused, reset, timed out).
std::optional<HttpReply> HttpGet(const std::string& url,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Percent-encodes a query parameter value.
std::string UrlEncode(const std::string& text);

}  // namespace ringleader::testing
