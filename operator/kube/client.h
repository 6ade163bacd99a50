// The operator's Kubernetes API client: typed verbs on any group/version/resource, JSON
// objects in and out, failures as ApiError. Implementations are thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "operator/kube/clock.h"
#include "operator/kube/config.h"
#include "operator/kube/errors.h"
#include "operator/kube/resource.h"
#include "operator/kube/retry.h"
#include "operator/kube/transport.h"
#include "operator/kube/watch_event.h"

namespace prometheus {
class Registry;
}

namespace ringleader::kube {

struct ListOptions {
  std::string label_selector;    // "app=x,tier!=db"
  std::string field_selector;    // "metadata.name=x"
  std::int64_t limit = 0;        // page size; 0: everything in one response
  std::string continue_token;    // from the previous page's ListResult
  std::string resource_version;  // "" (most recent, quorum read) or "0" (any, from cache)
};

struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion: start a watch here
  std::string continue_token;    // "" on the last page
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kJson,            // application/json-patch+json (RFC 6902); not idempotent
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
};

enum class PropagationPolicy { kOrphan, kBackground, kForeground };

struct DeleteOptions {
  std::optional<PropagationPolicy> propagation_policy;
  std::optional<std::int64_t> grace_period_seconds;
  std::optional<std::string> precondition_uid;               // delete only this incarnation
  std::optional<std::string> precondition_resource_version;  // delete only this version
};

struct WatchOptions {
  std::string resource_version;  // start after this version; "" = from "now" (sends ADDED)
  std::string label_selector;
  std::string field_selector;
  std::int64_t timeout_seconds = 0;  // server closes the stream after this; 0: server default
  bool allow_bookmarks = false;
};

// Called for each watch event in order. Return false to end the watch.
using WatchCallback = std::function<bool(const WatchEvent&)>;

enum class WatchEnd {
  kClosed,   // the server ended the stream, or the connection was cut: resume from the last RV
  kStopped,  // the callback returned false or stop was requested
};

class Client {
 public:
  virtual ~Client() = default;

  // `ns` is ignored for cluster-scoped resources. Every verb throws ApiError.

  virtual nlohmann::json Get(const Resource& resource, const std::string& ns,
                             const std::string& name) = 0;

  // One page (or everything when options.limit is 0). `ns` empty lists all namespaces.
  virtual ListResult List(const Resource& resource, const std::string& ns,
                          const ListOptions& options = {}) = 0;

  // POST; returns the created object. Retried only when the connection was refused.
  virtual nlohmann::json Create(const Resource& resource, const std::string& ns,
                                const nlohmann::json& object) = 0;

  // PUT to object.metadata.name. With metadata.resourceVersion set (as read), a concurrent
  // change makes it fail with kConflict. Returns the stored object.
  virtual nlohmann::json Update(const Resource& resource, const std::string& ns,
                                const nlohmann::json& object) = 0;

  // PUT to the /status subresource; only status changes are kept by the server.
  virtual nlohmann::json UpdateStatus(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) = 0;

  virtual nlohmann::json Patch(const Resource& resource, const std::string& ns,
                               const std::string& name, PatchType type,
                               const nlohmann::json& patch) = 0;

  virtual nlohmann::json PatchStatus(const Resource& resource, const std::string& ns,
                                     const std::string& name, PatchType type,
                                     const nlohmann::json& patch) = 0;

  // Returns what the server answered: the object (with deletionTimestamp, when finalizers or
  // foreground deletion keep it) or a Status.
  virtual nlohmann::json Delete(const Resource& resource, const std::string& ns,
                                const std::string& name, const DeleteOptions& options = {}) = 0;

  // Streams events to `callback` until the server closes the stream, the connection is cut,
  // the callback returns false, or `stop` is requested. ERROR events are passed on (a 410
  // there means: relist). Throws ApiError when the watch cannot start (e.g. kGone for a too
  // old resource_version) or the stream is not a valid watch stream (kOther).
  virtual WatchEnd Watch(const Resource& resource, const std::string& ns,
                         const WatchOptions& options, const WatchCallback& callback,
                         std::stop_token stop = {}) = 0;

  // Discovery of one API group version ("scheduling.volcano.sh/v1beta1", or "v1" for the core
  // group): the APIResourceList the server serves there. A group version the server does not
  // serve throws kNotFound. Open to every authenticated user (system:discovery), so it needs no
  // RBAC. Clients that cannot discover throw kOther.
  virtual nlohmann::json Discover(const std::string& group_version);
};

// Follows continue tokens from options.continue_token to the last page (page size
// options.limit, 500 when 0). The result's resource_version is the first page's. `transform`,
// when set, is applied to each item as its page arrives, so a caller that keeps only part of
// each object never holds every full object at once.
ListResult ListAll(Client& client, const Resource& resource, const std::string& ns,
                   ListOptions options = {},
                   const std::function<void(nlohmann::json&)>& transform = {});

struct ClientOptions {
  double qps = 20;  // client-side token bucket, as client-go's newer defaults
  int burst = 30;
  BackoffPolicy backoff;
  Clock* clock = nullptr;                    // null: RealClock()
  UniformRandom random;                      // null: DefaultUniformRandom()
  prometheus::Registry* registry = nullptr;  // null: metrics go to a private registry
  std::size_t max_watch_event_bytes = 16 * 1024 * 1024;
};

// A client over any transport, authenticating with `token` (may be null).
std::unique_ptr<Client> MakeClient(std::shared_ptr<Transport> transport,
                                   std::shared_ptr<TokenSource> token,
                                   const ClientOptions& options = {});

// A client for `config` over cpprestsdk. Throws ConfigError for unusable TLS material.
std::unique_ptr<Client> MakeClient(const Config& config, const ClientOptions& options = {},
                                   const TransportOptions& transport_options = {});

}  // namespace ringleader::kube
