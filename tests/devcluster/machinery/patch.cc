// Merge, JSON and strategic merge patches. Strategic merge follows the apimachinery rules: maps
// merge key by key, null deletes, lists with a merge strategy merge by their merge key (or as a
// set for primitives), other lists are replaced, and the $patch, $retainKeys,
// $setElementOrder/ and $deleteFromPrimitiveList/ directives steer it.
#include "tests/devcluster/machinery/patch.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <vector>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeysDirective = "$retainKeys";
constexpr std::string_view kSetElementOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/";

std::string ChildPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The media type without parameters, lower-cased.
std::string MediaType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) {
    type.remove_suffix(1);
  }
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.front()))) {
    type.remove_prefix(1);
  }
  std::string out(type);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// nlohmann's message without its "[json.exception.x.N] " prefix.
std::string LibraryMessage(const std::exception& error) {
  std::string_view text = error.what();
  if (text.starts_with("[json.exception.")) {
    size_t end = text.find("] ");
    if (end != std::string_view::npos) {
      text.remove_prefix(end + 2);
    }
  }
  return std::string(text);
}

class StrategicMerger {
 public:
  StrategicMerger(const PatchSchema& schema, std::string_view kind) : schema_(schema), kind_(kind) {}

  // The merged map, or nullopt when the patch says `$patch: delete`.
  std::optional<json> MergeMap(const json& original, const json& patch, const std::string& path) {
    json result = original.is_object() ? original : json::object();
    json rest = patch;
    if (auto it = rest.find(kPatchDirective); it != rest.end()) {
      if (!it->is_string()) {
        throw BadRequest("invalid value for $patch in map: " + patch.dump());
      }
      std::string directive = it->get<std::string>();
      rest.erase(it);
      if (directive == "delete") {
        return std::nullopt;
      }
      if (directive == "replace") {
        result = json::object();
      } else if (directive != "merge") {
        throw BadRequest("unknown patch type: " + directive + " in map: " + patch.dump());
      }
    }
    if (auto it = rest.find(kRetainKeysDirective); it != rest.end()) {
      if (!it->is_array()) {
        throw BadRequest("invalid $retainKeys value in map: " + patch.dump());
      }
      std::set<std::string> keep;
      for (const json& key : *it) {
        if (!key.is_string()) {
          throw BadRequest("invalid $retainKeys value in map: " + patch.dump());
        }
        keep.insert(key.get<std::string>());
      }
      for (const auto& [key, value] : rest.items()) {
        if (!key.starts_with("$") && !value.is_null() && !keep.contains(key)) {
          throw BadRequest("map: " + patch.dump() + " has field " + key +
                           " that is not in $retainKeys");
        }
      }
      for (auto field = result.begin(); field != result.end();) {
        field = keep.contains(field.key()) ? std::next(field) : result.erase(field);
      }
      rest.erase(kRetainKeysDirective);
    }
    std::vector<std::pair<std::string, json>> orders;
    for (const auto& [key, value] : rest.items()) {
      if (key.starts_with(kDeleteFromPrimitiveListPrefix)) {
        std::string field = key.substr(kDeleteFromPrimitiveListPrefix.size());
        if (!value.is_array()) {
          throw BadRequest("invalid " + key + " value: " + value.dump());
        }
        if (auto list = result.find(field); list != result.end() && list->is_array()) {
          json kept = json::array();
          for (const json& element : *list) {
            if (std::find(value.begin(), value.end(), element) == value.end()) {
              kept.push_back(element);
            }
          }
          *list = std::move(kept);
        }
      } else if (key.starts_with(kSetElementOrderPrefix)) {
        if (!value.is_array()) {
          throw BadRequest("invalid " + key + " value: " + value.dump());
        }
        orders.emplace_back(key.substr(kSetElementOrderPrefix.size()), value);
      }
    }
    json before = result;
    for (const auto& [key, value] : rest.items()) {
      if (key.starts_with("$")) {
        if (key.starts_with(kSetElementOrderPrefix) ||
            key.starts_with(kDeleteFromPrimitiveListPrefix)) {
          continue;
        }
        throw BadRequest("unknown directive " + key + " in map: " + patch.dump());
      }
      std::string child = ChildPath(path, key);
      if (value.is_null()) {
        result.erase(key);
      } else if (value.is_object()) {
        auto existing = result.find(key);
        std::optional<json> merged =
            MergeMap(existing == result.end() ? json() : *existing, value, child);
        if (merged) {
          result[key] = std::move(*merged);
        } else {
          result.erase(key);
        }
      } else if (value.is_array()) {
        const FieldPatchRule* rule = schema_.Find(kind_, child);
        if (rule != nullptr && rule->merge) {
          auto existing = result.find(key);
          result[key] = MergeList(existing == result.end() ? json::array() : *existing, value,
                                  child, *rule);
        } else {
          result[key] = value;
        }
      } else {
        result[key] = value;
      }
    }
    for (const auto& [field, order] : orders) {
      auto list = result.find(field);
      if (list == result.end() || !list->is_array()) {
        continue;
      }
      const FieldPatchRule* rule = schema_.Find(kind_, ChildPath(path, field));
      std::string merge_key = rule == nullptr ? "" : rule->merge_key;
      auto old = before.find(field);
      *list = Reorder(*list, order, old == before.end() ? json::array() : *old, merge_key);
    }
    return result;
  }

