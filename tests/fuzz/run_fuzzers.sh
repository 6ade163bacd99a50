#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build/fuzz and runs each for SECONDS (default 60)
# on its seed corpus. Needs clang-14 and libFuzzer (Debian: clang-14 libclang-rt-14-dev).
set -euo pipefail

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
cmake --build "${build}" -j"${FUZZ_JOBS:-2}" --target watch_parser_fuzz

# The corpus directory in the tree holds the seeds; new inputs go to a scratch copy.
work="${build}/corpus/watch_parser"
mkdir -p "${work}" "${build}/artifacts"
cp -n "${root}/tests/fuzz/corpus/watch_parser/"* "${work}/" 2>/dev/null || true

"${build}/tests/fuzz/watch_parser_fuzz" "${work}" \
  -max_total_time="${seconds}" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="${build}/artifacts/"
