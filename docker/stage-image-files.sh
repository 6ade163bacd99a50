#!/usr/bin/env bash
# What each image holds, in one place: installs under OUT the files of image KIND (the suffix of
# its docker/Dockerfile.KIND) from a CMake build directory, as the runtime stage copies them to /.
# Called by the Dockerfiles' build stages and, for `--target prebuilt`, by whoever built the
# binaries on Debian 12 (CI: tests/docker/build_images_test.sh), into that build context's out/.
# Usage: stage-image-files.sh KIND BUILD_DIR OUT
set -euo pipefail
kind=${1:?usage: stage-image-files.sh KIND BUILD_DIR OUT}
build=${2:?usage: stage-image-files.sh KIND BUILD_DIR OUT}
out=${3:?usage: stage-image-files.sh KIND BUILD_DIR OUT}
here=$(cd "$(dirname "$0")" && pwd)

# The sidecar copies the NCCL profiler plugin from its own directory into the trainers' volume
# (libc only: the plugin brings its own C++ runtime, sidecar/profiler/CMakeLists.txt).
install_profiler_plugin() {
  install -D -m 0644 "$build/sidecar/app/libnccl-profiler-ringleader.so" \
    "$out/usr/local/bin/libnccl-profiler-ringleader.so"
}

case "$kind" in
  operator)
    "$here/copy-runtime-libs.sh" "$out" "$build/operator/ringleader-operator"
    ;;
  sidecar-cpu)
    "$here/copy-runtime-libs.sh" "$out" "$build/sidecar/app/ringleader-sidecar"
    install_profiler_plugin
    ;;
  sidecar)
    # The runtime image is NVIDIA's Ubuntu one: cudart and NCCL are its own, and the Debian
    # libraries go into a directory of their own (Dockerfile.sidecar's LD_LIBRARY_PATH).
    PROVIDED='libcudart|libnccl' LIB_DIR=/usr/local/lib/ringleader \
      "$here/copy-runtime-libs.sh" "$out" "$build/sidecar/app/ringleader-sidecar"
    install_profiler_plugin
    ;;
  example-trainer)
    "$here/copy-runtime-libs.sh" "$out" "$build/examples/trainer/ringleader-example-trainer"
    ;;
  *)
    echo "stage-image-files: unknown image '$kind' (operator, sidecar, sidecar-cpu, example-trainer)" >&2
    exit 2
    ;;
esac
