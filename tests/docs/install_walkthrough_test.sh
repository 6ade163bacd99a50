#!/usr/bin/env bash
# docs/install.md walked as written, on devcluster's real control plane: step 1's images are
# "loaded" as devcluster loads images, as programs (docs/devcluster.md, --image), under the
# names the doc keeps with no registry (registry=ringleader); step 2's and step 3's shell blocks
# run verbatim from the doc, and so do the commands the chart's NOTES.txt prints at install.
# The operator runs in its Deployment's Pods, as the chart makes them, and reaches the API server
# in-cluster (the node agent gives it the `kubernetes` Service's address, docs/devcluster.md);
# NOTES.txt's port-forward goes through kube-apiserver to the node agent's kubelet endpoint, as on
# any cluster. Nothing is skipped. Step 1's builds are build_images_test's (tests/docker).
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
cd "$ROOT" || exit 1
# run_doc NAME SECONDS SCRIPT: runs SCRIPT (the doc's words) with the doc's variables, failing the
# test with its output and the operator's log when it fails or outlasts SECONDS (the doc's own
# waits allow 10 minutes; a job here succeeds in under one).
run_doc() {
  out=$(registry=$registry version=$version timeout "$2" bash -euo pipefail -c "$3" 2>&1) ||
    fail "$1 failed (exit $?): $3" "$out
--- the operator's Pods:
$(k -n ringleader-system get pods -o wide)
--- operator log (tail):
$(k -n ringleader-system logs deployment/ringleader --tail=20)"
}

# run_as_typed NAME SECONDS SCRIPT: SCRIPT as a user's shell runs what they type (NOTES.txt's
# lines: no errexit, no pipefail, so `grep | head` is fine), its status its last command's, failing
# the test when that is not 0 or SCRIPT outlasts SECONDS. It runs in a session of its own, whose
# leftovers (a background kubectl) are killed after.
run_as_typed() {
  registry=$registry version=$version setsid bash -c "$3" >"$WORK/typed.out" 2>&1 &
  local shell=$! status
  for ((tenths = 0; tenths < $2 * 10; tenths++)); do
    kill -0 "$shell" 2>/dev/null || break
    sleep 0.1
  done
  kill -- -"$shell" 2>/dev/null
  wait "$shell"
  status=$?
  out=$(cat "$WORK/typed.out")
  ((status == 0)) || fail "$1 failed (exit $status): $3" "$out
--- the operator's Pods:
$(k -n ringleader-system get pods -o wide)"
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
start_devcluster --run-pods --image "ringleader/operator=$OPERATOR" --image "ringleader/sidecar=$SIDECAR" \
  --image "ringleader/example-trainer=$TRAINER"
pass "devcluster serves, with ringleader/operator, ringleader/sidecar and ringleader/example-trainer mapped to the built programs"
version=0.1.0
registry=ringleader

# Step 2, verbatim: helm install, then rollout status waits for the operator's own Pod, which
# reaches the API server in-cluster (its ServiceAccount's token, KUBERNETES_SERVICE_HOST).
step2=$(block "## 2. Install the chart" 1)
expect_text "step 2 waits for the rollout" "kubectl -n ringleader-system rollout status deployment/ringleader" "$step2"
run_doc "step 2" 150 "$step2"
expect "step 2's helm install installs the chart" '^STATUS: deployed$' "$out"
expect "step 2's rollout status sees the operator's Deployment roll out" 'deployment "ringleader" successfully rolled out' "$out"
notes=$out
operator_pods=$(k -n ringleader-system get pods -l app.kubernetes.io/component=operator \
  -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}')
expect "the operator runs in its Deployment's Pods" '^ringleader-[a-z0-9]+-[a-z0-9]+ Running$' "$operator_pods"

# NOTES.txt, as helm printed it: every command line, in order. The port-forward line puts kubectl
# in the background and the next line's `kill $!` ends it, so the two run in one shell, as typed.
mapfile -t note_commands < <(sed -n 's/^  \(\(kubectl\|sed\|sleep\) .*\)$/\1/p' <<<"$notes")
ran=0
for ((i = 0; i < ${#note_commands[@]}; i++)); do
  command=${note_commands[i]}
  if [[ "$command" == *"port-forward"*"&" ]]; then
    ((i + 1 < ${#note_commands[@]})) || fail "NOTES.txt: nothing after the port-forward ends it" "$notes"
    i=$((i + 1))
    command+=$'\n'${note_commands[i]}
    ran=$((ran + 1))
  fi
  run_as_typed "NOTES.txt" 150 "$command"
  echo "$ $command"
  echo "$out"
  case "$command" in
    *"get lease"*)
      expect "NOTES.txt's lease command names a leader" '^ringleader-[a-z0-9]+-[a-z0-9]+$' "$out"
      expect_text "the leader is one of the operator's Pods" "$out Running" "$operator_pods" ;;
    *port-forward*)
      # curl's lines through grep, and `kill $!`, the last command, found kubectl still forwarding.
      expect "NOTES.txt's port-forward and curl show the operator's metrics" '^ringleader_operator_[a-z_]+(\{[^}]*\})? ' "$out" ;;
    *"kubectl wait"*) expect "NOTES.txt's wait sees the example job succeed" 'condition met' "$out" ;;
  esac
  ran=$((ran + 1))
done
((ran == ${#note_commands[@]} && ran >= 6)) || fail "NOTES.txt: $ran of ${#note_commands[@]} commands ran" "$notes"
pass "NOTES.txt's $ran commands all worked as printed"

# Step 3, verbatim: the job NOTES.txt applied is already there, so its apply is unchanged.
step3=$(block "## 3. Run the first job" 1)
run_doc "step 3" 120 "$step3"
echo "$out"
expect "step 3: the job Succeeded" 'demo +Succeeded' "$out"
expect "step 3: rank 0's trainer finished its steps" '^final steps 20 ' "$out"
expect "step 3: the job is deleted" 'trainingjob.ringleader.dev "demo" deleted' "$out"
echo "$PASSED passed"
