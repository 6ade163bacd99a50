// errno's message for the kubelet's errors ("fork: Resource temporarily unavailable").
#pragma once

#include <string>
#include <system_error>

namespace ringleader::devcluster::kubelet {

inline std::string ErrnoText(int error) { return std::error_code(error, std::generic_category()).message(); }

}  // namespace ringleader::devcluster::kubelet
