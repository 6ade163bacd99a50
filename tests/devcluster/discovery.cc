// Discovery documents built from the catalog.
#include "tests/devcluster/discovery.h"

#include <algorithm>
#include <map>
#include <set>

namespace ringleader::devcluster {
namespace {

ApiError NotFoundPath() { return ApiError(404, "NotFound", "the server could not find the requested resource"); }

Response Version() {
  return JsonResponse(200, {{"major", "1"},
                            {"minor", "32"},
                            {"gitVersion", "v1.32.4"},
                            {"gitCommit", "devcluster"},
                            {"gitTreeState", "clean"},
                            {"buildDate", "2025-04-22T00:00:00Z"},
                            {"goVersion", "go1.23.6"},
                            {"compiler", "gc"},
                            {"platform", "linux/amd64"}});
}

nlohmann::json Verbs(bool custom) {
  (void)custom;
  return {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
}

nlohmann::json ResourceList(const Catalog& catalog, const std::string& group, const std::string& version) {
  nlohmann::json resources = nlohmann::json::array();
  for (const ResourceInfo& info : catalog.All()) {
    if (info.group != group || info.version != version) {
      continue;
    }
    nlohmann::json entry{{"name", info.plural},
                         {"singularName", info.singular},
                         {"namespaced", info.namespaced},
                         {"kind", info.kind},
                         {"verbs", Verbs(info.is_custom)}};
    if (!info.short_names.empty()) {
      entry["shortNames"] = info.short_names;
    }
    if (!info.categories.empty()) {
      entry["categories"] = info.categories;
    }
    resources.push_back(entry);
    for (const SubresourceInfo& sub : info.DiscoverySubresources()) {
      nlohmann::json listed{{"name", info.plural + "/" + sub.name},
                            {"singularName", ""},
                            {"namespaced", info.namespaced},
                            {"kind", sub.kind},
                            {"verbs", sub.verbs}};
      // kubectl drain evicts only when pods/eviction names its group and version here.
      if (!sub.group.empty() || !sub.version.empty()) {
        listed["group"] = sub.group;
        listed["version"] = sub.version;
      }
      resources.push_back(std::move(listed));
    }
  }
  if (resources.empty()) {
    throw NotFoundPath();
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? version : group + "/" + version},
          {"resources", resources}};
}

// Every group with its versions in registry order (the first is preferred).
std::map<std::string, std::vector<std::string>> Groups(const Catalog& catalog) {
  std::map<std::string, std::vector<std::string>> groups;
  for (const ResourceInfo& info : catalog.All()) {
    if (info.group.empty()) {
      continue;
    }
    auto& versions = groups[info.group];
    if (std::find(versions.begin(), versions.end(), info.version) == versions.end()) {
      versions.push_back(info.version);
    }
  }
  return groups;
}

nlohmann::json GroupJson(const std::string& name, const std::vector<std::string>& versions) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& version : versions) {
    list.push_back({{"groupVersion", name + "/" + version}, {"version", version}});
  }
  return {{"name", name}, {"versions", list}, {"preferredVersion", list.at(0)}};
}

Response Aggregated(nlohmann::json body, const std::string& version) {
  body["apiVersion"] = "apidiscovery.k8s.io/" + version;
  Response response = JsonResponse(200, body);
  response.content_type = "application/json;g=apidiscovery.k8s.io;v=" + version + ";as=APIGroupDiscoveryList";
  response.headers.emplace_back("Vary", "Accept");
  return response;
}

}  // namespace

std::optional<Response> ServeDiscovery(const Request& request, const Catalog& catalog,
                                       const std::string& server_address) {
  const auto& seg = request.segments;
  if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "readyz" || seg[0] == "livez")) {
    return Response{200, "text/plain; charset=utf-8", "ok", {}};
  }
  if (seg.size() == 1 && seg[0] == "version") {
    return Version();
  }
  if (!seg.empty() && seg[0] == "openapi") {
    if (seg.size() >= 2 && seg[1] == "v3") {
      if (seg.size() == 2) {
        return JsonResponse(200, catalog.OpenApiIndex());
      }
      std::string group_version;
      if (seg.size() == 4 && seg[2] == "api") {
        group_version = seg[3];
      } else if (seg.size() == 5 && seg[2] == "apis") {
        group_version = seg[3] + "/" + seg[4];
      } else {
        throw NotFoundPath();
      }
      return JsonResponse(200, catalog.OpenApiDocument(group_version));
    }
    throw NotFoundPath();
  }
  if (request.method != "GET") {
    if ((seg.size() == 1 && (seg[0] == "api" || seg[0] == "apis")) || (seg.size() == 2 && seg[0] == "api") ||
        (seg.size() <= 3 && seg.size() >= 2 && seg[0] == "apis")) {
      throw MethodNotAllowed(request.method, "discovery");
    }
    return std::nullopt;
  }
  const std::string aggregated = AggregatedDiscoveryVersion(request.accept);
  if (seg.size() == 1 && seg[0] == "api") {
    if (!aggregated.empty()) {
      return Aggregated(catalog.AggregatedDiscovery(true), aggregated);
    }
    return JsonResponse(200, {{"kind", "APIVersions"},
                              {"versions", {"v1"}},
                              {"serverAddressByClientCIDRs",
                               {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}});
  }
  if (seg.size() == 1 && seg[0] == "apis") {
    if (!aggregated.empty()) {
      return Aggregated(catalog.AggregatedDiscovery(false), aggregated);
    }
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& [name, versions] : Groups(catalog)) {
      groups.push_back(GroupJson(name, versions));
    }
    return JsonResponse(200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}});
  }
  if (seg.size() == 2 && seg[0] == "api") {
    return JsonResponse(200, ResourceList(catalog, "", seg[1]));
  }
  if (seg.size() == 2 && seg[0] == "apis") {
    const auto groups = Groups(catalog);
    const auto it = groups.find(seg[1]);
    if (it == groups.end()) {
      throw NotFoundPath();
    }
    nlohmann::json body = GroupJson(it->first, it->second);
    body["kind"] = "APIGroup";
    body["apiVersion"] = "v1";
    return JsonResponse(200, body);
  }
  if (seg.size() == 3 && seg[0] == "apis") {
    return JsonResponse(200, ResourceList(catalog, seg[1], seg[2]));
  }
  return std::nullopt;
}

}  // namespace ringleader::devcluster
