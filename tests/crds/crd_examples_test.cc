// Keeps the CRD, the examples and the C++ API in agreement: a real kube-apiserver accepts the CRD
// and every field is documented, every example passes the server's checks (stored as written,
// nothing pruned) and the operator's, and each schema default is the C++ default, so a job means
// the same with or without the server's defaulting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "operator/api/quantity.h"
#include "operator/api/trainingjob.h"
#include "operator/api/validation.h"
#include "operator/yaml/yaml_to_json.h"
#include "operator/kube/client.h"
#include "tests/devcluster/control_plane.h"
#include "tests/support/test_environment.h"

namespace ringleader {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::IsEmpty;

constexpr char kCrdPath[] = "crds/ringleader.dev_trainingjobs.yaml";
// The ValidatingAdmissionPolicy and binding shipped beside the CRD (labels CEL in a CRD cannot see).
constexpr char kQueueNamePolicyPath[] = "crds/ringleader.dev_kueue-queue-name-policy.yaml";
constexpr char kExamplesDir[] = "examples";

std::string Join(const api::FieldErrors& errors) {
  std::string text;
  for (const api::FieldError& error : errors) {
    text += "\n  " + error.ToString();
  }
  return text;
}

// Equal as settings: the same JSON, or two spellings of one quantity ("1Mi" and 1048576).
bool SameSetting(const json& a, const json& b) {
  if (a == b) {
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) {
      return false;
    }
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key()) || !SameSetting(*it, b[it.key()])) {
        return false;
      }
    }
    return true;
  }
  auto quantity = [](const json& value) -> std::optional<std::int64_t> {
    if (value.is_number_integer()) {
      return value.get<std::int64_t>();
    }
    if (value.is_string()) {
      return api::ParseIntegerQuantity(value.get<std::string>());
    }
    return std::nullopt;
  };
  std::optional<std::int64_t> left = quantity(a);
  return left.has_value() && left == quantity(b);
}

// Every key of `written` (recursively, through objects) that `stored` lacks: what the server pruned.
void CollectPruned(const json& written, const json& stored, const std::string& path, std::vector<std::string>* out) {
  if (!written.is_object()) {
    return;
  }
  for (auto it = written.begin(); it != written.end(); ++it) {
    if (!stored.is_object() || !stored.contains(it.key())) {
      out->push_back(path + "." + it.key());
    } else {
      CollectPruned(*it, stored[it.key()], path + "." + it.key(), out);
    }
  }
}

// Every property without a description, as `kubectl explain` would show it.
void CollectUndocumented(const json& schema, const std::string& path, std::vector<std::string>* out) {
  if (!schema.is_object()) {
    return;
  }
  if (const auto properties = schema.find("properties"); properties != schema.end() && properties->is_object()) {
    for (auto it = properties->begin(); it != properties->end(); ++it) {
      const std::string field = path + "." + it.key();
      // metadata is the API's own (ObjectMeta), described by the server.
      if (!it->contains("description") && field != ".metadata") {
        out->push_back(field);
      }
      CollectUndocumented(*it, field, out);
    }
  }
  if (const auto items = schema.find("items"); items != schema.end()) {
    CollectUndocumented(*items, path + "[]", out);
  }
}

