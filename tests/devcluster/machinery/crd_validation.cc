// ValidateCustomResourceDefinition and ...Update of apiextensions-apiserver 1.32
// (pkg/apis/apiextensions/validation/validation.go) over the v1 JSON, reported with the internal
// type's paths after the v1 -> internal conversion (pkg/apis/apiextensions/v1/conversion.go).
#include "tests/devcluster/machinery/crd_validation.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <set>

#include "tests/support/schema_internal.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;
using schema::SchemaError;
namespace internal = schema::internal;

std::string Text(const json& node, std::string_view key) { return internal::Text(node, key); }

const json& Versions(const json& spec) {
  static const json kEmpty = json::array();
  const json* versions = internal::Field(spec, "versions");
  return versions != nullptr && versions->is_array() ? *versions : kEmpty;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string VersionPath(std::size_t i) { return "spec.versions[" + std::to_string(i) + "]"; }

// A per-version field as the internal type holds it: null when absent, and (Semantic.DeepEqual
// treats them alike) an empty list is absent.
json PerVersion(const json& version, std::string_view key) {
  const json* value = internal::Field(version, key);
  if (value == nullptr || (value->is_array() && value->empty())) {
    return json();
  }
  return *value;
}

// The v1 -> internal conversion: a field every version has alike moves to the top level.
struct Hoisted {
  bool schema = false;
  bool subresources = false;
  bool columns = false;
  bool selectable_fields = false;
};

Hoisted HoistedFields(const json& spec) {
  Hoisted hoisted;
  const json& versions = Versions(spec);
  if (versions.empty()) {
    return hoisted;
  }
  auto identical = [&](std::string_view key) {
    json first = PerVersion(versions[0], key);
    return std::all_of(versions.begin(), versions.end(),
                       [&](const json& version) { return PerVersion(version, key) == first; });
  };
  hoisted.schema = identical("schema");
  hoisted.subresources = identical("subresources");
  hoisted.columns = identical("additionalPrinterColumns");
  hoisted.selectable_fields = hoisted.schema && identical("selectableFields");
  return hoisted;
}

bool HasStatus(const json& subresources) {
  return subresources.is_object() && internal::Field(subresources, "status") != nullptr;
}

// Go's %#v of the internal []CustomResourceDefinitionVersion (the value of spec.versions errors).
std::string GoVersionsDump(const json& spec, const Hoisted& hoisted) {
  auto pointer = [](std::string_view type, bool set) {
    return "(" + std::string(type) + ")(" + std::string(set ? "0xc000000000" : "nil") + ")";
  };
  std::string out = "[]apiextensions.CustomResourceDefinitionVersion{";
  const json& versions = Versions(spec);
  for (std::size_t i = 0; i < versions.size(); ++i) {
    const json& version = versions[i];
    std::string columns = "[]apiextensions.CustomResourceColumnDefinition(nil)";
    if (json list = PerVersion(version, "additionalPrinterColumns");
        !hoisted.columns && list.is_array()) {
      columns = "[]apiextensions.CustomResourceColumnDefinition{";
      for (std::size_t c = 0; c < list.size(); ++c) {
        const json& column = list[c];
        std::int64_t priority =
            internal::Field(column, "priority") != nullptr && column["priority"].is_number_integer()
                ? column["priority"].get<std::int64_t>()
                : 0;
        columns += (c == 0 ? "" : ", ") +
                   std::string("apiextensions.CustomResourceColumnDefinition{Name:") +
                   schema::GoQuote(Text(column, "name")) +
                   ", Type:" + schema::GoQuote(Text(column, "type")) +
                   ", Format:" + schema::GoQuote(Text(column, "format")) +
                   ", Description:" + schema::GoQuote(Text(column, "description")) +
                   ", Priority:" + std::to_string(priority) +
                   ", JSONPath:" + schema::GoQuote(Text(column, "jsonPath")) + "}";
      }
      columns += "}";
    }
    std::string selectable = "[]apiextensions.SelectableField(nil)";
    if (json list = PerVersion(version, "selectableFields");
        !hoisted.selectable_fields && list.is_array()) {
      selectable = "[]apiextensions.SelectableField{";
      for (std::size_t f = 0; f < list.size(); ++f) {
        selectable += (f == 0 ? "" : ", ") +
                      std::string("apiextensions.SelectableField{JSONPath:") +
                      schema::GoQuote(Text(list[f], "jsonPath")) + "}";
      }
      selectable += "}";
    }
    out += (i == 0 ? "" : ", ") +
           std::string("apiextensions.CustomResourceDefinitionVersion{Name:") +
           schema::GoQuote(Text(version, "name")) +
           ", Served:" + (internal::Flag(version, "served") ? "true" : "false") +
           ", Storage:" + (internal::Flag(version, "storage") ? "true" : "false") +
           ", Deprecated:" + (internal::Flag(version, "deprecated") ? "true" : "false") +
           ", DeprecationWarning:" +
           pointer("*string", internal::Field(version, "deprecationWarning") != nullptr) +
           ", Schema:" +
           pointer("*apiextensions.CustomResourceValidation",
                   !hoisted.schema && !PerVersion(version, "schema").is_null()) +
           ", Subresources:" +
           pointer("*apiextensions.CustomResourceSubresources",
                   !hoisted.subresources && !PerVersion(version, "subresources").is_null()) +
           ", AdditionalPrinterColumns:" + columns + ", SelectableFields:" + selectable + "}";
  }
  return out + "}";
}

std::optional<std::vector<std::string>> StringList(const json& node, std::string_view key) {
  const json* value = internal::Field(node, key);
  if (value == nullptr || !value->is_array()) {
    return std::nullopt;
  }
  return internal::Strings(node, key);
}

// ---- Names
// ---------------------------------------------------------------------------------------

void ValidateNames(const json& names, const std::string& path, std::vector<SchemaError>& errors) {
  auto label = [&](std::string_view key, const std::string& value, const std::string& prefix) {
    if (value.empty()) {
      return;
    }
    std::vector<std::string> messages =
        internal::Dns1035LabelErrors(prefix.empty() ? value : Lower(value));
    if (!messages.empty()) {
      errors.push_back(schema::Invalid(path + "." + std::string(key), schema::GoQuote(value),
                                       prefix + internal::Join(messages, ",")));
    }
  };
  label("plural", Text(names, "plural"), "");
  label("singular", Text(names, "singular"), "");
  label("kind", Text(names, "kind"), "may have mixed case, but should otherwise match: ");
  label("listKind", Text(names, "listKind"), "may have mixed case, but should otherwise match: ");
  std::vector<std::string> short_names = internal::Strings(names, "shortNames");
  for (std::size_t i = 0; i < short_names.size(); ++i) {
    if (std::vector<std::string> messages = internal::Dns1035LabelErrors(short_names[i]);
        !messages.empty()) {
      errors.push_back(schema::Invalid(path + ".shortNames[" + std::to_string(i) + "]",
                                       schema::GoQuote(short_names[i]),
                                       internal::Join(messages, ",")));
    }
  }
  if (!Text(names, "kind").empty() && Text(names, "kind") == Text(names, "listKind")) {
    errors.push_back(schema::Invalid(path + ".listKind", schema::GoQuote(Text(names, "listKind")),
                                     "kind and listKind may not be the same"));
  }
  std::vector<std::string> categories = internal::Strings(names, "categories");
  for (std::size_t i = 0; i < categories.size(); ++i) {
    if (std::vector<std::string> messages = internal::Dns1035LabelErrors(categories[i]);
        !messages.empty()) {
      errors.push_back(schema::Invalid(path + ".categories[" + std::to_string(i) + "]",
                                       schema::GoQuote(categories[i]),
                                       internal::Join(messages, ",")));
    }
  }
}

// ---- Printer columns, subresources, selectable fields ------------------------------------------

void ValidateSimpleJsonPath(const std::string& value, const std::string& path,
                            std::vector<SchemaError>& errors) {
  if (value.empty()) {
    errors.push_back(schema::Invalid(path, schema::GoQuote(value), "must not be empty"));
  } else if (value[0] != '.') {
    errors.push_back(schema::Invalid(path, schema::GoQuote(value),
                                     "must be a simple json path starting with ."));
  }
}

void ValidateColumn(const json& column, const std::string& path, std::vector<SchemaError>& errors) {
  static const std::string kTypes = "boolean,date,integer,number,string";
  static const std::set<std::string, std::less<>> kTypeSet = {"boolean", "date", "integer",
                                                              "number", "string"};
  static const std::set<std::string, std::less<>> kFormats = {
      "byte", "date", "date-time", "double", "float", "int32", "int64", "password"};
  if (Text(column, "name").empty()) {
    errors.push_back(schema::Required(path + ".name", ""));
  }
  std::string type = Text(column, "type");
  if (type.empty()) {
    errors.push_back(schema::Required(path + ".type", "must be one of " + kTypes));
  } else if (!kTypeSet.contains(type)) {
    errors.push_back(
        schema::Invalid(path + ".type", schema::GoQuote(type), "must be one of " + kTypes));
  }
  if (std::string format = Text(column, "format"); !format.empty() && !kFormats.contains(format)) {
    errors.push_back(
        schema::Invalid(path + ".format", schema::GoQuote(format),
                        "must be one of byte,date,date-time,double,float,int32,int64,password"));
  }
  // The internal field is JSONPath, and so is the path the server reports.
  std::string json_path = Text(column, "jsonPath");
  if (json_path.empty()) {
    errors.push_back(schema::Required(path + ".JSONPath", ""));
  } else {
    ValidateSimpleJsonPath(json_path, path + ".JSONPath", errors);
  }
}

void ValidateSubresources(const json& subresources, const std::string& path,
                          std::vector<SchemaError>& errors) {
  const json* scale = internal::Field(subresources, "scale");
  if (scale == nullptr) {
    return;
  }
  auto check = [&](std::string_view key, std::initializer_list<std::string_view> prefixes,
                   std::string_view under, bool required) {
    std::string value = Text(*scale, key);
    std::string at = path + ".scale." + std::string(key);
    if (value.empty()) {
      if (required) {
        errors.push_back(schema::Required(at, ""));
      }
      return;
    }
    std::size_t before = errors.size();
    ValidateSimpleJsonPath(value, at, errors);
    if (errors.size() == before &&
        std::none_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view prefix) { return value.starts_with(prefix); })) {
      errors.push_back(schema::Invalid(at, schema::GoQuote(value),
                                       "should be a json path under " + std::string(under)));
    }
  };
  check("specReplicasPath", {".spec."}, ".spec", true);
  check("statusReplicasPath", {".status."}, ".status", true);
  check("labelSelectorPath", {".spec.", ".status."}, "either .spec or .status", false);
}

