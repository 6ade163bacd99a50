// One API request as the handlers see it, independent of the HTTP library.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ringleader::devcluster {

struct Request {
  std::string method;                         // GET, POST, PUT, PATCH, DELETE, ...
  std::vector<std::string> segments;          // decoded path segments
  std::map<std::string, std::string> query;   // decoded query parameters
  std::string accept;
  std::string content_type;
  std::string body;

  std::string Query(const std::string& key) const {
    const auto it = query.find(key);
    return it == query.end() ? "" : it->second;
  }
};

}  // namespace ringleader::devcluster
