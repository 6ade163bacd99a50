#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build/fuzz and runs each for SECONDS (default 60)
# on its seed corpus: the watch-stream parser, the rendezvous frame decoder,
# the rendezvous server behind a real socket (handshake and store ops), and what the sidecar
# reads from its run dir (the preflight's result, NCCL's INFO log), the profiler plugin's
# snapshot frames, and the trainer store's TCPStore request decoder; with --build-only it only
# builds them. Needs clang-14 and libFuzzer
# (Debian: clang-14 libclang-rt-14-dev).
set -euo pipefail

# --build-only: build the targets and stop (CI builds them ahead, while other tests run).
build_only=false
if [[ "${1:-}" == "--build-only" ]]; then
  build_only=true
  shift
fi
seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${root}/build/fuzz"
cxx="${CXX_FUZZ:-clang++-14}"

if ! command -v "${cxx}" >/dev/null; then
  echo "run_fuzzers.sh: ${cxx} not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi

cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_CXX_COMPILER="${cxx}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGLEADER_FUZZ=ON -DRINGLEADER_BENCHMARKS=OFF >/dev/null
targets=(watch_parser_fuzz rendezvous_decoder_fuzz rendezvous_server_fuzz run_dir_fuzz
  profiler_snapshot_fuzz torch_store_decoder_fuzz)
cmake --build "${build}" -j"$(nproc)" --target "${targets[@]}" >"${build}/build.log" 2>&1 ||
  { cat "${build}/build.log"; exit 1; }
if [[ "${build_only}" == true ]]; then
  exit 0
fi
mkdir -p "${build}/artifacts"

# run TARGET CORPUS MAX_LEN: the corpus directory in the tree holds the seeds; new inputs go
# to a scratch copy. The output goes to logs/TARGET.log.
run() {
  local target=$1 corpus=$2 max_len=$3
  local work="${build}/corpus/${corpus}"
  mkdir -p "${work}"
  cp -n "${root}/tests/fuzz/corpus/${corpus}/"* "${work}/" 2>/dev/null || true
  "${build}/tests/fuzz/${target}" "${work}" \
    -max_total_time="${seconds}" -max_len="${max_len}" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="${build}/artifacts/${target}-" \
    >"${build}/logs/${target}.log" 2>&1
}

# Each libFuzzer run uses one core, so FUZZ_JOBS (default: the core count) run side by side.
mkdir -p "${build}/logs"
runs=("watch_parser_fuzz watch_parser 65536"
  "rendezvous_decoder_fuzz rendezvous_decoder 16384"
  "rendezvous_server_fuzz rendezvous_server 16384"
  "run_dir_fuzz run_dir 65536"
  "profiler_snapshot_fuzz profiler_snapshot 65536"
  "torch_store_decoder_fuzz torch_store_decoder 16384")
lanes="${FUZZ_JOBS:-$(nproc)}"
declare -A pids=()
for spec in "${runs[@]}"; do
  while (($(jobs -rp | wc -l) >= lanes)); do
    wait -n || true
  done
  read -r target corpus max_len <<<"${spec}"
  run "${target}" "${corpus}" "${max_len}" &
  pids[${target}]=$!
done

# Every run's statistics; a failed run's last lines (the finding and its stack) and exit 1.
failed=0
for spec in "${runs[@]}"; do
  read -r target _ <<<"${spec}"
  if wait "${pids[${target}]}"; then
    executed=$(grep -m1 '^stat::number_of_executed_units' "${build}/logs/${target}.log" || true)
    echo "${target}: passed, ${executed#stat::}"
  else
    failed=1
    echo "${target}: FAILED (${build}/logs/${target}.log):"
    tail -n 60 "${build}/logs/${target}.log"
  fi
done
exit "${failed}"