// cel.ValidFieldPath without array notation, for selectable fields: the error text or "", and
// the schema found.
std::string FieldPathError(const std::string& field_path, const json& schema, const json** found,
                           std::string* root) {
  const json* node = &schema;
  std::size_t i = 0;
  root->clear();
  while (i < field_path.size()) {
    if (field_path[i] == '[') {
      return "array notation is not allowed";
    }
    if (field_path[i] != '.') {
      std::size_t end = field_path.find_first_of(".[]", i);
      return "expected [ or . but got: " +
             field_path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    }
    std::size_t end = field_path.find_first_of(".[]", i + 1);
    std::string name =
        field_path.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
    if (end == i + 1 || i + 1 >= field_path.size()) {
      return "unexpected end of JSON path";
    }
    if (node == nullptr) {
      return "does not refer to a valid field";
    }
    if (const json* properties = internal::NonEmptyObject(*node, "properties")) {
      node = internal::SubSchema(*properties, name);
      if (node == nullptr) {
        return "does not refer to a valid field";
      }
    } else if (internal::HasAdditionalProperties(*node)) {
      node = internal::AdditionalSchema(*node);
    } else {
      return "does not refer to a valid field";
    }
    if (root->empty()) {
      *root = name;
    }
    i = end == std::string::npos ? field_path.size() : end;
  }
  *found = node;
  return "";
}

