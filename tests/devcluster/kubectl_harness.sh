# Shared by the scripts that drive the real kubectl against the devcluster binary: a scratch
# directory, pass/fail reporting in the ctest style, and starting and stopping devcluster.
# Source it after setting DEVCLUSTER; it sets HERE, ROOT, WORK, KUBECONFIG, HOME and URL.
# shellcheck shell=bash

HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/devcluster-kubectl.XXXXXX")
SERVER_PID=""
PASSED=0

cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $1" >&2
  if [[ $# -ge 2 ]]; then
    echo "--- output was:" >&2
    echo "$2" >&2
  fi
  echo "--- server log (tail):" >&2
  tail -20 "$WORK/server.log" >&2 2>/dev/null
  echo "$PASSED passed, 1 failed"
  exit 1
}

pass() {
  PASSED=$((PASSED + 1))
  echo "ok $PASSED - $1"
}

# expect NAME PATTERN OUTPUT: OUTPUT must match the extended regex PATTERN.
expect() {
  if ! grep -Eq -- "$2" <<<"$3"; then
    fail "$1: expected /$2/" "$3"
  fi
  pass "$1"
}

# expect_not NAME PATTERN OUTPUT
expect_not() {
  if grep -Eq -- "$2" <<<"$3"; then
    fail "$1: did not expect /$2/" "$3"
  fi
  pass "$1"
}

# expect_text NAME TEXT OUTPUT: OUTPUT must contain TEXT exactly (no regex).
expect_text() {
  if ! grep -Fq -- "$2" <<<"$3"; then
    fail "$1: expected the text: $2" "$3"
  fi
  pass "$1"
}

# A throwaway HOME: kubectl caches discovery there. kubectl of the server's own release first
# (scripts/build-control-plane links it into .deps/bin).
export HOME="$WORK/home"
export PATH="$ROOT/.deps/bin:$PATH"
mkdir -p "$HOME"
export KUBECONFIG="$WORK/data/kubeconfig"
KUBECTL=(timeout 60 kubectl --request-timeout=30s)
k() { "${KUBECTL[@]}" "$@" 2>&1; }

# start_devcluster [ARGS...]: runs devcluster on a scratch data dir and waits for its URL (the
# control plane takes some seconds to start; devcluster gives up by itself after 3 minutes).
start_devcluster() {
  "$DEVCLUSTER" --data-dir "$WORK/data" "$@" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  while ! grep -q "devcluster: serving" "$WORK/server.log" 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || fail "devcluster exited at start" "$(cat "$WORK/server.log")"
    sleep 0.2
  done
  grep -q "devcluster: serving https://127.0.0.1:[0-9]* (kubeconfig $WORK/data/kubeconfig" "$WORK/server.log" ||
    fail "devcluster did not announce itself" "$(cat "$WORK/server.log")"
  URL=$(sed -n 's/^devcluster: serving \(https:[^ ]*\) .*/\1/p' "$WORK/server.log")
}

# stop_devcluster: SIGTERM, and devcluster (its Pods, then the control plane) must exit 0 within
# 30 s.
stop_devcluster() {
  kill -TERM "$SERVER_PID"
  for _ in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SERVER_PID" 2>/dev/null && fail "devcluster did not exit on SIGTERM"
  wait "$SERVER_PID"
  local rc=$?
  SERVER_PID=""
  [[ $rc -eq 0 ]] || fail "devcluster exit status $rc"
}
