#!/usr/bin/env bash
# The NCCL checks on a machine with a GPU, from what pack_for_device.sh packed (this script's
# folder). Runs the GPU unit tests, then real sidecar processes with the NCCL backend: a world of
# one, and a world of two ranks on GPU 0 (NCCL refuses two ranks on one device; the sidecar
# must say so and exit non-zero rather than hang). Then an operator-made Pod's split (issue 17):
# two preflight containers on GPU 0, each its own host to NCCL (NCCL_HOSTID), must pass with no
# wrong element, name NET/Socket as the transport, and measure all_reduce busbw within 5% of a
# direct NCCL loop (tests/bench/nccl_allreduce_direct) run in this script. Last, the NCCL
# profiler plugin (issue 18) inside that direct loop: the bandwidth the sidecar exports from its
# snapshots must be within 5% of the loop's own timing. Logs go to $OUT (or /tmp/device-check).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/device-check}
mkdir -p "$out"
nccl=$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | head -n 1)
echo "libnccl: ${nccl:-none found}"
export LD_LIBRARY_PATH="$here/lib:${nccl:+$(dirname "$nccl"):}/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi -L
status=0
for test in gpu_inventory_test nccl_communicator_test; do
  echo "== $test"
  timeout 300 "$here/bin/$test" 2>&1 | tee "$out/$test.log" | tail -n 25
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
done

# Starts one sidecar: sidecar RANK WORLD PORT MODE DIR [NAME=VALUE...]
sidecar() {
  local rank=$1 world=$2 port=$3 mode=$4 dir=$5
  shift 5
  mkdir -p "$dir/rank-$rank"
  env RINGLEADER_JOB_NAME=gpu-check RINGLEADER_JOB_NAMESPACE=default \
    RINGLEADER_RANK="$rank" RINGLEADER_REPLICAS="$world" RINGLEADER_GPUS_PER_REPLICA=1 \
    RINGLEADER_RENDEZVOUS_ADDR=127.0.0.1 RINGLEADER_RENDEZVOUS_PORT="$port" \
    RINGLEADER_METRICS_PORT=$((port + 100 + rank)) RINGLEADER_METRICS_BIND_ADDRESS=127.0.0.1 \
    RINGLEADER_BACKEND=nccl RINGLEADER_MODE="$mode" RINGLEADER_TOKEN_FILE="$dir/token" \
    RINGLEADER_RUN_DIR="$dir/rank-$rank" RINGLEADER_POD_IP=127.0.0.1 \
    RINGLEADER_PREFLIGHT_MIN_BYTES=1024 RINGLEADER_PREFLIGHT_MAX_BYTES=1073741824 \
    RINGLEADER_PREFLIGHT_STEP_FACTOR=4 RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS=60 \
    RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS=30 "$@" \
    "$here/bin/ringleader-sidecar" >>"$dir/rank-$rank/log" 2>&1
}

echo "== sidecar preflight, NCCL, world of 1"
dir=$(mktemp -d)
echo gpu-check-token >"$dir/token"
timeout 120 bash -c "$(declare -f sidecar); here=$here; sidecar 0 1 29400 preflight $dir"
rc=$?
echo "exit $rc"
# A world of one must pass its preflight.
[[ $rc -eq 0 ]] || { echo "FAIL: the world of one exited $rc"; status=1; }
cp "$dir/rank-0/log" "$out/sidecar-world1.log"
tail -n 30 "$dir/rank-0/log"
cat "$dir/rank-0/contract.json" 2>/dev/null && echo

echo "== sidecar preflight, NCCL, two ranks on GPU 0"
dir=$(mktemp -d)
echo gpu-check-token >"$dir/token"
for rank in 0 1; do
  timeout 120 bash -c "$(declare -f sidecar); here=$here; sidecar $rank 2 29700 preflight $dir" &
done
# Both must refuse (non-zero) and neither hang until the timeout (124).
for which in first second; do
  wait -n
  rc=$?
  echo "$which exit $rc"
  if [[ $rc -eq 0 || $rc -eq 124 ]]; then
    echo "FAIL: a rank of two on one GPU exited $rc (want a refusal, not success or a hang)"
    status=1
  fi
done
for rank in 0 1; do
  cp "$dir/rank-$rank/log" "$out/sidecar-world2-rank$rank.log"
  echo "-- rank $rank"; tail -n 12 "$dir/rank-$rank/log"
