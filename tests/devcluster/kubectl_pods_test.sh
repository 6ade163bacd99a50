#!/usr/bin/env bash
# Drives the real kubectl against devcluster running Pods: graceful deletion (the Pod stays with a
# deletionTimestamp until its kubelet has stopped it; a process ignoring SIGTERM is killed when
# the grace period ends), the Eviction API (DisruptionTarget seen before the Pod goes, RBAC on
# pods/eviction), pods/log (tail, init containers, the server's errors), a Pod's in-cluster API
# access and port-forward to a Pod.
# Usage: kubectl_pods_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_pods_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster --run-pods --image devcluster.test/sh=/bin/sh --network-prefix "rlp$$"

# pod NAME SCRIPT [GRACE]: a bound-by-the-scheduler Pod whose one container runs SCRIPT with sh.
pod() {
  k apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: ${3:-30}
  containers:
  - {name: main, image: devcluster.test/sh, args: ["-c", "$2"]}
YAML
}
# watch_pod NAME JSONPATH FILE: kubectl get --watch in the background, one line per event.
watch_pod() {
  "${KUBECTL[@]}" get pod "$1" --watch -o "jsonpath=$2{\"\\n\"}" >"$3" 2>&1 &
  WATCH_PID=$!
}
wait_for_line() { # FILE PATTERN: up to 30 s
  for _ in $(seq 1 300); do grep -Eq -- "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

# --- Graceful deletion: a process that ignores SIGTERM, grace period 2 s.
out=$(pod stubborn "trap '' TERM; echo up; while true; do sleep 0.1; done" 2)
expect "create a Pod that ignores SIGTERM" 'pod/stubborn created' "$out"
out=$(k wait --for=condition=Ready pod/stubborn --timeout=60s)
expect "it runs" 'condition met' "$out"
watch_pod stubborn '{.metadata.deletionTimestamp}|{.status.phase}|{.status.containerStatuses[0].state.terminated.exitCode}' "$WORK/stubborn.watch"
wait_for_line "$WORK/stubborn.watch" '^\|Running\|$' || fail "the watch saw the running Pod" "$(cat "$WORK/stubborn.watch")"
start=$(date +%s.%N)
out=$(k delete pod stubborn --wait=false)
expect "kubectl delete answers at once" 'pod "stubborn" deleted' "$out"
out=$(k get pod stubborn -o 'jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}')
expect "the Pod stays, marked, with the grace period it was given" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z 2$' "$out"
out=$(k delete pod stubborn --wait=false --grace-period=60)
expect "a second delete cannot lengthen the grace period" 'pod "stubborn" deleted' "$out"
out=$(k get pod stubborn -o 'jsonpath={.metadata.deletionGracePeriodSeconds}')
expect "it is still 2 s" '^2$' "$out"
out=$(k wait --for=delete pod/stubborn --timeout=60s)
expect "then it is gone" 'condition met' "$out"
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
if (($(echo "$elapsed < 2 || $elapsed > 10" | bc))); then
  fail "the Pod went when its grace period ended (2 s), not before and not much later" "after $elapsed s"
fi
pass "the SIGTERM-ignoring Pod went after its 2 s grace period ($elapsed s)"
wait_for_line "$WORK/stubborn.watch" '^[0-9T:Z-]+\|Failed\|137$' ||
  fail "watchers saw the deletionTimestamp, then the final status: Failed, killed (137)" "$(cat "$WORK/stubborn.watch")"
marked=$(grep -nE '^[0-9T:Z-]+\|Running\|$' "$WORK/stubborn.watch" | head -1 | cut -d: -f1)
killed=$(grep -nE '\|Failed\|137$' "$WORK/stubborn.watch" | head -1 | cut -d: -f1)
[[ -n "$marked" && "$marked" -lt "$killed" ]] || fail "the mark came before the final status" "$(cat "$WORK/stubborn.watch")"
pass "watchers saw the mark (still Running), then Failed with exit code 137"
kill "$WATCH_PID" 2>/dev/null

# kubectl delete waits for the Pod to be gone by default; a Pod that exits on SIGTERM goes at once.
pod polite "exec sleep 1000" >/dev/null
k wait --for=condition=Ready pod/polite --timeout=60s >/dev/null
out=$(k delete pod polite)
expect "kubectl delete (waiting) returns" 'pod "polite" deleted' "$out"
out=$(k get pod polite)
expect "and by then the Pod is gone" 'pods "polite" not found' "$out"

# --- Eviction: DisruptionTarget is set, watchers see it, then the Pod is deleted gracefully.
pod victim "exec sleep 1000" >/dev/null
k wait --for=condition=Ready pod/victim --timeout=60s >/dev/null
watch_pod victim '{.status.conditions[?(@.type=="DisruptionTarget")].reason}|{.status.conditions[?(@.type=="DisruptionTarget")].message}|{.metadata.deletionTimestamp}' "$WORK/victim.watch"
wait_for_line "$WORK/victim.watch" '^\|\|$' || fail "the watch saw the Pod" "$(cat "$WORK/victim.watch")"
eviction() { echo "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"default\"}}"; }
eviction victim >"$WORK/victim.json"
out=$(k create --raw /api/v1/namespaces/default/pods/victim/eviction -f "$WORK/victim.json")
# kube-apiserver writes {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}.
out=$(python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))' <<<"$out" 2>&1)
expect_text "the eviction is answered as the server answers it" \
  '{"apiVersion": "v1", "code": 201, "kind": "Status", "metadata": {}, "status": "Success"}' "$out"
