#!/usr/bin/env bash
# Two builds of rendezvous_bench (before and after a change to the store) and Redis through async
# hiredis, in one run: for each rank count, repetition r of each before repetition r + 1 of any,
# so that all three see the same load. Prints a markdown table of medians and ratios.
#   tests/bench/rendezvous_ab.sh BEFORE_BENCH AFTER_BENCH [build_dir] [ranks] [repetitions]
# (BEFORE_BENCH, AFTER_BENCH: rendezvous_bench binaries, e.g. one copied aside before the change;
# build_dir has redis_rendezvous_bench.)
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
build=${3:-build/bench}
ranks=${4:-1024,4096,16384}
reps=${5:-5}
ulimit -n "$(ulimit -Hn)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d)
redis-server --port "$port" --bind $(echo 127.0.0.{1..16}) --save "" --appendonly no \
  --maxclients 17000 --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
trap 'kill "$(cat "$work/redis.pid")" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# before: $before"
echo "# after: $after"
for n in ${ranks//,/ }; do
  for r in $(seq "$reps"); do
    for who in before after redis; do
      case $who in
        before) "$before" --ranks "$n" --repetitions 1 ;;
        after) "$after" --ranks "$n" --repetitions 1 ;;
        redis) "$build/tests/bench/redis_rendezvous_bench" --port "$port" --ranks "$n" \
                 --repetitions 1 --server-pid "$(cat "$work/redis.pid")" ;;
      esac > "$work/out"
      grep -o 'ranks=[0-9]* median=[0-9.]*' "$work/out" | sed "s/^/$who /" | tee -a "$work/runs"
      # CPU seconds of the server's process and of the clients, where the program prints them.
      grep -o 'cpu ranks=[0-9]* server=[0-9.]* s clients=[0-9.]*' "$work/out" |
        sed "s/^cpu /$who /; s/ s / /" >> "$work/cpu" || true
    done
  done
  echo "# load after $n ranks: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
echo "| ranks | before (median s) | after (median s) | Redis (median s) | after / before |" \
  "before / Redis | after / Redis |"
echo "|---|---|---|---|---|---|---|"
python3 - "$work/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, ranks, median = line.split()
    runs.setdefault((who, int(ranks.split("=")[1])), []).append(float(median.split("=")[1]))
for n in sorted({n for (_, n) in runs}):
    b, a, r = (statistics.median(runs.get((w, n), [float("nan")])) for w in ("before", "after", "redis"))
    print(f"| {n} | {b:.3f} | {a:.3f} | {r:.3f} | {a / b:.2f} | {b / r:.2f} | {a / r:.2f} |")
for (who, n), values in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{who} {n}: " + " ".join(f"{v:.3f}" for v in values))
PY
if [[ -s $work/cpu ]]; then
  echo
  echo "CPU seconds per run, medians (the server's process; the clients' threads):"
  python3 - "$work/cpu" <<'PY'
import statistics, sys
cpu = {}
for line in open(sys.argv[1]):
    who, ranks, server, clients = line.split()
    key = (int(ranks.split("=")[1]), who)
    cpu.setdefault(key, []).append((float(server.split("=")[1]), float(clients.split("=")[1])))
for (n, who), values in sorted(cpu.items()):
    print(f"{who} {n}: server {statistics.median(v[0] for v in values):.3f} s, "
          f"clients {statistics.median(v[1] for v in values):.3f} s")
PY
fi