void ValidateSelectableFields(const json& fields, const json* schema, const std::string& path,
                              std::vector<SchemaError>& errors) {
  std::set<std::string> unique;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    std::string at = path + "[" + std::to_string(i) + "].jsonPath";
    std::string json_path = Text(fields[i], "jsonPath");
    if (json_path.empty()) {
      errors.push_back(schema::Required(at, ""));
      continue;
    }
    const json* found = nullptr;
    std::string root;
    std::string error = schema != nullptr ? FieldPathError(json_path, *schema, &found, &root)
                                          : "does not refer to a valid field";
    if (!error.empty()) {
      errors.push_back(
          schema::Invalid(at, schema::GoQuote(json_path), "is an invalid path: " + error));
      continue;
    }
    if (root == "metadata") {
      errors.push_back(
          schema::Invalid(at, schema::GoQuote(json_path), "must not point to fields in metadata"));
    }
    std::string type = found != nullptr ? Text(*found, "type") : "";
    if (type != "string" && type != "boolean" && type != "integer") {
      errors.push_back(schema::Invalid(
          at, schema::GoQuote(json_path),
          "must point to a field of type string, boolean or integer. Enum string fields "
          "and strings with formats are allowed."));
    }
    if (!unique.insert(json_path).second) {
      errors.push_back(schema::Duplicate(at, schema::GoQuote(json_path)));
    }
  }
  if (unique.size() > 8) {
    errors.push_back(schema::TooMany(path, static_cast<std::int64_t>(unique.size()), 8));
  }
}

// ---- Schemas -----------------------------------------------------------------------------------

struct Options {
  bool require_open_api_schema = true;
  bool require_recognized_conversion_review_version = true;
  bool require_immutable_names = false;
  schema::SchemaCheckOptions schema;
  // On update: versions whose schema is the stored one (findVersionsWithUnchangedSchemas); their
  // CEL rules skip the per-expression cost limit.
  std::set<std::string> unchanged_schema_versions;
  // The CEL seam: a fresh compiler per openAPIV3Schema (unset: rules are not compiled).
  schema::CelCompilerFactory new_cel_compiler;
};

// `version` names the version whose schema this is (for a hoisted schema, the first version, as
// the internal type's spec.version).
void ValidateSchemaAt(const json& validation, bool status_enabled, const Options& options,
                      const std::string& version, const std::string& path,
                      std::vector<SchemaError>& errors) {
  const json* open_api = internal::Field(validation, "openAPIV3Schema");
  if (open_api == nullptr || !open_api->is_object()) {
    return;
  }
  schema::SchemaCheckOptions schema_options = options.schema;
  schema_options.status_subresource = status_enabled;
  schema_options.suppress_per_expression_cost = options.unchanged_schema_versions.contains(version);
  if (options.new_cel_compiler) {
    schema::CelSchemaCompiler compiler = options.new_cel_compiler();
    schema_options.compile_cel = std::move(compiler.compile);
    schema_options.cel_total_cost_errors = std::move(compiler.total_cost_errors);
  }
  for (SchemaError& error :
       schema::ValidateSchema(*open_api, path + ".openAPIV3Schema", schema_options)) {
    errors.push_back(std::move(error));
  }
}

bool IsEstablished(const json& crd) {
  const json* status = internal::Field(crd, "status");
  const json* conditions = status != nullptr ? internal::Field(*status, "conditions") : nullptr;
  if (conditions == nullptr || !conditions->is_array()) {
    return false;
  }
  return std::any_of(conditions->begin(), conditions->end(), [](const json& condition) {
    return Text(condition, "type") == "Established" && Text(condition, "status") == "True";
  });
}

// The schema every version (or the CRD) holds, for the ratchets and for SchemaHas checks.
std::vector<const json*> Schemas(const json& spec) {
  std::vector<const json*> out;
  for (const json& version : Versions(spec)) {
    if (const json* validation = internal::SubSchema(version, "schema")) {
      if (const json* open_api = internal::SubSchema(*validation, "openAPIV3Schema")) {
        out.push_back(open_api);
      }
    }
  }
  return out;
}

bool AllVersionsHaveSchemas(const json& spec) {
  const json& versions = Versions(spec);
  return std::all_of(versions.begin(), versions.end(), [](const json& version) {
    const json* validation = internal::SubSchema(version, "schema");
    return validation != nullptr && internal::SubSchema(*validation, "openAPIV3Schema") != nullptr;
  });
}

// ---- Conversion --------------------------------------------------------------------------------

