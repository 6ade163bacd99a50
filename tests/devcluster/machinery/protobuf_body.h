// Decodes the request bodies kubectl sends as application/vnd.kubernetes.protobuf (every built-in
// kind it creates) into the JSON the same object would have been sent as.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::devcluster {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

// `body` is a whole request body: the magic "k8s\0", then a runtime.Unknown envelope
// {typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose `raw` is the object's
// message. `api_version` and `kind` are what the URL expects ("v1" and "Namespace",
// "authentication.k8s.io/v1" and "TokenRequest"); an envelope that leaves them empty takes them from
// there, as kube-apiserver does.
//
// Returns the object as its JSON form would be: apiVersion and kind, JSON field names, Go's
// omitempty (zero scalars and empty lists dropped where the Go field says omitempty, nulls where a
// nil pointer or slice has no omitempty), bytes as base64, metav1.Time as RFC 3339, Quantity and
// IntOrString as their JSON values, inlined structs flattened.
//
// Throws ApiError:
// - 415 UnsupportedMediaType when devcluster has no table for the kind; the message names the kind
//   and the kinds it decodes (JSON is always accepted);
// - 400 BadRequest for a malformed body (no magic, truncated, wrong wire type, bad UTF-8, a bad
//   quantity or time), an envelope kind or apiVersion other than the URL's, and a field number
//   devcluster does not know, named with its message, its place in the object and the kind.
// Every length is checked against the bytes left before anything is read or allocated.
nlohmann::json DecodeProtobufObject(std::string_view body, std::string_view api_version, std::string_view kind);

// A policy/v1 (or policy/v1beta1, which the eviction subresource also accepts) Eviction, as kubectl
// drain posts it to pods/NAME/eviction; an envelope without apiVersion is policy/v1. Another API
// version or kind is a 400, worded as for a JSON Eviction.
nlohmann::json DecodeProtobufEviction(std::string_view body);

// The DeleteOptions of a DELETE (kubectl drain sends them so when it cannot evict). Any apiVersion
// in the envelope decodes, as the server registers DeleteOptions in every version; a kind other
// than DeleteOptions is a 400.
nlohmann::json DecodeProtobufDeleteOptions(std::string_view body);

// "apiVersion kind" of every kind DecodeProtobufObject decodes, e.g. "v1 Namespace", "apps/v1 Deployment".
std::vector<std::string> ProtobufDecodableKinds();

}  // namespace ringleader::devcluster
