#!/usr/bin/env bash
# Packs the NCCL checks for a GPU machine that lacks this project's libraries: the GPU test
# binaries and the sidecar from a build made here, the shared libraries they need beyond the
# C/C++ runtime (libnccl and the CUDA driver excepted: the GPU machine has its own), and
# device_check.sh, and the NCCL profiler plugin beside the sidecar (where the sidecar copies it
# from). Usage: tests/gpu/pack_for_device.sh BUILD_DIR [OUT_DIR, default .devcarry]
set -euo pipefail
build=${1:?usage: pack_for_device.sh BUILD_DIR [OUT_DIR]}
out=${2:-.devcarry}
here=$(cd "$(dirname "$0")" && pwd)
binaries=(
  "$build/tests/sidecar/gpu_inventory_test"
  "$build/tests/sidecar/collectives/nccl_communicator_test"
  "$build/sidecar/app/ringleader-sidecar"
  "$build/tests/bench/nccl_allreduce_direct"
)
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for binary in "${binaries[@]}"; do
  [[ -x $binary ]] || { echo "missing $binary: build it with NCCL found" >&2; exit 1; }
  cp "$binary" "$out/bin/"
done
# The libraries that resolve to a path, minus those every glibc system has and libnccl
# (218 MiB here; the GPU machine's own copy is used).
ldd "${binaries[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
plugin="$build/sidecar/app/libnccl-profiler-ringleader.so"
[[ -f $plugin ]] || { echo "missing $plugin: build ringleader-sidecar" >&2; exit 1; }
cp "$plugin" "$out/bin/"
cp "$here/device_check.sh" "$out/"
du -sh "$out"