void ValidateWebhookUrl(const std::string& url, const std::string& path,
                        std::vector<SchemaError>& errors) {
  static constexpr std::string_view kForm = "; desired format: https://host[/path]";
  std::size_t scheme_end = url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  std::string rest = scheme_end == std::string::npos ? url : url.substr(scheme_end + 3);
  std::string fragment;
  if (std::size_t hash = rest.find('#'); hash != std::string::npos) {
    fragment = rest.substr(hash + 1);
    rest = rest.substr(0, hash);
  }
  std::string query;
  if (std::size_t question = rest.find('?'); question != std::string::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  std::string authority = scheme_end == std::string::npos ? "" : rest.substr(0, rest.find('/'));
  std::string user;
  if (std::size_t at = authority.find('@'); at != std::string::npos) {
    user = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  if (scheme != "https") {
    errors.push_back(
        schema::Invalid(path, schema::GoQuote(scheme),
                        "'https' is the only allowed URL scheme" + std::string(kForm)));
  }
  if (authority.empty()) {
    errors.push_back(schema::Invalid(path, schema::GoQuote(authority),
                                     "host must be specified" + std::string(kForm)));
  }
  if (!user.empty()) {
    errors.push_back(schema::Invalid(path, schema::GoQuote(user),
                                     "user information is not permitted in the URL"));
  }
  if (!fragment.empty()) {
    errors.push_back(
        schema::Invalid(path, schema::GoQuote(fragment), "fragments are not permitted in the URL"));
  }
  if (!query.empty()) {
    errors.push_back(schema::Invalid(path, schema::GoQuote(query),
                                     "query parameters are not permitted in the URL"));
  }
}

void ValidateWebhookService(const json& service, const std::string& path,
                            std::vector<SchemaError>& errors) {
  if (Text(service, "name").empty()) {
    errors.push_back(schema::Required(path + ".name", "service name is required"));
  }
  if (Text(service, "namespace").empty()) {
    errors.push_back(schema::Required(path + ".namespace", "service namespace is required"));
  }
  std::int64_t port = 443;
  if (const json* value = internal::Field(service, "port");
      value != nullptr && value->is_number_integer()) {
    port = value->get<std::int64_t>();
  }
  if (port < 1 || port > 65535) {
    errors.push_back(schema::Invalid(path + ".port", std::to_string(port),
                                     "port is not valid: must be between 1 and 65535, inclusive"));
  }
  const json* url_path_json = internal::Field(service, "path");
  if (url_path_json == nullptr || !url_path_json->is_string()) {
    return;
  }
  std::string url_path = url_path_json->get<std::string>();
  if (url_path == "/" || url_path.empty()) {
    return;
  }
  if (url_path == "//") {
    errors.push_back(
        schema::Invalid(path + ".path", schema::GoQuote(url_path), "segment[0] may not be empty"));
    return;
  }
  if (url_path[0] != '/') {
    errors.push_back(
        schema::Invalid(path + ".path", schema::GoQuote(url_path), "must start with a '/'"));
  }
  std::string check = url_path.substr(1);
  if (!check.empty() && check.back() == '/') {
    check.pop_back();
  }
  std::size_t start = 0;
  for (int step = 0;; ++step) {
    std::size_t slash = check.find('/', start);
    std::string segment =
        check.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (segment.empty()) {
      errors.push_back(schema::Invalid(path + ".path", schema::GoQuote(url_path),
                                       "segment[" + std::to_string(step) + "] may not be empty"));
    } else {
      for (const std::string& failure : internal::Dns1123SubdomainErrors(segment)) {
        errors.push_back(schema::Invalid(path + ".path", schema::GoQuote(url_path),
                                         "segment[" + std::to_string(step) + "]: " + failure));
      }
    }
    if (slash == std::string::npos) {
      break;
    }
    start = slash + 1;
  }
}

void ValidateConversion(const json& spec, const Options& options,
                        std::vector<SchemaError>& errors) {
  const json* conversion = internal::Field(spec, "conversion");
  if (conversion == nullptr) {
    return;
  }
  const std::string path = "spec.conversion";
  std::string strategy = Text(*conversion, "strategy");
  if (strategy.empty()) {
    errors.push_back(schema::Required(path + ".strategy", ""));
  } else if (strategy != "None" && strategy != "Webhook") {
    errors.push_back(
        schema::NotSupported(path + ".strategy", schema::GoQuote(strategy), {"None", "Webhook"}));
  }
  const json* webhook = internal::Field(*conversion, "webhook");
  const json* client_config =
      webhook != nullptr ? internal::Field(*webhook, "clientConfig") : nullptr;
  std::optional<std::vector<std::string>> review_versions;
  if (webhook != nullptr) {
    review_versions = StringList(*webhook, "conversionReviewVersions");
  }
  if (strategy == "Webhook") {
    if (client_config == nullptr) {
      errors.push_back(schema::Required(path + ".webhookClientConfig",
                                        "required when strategy is set to Webhook"));
    } else {
      const json* url = internal::Field(*client_config, "url");
      const json* service = internal::Field(*client_config, "service");
      if ((url == nullptr) == (service == nullptr)) {
        errors.push_back(schema::Required(path + ".webhookClientConfig",
                                          "exactly one of url or service is required"));
      } else if (url != nullptr) {
        ValidateWebhookUrl(url->is_string() ? url->get<std::string>() : "",
                           path + ".webhookClientConfig.url", errors);
      } else {
        ValidateWebhookService(*service, path + ".webhookClientConfig.service", errors);
      }
    }
    std::string versions_path = path + ".conversionReviewVersions";
    if (!review_versions || review_versions->empty()) {
      errors.push_back(schema::Required(versions_path, ""));
    } else {
      std::set<std::string> seen;
      bool accepted = false;
      for (std::size_t i = 0; i < review_versions->size(); ++i) {
        const std::string& version = (*review_versions)[i];
        std::string at = versions_path + "[" + std::to_string(i) + "]";
        if (!seen.insert(version).second) {
          errors.push_back(schema::Invalid(at, schema::GoQuote(version), "duplicate version"));
          continue;
        }
        for (const std::string& message : internal::Dns1035LabelErrors(version)) {
          errors.push_back(schema::Invalid(at, schema::GoQuote(version), message));
        }
        accepted = accepted || version == "v1" || version == "v1beta1";
      }
      if (options.require_recognized_conversion_review_version && !accepted) {
        errors.push_back(schema::Invalid(versions_path, schema::GoStringSlice(review_versions),
                                         "must include at least one of v1, v1beta1"));
      }
    }
  } else {
    if (client_config != nullptr) {
      errors.push_back(schema::Forbidden(path + ".webhookClientConfig",
                                         "should not be set when strategy is not set to Webhook"));
    }
    if (review_versions && !review_versions->empty()) {
      errors.push_back(schema::Forbidden(path + ".conversionReviewVersions",
                                         "should not be set when strategy is not set to Webhook"));
    }
  }
}

// apihelpers.GetAPIApprovalState for protected groups (k8s.io, kubernetes.io).
void ValidateApiApproval(const json& crd, const json* old_crd, std::vector<SchemaError>& errors) {
  std::string group = Text(crd["spec"], "group");
  auto protected_group = [](const std::string& name) {
    return name == "k8s.io" || name.ends_with(".k8s.io") || name == "kubernetes.io" ||
           name.ends_with(".kubernetes.io");
  };
  if (!protected_group(group)) {
    return;
  }
  static constexpr char kAnnotation[] = "api-approved.kubernetes.io";
  auto state = [&](const json& object) {
    json annotations =
        object.value("metadata", json::object()).value("annotations", json::object());
    std::string value = annotations.is_object() ? annotations.value(kAnnotation, "") : "";
    if (value.empty()) {
      return std::make_pair(0, value);
    }
    if (value.starts_with("unapproved")) {
      return std::make_pair(1, value);
    }
    bool url = value.starts_with("/") || value.find("://") != std::string::npos;
    return std::make_pair(url ? 2 : 3, value);
  };
  auto [now, value] = state(crd);
  if (old_crd != nullptr && state(*old_crd).first == now) {
    return;
  }
  std::string path = std::string("metadata.annotations[") + kAnnotation + "]";
  if (now == 0) {
    errors.push_back(schema::Required(
        path,
        "protected groups must have approval annotation \"api-approved.kubernetes.io\", "
        "see https://github.com/kubernetes/enhancements/pull/1111"));
  } else if (now == 3) {
    errors.push_back(schema::Invalid(
        path, schema::GoQuote(value),
        "protected groups must have approval annotation \"api-approved.kubernetes.io\" with "
        "either a URL or a reason starting with \"unapproved\", see "
        "https://github.com/kubernetes/enhancements/pull/1111"));
  }
}

void ValidateStoredVersions(const json& crd, std::vector<SchemaError>& errors) {
  const std::string path = "status.storedVersions";
  json status = crd.value("status", json::object());
  std::optional<std::vector<std::string>> stored = StringList(status, "storedVersions");
  if (!stored || stored->empty()) {
    errors.push_back(schema::Invalid(path, schema::GoStringSlice(stored),
                                     "must have at least one stored version"));
    return;
  }
  std::vector<std::pair<std::string, std::size_t>> remaining;
  for (std::size_t i = 0; i < stored->size(); ++i) {
    remaining.emplace_back((*stored)[i], i);
  }
  for (const json& version : Versions(crd["spec"])) {
    std::string name = Text(version, "name");
    auto it = std::find_if(remaining.begin(), remaining.end(),
                           [&](const auto& entry) { return entry.first == name; });
    if (internal::Flag(version, "storage") && it == remaining.end()) {
      errors.push_back(schema::Invalid(path, schema::GoStringSlice(stored),
                                       "must have the storage version " + name));
    }
    if (it != remaining.end()) {
      remaining.erase(std::remove_if(remaining.begin(), remaining.end(),
                                     [&](const auto& entry) { return entry.first == name; }),
                      remaining.end());
    }
  }
  for (const auto& [version, index] : remaining) {
    errors.push_back(schema::Invalid(
        path + "[" + std::to_string(index) + "]", schema::GoQuote(version),
        "missing from spec.versions; " + version +
            " was previously a storage version, and must remain in spec.versions until a "
            "storage migration ensures no data remains persisted in " +
            version + " and removes " + version + " from status.storedVersions"));
  }
}

void ValidateDeprecationWarning(const json& version, const std::string& path,
                                std::vector<SchemaError>& errors) {
  const json* warning = internal::Field(version, "deprecationWarning");
  bool deprecated = internal::Flag(version, "deprecated");
  std::vector<std::string> messages;
  if (!deprecated && warning != nullptr) {
    messages.push_back("can only be set for deprecated versions");
  } else if (warning != nullptr && warning->is_string()) {
    const std::string& text = warning->get_ref<const std::string&>();
    if (text.size() > 256) {
      messages.push_back("must be <= 256 characters long");
    }
    if (text.empty()) {
      messages.push_back("must not be an empty string");
    }
    for (std::size_t i = 0; i < text.size(); ++i) {
      auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == 0x7f) {
        messages.push_back(
            "must only contain printable UTF-8 characters; non-printable character found at "
            "index " +
            std::to_string(i));
        break;
      }
    }
  }
  for (const std::string& message : messages) {
    errors.push_back(schema::Invalid(path + ".deprecationWarning",
                                     warning != nullptr && warning->is_string()
                                         ? schema::GoQuote(warning->get<std::string>())
                                         : schema::GoQuote("null"),
                                     message));
  }
}

void ValidateSpec(const json& crd, const json* old_crd, const Options& options_in,
                  std::vector<SchemaError>& errors) {
  const json& spec = crd["spec"];
  Options options = options_in;
  const std::string group = Text(spec, "group");
  if (group.empty()) {
    errors.push_back(schema::Required("spec.group", ""));
  } else if (std::vector<std::string> messages = internal::Dns1123SubdomainErrors(group);
             !messages.empty()) {
    errors.push_back(
        schema::Invalid("spec.group", schema::GoQuote(group), internal::Join(messages, ",")));
  } else if (group.find('.') == std::string::npos) {
    errors.push_back(schema::Invalid("spec.group", schema::GoQuote(group),
                                     "should be a domain with at least one dot"));
  }
  std::string scope = Text(spec, "scope");
  if (scope.empty()) {
    errors.push_back(schema::Required("spec.scope", ""));
  } else if (scope != "Cluster" && scope != "Namespaced") {
    errors.push_back(
        schema::NotSupported("spec.scope", schema::GoQuote(scope), {"Cluster", "Namespaced"}));
  }
  bool preserve_unknown = internal::Flag(spec, "preserveUnknownFields");
  if (!preserve_unknown) {
    options.schema.require_structural = true;
  }
  const Hoisted hoisted = HoistedFields(spec);
  const json& versions = Versions(spec);
  json top_schema =
      versions.empty() || !hoisted.schema ? json() : PerVersion(versions[0], "schema");
  bool top_has_open_api =
      top_schema.is_object() && internal::SubSchema(top_schema, "openAPIV3Schema") != nullptr;
  auto version_has_schema = [](const json& version) {
    const json* validation = internal::SubSchema(version, "schema");
    return validation != nullptr && internal::SubSchema(*validation, "openAPIV3Schema") != nullptr;
  };
  if (!top_has_open_api) {
    for (std::size_t i = 0; i < versions.size(); ++i) {
      if (options.require_open_api_schema) {
        if (!version_has_schema(versions[i])) {
          errors.push_back(
              schema::Required(VersionPath(i) + ".schema.openAPIV3Schema", "schemas are required"));
        }
      } else if (!preserve_unknown && internal::Flag(versions[i], "served") &&
                 !version_has_schema(versions[i])) {
        errors.push_back(schema::Required(VersionPath(i) + ".schema.openAPIV3Schema",
                                          "because otherwise all fields are pruned"));
      }
    }
  }
  std::vector<const json*> schemas = Schemas(spec);
  bool has_defaults = std::any_of(schemas.begin(), schemas.end(),
                                  [](const json* s) { return schema::SchemaHasDefaults(*s); });
  if (has_defaults) {
    options.schema.require_structural = true;
    if (preserve_unknown) {
      errors.push_back(schema::Invalid("spec.preserveUnknownFields", "true",
                                       "must be false in order to use defaults in the schema"));
    }
  }
  if (std::any_of(schemas.begin(), schemas.end(),
                  [](const json* s) { return schema::SchemaHasKubernetesExtensions(*s); })) {
    options.schema.require_structural = true;
  }

  auto subresources_for = [&](const json& version) {
    return hoisted.subresources ? PerVersion(versions[0], "subresources")
                                : PerVersion(version, "subresources");
  };
  int storage = 0;
  std::set<std::string> names;
  bool unique = true;
  for (std::size_t i = 0; i < versions.size(); ++i) {
    const json& version = versions[i];
    std::string name = Text(version, "name");
    storage += internal::Flag(version, "storage") ? 1 : 0;
    unique = names.insert(name).second && unique;
    if (std::vector<std::string> messages = internal::Dns1035LabelErrors(name); !messages.empty()) {
      errors.push_back(schema::Invalid(VersionPath(i) + ".name", schema::GoQuote(name),
                                       internal::Join(messages, ",")));
    }
    ValidateDeprecationWarning(version, VersionPath(i), errors);
    if (!hoisted.schema) {
      json validation = PerVersion(version, "schema");
      if (validation.is_object()) {
        ValidateSchemaAt(validation, HasStatus(subresources_for(version)), options, name,
                         VersionPath(i) + ".schema", errors);
      }
    }
    if (!hoisted.subresources) {
      ValidateSubresources(PerVersion(version, "subresources"), VersionPath(i) + ".subresources",
                           errors);
    }
    if (!hoisted.columns) {
      json columns = PerVersion(version, "additionalPrinterColumns");
      for (std::size_t c = 0; columns.is_array() && c < columns.size(); ++c) {
        ValidateColumn(columns[c],
                       VersionPath(i) + ".additionalPrinterColumns[" + std::to_string(c) + "]",
                       errors);
      }
    }
    if (!hoisted.selectable_fields) {
      json fields = PerVersion(version, "selectableFields");
      if (fields.is_array()) {
        json validation = PerVersion(version, "schema");
        const json* open_api =
            validation.is_object() ? internal::SubSchema(validation, "openAPIV3Schema") : nullptr;
        if (open_api == nullptr && hoisted.schema && top_has_open_api) {
          open_api = internal::SubSchema(top_schema, "openAPIV3Schema");
        }
        if (open_api == nullptr) {
          errors.push_back(schema::Invalid(
              VersionPath(i) + ".selectableFields", schema::GoQuote(""),
              "selectableFields may only be set when version.schema.openAPIV3Schema is not "
              "included"));
        } else {
          ValidateSelectableFields(fields, open_api, VersionPath(i) + ".selectableFields", errors);
        }
      }
    }
  }
  if (!unique) {
    errors.push_back(schema::Invalid("spec.versions", GoVersionsDump(spec, hoisted),
                                     "must contain unique version names"));
  }
  if (storage != 1) {
    errors.push_back(schema::Invalid("spec.versions", GoVersionsDump(spec, hoisted),
                                     "must have exactly one version marked as storage version"));
  }
  // The internal spec.version is versions[0].name, and gets its own check.
  if (!versions.empty() && !Text(versions[0], "name").empty()) {
    std::string first = Text(versions[0], "name");
    if (std::vector<std::string> messages = internal::Dns1035LabelErrors(first);
        !messages.empty()) {
      errors.push_back(
          schema::Invalid("spec.version", schema::GoQuote(first), internal::Join(messages, ",")));
    }
  }
  const json names_json = spec.value("names", json::object());
  for (const char* key : {"plural", "singular", "kind", "listKind"}) {
    if (Text(names_json, key).empty()) {
      errors.push_back(schema::Required(std::string("spec.names.") + key, ""));
    }
  }
  ValidateNames(names_json, "spec.names", errors);
  if (hoisted.schema && top_schema.is_object()) {
    bool any_status = false;
    for (const json& version : versions) {
      any_status = any_status || HasStatus(subresources_for(version));
    }
    ValidateSchemaAt(top_schema, any_status, options, Text(versions[0], "name"), "spec.validation",
                     errors);
  }
  if (hoisted.subresources && !versions.empty()) {
    ValidateSubresources(PerVersion(versions[0], "subresources"), "spec.subresources", errors);
  }
  if (hoisted.columns && !versions.empty()) {
    json columns = PerVersion(versions[0], "additionalPrinterColumns");
    for (std::size_t c = 0; columns.is_array() && c < columns.size(); ++c) {
      ValidateColumn(columns[c], "spec.additionalPrinterColumns[" + std::to_string(c) + "]",
                     errors);
    }
  }
  if (hoisted.selectable_fields && !versions.empty()) {
    json fields = PerVersion(versions[0], "selectableFields");
    if (fields.is_array()) {
      if (!top_has_open_api) {
        errors.push_back(schema::Invalid(
            "spec.selectableFields", schema::GoQuote(""),
            "selectableFields may only be set when validations.schema is included"));
      } else {
        ValidateSelectableFields(fields, internal::SubSchema(top_schema, "openAPIV3Schema"),
                                 "spec.selectableFields", errors);
      }
    }
  }
  if (const json* conversion = internal::Field(spec, "conversion");
      conversion != nullptr && Text(*conversion, "strategy") != "None" && preserve_unknown) {
    errors.push_back(schema::Invalid("spec.conversion.strategy",
                                     schema::GoQuote(Text(*conversion, "strategy")),
                                     "must be None if spec.preserveUnknownFields is true"));
  }
  ValidateConversion(spec, options, errors);
  if (old_crd != nullptr) {
    const json& old_spec = (*old_crd)["spec"];
    auto immutable = [&](const std::string& path, const std::string& now,
                         const std::string& before) {
      if (now != before) {
        errors.push_back(schema::Invalid(path, schema::GoQuote(now), "field is immutable"));
      }
    };
    if (options.require_immutable_names) {
      immutable("spec.scope", scope, Text(old_spec, "scope"));
      immutable("spec.names.kind", Text(names_json, "kind"),
                Text(old_spec.value("names", json::object()), "kind"));
    }
    immutable("spec.group", group, Text(old_spec, "group"));
    immutable("spec.names.plural", Text(names_json, "plural"),
              Text(old_spec.value("names", json::object()), "plural"));
  }
}

// Visits `node` and every schema below it, as the server's SchemaHas does.
void ForEachSchemaNode(const json& node, const std::function<void(const json&)>& visit) {
  if (!node.is_object()) {
    return;
  }
  visit(node);
  for (const char* key : {"properties", "definitions", "patternProperties", "dependencies"}) {
    if (const json* children = internal::Field(node, key);
        children != nullptr && children->is_object()) {
      for (const json& child : *children) {
        ForEachSchemaNode(child, visit);
      }
    }
  }
  for (const char* key : {"allOf", "anyOf", "oneOf", "items"}) {
    if (const json* children = internal::Field(node, key);
        children != nullptr && children->is_array()) {
      for (const json& child : *children) {
        ForEachSchemaNode(child, visit);
      }
    }
  }
  for (const char* key : {"items", "additionalProperties", "additionalItems", "not"}) {
    if (const json* child = internal::Field(node, key); child != nullptr && child->is_object()) {
      ForEachSchemaNode(*child, visit);
    }
  }
}

// findVersionsWithUnchangedSchemas: versions of the new CRD whose schema equals the old CRD's for
// the same version name.
std::set<std::string> VersionsWithUnchangedSchemas(const json& spec, const json& old_spec) {
  std::set<std::string> unchanged;
  for (const json& version : Versions(spec)) {
    std::string name = Text(version, "name");
    for (const json& old_version : Versions(old_spec)) {
      if (Text(old_version, "name") == name &&
          PerVersion(version, "schema") == PerVersion(old_version, "schema")) {
        unchanged.insert(name);
        break;
      }
    }
  }
  return unchanged;
}

Options OptionsFor(const json* old_crd) {
  Options options;
  if (old_crd == nullptr) {
    return options;
  }
  const json& old_spec = (*old_crd)["spec"];
  if (const json* conversion = internal::Field(old_spec, "conversion")) {
    const json* webhook = internal::Field(*conversion, "webhook");
    std::vector<std::string> versions =
        webhook != nullptr ? internal::Strings(*webhook, "conversionReviewVersions")
                           : std::vector<std::string>{};
    options.require_recognized_conversion_review_version =
        versions.empty() || std::any_of(versions.begin(), versions.end(), [](const std::string& v) {
          return v == "v1" || v == "v1beta1";
        });
  }
  options.require_immutable_names = IsEstablished(*old_crd);
  options.require_open_api_schema = AllVersionsHaveSchemas(old_spec);
  // findPreexistingExpressions: every rule and messageExpression of the stored CRD.
  for (const json* old_schema : Schemas(old_spec)) {
    ForEachSchemaNode(*old_schema, [&options](const json& node) {
      const json* rules = internal::Field(node, "x-kubernetes-validations");
      for (std::size_t i = 0; rules != nullptr && rules->is_array() && i < rules->size(); ++i) {
        options.schema.preexisting_rules.insert(Text((*rules)[i], "rule"));
        if (std::string expression = Text((*rules)[i], "messageExpression"); !expression.empty()) {
          options.schema.preexisting_message_expressions.insert(expression);
        }
      }
    });
  }
  for (const json* old_schema : Schemas(old_spec)) {
    schema::SchemaBreaks breaks = schema::OldSchemaBreaks(*old_schema);
    options.schema.require_valid_property_type &= !breaks.invalid_property_type;
    options.schema.require_structural &= !breaks.non_structural;
    options.schema.require_pruned_defaults &= !breaks.unpruned_defaults;
    options.schema.require_atomic_set_type &= !breaks.non_atomic_set_items;
    options.schema.require_map_list_keys_map_set_validation &= !breaks.invalid_map_list_keys;
  }
  return options;
}

}  // namespace

