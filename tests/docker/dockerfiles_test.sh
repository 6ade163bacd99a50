#!/usr/bin/env bash
# The Dockerfiles cannot be built here (no container engine): check statically that they copy
# only what exists, start only binaries the CMake build makes, and run as non-root.
# Usage: dockerfiles_test.sh BUILD_DIR OPERATOR_BINARY SIDECAR_BINARY
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$top/tests/docker/check_dockerfiles.py" "$top" "$@"
bash -n "$top/docker/copy-runtime-libs.sh"