# kubectl wait prints nothing when the Pod was already gone.
out=$(k wait --for=delete pod/victim --timeout=60s; k get pod victim)
expect "the evicted Pod is gone" 'pods "victim" not found' "$out"
wait_for_line "$WORK/victim.watch" '^EvictionByEvictionAPI\|Eviction API: evicting\|[0-9T:Z-]+$' ||
  fail "watchers saw DisruptionTarget (EvictionByEvictionAPI) with the deletionTimestamp" "$(cat "$WORK/victim.watch")"
pass "watchers saw DisruptionTarget=True, EvictionByEvictionAPI, on the terminating Pod"
kill "$WATCH_PID" 2>/dev/null
eviction ghost >"$WORK/ghost.json"
out=$(k create --raw /api/v1/namespaces/default/pods/ghost/eviction -f "$WORK/ghost.json")
expect_text "evicting a missing Pod" 'Error from server (NotFound): pods "ghost" not found' "$out"
out=$(k create --raw /api/v1/namespaces/default/pods/other/eviction -f "$WORK/ghost.json")
expect_text "an Eviction naming another Pod" \
  'Error from server (BadRequest): name in URL does not match name in Eviction object' "$out"

# RBAC: evicting is create on pods/eviction; delete on pods is not enough.
out=$(k apply -f - <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: evictor}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deleter}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: evict-pods}
rules:
- {apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: delete-pods}
rules:
- {apiGroups: [""], resources: ["pods"], verbs: ["delete"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: evictor-evicts}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: evict-pods}
subjects: [{kind: ServiceAccount, name: evictor, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deleter-deletes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: delete-pods}
subjects: [{kind: ServiceAccount, name: deleter, namespace: default}]
YAML
)
expect "apply two ServiceAccounts and their Roles" 'rolebinding.rbac.authorization.k8s.io/deleter-deletes created' "$out"
pod target "exec sleep 1000" >/dev/null
eviction target >"$WORK/target.json"
out=$("${KUBECTL[@]}" --token="$(k create token deleter)" create --raw /api/v1/namespaces/default/pods/target/eviction -f "$WORK/target.json" 2>&1)
expect_text "delete on pods does not allow an eviction" \
  'User "system:serviceaccount:default:deleter" cannot create resource "pods/eviction" in API group "" in the namespace "default"' "$out"
out=$("${KUBECTL[@]}" --token="$(k create token evictor)" create --raw /api/v1/namespaces/default/pods/target/eviction -f "$WORK/target.json" 2>&1)
expect_text "create on pods/eviction does" '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}' "$out"

# --- Logs: exact last lines, an init container's, and what the server refuses.
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: devcluster.test/sh, args: ["-c", "echo init one; echo init two"]}
  containers:
  - {name: main, image: devcluster.test/sh, args: ["-c", "for i in 1 2 3 4 5; do echo line $i; done; echo 'rank 3 broke' >&2; exit 3"]}
