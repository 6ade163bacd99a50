#!/usr/bin/env bash
# docs/install.md walked as written, on devcluster's real control plane: step 1's images are
# "loaded" as devcluster loads images, as programs (docs/devcluster.md, --image), under the
# names the doc keeps with no registry (registry=ringleader); step 2's and step 3's shell blocks
# run verbatim from the doc, and so do the commands the chart's NOTES.txt prints at install.
# What devcluster cannot do, and so what this skips, each named where it happens: run the
# operator's own Pods (its Pods' network cannot reach the API server, which listens on loopback;
# the operator runs beside devcluster instead, as those Pods would: the Deployment's args, its
# ServiceAccount's token), hence `rollout status`; and port-forward (no streaming in its node
# agent). Step 1's builds are build_images_test's (tests/docker).
# Usage: install_walkthrough_test.sh DEVCLUSTER OPERATOR SIDECAR EXAMPLE_TRAINER (from the repository root)
set -u -o pipefail
DEVCLUSTER=${1:?usage: install_walkthrough_test.sh DEVCLUSTER OPERATOR SIDECAR EXAMPLE_TRAINER}
OPERATOR=${2:?} SIDECAR=${3:?} TRAINER=${4:?}
if ((EUID != 0)); then
  echo "install_walkthrough_test: devcluster runs Pods only as root; skipped"
  exit 77
fi
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../devcluster/kubectl_harness.sh"
command -v helm >/dev/null || { echo "install_walkthrough_test: no helm (scripts/install-kube-tools); skipped"; exit 77; }
OPERATOR_PID=""
trap 'if [[ -n "$OPERATOR_PID" ]]; then kill "$OPERATOR_PID" 2>/dev/null; wait "$OPERATOR_PID" 2>/dev/null; fi; cleanup' EXIT
cd "$ROOT" || exit 1
# run_doc NAME SECONDS SCRIPT: runs SCRIPT (the doc's words) with the doc's variables, failing the
# test with its output and the operator's log when it fails or outlasts SECONDS (the doc's own
# waits allow 10 minutes; a job here succeeds in under one).
run_doc() {
  out=$(registry=$registry version=$version timeout "$2" bash -euo pipefail -c "$3" 2>&1) ||
    fail "$1 failed (exit $?): $3" "$out
--- operator log (tail):
$(tail -n 20 "$WORK/operator.log" 2>/dev/null)"
}

# The doc's shell block N (1-based) under a heading, as a file.
block() {
  python3 - "$ROOT/docs/install.md" "$1" "$2" <<'PY'
import re, sys
text, heading, n = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
section = text.split("\n" + heading + "\n", 1)[1]
section = re.split(r"\n## ", section, maxsplit=1)[0]
print(re.findall(r"```sh\n(.*?)```", section, re.S)[n - 1], end="")
PY
}

# Step 1, on devcluster: the images are the programs CMake built.
start_devcluster --run-pods --image "ringleader/sidecar=$SIDECAR" --image "ringleader/example-trainer=$TRAINER"
pass "devcluster serves, with ringleader/sidecar and ringleader/example-trainer mapped to the built programs"
version=0.1.0
registry=ringleader

# Step 2, verbatim but for rollout status, which waits on the operator's own Pods.
step2=$(block "## 2. Install the chart" 1)
expect_text "step 2 waits for the rollout" "kubectl -n ringleader-system rollout status deployment/ringleader" "$step2"
run_doc "step 2" 120 "$(grep -v 'rollout status' <<<"$step2")"
expect "step 2's helm install installs the chart" '^STATUS: deployed$' "$out"
notes=$out

# The operator as the Deployment's Pod would run it: its args ($(POD_NAME) expanded; the metrics
# and health ports moved off 8080/8081, which other tests' operators may hold) with its
# ServiceAccount's token.
deployment=$(k -n ringleader-system get deployment ringleader -o json)
ports=$(python3 -c 'import socket
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
mapfile -t args < <(python3 - "$deployment" $ports <<'PY'
import json, sys
spec = json.loads(sys.argv[1])["spec"]["template"]["spec"]
metrics, health = sys.argv[2], sys.argv[3]
for arg in spec["containers"][0]["args"]:
    arg = arg.replace("$(POD_NAME)", "ringleader-walkthrough")
    arg = arg.replace("--metrics-bind-address=:8080", "--metrics-bind-address=127.0.0.1:" + metrics)
    arg = arg.replace("--health-probe-bind-address=:8081", "--health-probe-bind-address=127.0.0.1:" + health)
    print(arg)
PY
)
account=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["spec"]["template"]["spec"]["serviceAccountName"])' "$deployment")
token=$(k -n ringleader-system create token "$account")
expect "a token for the operator's ServiceAccount $account" '^[^.]+\.[^.]+\.[^.]+$' "$token"
cat >"$WORK/operator.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: devcluster, cluster: {server: "$URL", certificate-authority: "$WORK/data/ca.crt"}}]
users: [{name: operator, user: {token: "$token"}}]
contexts: [{name: operator, context: {cluster: devcluster, user: operator}}]
current-context: operator
EOF
"$OPERATOR" "${args[@]}" --kubeconfig="$WORK/operator.kubeconfig" >"$WORK/operator.log" 2>&1 &
OPERATOR_PID=$!
for _ in $(seq 1 150); do
  holder=$(k -n ringleader-system get lease ringleader-operator -o jsonpath='{.spec.holderIdentity}')
  [[ "$holder" == ringleader-walkthrough ]] && break
  kill -0 "$OPERATOR_PID" 2>/dev/null || fail "the operator exited" "$(tail -n 20 "$WORK/operator.log")"
  sleep 0.2
done
expect "the operator, run with the Deployment's args as its ServiceAccount, leads" '^ringleader-walkthrough$' "$holder"

# NOTES.txt, as helm printed it: every command line, in order, but the ones devcluster cannot serve.
mapfile -t note_commands < <(sed -n 's/^  \(\(kubectl\|sed\|sleep\) .*\)$/\1/p' <<<"$notes")
ran=0
for command in "${note_commands[@]}"; do
  case "$command" in
    *"rollout status"*) echo "skip (the operator's Pods do not run on devcluster): $command"; continue ;;
    *port-forward* | "sleep 2; curl"*) echo "skip (devcluster serves no port-forward): $command"; continue ;;
  esac
  run_doc "NOTES.txt" 150 "$command"
  echo "$ $command"
  echo "$out"
  case "$command" in
    *"get lease"*) expect "NOTES.txt's lease command names the leader" '^ringleader-walkthrough$' "$out" ;;
    *"kubectl wait"*) expect "NOTES.txt's wait sees the example job succeed" 'condition met' "$out" ;;
  esac
  ran=$((ran + 1))
done
((ran >= 4)) || fail "NOTES.txt: only $ran commands ran" "$notes"
pass "NOTES.txt's $ran commands devcluster can serve all worked as printed"

# Step 3, verbatim: the job NOTES.txt applied is already there, so its apply is unchanged.
step3=$(block "## 3. Run the first job" 1)
run_doc "step 3" 120 "$step3"
echo "$out"
expect "step 3: the job Succeeded" 'demo +Succeeded' "$out"
expect "step 3: rank 0's trainer finished its steps" '^final steps 20 ' "$out"
expect "step 3: the job is deleted" 'trainingjob.ringleader.dev "demo" deleted' "$out"
echo "$PASSED passed"
