// The Client over a Transport: URL and body building, bearer token, client-side rate limit,
// retries with backoff, metrics, error mapping, and watch streams through WatchStreamParser.
#include <prometheus/registry.h>

#include "operator/kube/client.h"
#include "operator/kube/metrics.h"
#include "operator/kube/query.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/watch_parser.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

std::string_view PropagationName(PropagationPolicy policy) {
  switch (policy) {
    case PropagationPolicy::kOrphan:
      return "Orphan";
    case PropagationPolicy::kBackground:
      return "Background";
    case PropagationPolicy::kForeground:
      return "Foreground";
  }
  return "Background";
}

ApiError FromTransport(const TransportError& e) {
  const ErrorKind kind =
      e.kind() == TransportError::Kind::kTimeout ? ErrorKind::kTimeout : ErrorKind::kConnection;
  return ApiError(kind, 0, "", e.what());
}

std::string MetadataString(const json& object, const char* key) {
  if (!object.is_object()) {
    return "";
  }
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return "";
  }
  auto value = metadata->find(key);
  return value != metadata->end() && value->is_string() ? value->get<std::string>() : "";
}

class ClientImpl final : public Client {
 public:
  ClientImpl(std::shared_ptr<Transport> transport, std::shared_ptr<TokenSource> token,
             const ClientOptions& options)
      : transport_(std::move(transport)),
        token_(std::move(token)),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : RealClock()),
        random_(options.random ? options.random : DefaultUniformRandom()),
        own_registry_(options.registry == nullptr ? std::make_unique<prometheus::Registry>()
                                                  : nullptr),
        metrics_(options.registry != nullptr ? *options.registry : *own_registry_),
        limiter_(options.qps, options.burst, clock_) {}

  json Get(const Resource& resource, const std::string& ns, const std::string& name) override {
    return Json("get", true, {"GET", ResourcePath(resource, ns, name), "", "", ""});
  }

  ListResult List(const Resource& resource, const std::string& ns,
                  const ListOptions& options) override {
    Query query;
    query.AddIfSet("labelSelector", options.label_selector)
        .AddIfSet("fieldSelector", options.field_selector)
        .AddIfPositive("limit", options.limit)
        .AddIfSet("continue", options.continue_token)
        .AddIfSet("resourceVersion", options.resource_version);
    json list = Json("list", true, {"GET", ResourcePath(resource, ns) + query.ToString(), "", "", ""});
    ListResult result;
    auto items = list.find("items");
    if (items != list.end() && items->is_array()) {
      result.items.reserve(items->size());
      for (json& item : *items) {
        result.items.push_back(std::move(item));
      }
    }
    result.resource_version = MetadataString(list, "resourceVersion");
    result.continue_token = MetadataString(list, "continue");
    return result;
  }

  json Create(const Resource& resource, const std::string& ns, const json& object) override {
    return Json("create", false,
                {"POST", ResourcePath(resource, NamespaceFor(resource, ns, object)), "",
                 "application/json", object.dump()});
  }

  json Update(const Resource& resource, const std::string& ns, const json& object) override {
    return Put("update", resource, ns, object, "");
  }

  json UpdateStatus(const Resource& resource, const std::string& ns,
                    const json& object) override {
    return Put("update", resource, ns, object, "status");
  }

  json Patch(const Resource& resource, const std::string& ns, const std::string& name,
             PatchType type, const json& patch) override {
    return DoPatch(resource, ns, name, type, patch, "");
  }

  json PatchStatus(const Resource& resource, const std::string& ns, const std::string& name,
                   PatchType type, const json& patch) override {
    return DoPatch(resource, ns, name, type, patch, "status");
  }

  json Delete(const Resource& resource, const std::string& ns, const std::string& name,
              const DeleteOptions& options) override {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (options.propagation_policy) {
      body["propagationPolicy"] = PropagationName(*options.propagation_policy);
    }
    if (options.grace_period_seconds) {
      body["gracePeriodSeconds"] = *options.grace_period_seconds;
    }
    if (options.precondition_uid) {
      body["preconditions"]["uid"] = *options.precondition_uid;
    }
    if (options.precondition_resource_version) {
      body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
    }
    return Json("delete", true,
                {"DELETE", ResourcePath(resource, ns, name), "", "application/json", body.dump()});
  }

  json Discover(const std::string& group_version) override {
    const std::string path = group_version.find('/') == std::string::npos
                                 ? "/api/" + PercentEncode(group_version)
                                 : "/apis/" + PercentEncode(group_version.substr(0, group_version.find('/'))) + "/" +
                                       PercentEncode(group_version.substr(group_version.find('/') + 1));
    return Json("discover", true, {"GET", path, "", "", ""});
  }

  WatchEnd Watch(const Resource& resource, const std::string& ns, const WatchOptions& options,
                 const WatchCallback& callback, std::stop_token stop) override {
    Query query;
    query.Add("watch", "true")
        .AddIfSet("resourceVersion", options.resource_version)
        .AddIfSet("labelSelector", options.label_selector)
        .AddIfSet("fieldSelector", options.field_selector)
        .AddIfPositive("timeoutSeconds", options.timeout_seconds)
        .AddIfTrue("allowWatchBookmarks", options.allow_bookmarks);
    HttpRequest request{"GET", ResourcePath(resource, ns) + query.ToString(), "", "", ""};

    // Stops the transport both on the caller's request and when the callback declines more.
    std::stop_source stream_stop;
    std::stop_callback forward(stop, [&stream_stop] { stream_stop.request_stop(); });
    WatchStreamParser parser(options_.max_watch_event_bytes);
    bool declined = false;
    auto on_data = [&](std::string_view data) {
      if (declined) {
        return;
      }
      for (const WatchEvent& event : parser.Push(data)) {
        if (!callback(event)) {
          declined = true;
          stream_stop.request_stop();
          return;
        }
      }
    };
    try {
      Execute("watch", true, request, stop, [&](const HttpRequest& r) {
        return transport_->Stream(r, on_data, stream_stop.get_token()).response;
      });
    } catch (const WatchStreamError& e) {
      throw ApiError(ErrorKind::kOther, 200, "", e.what());
    } catch (const ApiError&) {
      if (stop.stop_requested()) {
        return WatchEnd::kStopped;  // the failure is the cancelled connection
      }
      throw;
    }
    return declined || stop.stop_requested() ? WatchEnd::kStopped : WatchEnd::kClosed;
  }

 private:
  using Sender = std::function<HttpResponse(const HttpRequest&)>;

  static std::string NamespaceFor(const Resource& resource, const std::string& ns,
                                  const json& object) {
    if (!resource.namespaced || !ns.empty()) {
      return ns;
    }
    return MetadataString(object, "namespace");
  }

  json Put(std::string_view verb, const Resource& resource, const std::string& ns,
           const json& object, std::string_view subresource) {
    const std::string name = MetadataString(object, "name");
    if (name.empty()) {
      throw ApiError(ErrorKind::kInvalid, 0, "", "update: object has no metadata.name");
    }
    return Json(verb, true,
                {"PUT", ResourcePath(resource, NamespaceFor(resource, ns, object), name, subresource),
                 "", "application/json", object.dump()});
  }

  json DoPatch(const Resource& resource, const std::string& ns, const std::string& name,
               PatchType type, const json& patch, std::string_view subresource) {
    // A JSON patch may append to lists or test-and-set; repeating it is not safe.
    const bool idempotent = type != PatchType::kJson;
    return Json("patch", idempotent,
                {"PATCH", ResourcePath(resource, ns, name, subresource), "",
                 std::string(PatchContentType(type)), patch.dump()});
  }

  json Json(std::string_view verb, bool idempotent, const HttpRequest& request) {
    HttpResponse response = Execute(verb, idempotent, request, {}, [this](const HttpRequest& r) {
      return transport_->Send(r);
    });
    if (response.body.empty()) {
      return json::object();
    }
    json parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      throw ApiError(ErrorKind::kOther, response.status, "",
                     "response is not JSON: " + response.body.substr(0, 256));
    }
    return parsed;
  }

  // Sends with rate limiting and retries; returns a 2xx response or throws ApiError.
  HttpResponse Execute(std::string_view verb, bool idempotent, HttpRequest request,
                       std::stop_token stop, const Sender& send) {
    const Clock::TimePoint start = clock_.Now();
    Backoff backoff(options_.backoff, random_);
    bool reauthenticated = false;
    int attempts = 0;
    while (true) {
      if (!limiter_.Acquire(stop)) {
        throw ApiError(ErrorKind::kOther, 0, "", "request cancelled");
      }
      ++attempts;
      request.bearer_token = token_ ? token_->Token() : "";
      AttemptOutcome outcome;
      HttpResponse response;
      std::optional<ApiError> error;
      const Clock::TimePoint sent = clock_.Now();
      try {
        response = send(request);
        outcome.http_code = response.status;
      } catch (const TransportError& e) {
        outcome.connection_refused = e.kind() == TransportError::Kind::kRefused;
        outcome.tls_failure = e.kind() == TransportError::Kind::kTls;
        error = FromTransport(e);
      }
      metrics_.ObserveRequest(
          verb, outcome.http_code,
          std::chrono::duration<double>(clock_.Now() - sent).count());
      if (!error && response.status >= 200 && response.status <= 299) {
        return response;
      }
      if (!error && response.status == 401 && token_ && !reauthenticated) {
        // The token may have rotated under us: look again once, right away.
        token_->Invalidate();
        reauthenticated = true;
        --attempts;
        continue;
      }
      if (!error) {
        error = ApiErrorFromResponse(response.status, response.body);
      }
      const std::optional<RetryReason> reason = RetryReasonFor(idempotent, outcome);
      if (!reason || attempts >= options_.backoff.max_attempts || stop.stop_requested()) {
        throw *error;
      }
      Clock::Duration delay = backoff.Next();
      if (auto retry_after = ParseRetryAfter(response.retry_after)) {
        delay = *retry_after;
      }
      if (clock_.Now() + delay - start > options_.backoff.deadline) {
        throw *error;
      }
      metrics_.ObserveRetry(*reason);
      if (!clock_.SleepFor(delay, stop)) {
        throw *error;
      }
    }
  }

  const std::shared_ptr<Transport> transport_;
  const std::shared_ptr<TokenSource> token_;
  const ClientOptions options_;
  Clock& clock_;
  const UniformRandom random_;
  const std::unique_ptr<prometheus::Registry> own_registry_;
  ClientMetrics metrics_;
  TokenBucketRateLimiter limiter_;
};

}  // namespace

