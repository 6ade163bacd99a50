// The Eviction API (POST pods/NAME/eviction), as kube-apiserver's EvictionREST answers it: the
// policy/v1 (or v1beta1) Eviction body checked, then the Pod gets DisruptionTarget=True (reason
// EvictionByEvictionAPI) and is deleted with the Eviction's DeleteOptions, gracefully. devcluster
// serves no PodDisruptionBudgets, so no budget can refuse an eviction.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tests/devcluster/machinery/object_meta.h"

namespace ringleader::devcluster {

struct EvictionRequest {
  nlohmann::json delete_options = nlohmann::json::object();  // the Eviction's deleteOptions
  bool dry_run = false;  // dryRun=All on the request or ["All"] in deleteOptions
};

// Checks an Eviction body against the URL's namespace and Pod name. Throws ApiError 400 in the
// server's words: another API version or kind, a name other than the URL's ("name in URL does
// not match name in Eviction object"), another namespace, malformed deleteOptions.
EvictionRequest ParseEviction(const nlohmann::json& body, const std::string& ns, const std::string& name,
                              bool dry_run_query);

// `pod` with DisruptionTarget=True, reason EvictionByEvictionAPI, message "Eviction API: evicting",
// as podutil.UpdatePodCondition sets it (lastTransitionTime kept while the status stays True).
nlohmann::json WithEvictionCondition(nlohmann::json pod, Time now);

// The preconditions of the Eviction's deleteOptions against the Pod, worded as the server's
// eviction checks them before it adds the condition. Throws ApiError 409.
void CheckEvictionPreconditions(const nlohmann::json& pod, const nlohmann::json& delete_options);

// The answer to an eviction that went through: a Status Success with code 201.
nlohmann::json EvictionSucceeded();

}  // namespace ringleader::devcluster
