// ObjectMeta and friends for devcluster's /openapi/v3 custom-resource documents, so that kubectl's
// client-side apply finds metadata's fields (annotations, labels, ownerReferences with their
// merge keys) as it does against kube-apiserver.
#include "tests/devcluster/machinery/openapi_meta.h"

#include <algorithm>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

constexpr char kConventions[] =
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md";

std::string Ref(const std::string& name) { return "#/components/schemas/" + name; }

// How the server's v3 documents point at another component from a property.
json AllOfRef(const std::string& name, const std::string& description) {
  return {{"allOf", json::array({{{"$ref", Ref(name)}}})},
          {"default", json::object()},
          {"description", description}};
}

json Text(const std::string& description) {
  return {{"type", "string"}, {"description", description}};
}

json Integer64(const std::string& description) {
  return {{"type", "integer"}, {"format", "int64"}, {"description", description}};
}

json StringMap(const std::string& description) {
  return {{"type", "object"},
          {"additionalProperties", {{"type", "string"}, {"default", ""}}},
          {"description", description}};
}

const std::string kTime = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const std::string kFieldsV1 = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1";
const std::string kManagedFieldsEntry = "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";
const std::string kOwnerReference = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference";

json TypeMetaApiVersion() {
  return Text(
      "APIVersion defines the versioned schema of this representation of an object. Servers should "
      "convert recognized schemas to the latest internal value, and may reject unrecognized "
      "values. "
      "More info: " +
      std::string(kConventions) + "#resources");
}

json TypeMetaKind() {
  return Text(
      "Kind is a string value representing the REST resource this object represents. Servers may "
      "infer "
      "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. "
      "More "
      "info: " +
      std::string(kConventions) + "#types-kinds");
}

json ObjectMetaRef() {
  return {{"$ref", Ref(kObjectMetaSchema)},
          {"description",
           "Standard object's metadata. More info: " + std::string(kConventions) + "#metadata"}};
}

void AddEmbeddedProperties(json& schema) {
  if (!schema.is_object()) {
    return;
  }
  if (auto properties = schema.find("properties");
      properties != schema.end() && properties->is_object()) {
    for (auto& [key, property] : properties->items()) {
      AddEmbeddedProperties(property);
    }
  }
  if (auto items = schema.find("items"); items != schema.end()) {
    AddEmbeddedProperties(*items);
  }
  if (auto additional = schema.find("additionalProperties"); additional != schema.end()) {
    AddEmbeddedProperties(*additional);
  }
  if (schema.value("x-kubernetes-embedded-resource", false)) {
    json api_version = TypeMetaApiVersion();
    api_version["description"] =
        "apiVersion defines the versioned schema of this representation of an object. More info: " +
        std::string(kConventions) + "#resources";
    json kind = TypeMetaKind();
    kind["description"] =
        "kind is a string value representing the type of this object. In CamelCase. More info: " +
        std::string(kConventions) + "#types-kinds";
    schema["properties"]["apiVersion"] = api_version;
    schema["properties"]["kind"] = kind;
    schema["properties"]["metadata"] = ObjectMetaRef();
    json& required = schema["required"];
    if (!required.is_array()) {
      required = json::array();
    }
    for (const char* key : {"kind", "apiVersion"}) {
      if (std::find(required.begin(), required.end(), json(key)) == required.end()) {
        required.push_back(key);
      }
    }
  }
}

}  // namespace

