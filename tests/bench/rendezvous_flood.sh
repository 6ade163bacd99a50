#!/usr/bin/env bash
# Resident memory of a real ringleader-sidecar rank 0 (2-rank Gloo world) under the flood of issue
# 20: N connections that each send a frame header claiming a 2 MiB payload (half a Hello, half a
# Set) and then trickle most of that payload without finishing it, held open, in two rounds.
# Reports RSS before, at each round's peak and after it (once rank 0 has closed every flood
# connection), with medians over RUNS runs; then rank 1 joins and the world must pass its
# preflight.
#   tests/bench/rendezvous_flood.sh [sidecar_binary] [connections] [runs]
set -euo pipefail
binary=$(realpath "${1:-build/release/sidecar/app/ringleader-sidecar}")
connections=${2:-400}
runs=${3:-5}
source "$(dirname "$0")/sidecar_env.sh"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
echo "job-token-for-bench" > "$work/token"

# flood PID PORT METRICS_PORT: one run's figures, "before peak1 after1 peak2 after2" in MiB, what
# was sent, and the refusals rank 0 counted.
flood() {
  python3 - "$@" "$connections" <<'PYTHON'
import os, socket, struct, sys, threading, time, urllib.request
pid, port, metrics_port, n = (int(a) for a in sys.argv[1:5])
CLAIM = 2 << 20               # what each header announces
TRICKLE = CLAIM - (64 << 10)  # most of it, never all
CHUNK = 64 << 10
HOLD = 3.0                    # seconds the connections stay open once sent

def rss_mib():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

def sockets_open():  # rank 0's sockets: listeners, its own store connection, and the flood's
    fds = f"/proc/{pid}/fd"
    count = 0
    for fd in os.listdir(fds):
        try:
            count += os.readlink(f"{fds}/{fd}").startswith("socket:")
        except OSError:
            pass  # closed while we looked
    return count

class Peak(threading.Thread):  # the most RSS seen since reset(), sampled every 10 ms
    def __init__(self):
        super().__init__(daemon=True)
        self.value = rss_mib()
        self.start()
    def run(self):
        while True:
            self.value = max(self.value, rss_mib())
            time.sleep(0.01)
    def reset(self):
        self.value = rss_mib()

def header(msg_type):  # magic "RLRZ", version 1, type, length
    return struct.pack(">IHHI", 0x524C525A, 1, msg_type, CLAIM)

def one_round(peak, idle_sockets):
    peak.reset()
    socks, sent = [], []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        try:
            s.send(header(1 if i % 2 == 0 else 16))  # Hello, Set
        except OSError:
            pass
        socks.append(s)
        sent.append(0)
    chunk = b"x" * CHUNK
    live = set(range(n))
    while live:
        progressed = False
        for i in list(live):
            try:
                k = socks[i].send(chunk[: min(CHUNK, TRICKLE - sent[i])])
                sent[i] += k
                progressed = progressed or k > 0
                if sent[i] >= TRICKLE:
                    live.discard(i)
            except BlockingIOError:
                pass
            except OSError:  # refused and closed
                live.discard(i)
        if not progressed:
            time.sleep(0.01)  # every socket is full: give rank 0 a moment to read
    time.sleep(HOLD)
    for s in socks:
        s.close()
    # "After" is once rank 0 has read to the end of every flood connection and closed it.
    deadline = time.monotonic() + 120
    while sockets_open() > idle_sockets and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    return peak.value, rss_mib(), sum(sent)

idle_sockets = sockets_open()
peak = Peak()
before = rss_mib()
peak1, after1, sent1 = one_round(peak, idle_sockets)
peak2, after2, sent2 = one_round(peak, idle_sockets)
text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
family = 'ringleader_sidecar_refused_connections_total{reason="'
refused = [line[len(family):].replace('"} ', "=") for line in text.splitlines()
           if line.startswith(family) and not line.endswith(" 0")]
print(f"{before:.1f} {peak1:.1f} {after1:.1f} {peak2:.1f} {after2:.1f}"
      f" sent={(sent1 + sent2) >> 20}MiB refused={','.join(refused) or 'none'}")
PYTHON
}

echo "# $(uptime)"
echo "# $binary: $connections connections x 2 rounds, $runs runs"
echo "# run  before  peak1  after1  peak2  after2 (MiB)  world"
results="$work/results"
for run in $(seq 1 "$runs"); do
  rdv=$(free_port)
  start() {
    # shellcheck disable=SC2046  # one NAME=VALUE word per line
    env $(sidecar_env "$1" 2 "$rdv" "$work") RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS=600 \
      RINGLEADER_PREFLIGHT_MIN_BYTES=1024 RINGLEADER_PREFLIGHT_MAX_BYTES=65536 \
      "$binary" > "$work/rank-$1/out" 2> "$work/rank-$1/log" &
    pids+=($!)
  }
  rm -rf "$work"/rank-*
  start 0
  rank0=${pids[-1]}
  until grep -q "rendezvous store listening" "$work/rank-0/log" 2>/dev/null; do
    kill -0 "$rank0" || { cat "$work/rank-0/log" >&2; exit 1; }
    sleep 0.1
  done
  # sidecar_env picks a fresh metrics port on each call: read the one rank 0 serves from its log.
  metrics=$(sed -n 's/.*summary on port \([0-9]*\)$/\1/p' "$work/rank-0/log" | head -1)
  figures=$(flood "$rank0" "$rdv" "$metrics")
  start 1
  world=formed
  wait "$rank0" || world="rank 0 failed"
  wait "${pids[-1]}" || world="rank 1 failed"
  printf '%5d  %s  %s\n' "$run" "$figures" "$world"
  echo "$figures" | cut -d' ' -f1-5 >> "$results"
done
python3 - "$results" <<'PYTHON'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
medians = [statistics.median(column) for column in zip(*rows)]
print("median " + "  ".join(f"{m:.1f}" for m in medians))
PYTHON
