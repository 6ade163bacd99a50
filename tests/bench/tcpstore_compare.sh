#!/usr/bin/env bash
# The headline rendezvous comparison: N ranks meet, every rank a c10d::TCPStore client (as
# init_process_group has them with TORCHELASTIC_USE_AGENT_STORE=True), through ringleader's
# TCPStore-protocol server (the sidecar's, ringleader_tcpstore_server) and through PyTorch's own
# servers, with the same clients (tcpstore_rendezvous_bench.cc):
# - torch2: PyTorch 2.x's clients (tcpstore_rendezvous_bench_torch2) meet in 2.x's libuv server
#   (its default), its legacy threaded server (use_libuv=False) and ringleader's;
# - torch1: Debian's libtorch 1.13 clients (tcpstore_rendezvous_bench) meet in 1.13's server and
#   ringleader's (a 1.13 client speaks another dialect of the protocol than a 2.x one).
# Each program interleaves its servers' repetitions. Prints a markdown table per client set, with
# the medians, ringleader's ratio to each PyTorch server and each server's growth from 4,096 to
# 16,384 ranks; where a server stops, the row says why.
#   tests/bench/tcpstore_compare.sh [build_dir] [ranks] [repetitions] [client sets] [timeout_s]
set -euo pipefail
build=${1:-build/bench}
ranks=${2:-1024,4096,16384}
reps=${3:-3}
client_sets=${4:-torch2,torch1}
timeout_s=${5:-300}  # each TCPStore operation's; 300 s is TCPStore's own default
top=$(cd "$(dirname "$0")/../.." && pwd)
# It builds what it runs (the libtorch programs wherever their libtorch is installed).
cmake -S "$top" -B "$build" -DRINGLEADER_BENCHMARKS=ON -DRINGLEADER_TORCH_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target ringleader_tcpstore_server >/dev/null
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for set in ${client_sets//,/ }; do
  case $set in
    torch2) program=tcpstore_rendezvous_bench_torch2 servers=ringleader,tcpstore,tcpstore-legacy ;;
    torch1) program=tcpstore_rendezvous_bench servers=ringleader,tcpstore ;;
    *) echo "client sets are torch2 and torch1, not $set" >&2; exit 2 ;;
  esac
  cmake --build "$build" --target "$program" >/dev/null ||
    { echo "cannot build $program (its libtorch is missing?)" >&2; exit 2; }
  "$build/tests/bench/$program" --ranks "$ranks" --repetitions "$reps" --servers "$servers" \
    --timeout-s "$timeout_s" | tee "$work/$set"
done
for set in ${client_sets//,/ }; do
  echo
  case $set in
    torch2) echo "PyTorch 2.x clients:"
      echo "| ranks | ringleader (median s) | libuv TCPStore (median s) | legacy TCPStore (median s) |" \
        "ringleader / libuv | ringleader / legacy |"
      echo "|---|---|---|---|---|---|" ;;
    torch1) echo "PyTorch 1.13 clients:"
      echo "| ranks | ringleader (median s) | TCPStore 1.13 (median s) | ringleader / TCPStore 1.13 |"
      echo "|---|---|---|---|" ;;
  esac
  # "server=S ranks=N median=T s ..." or "server=S ranks=N stopped|not run: why".
  awk '
    /^server=/ {
      s = substr($1, 8); n = substr($2, 7); line = $0
      sub(/^server=[^ ]+ ranks=[0-9]+ /, "", line)
      if (!(n in seen)) { seen[n] = 1; order[++count] = n }
      if (line ~ /^median=/) { t[s, n] = substr($3, 8) + 0; cell[s, n] = sprintf("%.3f", t[s, n]) }
      else { cell[s, n] = line }
      if (!(s in known)) { known[s] = 1; servers[++nservers] = s }
    }
    function ratio(a, b) { return ((a, n) in t && (b, n) in t) ? sprintf("%.2f", t[a, n] / t[b, n]) : "-" }
    END {
      for (i = 1; i <= count; ++i) {
        n = order[i]; row = "| " n
        for (j = 1; j <= nservers; ++j) { row = row " | " cell[servers[j], n] }
        for (j = 2; j <= nservers; ++j) { row = row " | " ratio(servers[1], servers[j]) }
        print row " |"
      }
      for (j = 1; j <= nservers; ++j) {
        s = servers[j]
        if ((s, 4096) in t && (s, 16384) in t) {
          printf "%s: %.2fx from 4,096 to 16,384 ranks\n", s, t[s, 16384] / t[s, 4096]
        }
      }
    }' "$work/$set"
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
