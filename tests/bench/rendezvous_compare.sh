#!/usr/bin/env bash
# Rendezvous (join + barrier) of N ranks: ringleader's StoreServer (rendezvous_bench) against the
# same pattern on a redis-server started here (redis_rendezvous_bench), through an async hiredis
# client as concurrent as rendezvous_bench's, or (client "gloo") Gloo's blocking RedisStore.
#   tests/bench/rendezvous_compare.sh [build_dir] [ranks] [repetitions] [async|gloo]
set -euo pipefail
build=${1:-build/release}
ranks=${2:-1024,4096,16384}
reps=${3:-3}
client=${4:-async}
case $client in
  async) redis_column="Redis, async hiredis (median s)" ;;
  gloo) redis_column="Gloo RedisStore (median s)" ;;
  *) echo "client must be async or gloo" >&2; exit 2 ;;
esac
ulimit -n "$(ulimit -Hn)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d)
redis-server --port "$port" --bind $(echo 127.0.0.{1..16}) --save "" --appendonly no \
  --maxclients 17000 --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
trap 'kill "$(cat "$work/redis.pid")" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); redis-server $(redis-server --version | grep -o 'v=[^ ]*')"
"$build/tests/bench/rendezvous_bench" --ranks "$ranks" --repetitions "$reps" | tee "$work/ours"
"$build/tests/bench/redis_rendezvous_bench" --port "$port" --ranks "$ranks" --repetitions "$reps" \
  --client "$client" | tee "$work/redis"
echo
echo "| ranks | ringleader StoreServer (median s) | $redis_column | ringleader / Redis |"
echo "|---|---|---|---|"
join <(grep -o 'ranks=[0-9]* median=[0-9.]*' "$work/ours" | sed 's/ranks=//; s/median=//' | sort) \
     <(grep -o 'ranks=[0-9]* median=[0-9.]*' "$work/redis" | sed 's/ranks=//; s/median=//' | sort) |
  sort -n | awk '{ printf "| %d | %.3f | %.3f | %.2f |\n", $1, $2, $3, $2 / $3 }'
