// Routing of resource paths and verbs, request bodies, Tables and watch setup.
#include "tests/devcluster/resource_handler.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/machinery/patch.h"
#include "tests/devcluster/machinery/protobuf_body.h"
#include "tests/devcluster/machinery/selectors.h"
#include "tests/devcluster/machinery/table.h"
#include "tests/devcluster/pod_logs.h"

namespace ringleader::devcluster {
namespace {

ApiError NotFoundPath() { return ApiError(404, "NotFound", "the server could not find the requested resource"); }

struct Target {
  ResourceInfo info;
  std::string ns;
  std::string name;
  std::string subresource;
};

// /api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]] or /apis/G/V/[namespaces/NS/]PLURAL[/NAME[/SUB]].
Target Resolve(const std::vector<std::string>& seg, const Catalog& catalog) {
  std::string group;
  std::string version;
  std::size_t i = 0;
  if (seg.size() >= 3 && seg[0] == "api") {
    version = seg[1];
    i = 2;
  } else if (seg.size() >= 4 && seg[0] == "apis") {
    group = seg[1];
    version = seg[2];
    i = 3;
  } else {
    throw NotFoundPath();
  }
  std::vector<std::string> rest(seg.begin() + static_cast<std::ptrdiff_t>(i), seg.end());
  Target target;
  // namespaces/NS/PLURAL... unless it is the Namespace itself (namespaces/NS[/status|finalize]).
  if (rest.size() >= 3 && rest[0] == "namespaces" && !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
    target.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) {
    throw NotFoundPath();
  }
  std::optional<ResourceInfo> info = catalog.Find(group, version, rest[0]);
  if (!info || (!info->namespaced && !target.ns.empty())) {
    throw NotFoundPath();
  }
  target.info = std::move(*info);
  if (rest.size() >= 2) {
    target.name = rest[1];
  }
  if (rest.size() == 3) {
    target.subresource = rest[2];
    const bool pods = target.info.group.empty() && target.info.plural == "pods";
    const bool served = (target.subresource == "status" && target.info.has_status) ||
                        (pods && (target.subresource == "eviction" || target.subresource == "log"));
    if (!served) {
      throw NotFoundPath();
    }
  }
  return target;
}

nlohmann::json ParseJson(const std::string& body) {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadRequest(std::string("json: cannot unmarshal the request body: ") + e.what());
  }
}

// A JSON or YAML request body; nullopt for any other media type. `what` names the expected
// object in the error for an empty body.
std::optional<nlohmann::json> ParseTextBody(const Request& request, std::string_view what) {
  const std::string type = MediaType(request.content_type);
  if (request.body.empty()) {
    throw BadRequest("the request body is empty; " + std::string(what) + " is required");
  }
  if (type == "application/json" || type.empty()) {
    return ParseJson(request.body);
  }
  if (type == "application/yaml") {
    try {
      return yaml::ParseYaml(request.body);
    } catch (const std::exception& e) {
      throw BadRequest(std::string("yaml: ") + e.what());
    }
  }
  return std::nullopt;
}

// The body of a POST or PUT: JSON, YAML for clients that send it, or protobuf (kubectl's create
// commands send built-in kinds so; custom resources have no protobuf form).
nlohmann::json ParseObjectBody(const Request& request, const ResourceInfo& info) {
  if (std::optional<nlohmann::json> object = ParseTextBody(request, "an object")) {
    return std::move(*object);
  }
  if (info.is_custom) {
    throw UnsupportedMediaType({"application/json", "application/yaml"});
  }
  if (MediaType(request.content_type) == kProtobufMediaType) {
    return DecodeProtobufObject(request.body, info.GroupVersion(), info.kind);
  }
  throw UnsupportedMediaType({"application/json", "application/yaml", std::string(kProtobufMediaType)});
}

// An Eviction body: JSON, YAML, or protobuf as kubectl drain sends it.
nlohmann::json ParseEvictionBody(const Request& request) {
  if (std::optional<nlohmann::json> eviction = ParseTextBody(request, "an Eviction")) {
    return std::move(*eviction);
  }
  if (MediaType(request.content_type) == kProtobufMediaType) {
    return DecodeProtobufEviction(request.body);
  }
  throw UnsupportedMediaType({"application/json", "application/yaml", std::string(kProtobufMediaType)});
}

// A DELETE's DeleteOptions: `absent` without a body, protobuf as kubectl drain sends them when it
// cannot evict, else JSON whatever the content type says (as devcluster always read them).
nlohmann::json ParseDeleteOptionsBody(const Request& request, nlohmann::json absent) {
  if (request.body.empty()) {
    return absent;
  }
  if (MediaType(request.content_type) == kProtobufMediaType) {
    return DecodeProtobufDeleteOptions(request.body);
  }
  return ParseJson(request.body);
}

nlohmann::json ParsePatchBody(const Request& request) {
  const std::string type = MediaType(request.content_type);
  if (type != kMergePatch && type != kJsonPatch && type != kStrategicMergePatch && type != kApplyPatch) {
    throw UnsupportedMediaType({std::string(kJsonPatch), std::string(kMergePatch), std::string(kApplyPatch),
                                std::string(kStrategicMergePatch)});
  }
  if (type == kApplyPatch) {
    try {
      return nlohmann::json::parse(request.body);
    } catch (const nlohmann::json::parse_error&) {
      try {
        return yaml::ParseYaml(request.body);
      } catch (const std::exception& e) {
        throw BadRequest(std::string("yaml: ") + e.what());
      }
    }
  }
  return ParseJson(request.body);
}

std::size_t ParseCount(const std::string& text, const char* what) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw BadRequest(std::string("invalid ") + what + ": " + text);
  }
  return value;
}

