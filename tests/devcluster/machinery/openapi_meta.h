// The meta/v1 pieces of the API server's OpenAPI v3 documents for custom resources: the
// ObjectMeta and ListMeta components (with those they reference) and the apiVersion, kind and
// metadata properties apiextensions' builder gives every custom resource schema.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ringleader::devcluster {

inline constexpr char kObjectMetaSchema[] = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
inline constexpr char kListMetaSchema[] = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

// components.schemas entries: ObjectMeta, ListMeta, ManagedFieldsEntry, OwnerReference, Time and
// FieldsV1, as kube-apiserver 1.32 publishes them (descriptions shortened to their first
// sentence; the fields, types and list/patch extensions kubectl reads are all there).
nlohmann::json MetaV1Components();

// builder.go's buildKubeNative for a structural schema: `schema` with apiVersion and kind from
// TypeMeta and metadata as a $ref to ObjectMeta, and the same three added to every
// x-kubernetes-embedded-resource object inside (with kind and apiVersion required there).
nlohmann::json WithKubeNativeProperties(nlohmann::json schema);

// builder.go's buildListSchema.
nlohmann::json ListSchema(const std::string& list_kind, const std::string& kind,
                          const std::string& plural, const std::string& item_schema_name);

}  // namespace ringleader::devcluster
