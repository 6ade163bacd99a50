#!/usr/bin/env bash
# The NCCL checks on a machine with a GPU, from what pack_for_device.sh packed (this script's
# folder). Runs the GPU unit tests, then real sidecar processes with the NCCL backend: a world of
# one, and a world of two ranks on GPU 0 (NCCL refuses two ranks on one device; the sidecar
# must say so and exit non-zero rather than hang). Logs go to $OUT (or /tmp/device-check).
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

# Starts one sidecar: sidecar RANK WORLD PORT MODE DIR
sidecar() {
  local rank=$1 world=$2 port=$3 mode=$4 dir=$5
  mkdir -p "$dir/rank-$rank"
  env RINGLEADER_JOB_NAME=gpu-check RINGLEADER_JOB_NAMESPACE=default \
    RINGLEADER_RANK="$rank" RINGLEADER_REPLICAS="$world" RINGLEADER_GPUS_PER_REPLICA=1 \
    RINGLEADER_RENDEZVOUS_ADDR=127.0.0.1 RINGLEADER_RENDEZVOUS_PORT="$port" \
    RINGLEADER_METRICS_PORT=$((port + 100 + rank)) RINGLEADER_METRICS_BIND_ADDRESS=127.0.0.1 \
    RINGLEADER_BACKEND=nccl RINGLEADER_MODE="$mode" RINGLEADER_TOKEN_FILE="$dir/token" \
    RINGLEADER_RUN_DIR="$dir/rank-$rank" RINGLEADER_POD_IP=127.0.0.1 \
    RINGLEADER_PREFLIGHT_MIN_BYTES=1024 RINGLEADER_PREFLIGHT_MAX_BYTES=1073741824 \
    RINGLEADER_PREFLIGHT_STEP_FACTOR=4 RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS=60 \
    RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS=30 \
    "$here/bin/ringleader-sidecar" >"$dir/rank-$rank/log" 2>&1
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
exit $status