json Client::Discover(const std::string& group_version) {
  throw ApiError(ErrorKind::kOther, 0, "", "this client cannot discover " + group_version);
}

ListResult ListAll(Client& client, const Resource& resource, const std::string& ns,
                   ListOptions options, const std::function<void(nlohmann::json&)>& transform) {
  if (options.limit <= 0) {
    options.limit = 500;
  }
  ListResult all;
  bool first = true;
  do {
    ListResult page = client.List(resource, ns, options);
    if (first) {
      all.resource_version = page.resource_version;
      first = false;
    }
    for (auto& item : page.items) {
      if (transform) {
        transform(item);
      }
      all.items.push_back(std::move(item));
    }
    options.continue_token = page.continue_token;
    // A continued list is served at the first page's version; the server rejects an explicit
    // resourceVersion beside a continue token.
    options.resource_version.clear();
  } while (!options.continue_token.empty());
  return all;
}

std::unique_ptr<Client> MakeClient(std::shared_ptr<Transport> transport,
                                   std::shared_ptr<TokenSource> token,
                                   const ClientOptions& options) {
  return std::make_unique<ClientImpl>(std::move(transport), std::move(token), options);
}

std::unique_ptr<Client> MakeClient(const Config& config, const ClientOptions& options,
                                   const TransportOptions& transport_options) {
  return MakeClient(std::shared_ptr<Transport>(MakeCpprestTransport(config, transport_options)),
                    config.token, options);
}

}  // namespace ringleader::kube
