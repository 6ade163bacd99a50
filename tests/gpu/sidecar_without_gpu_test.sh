#!/usr/bin/env bash
# The NCCL-built sidecar on a machine without a GPU: its CUDA runtime and NCCL resolve (ldd, the
# build tree's RUNPATH), RINGLEADER_BACKEND=nccl ends the preflight with a line saying no CUDA
# device is seen (exit 1, no crash, no hang), and backend auto runs the preflight on Gloo.
# Skipped (77) where a GPU is present: tests/gpu/device_check.sh covers that machine.
# Usage: sidecar_without_gpu_test.sh SIDECAR_BINARY
set -uo pipefail
sidecar=${1:?usage: sidecar_without_gpu_test.sh SIDECAR_BINARY}
source "$(dirname "$0")/../bench/sidecar_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

libraries=$(ldd "$sidecar")
for library in libnccl.so.2 libcudart.so; do
  if grep -Eq "^\s*$library[.0-9]* => /" <<<"$libraries"; then
    echo "ok $(grep -Eo "$library[.0-9]* => \S+" <<<"$libraries")"
  else
    echo "FAIL: $library does not resolve:"; echo "$libraries"; status=1
  fi
done
if grep -q "not found" <<<"$libraries"; then
  echo "FAIL: libraries not found:"; grep "not found" <<<"$libraries"; status=1
fi
if [[ -e /dev/nvidiactl ]]; then
  echo "skipped: a GPU is here (/dev/nvidiactl)"
  exit $((status == 0 ? 77 : 1))
fi

# preflight NAME BACKEND: one sidecar, a world of one with one GPU asked for; its exit status.
preflight() {
  local name=$1 backend=$2
  mkdir -p "$work/$name"
  echo "job-token-for-gpu-test" >"$work/$name/token"
  # shellcheck disable=SC2046  # one NAME=VALUE word per line
  env $(sidecar_env 0 1 "$(free_port)" "$work/$name") RINGLEADER_BACKEND="$backend" \
    RINGLEADER_GPUS_PER_REPLICA=1 RINGLEADER_PREFLIGHT_MIN_BYTES=1024 \
    RINGLEADER_PREFLIGHT_MAX_BYTES=4096 RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS=10 \
    RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS=10 timeout 60 "$sidecar" >"$work/$name.log" 2>&1
}

preflight nccl nccl
rc=$?
want="failed: backend nccl: this container sees no CUDA device"
if [[ $rc -eq 1 ]] && grep -q "$want" "$work/nccl.log"; then
  echo "ok backend nccl: exit 1, '$want'"
else
  echo "FAIL: backend nccl exited $rc (want 1 and '$want'):"; cat "$work/nccl.log"; status=1
fi

preflight auto auto
rc=$?
if [[ $rc -eq 0 ]] && grep -q "communicator up: gloo" "$work/auto.log"; then
  echo "ok backend auto: the preflight ran on Gloo"
else
  echo "FAIL: backend auto exited $rc (want 0 on Gloo):"; cat "$work/auto.log"; status=1
fi
exit $status