WriteOptions WriteOptionsFrom(const Request& request) {
  WriteOptions options;
  options.dry_run = request.Query("dryRun") == "All";
  options.field_validation = request.Query("fieldValidation");
  options.field_manager = request.Query("fieldManager");
  return options;
}

ListOptions ListOptionsFrom(const Request& request) {
  ListOptions options;
  options.label_selector = request.Query("labelSelector");
  options.field_selector = request.Query("fieldSelector");
  if (!request.Query("limit").empty()) {
    options.limit = ParseCount(request.Query("limit"), "limit");
  }
  options.continue_token = request.Query("continue");
  return options;
}

Response Write(const WriteResult& result) { return JsonResponse(result.code, result.object); }

// A Table answer, as meta.k8s.io/v1 or v1beta1.
Response TableResponse(const ResourceInfo& info, const std::vector<nlohmann::json>& objects,
                       const std::string& resource_version, const Request& request, const std::string& version,
                       const std::string& continue_token) {
  nlohmann::json table = BuildTable(info, objects, std::chrono::system_clock::now(), resource_version,
                                    request.Query("includeObject") != "None");
  table["apiVersion"] = "meta.k8s.io/" + version;
  if (!continue_token.empty()) {
    table["metadata"]["continue"] = continue_token;
  }
  return JsonResponse(200, table);
}

}  // namespace

ResourceHandler::ResourceHandler(Api& api, const Catalog& catalog, std::chrono::seconds max_watch)
    : api_(api), catalog_(catalog), max_watch_(max_watch) {}

