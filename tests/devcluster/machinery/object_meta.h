// Object-metadata helpers the API server uses on every write: generation bumps, no-op detection,
// UIDs, timestamps, owner references and name validation.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/devcluster/machinery/status.h"
#include "tests/support/structural_schema.h"

namespace ringleader::devcluster {

using Time = std::chrono::system_clock::time_point;

// Whether anything outside metadata and status differs (the server then bumps
// metadata.generation).
bool SpecChanged(const nlohmann::json& old_object, const nlohmann::json& new_object);

// Whether a and b are equal ignoring metadata.resourceVersion and metadata.managedFields (a write
// that changes nothing else is a no-op and keeps the resourceVersion).
bool SameObject(const nlohmann::json& a, const nlohmann::json& b);

// A random version-4 UUID ("1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b") from OpenSSL's RAND_bytes.
std::string NewUid();

// `prefix` plus five random characters, as the server expands metadata.generateName.
std::string GenerateName(std::string_view prefix);

// RFC 3339 in UTC to the second, as metav1.Time serialises: "2024-05-01T12:00:00Z".
std::string FormatTime(Time time);
// With microseconds, as metav1.MicroTime (Lease, Event series): "2024-05-01T12:00:00.000000Z".
std::string FormatMicroTime(Time time);
// Parses RFC 3339 ("Z" or "+hh:mm" offsets, optional fractional seconds); nullopt if malformed.
std::optional<Time> ParseTime(std::string_view text);

// The uids of metadata.ownerReferences, in order.
std::vector<std::string> OwnerUids(const nlohmann::json& object);
// Whether `object` has an ownerReference to owner_uid with blockOwnerDeletion: true (foreground
// deletion of the owner then waits for it).
bool BlocksOwnerDeletion(const nlohmann::json& object, std::string_view owner_uid);
// The uid of the ownerReference with controller: true, if any.
std::optional<std::string> ControllerUid(const nlohmann::json& object);

// Which rule an object name must follow: most kinds need a DNS-1123 subdomain; Namespaces need a
// DNS-1123 label and Services a DNS-1035 label (it starts with a letter).
enum class NameRule { kDnsSubdomain, kDnsLabel, kDns1035Label };

// Field errors for metadata.name in the real server's words, e.g.
// `metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of ...`.
std::vector<schema::SchemaError> NameErrors(std::string_view name, NameRule rule);

// ApiError Invalid for a bad name (`qualified_kind` as for Invalid(): "Pod",
// "TrainingJob.ringleader.dev"), or nullopt if the name is fine.
std::optional<ApiError> ValidateName(std::string_view qualified_kind, std::string_view name,
                                     NameRule rule);

}  // namespace ringleader::devcluster
