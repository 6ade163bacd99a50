#!/usr/bin/env bash
# Builds every image in docker/ and examples/pytorch with buildah (daemonless, chroot isolation,
# the storage of buildah_storage.sh) and runs it: each binary's --help inside its image, ldd inside the image
# finds every library, the entrypoint runs as uid 65532. The example trainer and the PyTorch
# python image train 2 steps as a world of one instead of --help (the trainer has none).
# No registry is reachable, so the Debian bases are tests/docker/debian_base.sh's Debian 12, and
# `--target prebuilt` packages the binaries this build already made (staged by
# docker/stage-image-files.sh) instead of compiling them again: the same runtime stage as the
# default build's, with the files copied from the context instead of the build stage.
# Dockerfile.sidecar: its CUDA stages cannot be had here. What is built is its runtime stage on
# the Debian base in place of CUDA_RUNTIME_IMAGE, holding this build's sidecar (no CUDA): the
# stage's instructions, the flat library directory on LD_LIBRARY_PATH and the entrypoint; not
# the CUDA build stage, NCCL or the Ubuntu base.
# examples/pytorch/Dockerfile: on Containerfile.debian-pytorch (Debian's PyTorch 1.13.1) in place
# of pytorch/pytorch; the torchrun image only runs `torchrun --help` (Debian's torchrun cannot
# start workers).
# Exit 77 (skipped) without root or buildah and debootstrap. Removes what it made.
# Usage: build_images_test.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: build_images_test.sh BUILD_DIR}" && pwd)
if ((EUID != 0)) || ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "build_images_test: needs root, buildah and debootstrap (scripts/setup installs them); skipped"
  exit 77
fi
source "$top/tests/docker/buildah_storage.sh"
base=$("$top/tests/docker/debian_base.sh")
# The storage is this test's alone (the bases aside): one run at a time, and everything else in
# it is removed at the end, containers and images a killed run left included.
exec 8>"$buildah_dir/$buildah_driver.lock"
flock 8
work=$(mktemp -d "$build/tests/docker/images.XXXXXX")
tag="test-$$"
images=()
cleanup() {
  # Every container goes, then the images no name holds.
  "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  for i in "${images[@]}"; do "${buildah[@]}" rmi "$i" >/dev/null 2>&1 || true; done
  "${buildah[@]}" rmi --prune >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "build_images_test: $*" >&2; exit 1; }

# bud NAME DOCKERFILE CONTEXT ARGS...: builds the image localhost/ringleader-ci/NAME:$tag.
bud() {
  local name=$1 file=$2 context=$3
  shift 3
  image_name="localhost/ringleader-ci/$name:$tag"
  "${buildah[@]}" bud --isolation chroot --pull=never --quiet --layers=false "$@" \
    -f "$file" -t "$image_name" "$context" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; fail "buildah bud $file ($name) failed"; }
  images+=("$image_name")
}

# run_in [OPTIONS] CONTAINER -- COMMAND...: runs COMMAND as the image's user, with its environment.
run_in() { "${buildah[@]}" run --isolation chroot "$@"; }

# ldd_resolves CONTAINER FILE: every library FILE loads is found inside the image.
ldd_resolves() {
  local libs
  libs=$(run_in "$1" -- ldd "$2" 2>&1) || fail "ldd $2 failed in ${image_name}: $libs"
  ! grep -q 'not found' <<<"$libs" || fail "${image_name}: $2 has unresolved libraries:
$libs"
}

# train CONTAINER COMMAND...: COMMAND trains 2 steps as rank 0 of a world of one.
train() {
  local container=$1 port
  shift
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  output=$(run_in -e RANK=0 -e WORLD_SIZE=1 -e MASTER_ADDR=127.0.0.1 -e MASTER_PORT="$port" \
    "$container" -- "$@" --steps 2 --timeout-seconds 30 2>&1) || fail "$image_name: training failed: $output"
  grep -q '^final steps 2 ' <<<"$output" || fail "$image_name: no 'final steps 2' line: $output"
}

# check_image KIND: runs the checks on the image just built; KIND says which.
check_image() {
  local kind=$1 container entry user
  container=$("${buildah[@]}" from --pull=never "$image_name")
  entry=$("${buildah[@]}" inspect --type image --format '{{range .OCIv1.Config.Entrypoint}}{{.}} {{end}}' "$image_name")
  entry=${entry% }
  user=$("${buildah[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$image_name")
  [[ "$user" == 65532:65532 ]] || fail "$image_name runs as '$user', not 65532:65532"
  [[ "$(run_in "$container" -- id -u)" == 65532 ]] || fail "$image_name: its user is not uid 65532 inside"
  case "$kind" in
    pytorch-python)
      [[ "$entry" == "python /train.py" ]] || fail "$image_name: entrypoint '$entry'"
      train "$container" python /train.py
      ;;
    pytorch-torchrun)
      [[ "$entry" == "torchrun /train.py" ]] || fail "$image_name: entrypoint '$entry'"
      output=$(run_in "$container" -- torchrun --help 2>&1) || fail "$image_name: torchrun --help failed: $output"
      ;;
    example-trainer)
      ldd_resolves "$container" "$entry"
      train "$container" "$entry"
      ;;
    *)
      ldd_resolves "$container" "$entry"
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
  "$top/docker/stage-image-files.sh" "$kind" "$build" "$work/$kind/out"
  bud "$kind" "$top/docker/Dockerfile.$kind" "$work/$kind" --target prebuilt \
    --build-arg DEBIAN_IMAGE="$base" --build-arg DEBIAN_SLIM_IMAGE="$base" \
    --build-arg CUDA_DEVEL_IMAGE="$base" --build-arg CUDA_RUNTIME_IMAGE="$base"
  check_image "$kind"
  echo "build_images_test: docker/Dockerfile.$kind built and checked in $((($(date +%s%N) - start) / 1000000)) ms"
done

# Debian's PyTorch in place of pytorch/pytorch, made once and kept with the Debian base; tagged
# with its Containerfile's hash, since the storage outlives checkouts.
start=$(date +%s%N)
torch_base=localhost/ringleader-ci/debian-pytorch:1.13-$(sha256sum "$top/tests/docker/Containerfile.debian-pytorch" | cut -c1-12)
if ! "${buildah[@]}" inspect --type image "$torch_base" >/dev/null 2>&1; then
  "${buildah[@]}" bud --isolation chroot --pull=never --quiet --layers=false --build-arg DEBIAN_IMAGE="$base" \
    -f "$top/tests/docker/Containerfile.debian-pytorch" -t "$torch_base" "$top/tests/docker" >"$work/torch-base.log" 2>&1 ||
    { cat "$work/torch-base.log" >&2; fail "the PyTorch base (Containerfile.debian-pytorch) failed"; }
fi
for target in python torchrun; do
  bud "pytorch-$target" "$top/examples/pytorch/Dockerfile" "$top/examples/pytorch" --target "$target" \
    --build-arg PYTORCH_IMAGE="$torch_base"
  check_image "pytorch-$target"
done
echo "build_images_test: examples/pytorch/Dockerfile built and checked in $((($(date +%s%N) - start) / 1000000)) ms"
