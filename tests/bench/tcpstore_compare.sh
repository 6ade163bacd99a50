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
# the medians, ringleader's ratio to each PyTorch server (of the medians, and the median of the
# paired runs' ratios) and each server's growth from 4,096 to 16,384 ranks; where a server stops,
# the row says why.
#   tests/bench/tcpstore_compare.sh [build_dir] [ranks] [repetitions] [client sets] [timeout_s]
# RINGLEADER_BENCH_EXTRA_SERVERS=ringleader=PATH[,...] adds other builds of
# ringleader_tcpstore_server to every client set's run (interleaved with the rest; e.g. the build
# before a change, copied aside), each with its ratio column.
set -euo pipefail
build=${1:-build/bench}
ranks=${2:-1024,4096,16384}
reps=${3:-3}
client_sets=${4:-torch2,torch1}
timeout_s=${5:-300}  # each TCPStore operation's; 300 s is TCPStore's own default
top=$(cd "$(dirname "$0")/../.." && pwd)
# It builds what it runs (the libtorch programs wherever their libtorch is installed), unless
# RINGLEADER_BENCH_NO_BUILD=1 (CI's smoke run, inside a build that has them).
build_target() {
  [[ ${RINGLEADER_BENCH_NO_BUILD:-0} == 1 ]] || cmake --build "$build" --target "$1" >/dev/null
}
if [[ ${RINGLEADER_BENCH_NO_BUILD:-0} != 1 ]]; then
  cmake -S "$top" -B "$build" -DRINGLEADER_BENCHMARKS=ON -DRINGLEADER_TORCH_BENCHMARKS=ON >/dev/null
fi
build_target ringleader_tcpstore_server
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
  servers+=${RINGLEADER_BENCH_EXTRA_SERVERS:+,$RINGLEADER_BENCH_EXTRA_SERVERS}
  build_target "$program" ||
    { echo "cannot build $program (its libtorch is missing?)" >&2; exit 2; }
  "$build/tests/bench/$program" --ranks "$ranks" --repetitions "$reps" --servers "$servers" \
    --timeout-s "$timeout_s" | tee "$work/$set"
done
# Ratios: of the medians, and in brackets the median of the paired ratios (ringleader's run r
# over the other's run r, which ran next to it), which drifting load moves less.
for set in ${client_sets//,/ }; do
  echo
  python3 - "$set" "$work/$set" <<'PY'
import re, statistics, sys
client_set, path = sys.argv[1], sys.argv[2]
names = {"ringleader": "ringleader", "tcpstore": "libuv TCPStore" if client_set == "torch2"
         else "TCPStore 1.13", "tcpstore-legacy": "legacy TCPStore"}
cells, runs, servers, counts = {}, {}, [], []
for line in open(path):
    m = re.match(r"server=(\S+) ranks=(\d+) (.*)", line.strip())
    if not m:
        continue
    server, n, rest = m.group(1), int(m.group(2)), m.group(3)
    if server not in servers:
        servers.append(server)
    if n not in counts:
        counts.append(n)
    timed = re.match(r"median=([0-9.]+) s \(runs: ([0-9. ]+)\)", rest)
    if timed:
        runs[server, n] = [float(v) for v in timed.group(2).split()]
        cells[server, n] = timed.group(1)
    else:
        cells[server, n] = rest
def ratio(a, b, n):
    if (a, n) not in runs or (b, n) not in runs:
        return "-"
    paired = [x / y for x, y in zip(runs[a, n], runs[b, n])]
    return "%.2f (%.2f)" % (statistics.median(runs[a, n]) / statistics.median(runs[b, n]),
                            statistics.median(paired))
print("PyTorch %s clients:" % ("2.x" if client_set == "torch2" else "1.13"))
header = ["ranks"] + ["%s (median s)" % names.get(s, s) for s in servers] + \
         ["%s / %s" % (names.get(servers[0], servers[0]), names.get(s, s)) for s in servers[1:]]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for n in counts:
    row = [f"{n:,}"] + [cells.get((s, n), "no result") for s in servers] + \
          [ratio(servers[0], s, n) for s in servers[1:]]
    print("| " + " | ".join(row) + " |")
for s in servers:
    if (s, 4096) in runs and (s, 16384) in runs:
        print("%s: %.2fx from 4,096 to 16,384 ranks (medians)" % (
            names.get(s, s), statistics.median(runs[s, 16384]) / statistics.median(runs[s, 4096])))
PY
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
