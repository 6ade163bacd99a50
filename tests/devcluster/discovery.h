// Non-resource endpoints kubectl reads to learn the server: /version, discovery (aggregated and
// legacy) and OpenAPI v3.
#pragma once

#include <optional>
#include <string>

#include "tests/devcluster/catalog.h"
#include "tests/devcluster/http_util.h"
#include "tests/devcluster/request.h"

namespace ringleader::devcluster {

// The answer for a GET of /version, /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>,
// /openapi/v3[/...], /openapi/v2 (404: kubectl must not use it) and the health checks, or nullopt
// when the path is not one of them (then it is a resource path). Throws ApiError.
std::optional<Response> ServeDiscovery(const Request& request, const Catalog& catalog,
                                       const std::string& server_address);

}  // namespace ringleader::devcluster