json MetaV1Components() {
  json components = json::object();
  components[kObjectMetaSchema] = {
      {"type", "object"},
      {"description",
       "ObjectMeta is metadata that all persisted resources must have, which includes all objects "
       "users must "
       "create."},
      {"properties",
       {{"annotations", StringMap("Annotations is an unstructured key value map stored with a "
                                  "resource that may be set by "
                                  "external tools to store and retrieve arbitrary metadata.")},
        {"creationTimestamp", AllOfRef(kTime,
                                       "CreationTimestamp is a timestamp representing the server "
                                       "time when this object was created.")},
        {"deletionGracePeriodSeconds",
         Integer64("Number of seconds allowed for this object to gracefully terminate before it "
                   "will be removed from the "
                   "system.")},
        {"deletionTimestamp", AllOfRef(kTime,
                                       "DeletionTimestamp is RFC 3339 date and time at which this "
                                       "resource will be deleted.")},
        {"finalizers",
         {{"type", "array"},
          {"items", {{"type", "string"}, {"default", ""}}},
          {"x-kubernetes-list-type", "set"},
          {"x-kubernetes-patch-strategy", "merge"},
          {"description",
           "Must be empty before the object is deleted from the registry. Each entry is an "
           "identifier for the "
           "responsible component that will remove the entry from the list."}}},
        {"generateName", Text("GenerateName is an optional prefix, used by the server, to generate "
                              "a unique name ONLY IF the Name field "
                              "has not been provided.")},
        {"generation",
         Integer64("A sequence number representing a specific generation of the desired state.")},
        {"labels", StringMap("Map of string keys and values that can be used to organize and "
                             "categorize (scope and select) "
                             "objects.")},
        {"managedFields",
         {{"type", "array"},
          {"items",
           {{"allOf", json::array({{{"$ref", Ref(kManagedFieldsEntry)}}})},
            {"default", json::object()}}},
          {"x-kubernetes-list-type", "atomic"},
          {"description",
           "ManagedFields maps workflow-id and version to the set of fields that are managed by "
           "that workflow."}}},
        {"name", Text("Name must be unique within a namespace.")},
        {"namespace", Text("Namespace defines the space within which each name must be unique.")},
        {"ownerReferences",
         {{"type", "array"},
          {"items",
           {{"allOf", json::array({{{"$ref", Ref(kOwnerReference)}}})},
            {"default", json::object()}}},
          {"x-kubernetes-list-map-keys", json::array({"uid"})},
          {"x-kubernetes-list-type", "map"},
          {"x-kubernetes-patch-merge-key", "uid"},
          {"x-kubernetes-patch-strategy", "merge"},
          {"description", "List of objects depended by this object."}}},
        {"resourceVersion", Text("An opaque value that represents the internal version of this "
                                 "object that can be used by clients to "
                                 "determine when objects have changed.")},
        {"selfLink", Text("Deprecated: selfLink is a legacy read-only field that is no longer "
                          "populated by the system.")},
        {"uid", Text("UID is the unique in time and space value for this object.")}}}};
  components[kListMetaSchema] = {
      {"type", "object"},
      {"description",
       "ListMeta describes metadata that synthetic resources must have, including lists and "
       "various status "
       "objects."},
      {"properties",
       {{"continue",
         Text("continue may be set if the user set a limit on the number of items returned.")},
        {"remainingItemCount", Integer64("remainingItemCount is the number of subsequent items in "
                                         "the list which are not included in this list "
                                         "response.")},
        {"resourceVersion", Text("String that identifies the server's internal version of this "
                                 "object that can be used by clients to "
                                 "determine when objects have changed.")},
        {"selfLink", Text("Deprecated: selfLink is a legacy read-only field that is no longer "
                          "populated by the system.")}}}};
  components[kManagedFieldsEntry] = {
      {"type", "object"},
      {"description",
       "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that "
       "the fieldset "
       "applies to."},
      {"properties",
       {{"apiVersion",
         Text("APIVersion defines the version of this resource that this field set applies to.")},
        {"fieldsType",
         Text("FieldsType is the discriminator for the different fields format and version.")},
        {"fieldsV1", AllOfRef(kFieldsV1,
                              "FieldsV1 holds the first JSON version format as described in the "
                              "\"FieldsV1\" type.")},
        {"manager", Text("Manager is an identifier of the workflow managing these fields.")},
        {"operation", Text("Operation is the type of operation which lead to this "
                           "ManagedFieldsEntry being created.")},
        {"subresource", Text("Subresource is the name of the subresource used to update that "
                             "object, or empty string if "
                             "the object was updated through the main resource.")},
        {"time",
         AllOfRef(kTime, "Time is the timestamp of when the ManagedFields entry was added.")}}}};
  components[kOwnerReference] = {
      {"type", "object"},
      {"description",
       "OwnerReference contains enough information to let you identify an owning object. An owning "
       "object must be "
       "in the same namespace as the dependent, or be cluster-scoped, so there is no namespace "
       "field."},
      {"required", json::array({"apiVersion", "kind", "name", "uid"})},
      {"x-kubernetes-map-type", "atomic"},
      {"properties",
       {{"apiVersion",
         {{"type", "string"}, {"default", ""}, {"description", "API version of the referent."}}},
        {"blockOwnerDeletion",
         {{"type", "boolean"},
          {"description",
           "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner "
           "cannot be deleted from the "
           "key-value store until this reference is removed."}}},
        {"controller",
         {{"type", "boolean"},
          {"description", "If true, this reference points to the managing controller."}}},
        {"kind", {{"type", "string"}, {"default", ""}, {"description", "Kind of the referent."}}},
        {"name", {{"type", "string"}, {"default", ""}, {"description", "Name of the referent."}}},
        {"uid", {{"type", "string"}, {"default", ""}, {"description", "UID of the referent."}}}}}};
  components[kTime] = {
      {"type", "string"},
      {"format", "date-time"},
      {"description",
       "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  "
       "Wrappers "
       "are provided for many of the factory methods that the time package offers."}};
  components[kFieldsV1] = {
      {"type", "object"},
      {"description",
       "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format."}};
  return components;
}

json WithKubeNativeProperties(json schema) {
  if (!schema.is_object()) {
    schema = json{{"type", "object"}};
  }
  AddEmbeddedProperties(schema);
  schema["properties"]["metadata"] = ObjectMetaRef();
  schema["properties"]["apiVersion"] = TypeMetaApiVersion();
  schema["properties"]["kind"] = TypeMetaKind();
  return schema;
}

json ListSchema(const std::string& list_kind, const std::string& kind, const std::string& plural,
                const std::string& item_schema_name) {
  return {{"type", "object"},
          {"description", list_kind + " is a list of " + kind},
          {"required", json::array({"items"})},
          {"properties",
           {{"apiVersion", TypeMetaApiVersion()},
            {"kind", TypeMetaKind()},
            {"items",
             {{"type", "array"},
              {"items", {{"$ref", Ref(item_schema_name)}}},
              {"description", "List of " + plural + ". More info: " + std::string(kConventions)}}},
            {"metadata",
             {{"$ref", Ref(kListMetaSchema)},
              {"description", "Standard list metadata. More info: " + std::string(kConventions) +
                                  "#types-kinds"}}}}}};
}

}  // namespace ringleader::devcluster
