// Percent-encoding and query assembly.
#include "operator/kube/query.h"

namespace ringleader::kube {
namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0x0F]);
    }
  }
  return out;
}

Query& Query::Add(std::string_view key, std::string_view value) {
  pairs_.emplace_back(std::string(key), std::string(value));
  return *this;
}

Query& Query::AddIfSet(std::string_view key, std::string_view value) {
  if (!value.empty()) {
    Add(key, value);
  }
  return *this;
}

Query& Query::AddIfPositive(std::string_view key, std::int64_t value) {
  if (value > 0) {
    Add(key, std::to_string(value));
  }
  return *this;
}

Query& Query::AddIfTrue(std::string_view key, bool flag) {
  if (flag) {
    Add(key, "true");
  }
  return *this;
}

std::string Query::ToString() const {
  std::string out;
  for (const auto& [key, value] : pairs_) {
    out += out.empty() ? "?" : "&";
    out += PercentEncode(key);
    out += "=";
    out += PercentEncode(value);
  }
  return out;
}

}  // namespace ringleader::kube
