// CustomResourceDefinition defaulting and validation as kube-apiserver 1.32 does them
// (apiextensions v1 defaults, the registry strategy, ValidateCustomResourceDefinition and
// ...Update), with the paths of the internal type the server validates.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/structural_schema.h"

namespace ringleader::devcluster {

// v1 defaulting (names.singular, names.listKind, conversion.strategy None, a webhook service
// port of 443) and the strategy's status handling: on create (`old_crd` null) the status is
// reset and storedVersions holds the storage version; on update the old status is kept and the
// storage version is added to storedVersions if new.
void DefaultCrd(nlohmann::json& crd, const nlohmann::json* old_crd);

// Why the server cannot even decode the CRD (a field of the wrong JSON type): the message of its
// 400 BadRequest, or "".
std::string CrdDecodeError(const nlohmann::json& crd);

// Every error ValidateCustomResourceDefinition (or ...Update, with `old_crd`) reports for a
// defaulted CRD, in the server's order. Paths are the internal type's: a schema, subresources,
// printer columns or selectable fields that every version has alike are reported at
// spec.validation.openAPIV3Schema, spec.subresources, spec.additionalPrinterColumns and
// spec.selectableFields (the v1 -> internal conversion moves them up), otherwise at
// spec.versions[i]....; a webhook's client config at spec.conversion.webhookClientConfig.
// `new_cel_compiler` is the CEL seam: called once per openAPIV3Schema validated, its compiler gets
// each node where the server compiles rules, then the schema's cost total (see
// schema::CelCompileRequest for when the server compiles). Unset: rules are not compiled.
std::vector<schema::SchemaError> ValidateCrd(
    const nlohmann::json& crd, const nlohmann::json* old_crd,
    const schema::CelCompilerFactory& new_cel_compiler = {});

}  // namespace ringleader::devcluster