done

# The Pod's split on one GPU: rank 0's native sidecar serves the store (Gloo, no GPU), and two
# preflight containers, each its own host to NCCL (NCCL_HOSTID), run the NCCL preflight over
# NET/Socket. Three runs, beside three runs of a direct NCCL loop at the same size and counts.
big=268435456
preflight_busbw=()
for run in 1 2 3; do
  echo "== pod preflight, NCCL, two ranks on GPU 0 as two hosts, run $run"
  dir=$(mktemp -d)
  echo gpu-check-token >"$dir/token"
  port=$((29800 + run * 10))
  timeout 300 bash -c "$(declare -f sidecar); here=$here; sidecar 0 2 $port sidecar $dir \
    RINGLEADER_BACKEND=gloo RINGLEADER_MONITOR_ENABLED=false" &
  store=$!
  for rank in 0 1; do
    timeout 240 bash -c "$(declare -f sidecar); here=$here; sidecar $rank 2 $port pod-preflight $dir \
      NCCL_HOSTID=ringleader-gpu-check-host-$rank CUDA_VISIBLE_DEVICES=0 \
      RINGLEADER_PREFLIGHT_MIN_BYTES=1048576 RINGLEADER_PREFLIGHT_MAX_BYTES=$big" &
    pids[$rank]=$!
  done
  for rank in 0 1; do
    wait "${pids[$rank]}"
    rc=$?
    echo "rank $rank exit $rc"
    [[ $rc -eq 0 ]] || { echo "FAIL: pod preflight rank $rank exited $rc"; status=1; }
  done
  kill "$store" 2>/dev/null; wait "$store" 2>/dev/null
  for rank in 0 1; do
    cp "$dir/rank-$rank/log" "$out/pod-preflight-run$run-rank$rank.log"
    cp "$dir/rank-$rank/preflight.json" "$out/pod-preflight-run$run-rank$rank.json" 2>/dev/null
  done
  tail -n 20 "$dir/rank-0/log"
  grep -q '^# transport: NET/Socket' "$dir/rank-0/log" ||
    { echo "FAIL: the preflight's table does not name NET/Socket"; status=1; }
  if grep -q '"wrong": [1-9]' "$dir"/rank-*/preflight.json; then
    echo "FAIL: wrong elements in the preflight"; status=1
  fi
  value=$(grep -o '"allReduceBusBandwidthBytesPerSecond": [0-9.e+]*' "$dir/rank-0/preflight.json" | awk '{print $2 / 1e9}')
  preflight_busbw+=("${value:-0}")
done