class CrdTest : public ::testing::Test {
 protected:
  // One real control plane for the suite, with the CRD installed by it.
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::MakeTempDir("crd-test"));
    devcluster::ControlPlaneOptions options;
    options.dir = *dir_;
    plane_ = devcluster::ControlPlane::Start(options).release();
    kube::Config config;
    config.server = plane_->url();
    config.ca_pem = plane_->ca_pem();
    config.token = kube::MakeStaticTokenSource(plane_->admin_token());
    client_ = kube::MakeClient(config).release();
    const json crd = yaml::LoadYamlFile(kCrdPath);
    client_->Create(kube::CustomResourceDefinitions(), "", crd);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!Established() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::ifstream stream(kQueueNamePolicyPath);
    const std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    for (const json& document : yaml::ParseYamlDocuments(text)) {
      const std::string plural = document.value("kind", "") == "ValidatingAdmissionPolicy"
                                     ? "validatingadmissionpolicies"
                                     : "validatingadmissionpolicybindings";
      client_->Create(kube::Resource{"admissionregistration.k8s.io", "v1", plural, false}, "", document);
    }
  }
  static void TearDownTestSuite() {
    delete client_;
    delete plane_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  static json StoredCrd() {
    return client_->Get(kube::CustomResourceDefinitions(), "", std::string(api::kPlural) + "." + std::string(api::kGroup));
  }
  static bool Established() {
    for (const json& condition : StoredCrd()["status"].value("conditions", json::array())) {
      if (condition.value("type", "") == "Established" && condition.value("status", "") == "True") {
        return true;
      }
    }
    return false;
  }

  // Creates `job` in a fresh namespace of its own and returns what the server stored (defaulted).
  static json CreateOnServer(json job) {
    const std::string ns = "t" + std::to_string(++objects_);
    client_->Create(kube::Namespaces(), "", json{{"metadata", {{"name", ns}}}});
    job["metadata"]["namespace"] = ns;
    return client_->Create(kube::TrainingJobs(), ns, job);
  }

  void SetUp() override {
    ASSERT_NO_THROW(crd_ = yaml::LoadYamlFile(kCrdPath));
    ASSERT_TRUE(crd_.is_object()) << kCrdPath << " is not a YAML map";
    const json* versions = &crd_["spec"]["versions"];
    ASSERT_TRUE(versions->is_array() && !versions->empty()) << "spec.versions is empty";
    version_ = (*versions)[0];
    schema_ = version_["schema"]["openAPIV3Schema"];
    ASSERT_TRUE(schema_.is_object()) << "spec.versions[0].schema.openAPIV3Schema is missing";
  }

  static std::filesystem::path* dir_;
  static devcluster::ControlPlane* plane_;
  static kube::Client* client_;
  static int objects_;
  json crd_;
  json version_;
  json schema_;
};
std::filesystem::path* CrdTest::dir_ = nullptr;
devcluster::ControlPlane* CrdTest::plane_ = nullptr;
kube::Client* CrdTest::client_ = nullptr;
int CrdTest::objects_ = 0;

TEST_F(CrdTest, NamesTheTrainingJobResource) {
  EXPECT_EQ(crd_["apiVersion"], "apiextensions.k8s.io/v1");
  EXPECT_EQ(crd_["kind"], "CustomResourceDefinition");
  EXPECT_EQ(crd_["metadata"]["name"], std::string(api::kPlural) + "." + std::string(api::kGroup));
  const json& spec = crd_["spec"];
  EXPECT_EQ(spec["group"], std::string(api::kGroup));
  EXPECT_EQ(spec["scope"], "Namespaced");
  EXPECT_EQ(spec["names"]["plural"], std::string(api::kPlural));
  EXPECT_EQ(spec["names"]["singular"], "trainingjob");
  EXPECT_EQ(spec["names"]["kind"], std::string(api::kKind));
  ASSERT_TRUE(spec["names"]["shortNames"].is_array());
  EXPECT_THAT(spec["names"]["shortNames"].get<std::vector<std::string>>(), Contains("tj"));
}

TEST_F(CrdTest, ServesAndStoresOneVersionWithTheStatusSubresource) {
  EXPECT_EQ(crd_["spec"]["versions"].size(), 1u);
  EXPECT_EQ(version_["name"], std::string(api::kVersion));
  EXPECT_EQ(version_["served"], true);
  EXPECT_EQ(version_["storage"], true);
  EXPECT_TRUE(version_["subresources"]["status"].is_object())
      << "status is written through /status only, so the subresource must be on";
}

// ObjectMeta's fields: the schema leaves metadata to the API server.
bool IsObjectMetaField(const std::string& name) {
  // clang-format off
  static const std::set<std::string> kFields = {
      "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
      "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
      "annotations", "ownerReferences", "finalizers", "managedFields"};
  // clang-format on
  return kFields.contains(name);
}

// The schema node a simple jsonPath (".status.ports.master") names, or null.
const json* ResolveJsonPath(const json& schema, const std::string& path) {
  const json* node = &schema;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('.', start);
    std::string segment = path.substr(start, end == std::string::npos ? end : end - start);
    const json* properties = node->contains("properties") ? &(*node)["properties"] : nullptr;
    if (properties == nullptr || !properties->contains(segment)) {
      return nullptr;
    }
    node = &(*properties)[segment];
    if (end == std::string::npos) {
      return node;
    }
    start = end + 1;
  }
  return nullptr;
}

