#!/usr/bin/env bash
# Rendezvous (join + barrier + rank 0's record) of N ranks: ringleader's StoreServer
# (rendezvous_bench: 2 threads x 1,024 async connections) against PyTorch's c10d::TCPStore
# (tcpstore_rendezvous_bench: 2 processes x 1,024 blocking threads), each starting its own server.
# Both have 2,048 ranks joining at once. Prints a markdown table of medians and the ratio; where
# TCPStore stops, the row says why.
#   tests/bench/tcpstore_compare.sh [build_dir] [ranks] [repetitions] [wait|poll] [timeout_s]
set -euo pipefail
build=${1:-build/bench}
ranks=${2:-1024,4096,8192,16384}
reps=${3:-3}
barrier=${4:-wait}
timeout_s=${5:-300}  # each TCPStore operation's; 300 s is TCPStore's own default
case $barrier in
  wait | poll) ;;
  *) echo "barrier must be wait or poll" >&2; exit 2 ;;
esac
# It builds what it runs; the libtorch program is opt-in (RINGLEADER_TORCH_BENCHMARKS).
top=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$top" -B "$build" -DRINGLEADER_TORCH_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target rendezvous_bench tcpstore_rendezvous_bench >/dev/null ||
  echo "building the benchmarks failed (tcpstore_rendezvous_bench needs libtorch-dev)" >&2
for program in rendezvous_bench tcpstore_rendezvous_bench; do
  if [[ ! -x $build/tests/bench/$program ]]; then
    echo "no $build/tests/bench/$program (tcpstore_rendezvous_bench needs libtorch-dev)" >&2
    exit 2
  fi
done
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
torch=$(dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null || echo unknown)
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); libtorch-dev $torch"
# One rank count at a time, ringleader then TCPStore, so that both see about the same load.
for n in ${ranks//,/ }; do
  "$build/tests/bench/rendezvous_bench" --ranks "$n" --repetitions "$reps" \
    --threads 2 --window 1024 | tee -a "$work/ours"
  "$build/tests/bench/tcpstore_rendezvous_bench" --ranks "$n" --repetitions "$reps" \
    --processes 2 --threads 1024 --barrier "$barrier" --timeout-s "$timeout_s" |
    tee -a "$work/torch"
  echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
echo "| ranks | ringleader StoreServer (median s) | PyTorch TCPStore (median s) |" \
  "ringleader / TCPStore |"
echo "|---|---|---|---|"
# Rows in rendezvous_bench's order; "ranks=N median=S" or "ranks=N stopped|skipped: why".
awk '
  { n = substr($1, 7); result = $0; sub(/^ranks=[0-9]+ /, "", result) }
  FNR == NR && /^ranks=/ { order[++count] = n; ours[n] = result; next }
  /^ranks=/ { torch[n] = result }
  END {
    for (i = 1; i <= count; ++i) {
      n = order[i]
      a = ours[n] ~ /^median=/ ? sprintf("%.3f", substr(ours[n], 8)) : ours[n]
      b = !(n in torch) ? "no result" : \
          torch[n] ~ /^median=/ ? sprintf("%.3f", substr(torch[n], 8)) : torch[n]
      ratio = a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ ? sprintf("%.2f", a / b) : "-"
      printf "| %d | %s | %s | %s |\n", n, a, b, ratio
    }
  }' "$work/ours" "$work/torch"
