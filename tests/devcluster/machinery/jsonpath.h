// client-go's JSONPath grammar (k8s.io/client-go/util/jsonpath parser.go), to tell which CRD
// printer-column paths the API server can turn into table columns.
#pragma once

#include <string>
#include <string_view>

namespace ringleader::devcluster {

// The parse error client-go's jsonpath.Parser reports for `text` (a template such as
// "{.status.phase}" or "x {.a[*].b} y"), or "" when it parses: "unclosed action",
// "unrecognized character in action: U+0021 '!'", "invalid array index x", ...
std::string JsonPathParseError(std::string_view text);

}  // namespace ringleader::devcluster
