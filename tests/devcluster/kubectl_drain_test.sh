#!/usr/bin/env bash
# Drives the real kubectl drain against devcluster running Pods, as against a real cluster: /api/v1
# lists pods/eviction (policy/v1), so drain cordons the Node and evicts (DisruptionTarget, then a
# graceful deletion); with --disable-eviction it deletes with a protobuf DeleteOptions body whose
# grace period is honoured; kubectl uncordon undoes the cordon.
# Usage: kubectl_drain_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_drain_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster --run-pods --image devcluster.test/sh=/bin/sh --network-prefix "rld$$"

# pod NAME NODE SCRIPT: a Pod on NODE (by nodeSelector) whose one container runs SCRIPT with sh,
# owned by the ConfigMap "owner" as its controller (drain refuses Pods without one unless --force),
# with an emptyDir (drain refuses those unless --delete-emptydir-data).
pod() {
  k apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$OWNER_UID", controller: true}]
spec:
  restartPolicy: Never
  nodeSelector: {kubernetes.io/hostname: $2}
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - name: main
    image: devcluster.test/sh
    args: ["-c", "$3"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
YAML
}
wait_for_line() { # FILE PATTERN: up to 30 s
  for _ in $(seq 1 300); do grep -Eq -- "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

# --- Discovery: what kubectl drain's CheckEvictionSupport reads.
out=$(k get --raw /api/v1 | python3 -c '
import json, sys
for r in json.load(sys.stdin)["resources"]:
    if r["name"].startswith("pods/"):
        print(r["name"], r.get("group", "-"), r.get("version", "-"), r["kind"], ",".join(r["verbs"]))')
expect_text "/api/v1 lists pods/eviction as kube-apiserver does" 'pods/eviction policy v1 Eviction create' "$out"
expect_text "and pods/log" 'pods/log - - Pod get' "$out"

# --- kubectl drain: cordon, then evict the Pod gracefully.
k create configmap owner >/dev/null
OWNER_UID=$(k get configmap owner -o jsonpath='{.metadata.uid}')
pod worker node-a "exec sleep 1000" >/dev/null
out=$(k wait --for=condition=Ready pod/worker --timeout=60s)
expect "a controller-owned Pod with an emptyDir runs on node-a" 'condition met' "$out"
"${KUBECTL[@]}" get pod worker --watch \
  -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].reason}|{.metadata.deletionTimestamp}{"\n"}' \
  >"$WORK/worker.watch" 2>&1 &
WATCH_PID=$!
wait_for_line "$WORK/worker.watch" '^\|$' || fail "the watch saw the Pod" "$(cat "$WORK/worker.watch")"
out=$(k drain node-a --ignore-daemonsets --delete-emptydir-data --timeout=30s)
expect_text "kubectl drain cordons node-a" 'node/node-a cordoned' "$out"
expect_text "evicts its Pod through the Eviction API" 'pod/worker evicted' "$out"
expect_text "and reports the node drained" 'node/node-a drained' "$out"
out=$(k get pod worker)
expect "the Pod is gone" 'pods "worker" not found' "$out"
wait_for_line "$WORK/worker.watch" '^EvictionByEvictionAPI\|[0-9T:Z-]+$' ||
  fail "watchers saw DisruptionTarget (EvictionByEvictionAPI) on the terminating Pod" "$(cat "$WORK/worker.watch")"
pass "watchers saw DisruptionTarget=True, EvictionByEvictionAPI, with the deletionTimestamp"
kill "$WATCH_PID" 2>/dev/null
out=$(k get node node-a -o 'jsonpath={.spec.unschedulable}')
expect "node-a is cordoned" '^true$' "$out"
out=$(k get nodes)
expect "kubectl get nodes shows it" 'node-a +Ready,SchedulingDisabled' "$out"
# A new Pod goes to node-b, the only schedulable Node.
k run after --image=devcluster.test/sh --restart=Never -- -c "exec sleep 1000" >/dev/null
out=$(k wait --for=jsonpath='{.spec.nodeName}'=node-b pod/after --timeout=30s)
expect "a new Pod is bound to node-b" 'condition met' "$out"

# --- kubectl drain --disable-eviction: DELETE with a protobuf DeleteOptions body (grace 2 s).
pod stubborn node-b "trap '' TERM; while true; do sleep 0.1; done" >/dev/null
k wait --for=condition=Ready pod/stubborn --timeout=60s >/dev/null
"${KUBECTL[@]}" get pod stubborn --watch -o 'jsonpath={.metadata.deletionGracePeriodSeconds}{"\n"}' \
  >"$WORK/stubborn.watch" 2>&1 &
WATCH_PID=$!
wait_for_line "$WORK/stubborn.watch" '^$' || fail "the watch saw the Pod" "$(cat "$WORK/stubborn.watch")"
out=$(k drain node-b --disable-eviction --force --delete-emptydir-data --grace-period=2 --timeout=30s)
expect_text "kubectl drain --disable-eviction deletes the Pods" 'pod/stubborn deleted' "$out"
expect_text "and drains node-b" 'node/node-b drained' "$out"
wait_for_line "$WORK/stubborn.watch" '^2$' ||
  fail "the DELETE's protobuf grace period (2 s, not the Pod's 30) was taken" "$(cat "$WORK/stubborn.watch")"
pass "the protobuf DeleteOptions' gracePeriodSeconds 2 was honoured"
kill "$WATCH_PID" 2>/dev/null

# --- kubectl uncordon
out=$(k uncordon node-a)
expect_text "kubectl uncordon node-a" 'node/node-a uncordoned' "$out"
out=$(k get node node-a -o 'jsonpath={.spec.unschedulable}')
expect "node-a is schedulable again" '^$' "$out"

stop_devcluster
echo "$PASSED passed, 0 failed"
