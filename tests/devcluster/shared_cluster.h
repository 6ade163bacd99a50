// One devcluster for every TEST of a program (a real control plane takes seconds to start and to
// stop), and what each TEST takes from it: a namespace of its own, ready for Pods, CRDs installed
// and Established (cluster_objects.h), and waits that poll a condition up to a deadline.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/cluster_objects.h"
#include "tests/devcluster/devcluster.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::testing {

// A namespace name for the running TEST: "t<n>-" and the TEST's name in kebab case, at most 56
// characters, which leaves a DNS label (63) room for a suffix such as "-else" (n counts the
// calls, so a repeated TEST gets a fresh one).
inline std::string NamespaceForCurrentTest() {
  static int calls = 0;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "t" + std::to_string(++calls) + "-";
  for (const char c : std::string(test != nullptr ? test->name() : "test")) {
    if (std::isupper(static_cast<unsigned char>(c)) != 0 && name.back() != '-') {
      name += '-';
    }
    name += std::isalnum(static_cast<unsigned char>(c)) != 0
                ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                : '-';
  }
  name.resize(std::min<std::size_t>(name.size(), 56));
  while (name.back() == '-') {
    name.pop_back();
  }
  return name;
}

// Creates namespace `name` and waits for its default ServiceAccount, which the controller
// manager adds a moment later: the API server refuses Pods in the namespace until then.
inline void CreateNamespace(kube::Client& client, const std::string& name) {
  client.Create(kube::Namespaces(), "",
                {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  const kube::Resource service_accounts{"", "v1", "serviceaccounts", true};
  if (!PollUntil([&] { return Exists(client, service_accounts, name, "default"); }, std::chrono::seconds(60))) {
    throw std::runtime_error("namespace " + name + " got no default ServiceAccount within 60 s");
  }
}

// Deletes the namespace without waiting: the namespace controller removes what it holds.
inline void DeleteNamespace(kube::Client& client, const std::string& name) {
  try {
    client.Delete(kube::Namespaces(), "", name);
  } catch (const kube::ApiError& e) {
    if (!kube::IsNotFound(e)) {
      throw;
    }
  }
}

// The cluster a test suite shares: Start from SetUpTestSuite, Stop from TearDownTestSuite. A
// failed start is kept, so that each TEST fails with it (ASSERT_TRUE(cluster.ok()) << error())
// instead of crashing.
class SharedCluster {
 public:
  // Starts the cluster in a fresh directory (its client files under dir()/"dc"), with the
  // TrainingJob CRD installed and Established.
  void Start(devcluster::Options options = {}) {
    try {
      dir_ = MakeTempDir("ringleader-devcluster-it");
      options.data_dir = (dir_ / "dc").string();
      cluster_ = devcluster::DevCluster::Start(options);
      kube::ClientOptions client_options;
      client_options.qps = 0;
      InstallCrd(*kube::MakeClient(config(), client_options),
                 yaml::LoadYamlFile("crds/ringleader.dev_trainingjobs.yaml"));
    } catch (const std::exception& e) {
      error_ = std::string("the devcluster did not start: ") + e.what();
      Stop();
    }
  }

  void Stop() {
    if (cluster_) {
      cluster_->Stop();
      cluster_.reset();
    }
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
      dir_.clear();
    }
  }

  bool ok() const { return cluster_ != nullptr; }
  const std::string& error() const { return error_; }
  devcluster::DevCluster& operator*() { return *cluster_; }
  devcluster::DevCluster* operator->() { return cluster_.get(); }
  const std::filesystem::path& dir() const { return dir_; }

  // cluster-admin, to the API server itself.
  kube::Config config() const { return kube::LoadKubeconfig(cluster_->kubeconfig_path()); }
  // cluster-admin, through the fault proxy: what faults() decides applies.
  kube::Config proxy_config() const {
    kube::Config config = this->config();
    config.server = cluster_->proxy_url();
    return config;
  }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::string error_;
};

}  // namespace ringleader::testing
