#!/usr/bin/env bash
# The NCCL checks on a machine with a GPU, from what pack_for_device.sh packed (this script's
# folder). Runs the GPU unit tests, then real sidecar processes with the NCCL backend: a world of
# one, and a world of two ranks on GPU 0 (NCCL refuses two ranks on one device; the sidecar
# must say so and exit non-zero rather than hang). Then an operator-made Pod's split (issue 17):
# two preflight containers on GPU 0, each its own host to NCCL (NCCL_HOSTID), must pass with no
# wrong element, name NET/Socket as the transport, and measure all_reduce busbw within 5% of a
# direct NCCL loop (tests/bench/nccl_allreduce_direct) run in this script. Logs go to $OUT (or
# /tmp/device-check).
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
exit $status
