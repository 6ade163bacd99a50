#!/usr/bin/env bash
# Peak resident memory of ringleader-sidecar processes running the preflight with Gloo on
# loopback, for each largest message size: what the sidecar's memory limit has to hold.
#   tests/bench/sidecar_memory.sh [build_dir] [ranks] [max_bytes,...] [local_ranks]
set -euo pipefail
build=$(realpath "${1:-build/release}")
ranks=${2:-2}
sizes=${3:-$((16 << 20)),$((64 << 20)),$((256 << 20))}
local_ranks=${4:-1}
source "$(dirname "$0")/sidecar_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "job-token-for-bench" > "$work/token"

echo "# $ranks sidecars x $local_ranks local rank(s), Gloo, preflight 1 warm-up + 2 timed calls"
echo "# max_bytes  peak_rss_MiB(max over ranks)  peak/max_bytes"
for max in ${sizes//,/ }; do
  rdv=$(free_port)
  pids=()
  for rank in $(seq 0 $((ranks - 1))); do
    # shellcheck disable=SC2046  # one NAME=VALUE word per line
    env $(sidecar_env "$rank" "$ranks" "$rdv" "$work") RINGLEADER_LOCAL_RANKS="$local_ranks" \
      RINGLEADER_PREFLIGHT_MIN_BYTES="$max" \
      RINGLEADER_PREFLIGHT_MAX_BYTES="$max" RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS=1 \
      RINGLEADER_PREFLIGHT_ITERATIONS=2 RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS=300 \
      /usr/bin/time -f "%M" -o "$work/rank-$rank/rss" \
      "$build/sidecar/app/ringleader-sidecar" > "$work/rank-$rank/out" 2> "$work/rank-$rank/log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || { cat "$work"/rank-*/log >&2; exit 1; }; done
  peak_kib=$(cat "$work"/rank-*/rss | sort -n | tail -1)
  python3 -c "import sys; m=int(sys.argv[1]); k=int(sys.argv[2]); print('%11d  %8.1f  %6.2f' % (m, k/1024, k*1024/m))" "$max" "$peak_kib"
done
