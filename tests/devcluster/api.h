// The API server's semantics over the store, without HTTP: get, list, create, update, patch and
// delete of any served resource, with resourceVersion conflicts, generation, the status
// subresource, custom-resource schemas, CRDs that change what is served, finalizers and
// owner-reference garbage collection. Failures throw ApiError.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "tests/devcluster/catalog.h"
#include "tests/devcluster/machinery/resource_registry.h"
#include "tests/devcluster/store.h"

namespace ringleader::devcluster {

struct WriteOptions {
  bool dry_run = false;           // dryRun=All: validate and answer, store nothing
  std::string field_validation;   // "Strict" rejects unknown custom-resource fields; else they are pruned
  std::string field_manager;      // accepted and ignored (no managedFields)
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::size_t limit = 0;  // 0: everything
  std::string continue_token;
};

struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;
  std::string continue_token;      // "" on the last page
  long long remaining_items = -1;  // with a continue token: how many items follow
};

struct WriteResult {
  int code;  // 200, 201 (created) or 202 (deletion pending on finalizers)
  nlohmann::json object;
};

class Api {
 public:
  Api(Store& store, Catalog& catalog);

  nlohmann::json Get(const ResourceInfo& info, const std::string& ns, const std::string& name) const;
  // `ns` empty lists every namespace. Items are sorted by namespace and name.
  ListResult List(const ResourceInfo& info, const std::string& ns, const ListOptions& options) const;
  // {"kind": <ListKind>, "apiVersion", "metadata": {resourceVersion, continue?}, "items": [...]}.
  static nlohmann::json ListBody(const ResourceInfo& info, const ListResult& list);

  WriteResult Create(const ResourceInfo& info, const std::string& ns, nlohmann::json body,
                     const WriteOptions& options);
  // `subresource` is "" or "status".
  WriteResult Update(const ResourceInfo& info, const std::string& ns, const std::string& name,
                     const std::string& subresource, nlohmann::json body, const WriteOptions& options);
  // Apply patches (application/apply-patch+yaml) create a missing object (201).
  WriteResult Patch(const ResourceInfo& info, const std::string& ns, const std::string& name,
                    const std::string& subresource, const std::string& content_type, const nlohmann::json& patch,
                    const WriteOptions& options);
  // `delete_options` is a DeleteOptions body (propagationPolicy, preconditions, orphanDependents,
  // gracePeriodSeconds); null means defaults (Background). A Pod bound to a node and not finished
  // is deleted gracefully (graceful_deletion.h): marked and answered 200, its kubelet removes it.
  WriteResult Delete(const ResourceInfo& info, const std::string& ns, const std::string& name,
                     const nlohmann::json& delete_options, bool dry_run);
  // POST pods/NAME/eviction with an Eviction `body` (eviction.h): DisruptionTarget on the Pod,
  // then Delete with the Eviction's DeleteOptions. Answers 201 with a Status Success.
  WriteResult Evict(const std::string& ns, const std::string& name, const nlohmann::json& body, bool dry_run);
  // Deletes every object the selectors match; returns the List of what was deleted.
  nlohmann::json DeleteCollection(const ResourceInfo& info, const std::string& ns, const ListOptions& options,
                                  const nlohmann::json& delete_options);

  // Creates a Namespace object unless it exists (the server keeps "default", "kube-system",
  // "kube-public" and "kube-node-lease"). Creating anything in a namespace that does not exist is
  // a 404, as kube-apiserver's NamespaceLifecycle admission answers.
  void EnsureNamespace(const std::string& name);

 private:
  // Every owner in metadata.ownerReferences is missing (or is another incarnation, by uid).
  bool OwnersAllGone(Store::Txn& txn, const nlohmann::json& object, const std::string& ns) const;

  Store& store_;
  Catalog& catalog_;
};

}  // namespace ringleader::devcluster