void DefaultCrd(json& crd, const json* old_crd) {
  if (!crd.is_object()) {
    return;
  }
  json& spec = crd["spec"];
  if (!spec.is_object()) {
    return;
  }
  json& names = spec["names"];
  if (!names.is_object()) {
    names = json::object();
  }
  std::string kind = Text(names, "kind");
  if (Text(names, "singular").empty()) {
    names["singular"] = Lower(kind);
  }
  if (Text(names, "listKind").empty() && !kind.empty()) {
    names["listKind"] = kind + "List";
  }
  if (!spec.contains("conversion") || spec["conversion"].is_null()) {
    spec["conversion"] = {{"strategy", "None"}};
  }
  if (json* service = spec["conversion"].is_object() && spec["conversion"].contains("webhook") &&
                              spec["conversion"]["webhook"].is_object() &&
                              spec["conversion"]["webhook"].contains("clientConfig") &&
                              spec["conversion"]["webhook"]["clientConfig"].is_object() &&
                              spec["conversion"]["webhook"]["clientConfig"].contains("service")
                          ? &spec["conversion"]["webhook"]["clientConfig"]["service"]
                          : nullptr;
      service != nullptr && service->is_object() && !service->contains("port")) {
    (*service)["port"] = 443;
  }
  // The strategy: a new CRD's status is the server's; an update keeps the stored one.
  json status = old_crd != nullptr ? old_crd->value("status", json::object()) : json::object();
  if (!status.is_object()) {
    status = json::object();
  }
  json stored = status.value("storedVersions", json::array());
  for (const json& version : Versions(spec)) {
    if (internal::Flag(version, "storage")) {
      std::string name = Text(version, "name");
      if (std::find(stored.begin(), stored.end(), json(name)) == stored.end()) {
        stored.push_back(name);
      }
      break;
    }
  }
  if (!stored.empty()) {
    status["storedVersions"] = stored;
  }
  crd["status"] = status;
}

