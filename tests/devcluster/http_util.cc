// Query parsing and content negotiation.
#include "tests/devcluster/http_util.h"

#include <algorithm>
#include <cctype>

namespace ringleader::devcluster {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Each media range of an Accept header as {type, params}, parameter names lower-cased.
std::vector<std::pair<std::string, std::map<std::string, std::string>>> MediaRanges(std::string_view accept) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  for (const std::string& range : Split(accept, ',')) {
    std::vector<std::string> parts = Split(range, ';');
    std::map<std::string, std::string> params;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const std::size_t eq = parts[i].find('=');
      if (eq != std::string::npos) {
        params[Lower(Trim(std::string_view(parts[i]).substr(0, eq)))] = Trim(std::string_view(parts[i]).substr(eq + 1));
      }
    }
    out.emplace_back(Lower(Trim(parts[0])), std::move(params));
  }
  return out;
}

}  // namespace

Response JsonResponse(int code, const nlohmann::json& body) {
  Response response;
  response.code = code;
  response.body = body.dump();
  return response;
}

Response ErrorResponse(const ApiError& error) {
  Response response = JsonResponse(error.code, StatusBody(error));
  if (error.code == 429) {
    int seconds = 1;
    if (error.details.is_object() && error.details.contains("retryAfterSeconds") &&
        error.details["retryAfterSeconds"].is_number_integer()) {
      seconds = error.details["retryAfterSeconds"].get<int>();
    }
    response.headers.emplace_back("Retry-After", std::to_string(seconds));
  }
  return response;
}

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= text.size()) {
        throw BadRequest("malformed percent-encoding in the request URL");
      }
      auto hex = [&](char h) -> int {
        if (h >= '0' && h <= '9') {
          return h - '0';
        }
        if (h >= 'a' && h <= 'f') {
          return h - 'a' + 10;
        }
        if (h >= 'A' && h <= 'F') {
          return h - 'A' + 10;
        }
        throw BadRequest("malformed percent-encoding in the request URL");
      };
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  if (query.empty()) {
    return out;
  }
  for (const std::string& pair : Split(query, '&')) {
    if (pair.empty()) {
      continue;
    }
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos) {
      out[PercentDecode(pair, true)] = "";
    } else {
      out[PercentDecode(std::string_view(pair).substr(0, eq), true)] =
          PercentDecode(std::string_view(pair).substr(eq + 1), true);
    }
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  for (const std::string& segment : Split(path, '/')) {
    if (!segment.empty()) {
      out.push_back(PercentDecode(segment, false));
    }
  }
  return out;
}

std::string MediaType(std::string_view content_type) {
  return Lower(Trim(content_type.substr(0, std::min(content_type.find(';'), content_type.size()))));
}

std::string AggregatedDiscoveryVersion(std::string_view accept) {
  std::string best;
  for (auto& [type, params] : MediaRanges(accept)) {
    if (type != "application/json" || params["as"] != "APIGroupDiscoveryList" ||
        params["g"] != "apidiscovery.k8s.io") {
      continue;
    }
    if (params["v"] == "v2") {
      return "v2";
    }
    if (params["v"] == "v2beta1" && best.empty()) {
      best = "v2beta1";
    }
  }
  return best;
}

std::string TableVersion(std::string_view accept) {
  std::string best;
  for (auto& [type, params] : MediaRanges(accept)) {
    if (type != "application/json" || params["as"] != "Table" || params["g"] != "meta.k8s.io") {
      continue;
    }
    if (params["v"] == "v1") {
      return "v1";
    }
    if (params["v"] == "v1beta1" && best.empty()) {
      best = "v1beta1";
    }
  }
  return best;
}

}  // namespace ringleader::devcluster