std::optional<Response> ResourceHandler::Serve(const Request& request,
                                               const std::function<void(WatchSpec)>& start_watch) {
  Target t = Resolve(request.segments, catalog_);
  const std::string table_version = TableVersion(request.accept);
  const std::string& method = request.method;

  if (t.name.empty()) {
    if (method == "GET") {
      const std::string watch = request.Query("watch");
      if (watch == "true" || watch == "1") {
        const ListOptions list_options = ListOptionsFrom(request);
        auto labels = std::make_shared<LabelSelector>(LabelSelector::Parse(list_options.label_selector));
        auto fields = std::make_shared<FieldSelector>(FieldSelector::Parse(list_options.field_selector));
        WatchSpec spec;
        spec.resource = StoreKey(t.info);
        const std::string ns = t.info.namespaced ? t.ns : "";
        spec.matches = [ns, labels, fields](const nlohmann::json& object) {
          const nlohmann::json& meta = object["metadata"];
          if (!ns.empty() && meta.value("namespace", std::string()) != ns) {
            return false;
          }
          return labels->Matches(meta.value("labels", nlohmann::json())) && fields->Matches(object);
        };
        auto info = std::make_shared<ResourceInfo>(t.info);
        if (!table_version.empty()) {
          const bool include_metadata = request.Query("includeObject") != "None";
          spec.render = [info, include_metadata, table_version](const nlohmann::json& object, bool) {
            nlohmann::json served = object;
            served["apiVersion"] = info->GroupVersion();
            nlohmann::json table =
                BuildTable(*info, {served}, std::chrono::system_clock::now(),
                           served["metadata"].value("resourceVersion", std::string()), include_metadata);
            table["apiVersion"] = "meta.k8s.io/" + table_version;
            return table;
          };
        } else {
          spec.render = [info](const nlohmann::json& object, bool) {
            nlohmann::json served = object;
            served["apiVersion"] = info->GroupVersion();
            return served;
          };
        }
        const std::string rv = request.Query("resourceVersion");
        if (!rv.empty() && rv != "0") {
          spec.from_rv = ParseCount(rv, "resourceVersion");
        }
        const std::string allow = request.Query("allowWatchBookmarks");
        spec.bookmarks = allow == "true" || allow == "1";
        std::chrono::seconds timeout = max_watch_;
        if (!request.Query("timeoutSeconds").empty()) {
          timeout = std::min(timeout, std::chrono::seconds(ParseCount(request.Query("timeoutSeconds"), "timeoutSeconds")));
        }
        spec.end = std::chrono::steady_clock::now() + timeout;
        spec.kind = t.info.kind;
        spec.api_version = t.info.GroupVersion();
        start_watch(std::move(spec));
        return std::nullopt;
      }
      const ListResult list = api_.List(t.info, t.ns, ListOptionsFrom(request));
      if (!table_version.empty()) {
        return TableResponse(t.info, list.items, list.resource_version, request, table_version, list.continue_token);
      }
      return JsonResponse(200, Api::ListBody(t.info, list));
    }
    if (method == "POST") {
      return Write(api_.Create(t.info, t.ns, ParseObjectBody(request, t.info), WriteOptionsFrom(request)));
    }
    if (method == "DELETE") {
      nlohmann::json options = ParseDeleteOptionsBody(request, nullptr);
      return JsonResponse(200, api_.DeleteCollection(t.info, t.ns, ListOptionsFrom(request), options));
    }
    throw MethodNotAllowed(method, t.info.GroupResource());
  }

  if (t.subresource == "eviction") {
    if (method != "POST") {
      throw MethodNotAllowed(method, "pods/eviction");
    }
    return Write(api_.Evict(t.ns, t.name, ParseEvictionBody(request), request.Query("dryRun") == "All"));
  }
  if (t.subresource == "log") {
    if (method != "GET") {
      throw MethodNotAllowed(method, "pods/log");
    }
    const PodLogOptions options = ParsePodLogOptions(request.query, t.name);
    const std::string text = ReadPodLog(api_.Get(t.info, t.ns, t.name), options, kubelet_root_);
    return Response{200, "text/plain", text, {}};
  }
  if (method == "GET") {
    nlohmann::json object = api_.Get(t.info, t.ns, t.name);
    if (!table_version.empty()) {
      const std::string rv = object["metadata"].value("resourceVersion", std::string());
      return TableResponse(t.info, {object}, rv, request, table_version, "");
    }
    return JsonResponse(200, object);
  }
  if (method == "PUT") {
    return Write(api_.Update(t.info, t.ns, t.name, t.subresource, ParseObjectBody(request, t.info),
                             WriteOptionsFrom(request)));
  }
  if (method == "PATCH") {
    return Write(api_.Patch(t.info, t.ns, t.name, t.subresource, MediaType(request.content_type),
                            ParsePatchBody(request), WriteOptionsFrom(request)));
  }
  if (method == "DELETE" && t.subresource.empty()) {
    nlohmann::json options = ParseDeleteOptionsBody(request, nlohmann::json::object());
    if (!options.is_object()) {
      throw BadRequest("DeleteOptions must be a JSON object");
    }
    if (!request.Query("propagationPolicy").empty()) {
      options["propagationPolicy"] = request.Query("propagationPolicy");
    }
    // Query parameters stand for DeleteOptions only when there is no body, as the server decodes them.
    if (request.body.empty() && !request.Query("gracePeriodSeconds").empty()) {
      const std::string text = request.Query("gracePeriodSeconds");
      const bool negative = text[0] == '-';
      const auto magnitude = static_cast<std::int64_t>(ParseCount(negative ? text.substr(1) : text, "gracePeriodSeconds"));
      options["gracePeriodSeconds"] = negative ? -magnitude : magnitude;
    }
    return Write(api_.Delete(t.info, t.ns, t.name, options, request.Query("dryRun") == "All"));
  }
  throw MethodNotAllowed(method, t.info.GroupResource());
}

}  // namespace ringleader::devcluster