 private:
  json MergeList(const json& original, const json& patch, const std::string& path,
                 const FieldPatchRule& rule) {
    json result = original.is_array() ? original : json::array();
    for (const json& element : patch) {
      if (element.is_object() && element.size() == 1 &&
          element.value(std::string(kPatchDirective), json()) == "replace") {
        json replaced = json::array();
        for (const json& other : patch) {
          if (&other == &element) {
            continue;
          }
          if (other.is_object()) {
            std::optional<json> clean = MergeMap(json::object(), other, path);
            if (clean) {
              replaced.push_back(std::move(*clean));
            }
          } else {
            replaced.push_back(other);
          }
        }
        return replaced;
      }
    }
    if (rule.merge_key.empty()) {
      for (const json& element : patch) {
        if (std::find(result.begin(), result.end(), element) == result.end()) {
          result.push_back(element);
        }
      }
      return result;
    }
    for (const json& element : patch) {
      if (!element.is_object()) {
        throw BadRequest("list " + path + " with merge key " + rule.merge_key +
                         " holds a non-map element: " + element.dump());
      }
      auto key = element.find(rule.merge_key);
      if (key == element.end()) {
        throw BadRequest("map: " + element.dump() +
                         " does not contain declared merge key: " + rule.merge_key);
      }
      auto match = std::find_if(result.begin(), result.end(), [&](const json& existing) {
        return existing.is_object() && existing.contains(rule.merge_key) &&
               existing[rule.merge_key] == *key;
      });
      if (element.value(std::string(kPatchDirective), json()) == "delete") {
        result.erase(std::remove_if(result.begin(), result.end(),
                                    [&](const json& existing) {
                                      return existing.is_object() &&
                                             existing.contains(rule.merge_key) &&
                                             existing[rule.merge_key] == *key;
                                    }),
                     result.end());
        continue;
      }
      std::optional<json> merged =
          MergeMap(match == result.end() ? json::object() : *match, element, path);
      if (match == result.end()) {
        if (merged) {
          result.push_back(std::move(*merged));
        }
      } else if (merged) {
        *match = std::move(*merged);
      } else {
        result.erase(match);
      }
    }
    return result;
  }

  // Orders `list` as $setElementOrder says: the elements it names in its order, with the others
  // (server-only elements) slotted in where they stood relative to them in `before`.
  static json Reorder(const json& list, const json& order, const json& before,
                      const std::string& merge_key) {
    auto identity = [&](const json& element) {
      if (!merge_key.empty() && element.is_object()) {
        return element.value(merge_key, json());
      }
      return element;
    };
    auto index_in = [&](const json& haystack, const json& id) -> long {
      for (size_t i = 0; i < haystack.size(); ++i) {
        if (identity(haystack[i]) == id) {
          return static_cast<long>(i);
        }
      }
      return -1;
    };
    std::vector<json> ordered;
    std::vector<json> server_only;
    for (const json& element : list) {
      (index_in(order, identity(element)) >= 0 ? ordered : server_only).push_back(element);
    }
    std::stable_sort(ordered.begin(), ordered.end(), [&](const json& a, const json& b) {
      return index_in(order, identity(a)) < index_in(order, identity(b));
    });
    json result = json::array();
    size_t i = 0;
    size_t j = 0;
    while (i < server_only.size() || j < ordered.size()) {
      bool take_server = j >= ordered.size();
      if (i < server_only.size() && j < ordered.size()) {
        long server_index = index_in(before, identity(server_only[i]));
        long patch_index = index_in(before, identity(ordered[j]));
        take_server = server_index >= 0 && patch_index >= 0 && server_index < patch_index;
      }
      result.push_back(take_server ? server_only[i++] : ordered[j++]);
    }
    return result;
  }

  const PatchSchema& schema_;
  std::string kind_;
};

