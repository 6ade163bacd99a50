#!/usr/bin/env bash
# The NCCL floor at configure time (cmake/RingleaderGpu.cmake), against stand-in CUDA and NCCL
# directories: headers holding only their version lines, empty library files. An NCCL older than
# 2.28 stops the configure naming the version found and the one needed; a CUDA runtime header
# without crt/host_defines.h (the runtime wheel alone) is named when GPU parts are required. Both
# configures stop at the GPU check, before any target is made (about half a second each).
# Usage: nccl_floor_test.sh SOURCE_DIR
set -uo pipefail
source_dir=${1:?usage: nccl_floor_test.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# stand_in DIR CUDART_VERSION NCCL_MAJOR NCCL_MINOR NCCL_PATCH
stand_in() {
  local dir=$1
  mkdir -p "$dir/cuda/include/crt" "$dir/cuda/lib" "$dir/nccl/include" "$dir/nccl/lib"
  echo "#define CUDART_VERSION $2" >"$dir/cuda/include/cuda_runtime_api.h"
  : >"$dir/cuda/include/crt/host_defines.h"
  : >"$dir/cuda/lib/libcudart.so.13"
  printf '#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n' "$3" "$4" "$5" \
    >"$dir/nccl/include/nccl.h"
  : >"$dir/nccl/lib/libnccl.so.2"
}

# expect_refusal NAME DIR WANTED... [-- CMAKE_ARGS...]: the configure fails and says each WANTED.
expect_refusal() {
  local name=$1 dir=$2
  shift 2
  local wanted=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    wanted+=("$1")
    shift
  done
  shift
  # The environment's own CUDA and NCCL hints must not stand in for the stand-ins.
  env -u NCCL_HOME -u NCCL_ROOT -u CUDA_HOME -u CUDA_PATH -u CUDAToolkit_ROOT \
    cmake -S "$source_dir" -B "$dir/build" -DRINGLEADER_TESTS=unit -DRINGLEADER_BENCHMARKS=OFF \
    -DCUDAToolkit_ROOT="$dir/cuda" -DNCCL_ROOT="$dir/nccl" "$@" >"$dir/configure.log" 2>&1
  local rc=$?
  # CMake wraps its messages; one line makes them searchable.
  local text
  text=$(tr -s ' \n' ' ' <"$dir/configure.log")
  local ok=1
  [[ $rc -ne 0 ]] || { echo "FAIL $name: the configure passed"; ok=0; }
  for phrase in "${wanted[@]}"; do
    [[ $text == *"$phrase"* ]] || { echo "FAIL $name: the configure did not say: $phrase"; ok=0; }
  done
  if [[ $ok -eq 1 ]]; then
    echo "ok $name"
  else
    cat "$dir/configure.log"
    status=1
  fi
}

# NCCL 2.27.7, the last release before ncclAlltoAll, with GPU parts left to AUTO.
stand_in "$work/old" 13020 2 27 7
expect_refusal "NCCL 2.27.7 is refused" "$work/old" \
  "NCCL 2.27.7 found ($work/old/nccl/include/nccl.h)" "needs NCCL 2.28.0 or later" \
  "-DRINGLEADER_GPU=OFF" --

# The runtime wheel without nvidia-cuda-crt, GPU parts required. An nvcc on PATH is a full toolkit,
# which FindCUDAToolkit prefers to the stand-in, so there is nothing to check.
if command -v nvcc >/dev/null; then
  echo "skipped: a runtime without crt/ (nvcc on PATH: its toolkit is used)"
else
  stand_in "$work/no-crt" 13020 2 30 7
  rm -r "$work/no-crt/cuda/include/crt"
  expect_refusal "a runtime without crt/ is named" "$work/no-crt" \
    "RINGLEADER_GPU=ON, but $work/no-crt/cuda/include has cuda_runtime_api.h but not crt/host_defines.h" \
    -- -DRINGLEADER_GPU=ON
fi

exit $status