std::string CrdDecodeError(const json& crd) {
  if (!crd.is_object()) {
    return "";
  }
  const json* spec = internal::Field(crd, "spec");
  if (spec == nullptr || !spec->is_object()) {
    return "";
  }
  const json& versions = Versions(*spec);
  for (const json& version : versions) {
    const json* validation = internal::SubSchema(version, "schema");
    const json* open_api =
        validation != nullptr ? internal::Field(*validation, "openAPIV3Schema") : nullptr;
    if (open_api != nullptr) {
      std::string error =
          schema::SchemaDecodeError(*open_api, "spec.versions.schema.openAPIV3Schema");
      if (!error.empty()) {
        return "CustomResourceDefinition in version \"v1\" cannot be handled as a "
               "CustomResourceDefinition: " +
               error;
      }
    }
  }
  return "";
}

std::vector<SchemaError> ValidateCrd(const json& crd, const json* old_crd,
                                     const schema::CelCompilerFactory& new_cel_compiler) {
  std::vector<SchemaError> errors;
  if (!crd.is_object() || !crd.contains("spec") || !crd["spec"].is_object()) {
    errors.push_back(schema::Required("spec", ""));
    return errors;
  }
  const json& spec = crd["spec"];
  json metadata = crd.value("metadata", json::object());
  std::string name = Text(metadata, "name");
  std::string required_name =
      Text(spec.value("names", json::object()), "plural") + "." + Text(spec, "group");
  auto name_errors = [&](const std::string& value, bool prefix) {
    std::string checked = value;
    if (prefix && !checked.empty() && checked.back() == '-') {
      checked.back() = 'a';  // maskTrailingDash
    }
    std::vector<std::string> messages = internal::Dns1123SubdomainErrors(checked);
    if (value != required_name) {
      messages.push_back("must be spec.names.plural+\".\"+spec.group");
    }
    return messages;
  };
  if (std::string generate_name = Text(metadata, "generateName"); !generate_name.empty()) {
    for (const std::string& message : name_errors(generate_name, true)) {
      errors.push_back(
          schema::Invalid("metadata.generateName", schema::GoQuote(generate_name), message));
    }
  }
  if (name.empty()) {
    errors.push_back(schema::Required("metadata.name", "name or generateName is required"));
  } else {
    for (const std::string& message : name_errors(name, false)) {
      errors.push_back(schema::Invalid("metadata.name", schema::GoQuote(name), message));
    }
  }
  if (!Text(metadata, "namespace").empty()) {
    errors.push_back(schema::Forbidden("metadata.namespace", "not allowed on this type"));
  }
  Options options = OptionsFor(old_crd);
  options.new_cel_compiler = new_cel_compiler;
  if (old_crd != nullptr) {
    options.unchanged_schema_versions = VersionsWithUnchangedSchemas(spec, (*old_crd)["spec"]);
  }
  ValidateSpec(crd, old_crd, options, errors);
  ValidateNames(crd.value("status", json::object()).value("acceptedNames", json::object()),
                "status.acceptedNames", errors);
  ValidateStoredVersions(crd, errors);
  ValidateApiApproval(crd, old_crd, errors);
  bool old_preserves =
      old_crd != nullptr && internal::Flag((*old_crd)["spec"], "preserveUnknownFields");
  if (!old_preserves && internal::Flag(spec, "preserveUnknownFields")) {
    errors.push_back(
        schema::Invalid("spec.preserveUnknownFields", "true",
                        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                        "spec.versions[*].schema instead"));
  }
  return errors;
}

}  // namespace ringleader::devcluster
