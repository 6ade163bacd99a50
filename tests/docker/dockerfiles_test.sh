#!/usr/bin/env bash
# Checks of the Dockerfiles that need no container engine (build_images_test.sh builds them):
# they copy only what exists, start only binaries the CMake build makes, stage those binaries
# where their ENTRYPOINT says, and run as non-root.
# Usage: dockerfiles_test.sh BUILD_DIR OPERATOR_BINARY SIDECAR_BINARY
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$top/tests/docker/check_dockerfiles.py" "$top" "$@"
bash -n "$top/docker/copy-runtime-libs.sh"
