#!/usr/bin/env bash
# One tiny run of a benchmark program for ctest (label bench-smoke), so that no benchmark rots
# unseen: passes when the program exits 0 and printed its result line (RESULT_REGEX, extended);
# no timing is judged. Exits 77, ctest's skip, when something the run needs is missing.
#   bench_smoke.sh [--needs PROGRAM]... [--needs-gpu] RESULT_REGEX COMMAND [ARGS...]
set -uo pipefail
while [[ $# -gt 0 ]]; do
  case $1 in
    --needs)
      command -v "$2" >/dev/null || { echo "skipped: no $2 on PATH"; exit 77; }
      shift 2 ;;
    --needs-gpu)
      [[ -e /dev/nvidiactl ]] || { echo "skipped: no GPU (/dev/nvidiactl)"; exit 77; }
      shift ;;
    *) break ;;
  esac
done
if [[ $# -lt 2 ]]; then
  echo "usage: bench_smoke.sh [--needs PROGRAM]... [--needs-gpu] RESULT_REGEX COMMAND [ARGS...]" >&2
  exit 2
fi
result=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "bench smoke: $(basename "$1") exited with status $status"
  exit 1
fi
if ! grep -Eq -- "$result" "$out"; then
  echo "bench smoke: $(basename "$1") printed no result line matching: $result"
  exit 1
fi
