// Kueue on devcluster: the release's own manifests (scripts/build-kueue copies them from the
// module) with each Service reference replaced by a loopback URL, a serving certificate for
// 127.0.0.1, and a configuration file for a cluster with ringleader's jobs on it.
#include "tests/devcluster/kueue.h"

#include <openssl/evp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/errors.h"
#include "operator/kube/resource.h"
#include "operator/kube/transport.h"
#include "operator/yaml/yaml_to_json.h"
#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/tls.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

kube::Resource MutatingWebhookConfigurations() {
  return {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", false};
}
kube::Resource ValidatingWebhookConfigurations() {
  return {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", false};
}

// The CRDs whose versions Kueue's manager converts (its config/components/crd/kustomization.yaml
// patches exactly these with a conversion webhook at /convert).
const std::set<std::string> kConvertedCrds = {
    "localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io"};

std::string Base64(const std::string& data) {
  std::vector<unsigned char> out(4 * ((data.size() + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  return std::string(out.begin(), out.begin() + n);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("kueue: cannot read " + path.string() + "; scripts/build-kueue writes it");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Tail(const std::filesystem::path& log, std::size_t bytes = 3000) {
  const std::string text = testing::ReadLog(log);
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

void CreateOrReplace(kube::Client& client, const kube::Resource& resource, const json& object) {
  try {
    client.Create(resource, "", object);
  } catch (const kube::ApiError& e) {
    if (e.kind() != kube::ErrorKind::kAlreadyExists) {
      throw;
    }
    json replacement = object;
    replacement["metadata"]["resourceVersion"] =
        client.Get(resource, "", object["metadata"]["name"])["metadata"]["resourceVersion"];
    client.Update(resource, "", replacement);
  }
}

// The webhook manifests as the release installs them: names prefixed "kueue-" (its kustomize
// namePrefix), the namespaceSelectors its webhook kustomization patches in (Pods, Deployments and
// StatefulSets outside kube-system and kueue-system), and every Service reference a URL.
std::vector<json> WebhookConfigurations(const std::filesystem::path& manifests, const std::string& base_url,
                                        const std::string& ca_bundle) {
  std::map<std::string, json> selectors;
  for (const json& patch : yaml::ParseYaml(ReadFile(manifests / "webhook-kustomization.yaml"))["patches"]) {
    for (const json& webhook : yaml::ParseYaml(patch["patch"].get<std::string>())["webhooks"]) {
      selectors[webhook["name"]] = webhook["namespaceSelector"];
    }
  }
  std::vector<json> configurations = yaml::ParseYamlDocuments(ReadFile(manifests / "webhook.yaml"));
  for (json& configuration : configurations) {
    configuration["metadata"]["name"] = "kueue-" + configuration["metadata"]["name"].get<std::string>();
    for (json& webhook : configuration["webhooks"]) {
      const std::string path = webhook["clientConfig"]["service"]["path"];
      webhook["clientConfig"] = {{"url", base_url + path}, {"caBundle", ca_bundle}};
      if (const auto selector = selectors.find(webhook["name"]); selector != selectors.end()) {
        webhook["namespaceSelector"] = selector->second;
      }
    }
  }
  return configurations;
}

std::string ConfigurationYaml(const std::filesystem::path& cert_dir, int webhook_port, int health_port,
                              bool wait_for_pods_ready) {
  std::string yaml =
      "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
      "kind: Configuration\n"
      "namespace: kueue-system\n"
      // Every port on loopback and chosen free, so devclusters side by side never collide.
      "health:\n  healthProbeBindAddress: 127.0.0.1:" +
      std::to_string(health_port) +
      "\n"
      "metrics:\n  bindAddress: \"0\"\n"
      "webhook:\n  host: 127.0.0.1\n  port: " +
      std::to_string(webhook_port) + "\n  certDir: " + cert_dir.string() +
      "\n"
      // One manager, and certificates devcluster makes (internal ones would name a Service).
      "leaderElection:\n  leaderElect: false\n"
      "internalCertManagement:\n  enable: false\n"
      "manageJobsWithoutQueueName: false\n"
      "managedJobsNamespaceSelector:\n  matchLabels:\n    " +
      std::string(kKueueManagedNamespaceLabel) + ": \"" + kKueueManagedNamespaceValue +
      "\"\n"
      "integrations:\n  frameworks:\n  - batch/job\n  - pod\n"
      // The on-demand visibility API is an aggregated API server of its own on a fixed port.
      "featureGates:\n  VisibilityOnDemand: false\n";
  if (wait_for_pods_ready) {
    yaml +=
        "waitForPodsReady:\n  timeout: 5m\n  blockAdmission: true\n"
        "  requeuingStrategy:\n    timestamp: Eviction\n    backoffBaseSeconds: 60\n    backoffMaxSeconds: 3600\n";
  }
  return yaml;
}

// With its own certificate management off, Kueue's manager reads a metrics serving certificate
// from this fixed path at start-up and exits without one, even with metrics off (bindAddress "0"),
// so devcluster leaves one there for every Kueue on the machine (made once, a directory renamed
// into place whole, so managers started side by side never read half of it).
void EnsureMetricsCertificate() {
  const std::filesystem::path certs = "/etc/kueue/metrics/certs";
  if (std::filesystem::exists(certs / "tls.crt") && std::filesystem::exists(certs / "tls.key")) {
    return;
  }
  std::filesystem::create_directories(certs.parent_path());
  const std::filesystem::path staging = certs.parent_path() / (".certs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(staging);
  const Certificates metrics = GenerateCertificates({"127.0.0.1", "localhost"});
  WritePrivateFile(staging / "tls.crt", metrics.server_cert_pem);
  WritePrivateFile(staging / "tls.key", metrics.server_key_pem);
  std::error_code taken;
  std::filesystem::rename(staging, certs, taken);
  if (taken) {
    std::filesystem::remove_all(staging, taken);
  }
  if (!std::filesystem::exists(certs / "tls.key")) {
    throw std::runtime_error("kueue: cannot write the metrics certificate Kueue reads at " + certs.string());
  }
}

}  // namespace

std::filesystem::path DefaultKueueDir() { return RINGLEADER_KUEUE_DIR; }

std::unique_ptr<Kueue> Kueue::Start(const KueueOptions& options) {
  std::unique_ptr<Kueue> kueue(new Kueue());
  kueue->options_ = options;
  const std::filesystem::path binary = options.kueue_dir / "bin" / "kueue";
  const std::filesystem::path manifests = options.kueue_dir / "manifests";
  if (!std::filesystem::exists(binary) || !std::filesystem::exists(manifests / "webhook.yaml")) {
    throw std::runtime_error("kueue: " + binary.string() + " or its manifests are missing; scripts/build-kueue builds them");
  }
  const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  std::filesystem::create_directories(options.dir / "certs");
  const std::vector<int> ports = testing::FreePorts(2);
  kueue->webhook_port_ = ports[0];
  kueue->health_port_ = ports[1];
  const std::string base_url = "https://127.0.0.1:" + std::to_string(kueue->webhook_port_);

  // The API server verifies the webhooks' certificate with the caBundle against 127.0.0.1.
  const Certificates certs = GenerateCertificates({"127.0.0.1"});
  WritePrivateFile(options.dir / "certs" / "tls.crt", certs.server_cert_pem);
  WritePrivateFile(options.dir / "certs" / "tls.key", certs.server_key_pem);
  const std::string ca_bundle = Base64(certs.ca_cert_pem);
  EnsureMetricsCertificate();

  kube::Config config;
  config.server = options.api_server_url;
  config.ca_pem = options.ca_pem;
  config.token = kube::MakeStaticTokenSource(options.token);
  const auto client = kube::MakeClient(config);
  CreateOrReplace(*client, kube::Namespaces(),
                  {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kueue-system"}}}});
  std::vector<std::string> crd_names;
  for (const auto& entry : std::filesystem::directory_iterator(manifests / "crds")) {
    json crd = yaml::ParseYaml(ReadFile(entry.path()));
    const std::string name = crd["metadata"]["name"];
    if (kConvertedCrds.contains(name)) {
      crd["spec"]["conversion"] = {
          {"strategy", "Webhook"},
          {"webhook",
           {{"clientConfig", {{"url", base_url + "/convert"}, {"caBundle", ca_bundle}}},
            {"conversionReviewVersions", {"v1"}}}}};
    }
    CreateOrReplace(*client, kube::CustomResourceDefinitions(), crd);
    crd_names.push_back(name);
  }
  // The manager's informers need every CRD served before it starts.
  for (const std::string& name : crd_names) {
    while (true) {
      const json crd = client->Get(kube::CustomResourceDefinitions(), "", name);
      const json conditions = crd.value("status", json::object()).value("conditions", json::array());
      if (std::any_of(conditions.begin(), conditions.end(), [](const json& c) {
            return c.value("type", "") == "Established" && c.value("status", "") == "True";
          })) {
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("kueue: CRD " + name + " was not Established in time");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  const std::filesystem::path configuration = options.dir / "configuration.yaml";
  WritePrivateFile(configuration, ConfigurationYaml(options.dir / "certs", kueue->webhook_port_, kueue->health_port_,
                                                    options.wait_for_pods_ready));
  testing::ChildOptions child;
  child.binary = binary;
  child.args = {"--config=" + configuration.string(), "--kubeconfig=" + options.kubeconfig_path};
  child.log = kueue->log();
  child.die_with_parent = true;
  kueue->process_ = std::make_unique<testing::ChildProcess>(child);

  for (const json& webhooks : WebhookConfigurations(manifests, base_url, ca_bundle)) {
    CreateOrReplace(*client,
                    webhooks["kind"] == "MutatingWebhookConfiguration" ? MutatingWebhookConfigurations()
                                                                        : ValidatingWebhookConfigurations(),
                    webhooks);
  }
  kueue->WaitForWebhooks(deadline);
  return kueue;
}

// Ready when the API server's own call of a validating webhook comes back: a dry-run
// ResourceFlavor with a node label value only Kueue's webhook refuses. That proves the manager
// serves, the API server has the configuration, and the certificate verifies.
void Kueue::WaitForWebhooks(std::chrono::steady_clock::time_point deadline) {
  kube::Config config;
  config.server = options_.api_server_url;
  config.ca_pem = options_.ca_pem;
  kube::TransportOptions transport_options;
  transport_options.request_timeout = std::chrono::seconds(5);
  const auto transport = kube::MakeCpprestTransport(config, transport_options);
  const json probe = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                      {"kind", "ResourceFlavor"},
                      {"metadata", {{"name", "devcluster-webhook-probe"}}},
                      {"spec", {{"nodeLabels", {{"probe", "not a label value!"}}}}}};
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_->Running()) {
      throw std::runtime_error("kueue: the manager exited while starting; its log (" + log().string() +
                               ") ends:\n" + Tail(log()));
    }
    try {
      const kube::HttpResponse response =
          transport->Send({"POST", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All", options_.token,
                           "application/json", probe.dump()});
      if (response.status >= 400 && response.status < 500 &&
          response.body.find("vresourceflavor.kb.io") != std::string::npos) {
        return;
      }
      last = "HTTP " + std::to_string(response.status) + ": " + response.body.substr(0, 500);
    } catch (const std::exception& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw std::runtime_error("kueue: its webhooks did not answer the API server in time (last probe: " + last +
                           "); its log ends:\n" + Tail(log()));
}

int Kueue::pid() const { return process_ ? process_->pid() : -1; }

Kueue::~Kueue() { Stop(); }

void Kueue::Stop() {
  if (!process_) {
    return;
  }
  process_->Signal(SIGTERM);
  if (!process_->WaitFor(std::chrono::seconds(10))) {
    process_->Signal(SIGKILL);
    process_->WaitFor(std::chrono::seconds(5));
  }
  process_.reset();
}

}  // namespace ringleader::devcluster
