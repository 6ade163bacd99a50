#!/usr/bin/env bash
# All-reduce bus bandwidth of 4 ranks on loopback: the sidecar's preflight (4 ringleader-sidecar
# processes, Gloo) against gloo::allreduce called directly, Open MPI's MPI_Allreduce over TCP, and
# iperf3's loopback throughput as the ceiling. Repetitions interleave the three; medians printed.
#   tests/bench/allreduce_compare.sh [build_dir] [repetitions] [warmup] [iters] [max_bytes]
# (max_bytes: the largest size, 256 MiB by default; CI's smoke run gives 1 MiB.)
set -euo pipefail
build=$(realpath "${1:-build/release}")
reps=${2:-3}
warmup=${3:-1}
iters=${4:-4}
max=${5:-$((256 << 20))}
min=$((1 << 20)); factor=4; ranks=4
((min <= max)) || min=$max
source "$(dirname "$0")/sidecar_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/mpi_allreduce" "$(dirname "$0")/mpi_allreduce.c"
echo "job-token-for-bench" > "$work/token"

run_sidecar() {  # prints "bytes busbw" for rank 0's all_reduce rows
  local rdv; rdv=$(free_port)
  local pids=()
  for rank in $(seq 0 $((ranks - 1))); do
    # shellcheck disable=SC2046  # one NAME=VALUE word per line
    env $(sidecar_env "$rank" "$ranks" "$rdv" "$work") RINGLEADER_PREFLIGHT_MIN_BYTES="$min" \
      RINGLEADER_PREFLIGHT_MAX_BYTES="$max" RINGLEADER_PREFLIGHT_STEP_FACTOR="$factor" \
      RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS="$warmup" RINGLEADER_PREFLIGHT_ITERATIONS="$iters" \
      RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS=300 RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS=60 \
      "$build/sidecar/app/ringleader-sidecar" > "$work/rank-$rank/out" 2> "$work/rank-$rank/log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || { cat "$work"/rank-*/log >&2; return 1; }; done
  awk '$1 == "all_reduce" { print $2, $9 }' "$work/rank-0/out"
}

: > "$work/results"
for rep in $(seq "$reps"); do
  run_sidecar | sed 's/^/sidecar /' >> "$work/results"
  "$build/tests/bench/gloo_allreduce_direct" --ranks "$ranks" --min "$min" --max "$max" \
    --factor "$factor" --warmup "$warmup" --iters "$iters" | sed 's/^/direct /' >> "$work/results"
  mpirun -np "$ranks" --allow-run-as-root --oversubscribe --mca btl tcp,self \
    --mca btl_tcp_if_include lo "$work/mpi_allreduce" "$min" "$max" "$factor" "$warmup" "$iters" \
    | sed 's/^/mpi /' >> "$work/results"
  port=$(free_port)
  iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
  sleep 0.5
  iperf3 -c 127.0.0.1 -p "$port" -t 3 -J |
    python3 -c 'import json,sys; print("iperf3 0 %.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8e9))' \
    >> "$work/results"
  wait
  echo "repetition $rep done" >&2
done
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $ranks ranks, warm-up $warmup, $iters timed calls, medians of $reps"
python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, size, value = line.split()
    runs.setdefault((who, int(size)), []).append(float(value))
med = {k: statistics.median(v) for k, v in runs.items()}
print("| size | sidecar busbw (GB/s) | direct Gloo busbw (GB/s) | sidecar / direct | MPI busbw (GB/s) |")
print("|---|---|---|---|---|")
for size in sorted(s for (w, s) in med if w == "direct"):
    sc, d, m = med.get(("sidecar", size), 0), med[("direct", size)], med.get(("mpi", size), 0)
    print(f"| {size >> 20} MiB | {sc:.3f} | {d:.3f} | {sc / d:.3f} | {m:.3f} |")
print(f"iperf3 loopback (1 stream, 3 s): median {med[('iperf3', 0)]:.3f} GB/s "
      f"(runs: {' '.join('%.3f' % v for v in runs[('iperf3', 0)])})")
for who in ("sidecar", "direct", "mpi"):
    print(who, "runs:", {s >> 20: v for (w, s), v in sorted(runs.items()) if w == who})
PY