TEST_F(CrdTest, PrinterColumnsNameFieldsTheSchemaDefines) {
  const json& columns = version_["additionalPrinterColumns"];
  ASSERT_TRUE(columns.is_array() && !columns.empty()) << "no additionalPrinterColumns";
  for (const json& column : columns) {
    std::string name = column.value("name", "");
    std::string type = column.value("type", "");
    std::string path = column.value("jsonPath", "");
    SCOPED_TRACE("printer column " + name + " (" + path + ")");
    EXPECT_FALSE(name.empty());
    ASSERT_TRUE(path.starts_with(".")) << "jsonPath must start with '.'";
    if (path.starts_with(".metadata.")) {
      std::string field = path.substr(std::string(".metadata.").size());
      EXPECT_TRUE(IsObjectMetaField(field)) << field << " is not an ObjectMeta field";
      if (type == "date") {
        EXPECT_TRUE(field == "creationTimestamp" || field == "deletionTimestamp");
      }
      continue;
    }
    const json* field = ResolveJsonPath(schema_, path);
    ASSERT_NE(field, nullptr) << path << " names no field of the schema";
    std::string field_type = field->value("type", "");
    if (type == "integer") {
      EXPECT_EQ(field_type, "integer");
    } else if (type == "number") {
      EXPECT_TRUE(field_type == "number" || field_type == "integer") << field_type;
    } else if (type == "boolean") {
      EXPECT_EQ(field_type, "boolean");
    } else if (type == "date") {
      EXPECT_EQ(field_type, "string");
      EXPECT_EQ(field->value("format", ""), "date-time");
    } else {
      EXPECT_EQ(type, "string") << "unknown column type";
    }
  }
}

TEST_F(CrdTest, TheRealServerAcceptsTheCrdAndEveryFieldIsDocumented) {
  // Established, and no NonStructuralSchema (or any other) complaint in its conditions.
  EXPECT_TRUE(Established()) << StoredCrd()["status"].dump(2);
  for (const json& condition : StoredCrd()["status"].value("conditions", json::array())) {
    EXPECT_NE(condition.value("type", ""), "NonStructuralSchema") << condition.dump();
  }
  std::vector<std::string> undocumented;
  CollectUndocumented(schema_, "", &undocumented);
  EXPECT_THAT(undocumented, IsEmpty()) << "fields kubectl explain would show without a description";
}

std::vector<std::filesystem::path> ExampleFiles() {
  std::vector<std::filesystem::path> files;
  // Recursive: examples live in subdirectories too (examples/pytorch).
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kExamplesDir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every TrainingJob document of every .yaml under examples/.
std::vector<std::pair<std::string, json>> ExampleJobs() {
  std::vector<std::pair<std::string, json>> jobs;
  for (const std::filesystem::path& file : ExampleFiles()) {
    std::ifstream stream(file);
    std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    std::vector<json> documents = yaml::ParseYamlDocuments(text);
    for (std::size_t i = 0; i < documents.size(); ++i) {
      if (documents[i].is_object() && documents[i].value("kind", "") == api::kKind) {
        jobs.emplace_back(file.string() + " document " + std::to_string(i), documents[i]);
      }
    }
  }
  return jobs;
}

TEST_F(CrdTest, EveryExampleValidatesAndDefaultsAsTheOperatorDoes) {
  std::vector<std::pair<std::string, json>> jobs;
  ASSERT_NO_THROW(jobs = ExampleJobs());
  ASSERT_FALSE(jobs.empty()) << "no TrainingJob in " << kExamplesDir << "/*.yaml";
  for (const auto& [where, raw] : jobs) {
    SCOPED_TRACE(where);
    json defaulted;
    try {
      defaulted = CreateOnServer(raw);
    } catch (const kube::ApiError& e) {
      ADD_FAILURE() << "the API server refused it: " << e.what();
      continue;
    }
    std::vector<std::string> pruned;
    CollectPruned(raw["spec"], defaulted["spec"], "spec", &pruned);
    EXPECT_THAT(pruned, IsEmpty()) << "the API server pruned these";

    api::FieldErrors raw_errors;
    api::FieldErrors defaulted_errors;
    api::TrainingJob from_raw = api::TrainingJob::FromJson(raw, &raw_errors);
    api::TrainingJob from_defaulted = api::TrainingJob::FromJson(defaulted, &defaulted_errors);
    EXPECT_TRUE(raw_errors.empty()) << Join(raw_errors);
    EXPECT_TRUE(defaulted_errors.empty()) << Join(defaulted_errors);
    json raw_spec = from_raw.ToJson()["spec"];
    json defaulted_spec = from_defaulted.ToJson()["spec"];
    EXPECT_TRUE(SameSetting(raw_spec, defaulted_spec))
        << "C++ defaults and CRD defaults disagree:\n  without CRD defaults: " << raw_spec.dump()
        << "\n  with CRD defaults:    " << defaulted_spec.dump();

    api::FieldErrors semantic = api::Validate(from_defaulted, api::ValidationOptions{});
    EXPECT_TRUE(semantic.empty()) << "the operator would reject it:" << Join(semantic);
  }
}

json MinimalJob() {
  return json::parse(R"({"apiVersion":"ringleader.dev/v1alpha1","kind":"TrainingJob",
    "metadata":{"name":"x","namespace":"default"},
    "spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"trainer","image":"busybox"}]}}}})");
}

struct SchemaDefault {
  json::json_pointer pointer;  // into spec, e.g. /communication/preflight/minBytes
  json value;
};

// Every `default` reachable through `properties` (none sit under items or map values).
void CollectDefaults(const json& node, const json::json_pointer& pointer,
                     std::vector<SchemaDefault>* out) {
  if (node.contains("default")) {
    out->push_back({pointer, node["default"]});
  }
  if (node.contains("properties") && node["properties"].is_object()) {
    for (auto it = node["properties"].begin(); it != node["properties"].end(); ++it) {
      CollectDefaults(*it, pointer / it.key(), out);
    }
  }
}

// A queue name Kueue would refuse is refused at kubectl apply, naming the label; the policy takes
// effect a moment after its creation, so the first refusal is waited for.
TEST_F(CrdTest, TheQueueNamePolicyRefusesAQueueNameThatIsNoDnsSubdomain) {
  json job = MinimalJob();
  job["metadata"]["name"] = "queued";
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "Team_A"}};
  job["spec"]["runPolicy"] = {{"schedulingPolicy", {{"provider", "Kueue"}}}};
  std::string refusal;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (refusal.empty() && std::chrono::steady_clock::now() < deadline) {
    try {
      client_->Create(kube::TrainingJobs(), "default", job);
      client_->Delete(kube::TrainingJobs(), "default", "queued");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } catch (const kube::ApiError& e) {
      EXPECT_EQ(e.code(), 422) << e.what();
      refusal = e.message();
    }
  }
  EXPECT_THAT(refusal, ::testing::HasSubstr("metadata.labels.kueue.x-k8s.io/queue-name: Invalid value: \"Team_A\": "
                                            "must be a LocalQueue name, a DNS-1123 subdomain"));
  job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a.gpu";
  EXPECT_NO_THROW(client_->Create(kube::TrainingJobs(), "default", job));
  json unlabelled = MinimalJob();
  unlabelled["metadata"]["name"] = "unqueued";
  EXPECT_NO_THROW(client_->Create(kube::TrainingJobs(), "default", unlabelled));
}