YAML
out=$(k wait --for=jsonpath='{.status.phase}'=Failed pod/talker --timeout=60s)
expect "the talking Pod fails" 'condition met' "$out"
out=$("${KUBECTL[@]}" logs talker --tail=3 2>"$WORK/logs.err")
[[ "$out" == $'line 4\nline 5\nrank 3 broke' ]] || fail "kubectl logs --tail=3 shows the failed container's last lines" "$out"
expect_text "kubectl picks the app container itself, as with a real server" \
  'Defaulted container "main" out of: main, setup (init)' "$(cat "$WORK/logs.err")"
pass "kubectl logs --tail=3 on the Failed Pod shows its last three lines (stdout and stderr)"
out=$(k logs talker -c setup)
[[ "$out" == $'init one\ninit two' ]] || fail "kubectl logs -c names an init container" "$out"
pass "kubectl logs -c setup shows the init container's output"
out=$(k logs talker --previous)
expect_text "there is no previous run" \
  'previous terminated container "main" in pod "talker" not found' "$out"
out=$(k logs talker -c nope)
expect_text "an unknown container" 'container nope is not valid for pod talker' "$out"
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: pair}
spec:
  containers:
  - {name: left, image: devcluster.test/sh, args: ["-c", "exec sleep 1000"]}
  - {name: right, image: devcluster.test/sh, args: ["-c", "exec sleep 1000"]}
YAML
out=$(k get --raw /api/v1/namespaces/default/pods/pair/log)
expect_text "two containers and none named" \
  'Error from server (BadRequest): a container name must be specified for pod pair, choose one of: [left right]' "$out"

# --- In-cluster API access and port-forward: a Pod reaches the API server with its
# ServiceAccount's token at the address its environment names, and kubectl port-forward reaches
# a Pod's port through kube-apiserver and the node agent's kubelet endpoint.
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: main
    image: devcluster.test/sh
    args:
    - -c
    - |
      sa=/var/run/secrets/kubernetes.io/serviceaccount
      curl -sS --cacert $sa/ca.crt --oauth2-bearer "$(cat $sa/token)" \
        "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/default/pods"
      echo "pong from $HOSTNAME" >/www/ping
      cd /www && exec python3 -m http.server 8000
    volumeMounts: [{name: www, mountPath: /www}]
    readinessProbe: {tcpSocket: {port: 8000}, periodSeconds: 1}
  volumes: [{name: www, emptyDir: {}}]
YAML
out=$(k wait --for=condition=Ready pod/web --timeout=60s)
expect "a Pod serving HTTP on 8000 is Ready" 'condition met' "$out"
out=$(k logs web)
expect_text "from its own namespace, the Pod reached the API server (TLS verified) as its ServiceAccount" \
  'pods is forbidden: User \"system:serviceaccount:default:default\" cannot list resource \"pods\"' "$out"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${KUBECTL[@]}" port-forward pod/web "$port:8000" >"$WORK/port-forward.log" 2>&1 &
FORWARD_PID=$!
wait_for_line "$WORK/port-forward.log" "Forwarding from 127.0.0.1:$port -> 8000" ||
  fail "kubectl port-forward listens" "$(cat "$WORK/port-forward.log")"
out=$(curl -sS --max-time 10 "localhost:$port/ping" 2>&1)
expect "curl through the port-forward gets the Pod's answer" '^pong from web$' "$out"
out=$(curl -sS --max-time 10 "localhost:$port/ping" 2>&1)
expect "a second connection through the same port-forward too" '^pong from web$' "$out"
out=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "localhost:$port/nothing-here" 2>&1)
expect "and the Pod's own 404" '^404$' "$out"
kill "$FORWARD_PID"
wait "$FORWARD_PID" 2>/dev/null
out=$(timeout 30 kubectl port-forward pod/nobody 9:9 2>&1)
expect_text "port-forward to a Pod that does not exist: the server's words" 'pods "nobody" not found' "$out"

stop_devcluster
echo "$PASSED passed, 0 failed"
