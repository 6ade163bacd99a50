// URL query strings for API requests, percent-encoded per RFC 3986 (labelSelector=app%3Dx).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringleader::kube {

// Encodes every byte outside the unreserved set [A-Za-z0-9-._~] as %XX (upper-case hex).
std::string PercentEncode(std::string_view text);

// Ordered key=value pairs; empty values are left out by the Add* helpers that take optional
// values, so callers can add every option unconditionally.
class Query {
 public:
  // Adds key=value even when value is empty.
  Query& Add(std::string_view key, std::string_view value);
  // Adds key=value only when value is not empty.
  Query& AddIfSet(std::string_view key, std::string_view value);
  // Adds key=value only when value > 0.
  Query& AddIfPositive(std::string_view key, std::int64_t value);
  // Adds key=true only when flag is set.
  Query& AddIfTrue(std::string_view key, bool flag);

  // "" when empty, else "?k=v&k2=v2" with keys and values encoded.
  std::string ToString() const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace ringleader::kube
