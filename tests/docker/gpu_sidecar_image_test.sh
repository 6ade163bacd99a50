#!/usr/bin/env bash
# The GPU sidecar image, as CI can build it: docker/Dockerfile.sidecar `--target prebuilt` with
# buildah, holding the GPU build's ringleader-sidecar (its NCCL backend; staged by
# docker/stage-image-files.sh sidecar, which leaves libcudart and libnccl to the runtime base), on
# a stand-in for CUDA_RUNTIME_IMAGE; then inside the image: ldd resolves every library of the
# sidecar (libcudart and libnccl from the stand-in base) and of its profiler plugin, the sidecar
# runs as uid 65532 and `ringleader-sidecar --help` runs (no GPU or driver is needed for that).
# What is real: the Dockerfile's runtime stage and prebuilt stage as they are (user, the flat
# Debian library directory on LD_LIBRARY_PATH after the base's own, the entrypoint), the sidecar
# binary with NCCL, and the very libcudart and libnccl files it was linked against.
# What is not: the stand-in is tests/docker/debian_base.sh's Debian 12 plus the CUDA runtime and
# NCCL of PyTorch's wheels (the venv's nvidia/cu13 and nvidia/nccl; versions printed), put where
# NVIDIA's packages put them (libcudart under /usr/local/cuda/targets/x86_64-linux/lib, on the
# loader's path through /etc/ld.so.conf.d; libnccl.so.2 in /usr/lib/x86_64-linux-gnu) and with
# NVIDIA's LD_LIBRARY_PATH; it is not NVIDIA's Ubuntu 24.04 runtime image, its NCCL is the wheel's,
# not the image's 2.28.3, and the Dockerfile's CUDA build stage is not run (no registry here).
# Nothing touches a GPU. Exit 77 (skipped) without root, buildah or debootstrap. Removes what it
# made but the stand-in base, which is kept in the buildah storage named after its libraries' hash.
# Usage: gpu_sidecar_image_test.sh GPU_BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: gpu_sidecar_image_test.sh GPU_BUILD_DIR}" && pwd)
test_name=gpu_sidecar_image_test
start=$(date +%s%N)
sidecar="$build/sidecar/app/ringleader-sidecar"
# The libraries the GPU build linked the sidecar against (its build-tree RUNPATH).
linked=$(ldd "$sidecar")
library_path() {
  awk -v name="$1" 'index($1, name) == 1 && $2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$linked"
}
cudart=$(library_path libcudart.so)
nccl=$(library_path libnccl.so)
[[ -f "$cudart" && -f "$nccl" ]] || { echo "$test_name: $sidecar does not link libcudart and libnccl:
$linked" >&2; exit 1; }
source "$top/tests/docker/image_checks.sh"

# The versions, from the headers beside the libraries (the wheels' layout: lib/ and include/).
header_define() { awk -v name="$2" '$1 == "#define" && $2 == name { print $3; exit }' "$1"; }
nccl_h="$(dirname "$nccl")/../include/nccl.h"
nccl_version="$(header_define "$nccl_h" NCCL_MAJOR).$(header_define "$nccl_h" NCCL_MINOR).$(header_define "$nccl_h" NCCL_PATCH)"
cudart_version=$(header_define "$(dirname "$cudart")/../include/cuda_runtime_api.h" CUDART_VERSION)
cuda_version="$((cudart_version / 1000)).$((cudart_version % 1000 / 10))"
echo "$test_name: stand-in base: Debian 12 + CUDA runtime $cuda_version ($cudart) + NCCL $nccl_version ($nccl)"

# The stand-in base, made once per pair of library files (about 250 MB, mostly NCCL) and kept;
# older ones go.
hash=$({ sha256sum "$cudart" "$nccl" | cut -d' ' -f1; echo "$base v1"; } | sha256sum | cut -c1-12)
standin_repo=localhost/ringleader-ci/cuda-runtime-standin
standin="$standin_repo:$cuda_version-nccl$nccl_version-$hash"
if ! "${buildah[@]}" inspect --type image "$standin" >/dev/null 2>&1; then
  old=$("${buildah[@]}" images --format '{{.Name}}:{{.Tag}}' 2>/dev/null | grep "^$standin_repo:" || true)
  for i in $old; do "${buildah[@]}" rmi "$i" >/dev/null 2>&1 || true; done
  c=$("${buildah[@]}" from --pull=never "$base")
  cuda_lib="/usr/local/cuda-$cuda_version/targets/x86_64-linux/lib"
  "${buildah[@]}" copy "$c" "$cudart" "$cuda_lib/$(basename "$cudart")" >/dev/null
  "${buildah[@]}" copy "$c" "$nccl" "/usr/lib/x86_64-linux-gnu/$(basename "$nccl")" >/dev/null
  printf '/usr/local/cuda/targets/x86_64-linux/lib\n' >"$work/000_cuda.conf"
  printf '/usr/local/nvidia/lib\n/usr/local/nvidia/lib64\n' >"$work/nvidia.conf"
  "${buildah[@]}" copy "$c" "$work/000_cuda.conf" "$work/nvidia.conf" /etc/ld.so.conf.d/ >/dev/null
  run_in "$c" -- sh -c "ln -s cuda-$cuda_version /usr/local/cuda && ldconfig" ||
    fail "making the stand-in base failed"
  "${buildah[@]}" config --env LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    --env NCCL_VERSION="$nccl_version" --env CUDA_VERSION="$cuda_version" "$c"
  "${buildah[@]}" commit -q "$c" "$standin" >/dev/null
  "${buildah[@]}" rm "$c" >/dev/null
fi

"$top/docker/stage-image-files.sh" sidecar "$build" "$work/sidecar/out"
if [[ -n "$(find "$work/sidecar/out" -name 'libcudart*' -o -name 'libnccl.so*')" ]]; then
  fail "stage-image-files.sh sidecar staged libcudart or libnccl, which the runtime base provides"
fi
bud sidecar-gpu "$top/docker/Dockerfile.sidecar" "$work/sidecar" --target prebuilt \
  --build-arg DEBIAN_IMAGE="$base" --build-arg CUDA_DEVEL_IMAGE="$base" \
  --build-arg CUDA_RUNTIME_IMAGE="$standin"
check_image sidecar
# Where the stand-in base keeps them (/lib is /usr/lib on Debian 12), not the Debian library
# directory the sidecar's own sit in.
from_base='=> (/usr/local/cuda/|(/usr)?/lib/x86_64-linux-gnu/)'
for library in libcudart.so libnccl.so.2; do
  line=$(grep -E "^\s*$library[.0-9]* => " <<<"$entry_libs") ||
    fail "$image_name: ringleader-sidecar does not load $library:
$entry_libs"
  [[ "$line" =~ $from_base ]] ||
    fail "$image_name: $library is not the stand-in base's: $line"
  echo "$test_name: ok $(awk '{ print $1, $2, $3 }' <<<"$line")"
done
echo "$test_name: docker/Dockerfile.sidecar (GPU build, NCCL $nccl_version) built and checked in $((($(date +%s%N) - start) / 1000000)) ms"