direct_busbw=()
for run in 1 2 3; do
  echo "== direct NCCL all_reduce, two ranks on GPU 0 as two hosts, run $run"
  line=$(CUDA_VISIBLE_DEVICES=0 timeout 240 "$here/bin/nccl_allreduce_direct" --ranks 2 \
    --min $big --max $big --warmup 5 --iters 20 2>>"$out/nccl-direct.err" | tail -n 1)
  echo "$line"
  direct_busbw+=("$(awk '{print $2}' <<<"$line")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
pre=$(median "${preflight_busbw[@]}")
dir_bw=$(median "${direct_busbw[@]}")
echo "all_reduce busbw at $big bytes, medians of 3: preflight $pre GB/s, direct NCCL $dir_bw GB/s" |
  tee "$out/preflight-vs-direct.txt"
if ! awk -v p="$pre" -v d="$dir_bw" 'BEGIN {exit !(d > 0 && p / d >= 0.95 && p / d <= 1.05)}'; then
  echo "FAIL: the preflight's busbw is not within 5% of the direct loop's"
  status=1
fi

# Issue 18: a real NCCL program with the profiler plugin loaded through NCCL_PROFILER_PLUGIN, as a
# trainer would have it. A sidecar (run mode, Gloo, a world of one, no preflight, no monitor)
# copies the plugin from beside its executable and takes its snapshots; nccl_allreduce_direct runs
# one size long enough (about 3 s, from a first short run's timing) that the plugin's last
# intervals are steady, with 1 rank and then 2 ranks on GPU 0 as two hosts. The bandwidth the
# sidecar exports for that size must be within 5% of the program's own timing of the same calls:
# algbw for 1 rank (busbw is 0 there), busbw for 2.
size=268435456
for ranks in 1 2; do
  echo "== profiler plugin: nccl_allreduce_direct, $ranks rank(s) on GPU 0, $size bytes"
  dir=$(mktemp -d)
  echo gpu-check-token >"$dir/token"
  port=$((29900 + ranks * 10))
  metrics=$((port + 100))
  bash -c "$(declare -f sidecar); here=$here; sidecar 0 1 $port run $dir RINGLEADER_BACKEND=gloo \
    RINGLEADER_GPUS_PER_REPLICA=0 RINGLEADER_PREFLIGHT_ENABLED=false RINGLEADER_MONITOR_ENABLED=false \
    RINGLEADER_PROFILER_SOCKET=$dir/profiler.sock RINGLEADER_PROFILER_PLUGIN_DIR=$dir/plugin \
    RINGLEADER_PROFILER_INTERVAL_MS=200" &
  sidecar_pid=$!
  for _ in $(seq 1 100); do
    [[ -S $dir/profiler.sock && -f $dir/plugin/libnccl-profiler-ringleader.so ]] && break
    sleep 0.1
  done
  plugin_env=(NCCL_PROFILER_PLUGIN="$dir/plugin/libnccl-profiler-ringleader.so"
    RINGLEADER_PROFILER_SOCKET="$dir/profiler.sock" RINGLEADER_PROFILER_INTERVAL_MS=200
    CUDA_VISIBLE_DEVICES=0)
  probe=$(env "${plugin_env[@]}" timeout 240 "$here/bin/nccl_allreduce_direct" --ranks "$ranks" \
    --min $size --max $size --warmup 5 --iters 20 2>>"$out/profiler-direct.err" | tail -n 1)
  iters=$(awk -v s=$size '{t = s / ($3 * 1e9); n = int(3 / t) + 1; print (n < 20 ? 20 : n)}' <<<"$probe")
  line=$(env "${plugin_env[@]}" timeout 240 "$here/bin/nccl_allreduce_direct" --ranks "$ranks" \
    --min $size --max $size --warmup 5 --iters "$iters" 2>>"$out/profiler-direct.err" | tail -n 1)
  # Every rank's warm-up and timed calls at this size, from both runs.
  want=$(((5 + 20 + 5 + iters) * ranks))
  # The plugins' last snapshots (sent at finalize) may still be on their way: scrape until the
  # count is in, for up to 10 s.
  for _ in $(seq 1 50); do
    curl -s "http://127.0.0.1:$metrics/metrics" >"$out/profiler-metrics-$ranks.txt"
    calls=$(awk '$1 ~ /^ringleader_training_collective_calls_total[{]/ && $1 ~ /collective="all_reduce"/ && \
      $1 ~ /size="256MiB"/ {print $2}' "$out/profiler-metrics-$ranks.txt" | head -n 1)
    [[ ${calls:-0} == "$want" ]] && break
    sleep 0.2
  done
  kill "$sidecar_pid" 2>/dev/null; wait "$sidecar_pid" 2>/dev/null
  cp "$dir/rank-0/log" "$out/profiler-sidecar-$ranks.log"
  metric=ringleader_training_collective_bus_bandwidth_bytes_per_second
  column=2
  if [[ $ranks -eq 1 ]]; then
    metric=ringleader_training_collective_algorithm_bandwidth_bytes_per_second
    column=3
  fi
  program=$(awk -v c=$column '{print $c}' <<<"$line")
  exported=$(awk -v m="$metric" '$1 ~ "^" m "[{]" && $1 ~ /collective="all_reduce"/ && $1 ~ /size="256MiB"/ \
    {print $2 / 1e9}' "$out/profiler-metrics-$ranks.txt" | head -n 1)
  echo "$ranks rank(s), $iters timed calls: program $program GB/s, sidecar $exported GB/s, calls counted $calls" |
    tee -a "$out/profiler-vs-program.txt"
  [[ ${calls:-0} == "$want" ]] || { echo "FAIL: the sidecar counted ${calls:-none} calls, want $want"; status=1; }
  if ! awk -v p="${program:-0}" -v e="${exported:-0}" 'BEGIN {exit !(p > 0 && e / p >= 0.95 && e / p <= 1.05)}'; then
    echo "FAIL: the sidecar's exported bandwidth is not within 5% of the program's own timing"
    status=1
  fi
done
exit $status
