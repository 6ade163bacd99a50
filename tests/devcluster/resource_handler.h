// Resource endpoints: /api/v1/... and /apis/<g>/<v>/..., mapped to Api calls, Tables and watches.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>

#include "tests/devcluster/api.h"
#include "tests/devcluster/catalog.h"
#include "tests/devcluster/http_util.h"
#include "tests/devcluster/request.h"
#include "tests/devcluster/watch.h"

namespace ringleader::devcluster {

class ResourceHandler {
 public:
  ResourceHandler(Api& api, const Catalog& catalog, std::chrono::seconds max_watch);

  // The response, or nullopt when the request is a watch and `start_watch` took it over.
  // Throws ApiError (404 for an unknown path or resource).
  std::optional<Response> Serve(const Request& request, const std::function<void(WatchSpec)>& start_watch);

  // Where the kubelet keeps Pod logs (KubeletOptions::root_dir), for pods/log; unset when
  // devcluster runs no kubelet. Call before serving.
  void SetKubeletRoot(std::filesystem::path root) { kubelet_root_ = std::move(root); }

 private:
  Api& api_;
  const Catalog& catalog_;
  std::chrono::seconds max_watch_;
  std::filesystem::path kubelet_root_;
};

}  // namespace ringleader::devcluster
