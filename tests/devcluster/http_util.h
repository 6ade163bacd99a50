// Small HTTP helpers independent of the server library: query strings, percent-decoding, the
// Accept header negotiations Kubernetes clients use, and a plain response value.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {

struct Response {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

Response JsonResponse(int code, const nlohmann::json& body);
// The Status body for `error`, with Retry-After for 429s.
Response ErrorResponse(const ApiError& error);

// %XX decoding; with plus_is_space, '+' becomes ' ' (query strings, as Go's url.Values encodes).
// Throws ApiError BadRequest on a malformed escape.
std::string PercentDecode(std::string_view text, bool plus_is_space);
// "a=1&b=x%3Dy" -> {a:1, b:"x=y"}; a repeated key keeps its last value.
std::map<std::string, std::string> ParseQuery(std::string_view query);
// "/apis/g/v/x" -> {"apis","g","v","x"}, each segment decoded; empty segments dropped.
std::vector<std::string> SplitPath(std::string_view path);

// The media type of a Content-Type header without parameters, lower-cased ("application/json").
std::string MediaType(std::string_view content_type);

// The discovery version the Accept header asks aggregated discovery in ("v2" or "v2beta1"), or ""
// for legacy discovery.
std::string AggregatedDiscoveryVersion(std::string_view accept);
// The meta.k8s.io Table version Accept asks for ("v1" or "v1beta1"), or "" for plain objects.
std::string TableVersion(std::string_view accept);

}  // namespace ringleader::devcluster
