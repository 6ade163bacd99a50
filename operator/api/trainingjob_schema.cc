// Parses the CRD embedded at build time and picks the schema of the version this code serves.
#include "operator/api/trainingjob_schema.h"

#include <stdexcept>
#include <string>

#include "operator/api/trainingjob.h"
#include "operator/api/trainingjob_crd_text.h"
#include "operator/api/unknown_fields.h"
#include "operator/yaml/yaml_to_json.h"

namespace ringleader::api {
namespace {

using nlohmann::json;

json LoadSchema() {
  const json crd = yaml::ParseYaml(kTrainingJobCrdYaml);
  for (const json& version : crd.at("spec").at("versions")) {
    if (version.value("name", "") == kVersion) {
      return version.at("schema").at("openAPIV3Schema");
    }
  }
  // The CRD and kVersion are built together; a mismatch is a broken build, not bad input.
  throw std::logic_error("crds/ringleader.dev_trainingjobs.yaml has no version " +
                         std::string(kVersion));
}

}  // namespace

const json& TrainingJobSchema() {
  static const json schema = LoadSchema();
  return schema;
}

FieldErrors UnknownTrainingJobFields(const json& object) {
  return UnknownFields(object, TrainingJobSchema());
}

}  // namespace ringleader::api
