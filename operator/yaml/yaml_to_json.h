// YAML manifests to JSON and back, resolving plain scalars the way Kubernetes tooling does, so
// the operator, its tests and `render` all see one typed view of a manifest.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::yaml {

// Bad YAML or YAML with no JSON form; what() names the place ("line 3, column 5: ...").
class YamlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Converts one parsed YAML node to JSON. Plain scalars follow the YAML 1.2 core schema:
// null/Null/NULL/~/empty -> null, true/false (also True/TRUE...) -> bool, decimal, 0x and 0o
// integers -> int64 (out of int64 range -> double, as the API server's JSON decoder does),
// floats -> double, anything else -> string. .inf and .nan have no JSON form and stay strings.
// Quoted and block scalars are always strings; !!str/!!int/!!float/!!bool/!!null tags are
// honoured. Map keys must be scalars and unique; non-string keys become their canonical text
// ("0x10" -> "16"). Throws YamlError with the node's line and column.
nlohmann::json YamlToJson(const YAML::Node& node);

// Exactly one document; empty text (or only comments) gives null.
nlohmann::json ParseYaml(std::string_view text);

// Every document of a multi-document stream, skipping empty (null) ones as kubectl does.
std::vector<nlohmann::json> ParseYamlDocuments(std::string_view text);

// ParseYaml on a file's contents; the YamlError names the path.
nlohmann::json LoadYamlFile(const std::string& path);

// Readable block-style YAML ending in a newline. Strings that would re-parse as another type
// (also under YAML 1.1 rules, e.g. "yes", "010") are double-quoted; multi-line strings use
// literal blocks where that is exact. ParseYaml(JsonToYaml(v)) == v for finite numbers.
std::string JsonToYaml(const nlohmann::json& value);

}  // namespace ringleader::yaml