TEST_F(CrdTest, EverySchemaDefaultIsTheCppDefault) {
  std::vector<SchemaDefault> defaults;
  CollectDefaults(schema_["properties"]["spec"], json::json_pointer(), &defaults);
  ASSERT_FALSE(defaults.empty()) << "the CRD has no defaults under spec";
  for (const SchemaDefault& schema_default : defaults) {
    const std::string where = "spec" + schema_default.pointer.to_string();
    SCOPED_TRACE(where + " (CRD default " + schema_default.value.dump() + ")");
    // Both jobs get the field's parent objects, so the server's defaulting reaches the field.
    json raw = MinimalJob();
    if (!schema_default.pointer.empty()) {
      json::json_pointer parent = schema_default.pointer.parent_pointer();
      if (!raw["spec"].contains(parent)) {
        // An object with required fields gets the least that is valid for a one-replica job.
        raw["spec"][parent] = parent == json::json_pointer("/elasticPolicy")
                                  ? json({{"minReplicas", 1}, {"maxReplicas", 1}})
                                  : json::object();
      }
    }
    json defaulted;
    ASSERT_NO_THROW(defaulted = CreateOnServer(raw));
    // The server put the default in (and the defaults inside it in turn).
    ASSERT_TRUE(defaulted["spec"].contains(schema_default.pointer)) << defaulted["spec"].dump();

    api::FieldErrors errors;
    json cpp_spec = api::TrainingJob::FromJson(raw, &errors).ToJson()["spec"];
    json crd_spec = api::TrainingJob::FromJson(defaulted, &errors).ToJson()["spec"];
    ASSERT_TRUE(errors.empty()) << Join(errors);
    ASSERT_TRUE(cpp_spec.contains(schema_default.pointer)) << "ToJson() does not write " << where;
    EXPECT_TRUE(SameSetting(cpp_spec[schema_default.pointer], crd_spec[schema_default.pointer]))
        << "C++ default " << cpp_spec[schema_default.pointer].dump() << " but with the CRD default "
        << crd_spec[schema_default.pointer].dump();
  }
}

}  // namespace
}  // namespace ringleader
