// The TokenRequest subresource, POST
// /api/v1/namespaces/NS/serviceaccounts/NAME/token, which `kubectl create token
// NAME` calls: a token that authenticates as that ServiceAccount.
#pragma once

#include <optional>

#include "tests/devcluster/api.h"
#include "tests/devcluster/auth.h"
#include "tests/devcluster/catalog.h"
#include "tests/devcluster/http_util.h"
#include "tests/devcluster/request.h"

namespace ringleader::devcluster {

// The response when `request` is a TokenRequest (201 with status.token),
// nullopt when it is not. Throws ApiError: 404 for a missing ServiceAccount or
// bound object, 400 for a bad body or any boundObjectRef (devcluster cannot
// revoke bound tokens), 422 for a lifetime under ten minutes, 405 for a method
// other than POST. The body may be JSON, YAML or protobuf (kubectl's).
std::optional<Response> ServeTokenRequest(const Request& request, const Api& api, const Catalog& catalog,
                                          Authenticator& authenticator);

}  // namespace ringleader::devcluster
