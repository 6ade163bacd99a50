#!/usr/bin/env bash
# Builds every image in docker/ with buildah (daemonless, vfs storage, chroot isolation) and runs
# it: each binary's --help inside its image (the example trainer trains 2 steps as a world of
# one, it has no --help), ldd inside the image finds every library, the entrypoint runs as uid
# 65532. No registry is reachable, so the bases are tests/docker/debian_base.sh's Debian 12, and
# `--target prebuilt` packages the binaries this build already made (staged by
# docker/stage-image-files.sh) instead of compiling them again: the same runtime stage as the
# default build's, with the files copied from the context instead of the build stage.
# Dockerfile.sidecar: its CUDA stages cannot be had here. What is built is its runtime stage on
# the Debian base in place of CUDA_RUNTIME_IMAGE, holding this build's sidecar (no CUDA): the
# stage's instructions, the flat library directory on LD_LIBRARY_PATH and the entrypoint; not
# the CUDA build stage, NCCL or the Ubuntu base.
# Exit 77 (skipped) without root or buildah and debootstrap. Removes what it made.
# Usage: build_images_test.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: build_images_test.sh BUILD_DIR}" && pwd)
if ((EUID != 0)) || ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "build_images_test: needs root, buildah and debootstrap (scripts/setup installs them); skipped"
  exit 77
fi
dir="$top/.deps/buildah"
buildah=(buildah --root "$dir/storage" --runroot "$dir/run" --storage-driver vfs)
base=$("$top/tests/docker/debian_base.sh" "$dir")
# The storage is this test's alone (the base aside): one run at a time, and everything else in it
# is removed at the end, containers and images a killed run left included.
exec 8>"$dir/storage.lock"
flock 8
work=$(mktemp -d "$build/tests/docker/images.XXXXXX")
tag="test-$$"
images=()
cleanup() {
  # Every container goes (a killed run's too), then the images no name holds.
  "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  for i in "${images[@]}"; do "${buildah[@]}" rmi "$i" >/dev/null 2>&1 || true; done
  "${buildah[@]}" rmi --prune >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "build_images_test: $*" >&2; exit 1; }

# run_in [OPTIONS] CONTAINER -- COMMAND...: runs COMMAND as the image's user, with its environment.
run_in() { "${buildah[@]}" run --isolation chroot "$@"; }

# ldd_resolves CONTAINER FILE: every library FILE loads is found inside the image.
ldd_resolves() {
  local libs
  libs=$(run_in "$1" -- ldd "$2" 2>&1) || fail "ldd $2 failed in ${image_name}: $libs"
  ! grep -q 'not found' <<<"$libs" || fail "${image_name}: $2 has unresolved libraries:
$libs"
}

check_image() {
  local kind=$1 container entry user output
  image_name="localhost/ringleader-ci/$kind:$tag"
  container=$("${buildah[@]}" from --pull=never "$image_name")
  entry=$("${buildah[@]}" inspect --type image --format '{{index .OCIv1.Config.Entrypoint 0}}' "$image_name")
  user=$("${buildah[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$image_name")
  [[ "$user" == 65532:65532 ]] || fail "$image_name runs as '$user', not 65532:65532"
  [[ "$(run_in "$container" -- id -u)" == 65532 ]] || fail "$image_name: its user is not uid 65532 inside"
  ldd_resolves "$container" "$entry"
  case "$kind" in
    example-trainer)
      local port
      port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      output=$(run_in -e RANK=0 -e WORLD_SIZE=1 -e MASTER_ADDR=127.0.0.1 -e MASTER_PORT="$port" \
        "$container" -- "$entry" --steps 2 --timeout-seconds 20 2>&1) || fail "$image_name: training failed: $output"
      grep -q '^final steps 2 ' <<<"$output" || fail "$image_name: no 'final steps 2' line: $output"
      ;;
    *)
      output=$(run_in "$container" -- "$entry" --help 2>&1) || fail "$image_name: $entry --help failed: $output"
      [[ -n "$output" ]] || fail "$image_name: $entry --help printed nothing"
      ;;
  esac
  if [[ "$kind" == sidecar* ]]; then
    ldd_resolves "$container" "$(dirname "$entry")/libnccl-profiler-ringleader.so"
  fi
  echo "build_images_test: $image_name: $(grep -m 1 -E '^final|^usage|^ringleader-operator' <<<"$output")"
}

for kind in operator sidecar-cpu sidecar example-trainer; do
  start=$(date +%s%N)
  context="$work/$kind"
  "$top/docker/stage-image-files.sh" "$kind" "$build" "$context/out"
  "${buildah[@]}" bud --isolation chroot --pull=never --quiet --layers=false \
    --target prebuilt --build-arg DEBIAN_IMAGE="$base" --build-arg DEBIAN_SLIM_IMAGE="$base" \
    --build-arg CUDA_DEVEL_IMAGE="$base" --build-arg CUDA_RUNTIME_IMAGE="$base" \
    -f "$top/docker/Dockerfile.$kind" -t "localhost/ringleader-ci/$kind:$tag" "$context" >"$work/$kind.log" 2>&1 ||
    { cat "$work/$kind.log" >&2; fail "buildah bud docker/Dockerfile.$kind failed"; }
  images+=("localhost/ringleader-ci/$kind:$tag")
  check_image "$kind"
  echo "build_images_test: docker/Dockerfile.$kind built and checked in $((($(date +%s%N) - start) / 1000000)) ms"
done
