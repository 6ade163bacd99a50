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
# The GPU build's sidecar image: gpu_sidecar_image_test.sh.
# Usage: build_images_test.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: build_images_test.sh BUILD_DIR}" && pwd)
test_name=build_images_test
# Skips without root, buildah or debootstrap; the storage, the base, bud and check_image.
source "$top/tests/docker/image_checks.sh"

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