PatchSchema MakeBuiltin() {
  PatchSchema schema;
  auto merge = [](std::string key) { return FieldPatchRule{true, std::move(key), false}; };
  const FieldPatchRule kReplace{false, "", false};
  const FieldPatchRule kSet{true, "", false};

  schema.Add("*", "metadata.finalizers", kSet);
  schema.Add("*", "metadata.ownerReferences", merge("uid"));

  // PodSpec, wherever a kind embeds it (k8s.io/api/core/v1 types.go struct tags).
  const std::pair<std::string, std::string> kPodSpecs[] = {
      {"Pod", "spec"},
      {"Deployment", "spec.template.spec"},
      {"ReplicaSet", "spec.template.spec"},
      {"StatefulSet", "spec.template.spec"},
      {"DaemonSet", "spec.template.spec"},
      {"Job", "spec.template.spec"},
      {"CronJob", "spec.jobTemplate.spec.template.spec"},
  };
  for (const auto& [kind, spec] : kPodSpecs) {
    for (const char* containers : {"containers", "initContainers", "ephemeralContainers"}) {
      std::string list = spec + "." + containers;
      schema.Add(kind, list, merge("name"));
      schema.Add(kind, list + ".ports", merge("containerPort"));
      schema.Add(kind, list + ".env", merge("name"));
      schema.Add(kind, list + ".volumeMounts", merge("mountPath"));
      schema.Add(kind, list + ".volumeDevices", merge("devicePath"));
    }
    schema.Add(kind, spec + ".volumes", FieldPatchRule{true, "name", true});
    schema.Add(kind, spec + ".imagePullSecrets", merge("name"));
    schema.Add(kind, spec + ".hostAliases", merge("ip"));
    schema.Add(kind, spec + ".topologySpreadConstraints", merge("topologyKey"));
    schema.Add(kind, spec + ".resourceClaims", FieldPatchRule{true, "name", true});
    schema.Add(kind, spec + ".schedulingGates", merge("name"));
    schema.Add(kind, spec + ".tolerations", kReplace);
    schema.Add(kind, spec + ".readinessGates", kReplace);
  }
  schema.Add("Pod", "status.conditions", merge("type"));
  schema.Add("Pod", "status.podIPs", merge("ip"));
  schema.Add("Pod", "status.hostIPs", merge("ip"));
  for (const char* kind : {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"}) {
    schema.Add(kind, "status.conditions", merge("type"));
  }
  schema.Add("Deployment", "spec.strategy", FieldPatchRule{false, "", true});

  schema.Add("Service", "spec.ports", merge("port"));
  schema.Add("Service", "status.conditions", merge("type"));
  schema.Add("Namespace", "status.conditions", merge("type"));
  schema.Add("Node", "spec.podCIDRs", kSet);
  schema.Add("Node", "spec.taints", kReplace);
  schema.Add("Node", "status.conditions", merge("type"));
  schema.Add("Node", "status.addresses", merge("type"));
  schema.Add("ServiceAccount", "secrets", merge("name"));
  schema.Add("ServiceAccount", "imagePullSecrets", kReplace);
  schema.Add("Role", "rules", kReplace);
  schema.Add("ClusterRole", "rules", kReplace);
  schema.Add("ClusterRole", "aggregationRule.clusterRoleSelectors", kReplace);
  schema.Add("RoleBinding", "subjects", kReplace);
  schema.Add("ClusterRoleBinding", "subjects", kReplace);
  // ConfigMap and Secret hold only maps (data, stringData, binaryData), merged key by key.
  return schema;
}

}  // namespace

const PatchSchema& PatchSchema::Builtin() {
  static const PatchSchema schema = MakeBuiltin();
  return schema;
}

void PatchSchema::Add(std::string kind, std::string path, FieldPatchRule rule) {
  rules_[{std::move(kind), std::move(path)}] = std::move(rule);
}

const FieldPatchRule* PatchSchema::Find(std::string_view kind, std::string_view path) const {
  for (std::string_view candidate : {kind, std::string_view("*")}) {
    auto it = rules_.find(std::make_pair(std::string(candidate), std::string(path)));
    if (it != rules_.end()) {
      return &it->second;
    }
  }
  return nullptr;
}

json StrategicMerge(const json& current, const json& patch, const PatchSchema& schema,
                    std::string_view kind) {
  if (!patch.is_object()) {
    throw BadRequest("strategic merge patch must be a JSON object, got: " + patch.dump());
  }
  StrategicMerger merger(schema, kind);
  std::optional<json> merged = merger.MergeMap(current, patch, "");
  if (!merged) {
    throw BadRequest("$patch: delete is not allowed on the whole object");
  }
  return *merged;
}

json ApplyPatch(const json& current, std::string_view content_type, const json& patch,
                const PatchSchema& schema, bool is_custom_resource) {
  std::string type = MediaType(content_type);
  if (type == kMergePatch || type == kApplyPatch) {
    if (!patch.is_object()) {
      throw BadRequest("the patch must be a JSON object, got: " + patch.dump());
    }
    json result = current;
    result.merge_patch(patch);
    return result;
  }
  if (type == kJsonPatch) {
    if (!patch.is_array()) {
      throw BadRequest("json: cannot unmarshal " + std::string(patch.type_name()) +
                       " into Go value of type jsonpatch.Patch");
    }
    try {
      return current.patch(patch);
    } catch (const json::parse_error& error) {
      throw BadRequest(LibraryMessage(error));
    } catch (const json::exception& error) {
      throw ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                     {{"causes", json::array({{{"message", LibraryMessage(error)}}})}});
    }
  }
  if (type == kStrategicMergePatch && !is_custom_resource) {
    std::string kind = current.is_object() ? current.value("kind", "") : "";
    if (kind.empty() && patch.is_object()) {
      kind = patch.value("kind", "");
    }
    return StrategicMerge(current, patch, schema, kind);
  }
  std::vector<std::string> accepted = {std::string(kJsonPatch), std::string(kMergePatch)};
  if (!is_custom_resource) {
    accepted.emplace_back(kStrategicMergePatch);
  }
  accepted.emplace_back(kApplyPatch);
  throw UnsupportedMediaType(accepted);
}

}  // namespace ringleader::devcluster
