// Small facts integration tests need from the machine: a scratch directory and a free port.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace ringleader::testing {

// A fresh directory under the system temp dir, named with `prefix` and a random suffix.
std::filesystem::path MakeTempDir(std::string_view prefix);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
int FreePort();

// `count` distinct free ports: each stays bound until all are picked, so two separate FreePort()
// calls cannot hand the same port to two listeners of one test.
std::vector<int> FreePorts(int count);

}  // namespace ringleader::testing
