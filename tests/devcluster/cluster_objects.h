// Objects a test or benchmark waits for on devcluster's real API server: polling with a deadline,
// whether an object exists, and a CRD installed and Established (or removed). No gtest here, so
// benchmarks use it too; shared_cluster.h builds on it.
#pragma once

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "operator/kube/errors.h"
#include "operator/kube/resource.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {

// Checks `condition` every 20 ms until it holds or `timeout` has passed; a kube::ApiError thrown
// by it counts as "not yet". True when it held in time.
inline bool PollUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  return WaitUntil(
      [&] {
        try {
          return condition();
        } catch (const kube::ApiError&) {
          return false;  // not there yet
        }
      },
      timeout, std::chrono::milliseconds(20));
}

inline bool Exists(kube::Client& client, const kube::Resource& resource, const std::string& ns,
                   const std::string& name) {
  try {
    client.Get(resource, ns, name);
    return true;
  } catch (const kube::ApiError& e) {
    if (kube::IsNotFound(e)) {
      return false;
    }
    throw;
  }
}

inline bool CrdEstablished(const nlohmann::json& crd) {
  for (const nlohmann::json& condition :
       crd.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
    if (condition.value("type", "") == "Established" && condition.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

// Creates the CRD unless it exists, and waits until it is Established (its resource is served).
inline void InstallCrd(kube::Client& client, const nlohmann::json& crd) {
  const std::string name = crd["metadata"]["name"];
  try {
    client.Create(kube::CustomResourceDefinitions(), "", crd);
  } catch (const kube::ApiError& e) {
    if (!kube::IsAlreadyExists(e)) {
      throw;
    }
  }
  if (!PollUntil([&] { return CrdEstablished(client.Get(kube::CustomResourceDefinitions(), "", name)); },
                 std::chrono::seconds(60))) {
    throw std::runtime_error("CRD " + name + " was not Established within 60 s");
  }
}

// Deletes the CRD if it exists and waits until it is gone (its objects go first).
inline void RemoveCrd(kube::Client& client, const std::string& name) {
  try {
    client.Delete(kube::CustomResourceDefinitions(), "", name);
  } catch (const kube::ApiError& e) {
    if (!kube::IsNotFound(e)) {
      throw;
    }
  }
  if (!PollUntil([&] { return !Exists(client, kube::CustomResourceDefinitions(), "", name); },
                 std::chrono::seconds(60))) {
    throw std::runtime_error("CRD " + name + " was not gone within 60 s");
  }
}

}  // namespace ringleader::testing
