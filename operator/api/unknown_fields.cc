// Walks an object beside its structural schema and names every field the schema does not
// declare, in the server's path syntax (spec.a.b, rules[0].zzz), sorted as the server sorts them.
#include "operator/api/unknown_fields.h"

#include <algorithm>
#include <string>

namespace ringleader::api {
namespace {

using nlohmann::json;

// metav1.ObjectMeta's JSON fields (k8s.io/apimachinery meta/v1), which kube-apiserver decodes
// every root and embedded metadata as, strictly, down to ownerReferences[] and managedFields[].
const json& ObjectMetaSchema() {
  static const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {}, "generateName": {}, "namespace": {}, "selfLink": {}, "uid": {},
      "resourceVersion": {}, "generation": {}, "creationTimestamp": {}, "deletionTimestamp": {},
      "deletionGracePeriodSeconds": {},
      "labels": {"type": "object", "additionalProperties": {}},
      "annotations": {"type": "object", "additionalProperties": {}},
      "finalizers": {"type": "array", "items": {}},
      "ownerReferences": {"type": "array", "items": {"type": "object", "properties": {
        "apiVersion": {}, "kind": {}, "name": {}, "uid": {}, "controller": {},
        "blockOwnerDeletion": {}}}},
      "managedFields": {"type": "array", "items": {"type": "object", "properties": {
        "manager": {}, "operation": {}, "apiVersion": {}, "time": {}, "fieldsType": {},
        "fieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "subresource": {}}}}
    }
  })");
  return schema;
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool Flag(const json& schema, const char* name) {
  const auto it = schema.find(name);
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

void Walk(const json& value, const json& schema, const std::string& path, bool root,
          FieldErrors* errors) {
  if (!schema.is_object()) {
    return;
  }
  if (value.is_array()) {
    const auto items = schema.find("items");
    if (items == schema.end() || schema.value("type", "") != "array") {
      return;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      Walk(value[i], *items, path + "[" + std::to_string(i) + "]", false, errors);
    }
    return;
  }
  // A value of another type than its schema's is a type error, for the type checks to report.
  if (!value.is_object() || schema.value("type", "") != "object") {
    return;
  }
  const auto additional = schema.find("additionalProperties");
  if (additional != schema.end() && additional->is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      Walk(it.value(), *additional, Child(path, it.key()), false, errors);
    }
    return;
  }
  const bool preserve = Flag(schema, "x-kubernetes-preserve-unknown-fields") ||
                        (additional != schema.end() && additional->is_boolean() &&
                         additional->get<bool>());
  // The server fills in apiVersion, kind and metadata of the root and of an embedded resource
  // itself; the schema need not (and for metadata may not) describe them.
  const bool resource = root || Flag(schema, "x-kubernetes-embedded-resource");
  const auto properties = schema.find("properties");
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    const std::string child = Child(path, key);
    if (resource && key == "metadata") {
      Walk(it.value(), ObjectMetaSchema(), child, false, errors);
      continue;
    }
    if (properties != schema.end() && properties->is_object() && properties->contains(key)) {
      Walk(it.value(), (*properties)[key], child, false, errors);
    } else if (!preserve && !(resource && (key == "apiVersion" || key == "kind"))) {
      errors->push_back({child, "unknown field"});
    }
  }
}

}  // namespace

FieldErrors UnknownFields(const json& object, const json& schema) {
  FieldErrors errors;
  Walk(object, schema, "", true, &errors);
  std::sort(errors.begin(), errors.end(),
            [](const FieldError& a, const FieldError& b) { return a.path < b.path; });
  return errors;
}

}  // namespace ringleader::api
