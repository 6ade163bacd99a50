// Bearer-token authentication: one random token per devcluster, checked on every request.
#pragma once

#include <string>
#include <string_view>

namespace ringleader::devcluster {

// 32 random bytes as 64 lowercase hex characters. Throws std::runtime_error if the system has no
// randomness to give.
std::string NewToken();

// True when `authorization` (the Authorization header's value) is "Bearer <token>" with exactly
// this token; the comparison takes the same time wherever the first difference is.
bool BearerMatches(std::string_view authorization, std::string_view token);

}  // namespace ringleader::devcluster
