// Eviction bodies, the DisruptionTarget condition and the eviction's answer.
#include "tests/devcluster/eviction.h"

#include "tests/devcluster/json_field.h"
#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

std::string EvictionMeta(const json& object, const char* field) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    return "";
  }
  const json& meta = object["metadata"];
  return meta.contains(field) && meta[field].is_string() ? meta[field].get<std::string>() : "";
}

std::string EvictionText(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

}  // namespace

EvictionRequest ParseEviction(const json& body, const std::string& ns, const std::string& name, bool dry_run_query) {
  if (!body.is_object()) {
    throw BadRequest("the body of the request must be a policy/v1 Eviction object");
  }
  // The eviction subresource accepts policy/v1 and policy/v1beta1 (AcceptsGroupVersion).
  if (body.contains("apiVersion") && body["apiVersion"] != "policy/v1" && body["apiVersion"] != "policy/v1beta1") {
    throw BadRequest("the API version in the data (" + EvictionText(body["apiVersion"]) +
                     ") does not match the expected API version (policy/v1)");
  }
  if (body.contains("kind") && body["kind"] != "Eviction") {
    throw BadRequest("the kind in the data (" + EvictionText(body["kind"]) + ") does not match the expected kind (Eviction)");
  }
  if (body.contains("metadata") && !body["metadata"].is_object() && !body["metadata"].is_null()) {
    throw BadRequest("metadata must be an object");
  }
  const std::string body_ns = EvictionMeta(body, "namespace");
  if (!body_ns.empty() && body_ns != ns) {
    throw BadRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  if (EvictionMeta(body, "name") != name) {
    throw BadRequest("name in URL does not match name in Eviction object");
  }
  EvictionRequest request;
  request.dry_run = dry_run_query;
  if (body.contains("deleteOptions") && !body["deleteOptions"].is_null()) {
    if (!body["deleteOptions"].is_object()) {
      throw BadRequest("deleteOptions must be a DeleteOptions object");
    }
    request.delete_options = body["deleteOptions"];
    const json& dry_run = request.delete_options.value("dryRun", json::array());
    if (!dry_run.is_array()) {
      throw BadRequest("deleteOptions.dryRun must be a list");
    }
    for (const json& value : dry_run) {
      if (value != "All") {
        throw Invalid("DeleteOptions", "", {{"dryRun", "Unsupported value: " + value.dump() + ": supported values: \"All\""}});
      }
      request.dry_run = true;
    }
  }
  return request;
}

json WithEvictionCondition(json pod, Time now) {
  json condition = {{"type", "DisruptionTarget"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", FormatTime(now)},
                    {"reason", "EvictionByEvictionAPI"},
                    {"message", "Eviction API: evicting"}};
  json& conditions = ArrayFieldForWrite(pod, {"status", "conditions"});
  for (json& existing : conditions) {
    if (existing.is_object() && existing.value("type", "") == "DisruptionTarget") {
      if (existing.value("status", "") == "True" && existing.contains("lastTransitionTime")) {
        condition["lastTransitionTime"] = existing["lastTransitionTime"];
      }
      existing = std::move(condition);
      return pod;
    }
  }
  conditions.push_back(std::move(condition));
  return pod;
}

void CheckEvictionPreconditions(const json& pod, const json& delete_options) {
  if (!delete_options.is_object() || !delete_options.contains("preconditions") ||
      !delete_options["preconditions"].is_object()) {
    return;
  }
  const json& preconditions = delete_options["preconditions"];
  const std::string name = EvictionMeta(pod, "name");
  const std::string uid = preconditions.value("uid", std::string());
  if (!uid.empty() && uid != EvictionMeta(pod, "uid")) {
    throw Conflict("Pod", name,
                   "the UID in the precondition (" + uid + ") does not match the UID in record (" +
                       EvictionMeta(pod, "uid") + "). The object might have been deleted and then recreated");
  }
  const std::string rv = preconditions.value("resourceVersion", std::string());
  if (!rv.empty() && rv != EvictionMeta(pod, "resourceVersion")) {
    throw Conflict("Pod", name,
                   "the ResourceVersion in the precondition (" + rv + ") does not match the ResourceVersion in record (" +
                       EvictionMeta(pod, "resourceVersion") + "). The object might have been modified");
  }
}

json EvictionSucceeded() {
  json status = SuccessStatus();
  status["code"] = 201;
  return status;
}

}  // namespace ringleader::devcluster
