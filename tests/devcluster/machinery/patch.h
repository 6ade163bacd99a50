// PATCH bodies applied to stored objects: JSON merge patch (RFC 7386), JSON patch (RFC 6902),
// strategic merge patch for built-in kinds, and server-side apply approximated as a merge patch.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace ringleader::devcluster {

// How strategic merge treats one list (or map) field: its Go struct tags
// `patchStrategy:"merge" patchMergeKey:"name"`.
struct FieldPatchRule {
  bool merge = false;        // merge the list (false: the patch replaces it)
  std::string merge_key;     // for lists of objects; empty for lists of primitives (a set)
  bool retain_keys = false;  // the field honours $retainKeys (informational; applied if present)
};

// Patch strategies per (kind, field path). The path is the JSON path of the field with list
// indexes removed: "spec.containers", "spec.containers.ports", "spec.template.spec.containers".
// Fields not listed are merged when they are objects and replaced when they are lists, which is
// what the real server does for fields without a patchStrategy.
class PatchSchema {
 public:
  // Pod, Service, Deployment, Node, Namespace, ConfigMap, Secret, ServiceAccount, Role,
  // ClusterRole, RoleBinding, ClusterRoleBinding, plus metadata fields for every kind
  // (finalizers merged as a set, ownerReferences by uid).
  static const PatchSchema& Builtin();

  // kind "*" applies to every kind.
  void Add(std::string kind, std::string path, FieldPatchRule rule);
  // The rule for kind (else "*") at path, or nullptr.
  const FieldPatchRule* Find(std::string_view kind, std::string_view path) const;

 private:
  std::map<std::pair<std::string, std::string>, FieldPatchRule, std::less<>> rules_;
};

// Content types a PATCH may carry.
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kJsonPatch = "application/json-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";
inline constexpr std::string_view kApplyPatch = "application/apply-patch+yaml";

// Returns `current` with `patch` applied. `content_type` may carry parameters ("; charset=...").
// The kind for strategic merge is current["kind"] (else patch["kind"]).
// Throws ApiError: 415 for an unknown type, or strategic merge on a custom resource (as the real
// server, whose message lists the accepted types); 400 for a malformed patch; 422 "the server
// rejected our request due to an error in our request" when a JSON patch operation fails (the
// cause says which), as the real server does.
nlohmann::json ApplyPatch(const nlohmann::json& current, std::string_view content_type,
                          const nlohmann::json& patch, const PatchSchema& schema,
                          bool is_custom_resource);

// Strategic merge alone (exposed for tests and for kubectl-style three-way diffs).
nlohmann::json StrategicMerge(const nlohmann::json& current, const nlohmann::json& patch,
                              const PatchSchema& schema, std::string_view kind);

}  // namespace ringleader::devcluster
