#!/usr/bin/env bash
# Drives the real kubectl against devcluster's scheduler: a gated Pod is created SchedulingGated and
# waits until its gates are removed (none may be added); with the PodGroup CRD installed, two 4-Pod
# gangs of scheduler-plugins' second scheduler on Nodes with room for one: the first binds whole,
# the second not at all (the Coscheduling plugin's message) until the first is gone, then whole.
# Usage: kubectl_gang_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_gang_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

# The default Nodes: 2 x 4 GPUs. Containers run /bin/sleep, so a bound Pod stays bound.
start_devcluster --run-pods --image sleeper=/bin/sleep --network-prefix "rlg$$"

scheduled='{.status.conditions[?(@.type=="PodScheduled")]}'
# wait_scheduled WHAT STATUS SELECTOR...: kubectl wait for PodScheduled=STATUS, 20 s at most.
wait_scheduled() {
  local what=$1 status=$2
  shift 2
  local out
  out=$(k wait pod "$@" --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}'="$status" --timeout=20s)
  [[ $? -eq 0 ]] || fail "$what: PodScheduled=$status" "$out"
  pass "$what"
}

# pod NAME GROUP: a Pod of the second scheduler in PodGroup GROUP asking for 2 GPUs.
pod() {
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {scheduling.x-k8s.io/pod-group: $2}
spec:
  schedulerName: scheduler-plugins-scheduler
  containers:
    - name: main
      image: sleeper
      args: ["300"]
      resources: {limits: {nvidia.com/gpu: "2"}}
EOF
}

# Scheduling gates: marked by the create itself, kept off every Node until the last gate goes,
# and never added to afterwards.
out=$(k create -o jsonpath="$scheduled" -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: main, image: sleeper, args: ["300"]}]
EOF
)
expect_text "the create's answer carries the condition kube-apiserver writes" \
  '"lastProbeTime":null,"lastTransitionTime":null,"message":"Scheduling is blocked due to non-empty scheduling gates","reason":"SchedulingGated","status":"False","type":"PodScheduled"' "$out"
expect_not "and the Pod has no Node" '"nodeName"' "$(k get pod gated -o jsonpath='{.spec}')"
out=$(k get pod gated)
expect "kubectl get pods shows it SchedulingGated" '^gated +0/1 +SchedulingGated +0 ' "$out"
out=$(k patch pod gated --type=json -p '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"x"}}]')
expect_text "a gate cannot be added" \
  "The Pod \"gated\" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'" "$out"
out=$(k patch pod gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]')
expect "its gate is removed" '^pod/gated patched$' "$out"
wait_scheduled "then it is bound" True gated
out=$(k patch pod gated --type=json -p '[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"late"}]}]')
expect_text "nor to a Pod that has none" \
  "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'late'" "$out"
k delete pod gated --wait >/dev/null

# Without the CRD there is no scheduler-plugins: the second scheduler's Pods are nobody's.
# A default-scheduler Pod created after it is bound: a pass has seen both by then.
pod early a | k apply -f - >/dev/null
k run witness --image=sleeper --restart=Never -- 300 >/dev/null
wait_scheduled "a default-scheduler Pod is bound" True witness
out=$(k get pod early -o jsonpath='{.spec.nodeName}{.status.conditions}')
expect "while before the CRD a Pod of scheduler-plugins-scheduler is left alone" '^$' "$out"
k delete pod early witness --wait >/dev/null

out=$(k apply -f "$HERE/testdata/coscheduling-podgroup-crd.yaml")
expect "the PodGroup CRD is accepted" 'customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io created' "$out"
out=$(k wait --for condition=established crd/podgroups.scheduling.x-k8s.io --timeout=20s)
expect "and established" 'condition met' "$out"

pod orphan missing | k apply -f - >/dev/null
wait_scheduled "a Pod whose PodGroup does not exist stays unbound" False orphan
expect_text "with Permit's words" '"message":"PodGroup not found","reason":"Unschedulable"' \
  "$(k get pod orphan -o jsonpath="$scheduled")"

groups='
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: first}
spec: {minMember: 4, scheduleTimeoutSeconds: 60}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: second}
spec: {minMember: 4, scheduleTimeoutSeconds: 60}'
out=$(k apply -f - <<<"$groups")
expect "two PodGroups of minMember 4" 'podgroup.scheduling.x-k8s.io/second created' "$out"
out=$( (for i in 0 1 2 3; do pod "first-$i" first; done) | k apply -f -)
expect "the first gang's 4 Pods are created" 'pod/first-3 created' "$out"
wait_scheduled "and bound together" True -l scheduling.x-k8s.io/pod-group=first
out=$( (for i in 0 1 2 3; do pod "second-$i" second; done) | k apply -f -)
expect "the second gang's 4 Pods are created" 'pod/second-3 created' "$out"
wait_scheduled "none of them fits while the first holds the GPUs" False -l scheduling.x-k8s.io/pod-group=second
out=$(k get pods -l scheduling.x-k8s.io/pod-group=second -o jsonpath='{range .items[*]}{.spec.nodeName}{end}')
expect "and no Pod of it is bound" '^$' "$out"
out=$(k get pod second-2 -o jsonpath="$scheduled")
expect_text "the Coscheduling plugin's words" '"message":"0/2 nodes are available: 2 Insufficient nvidia.com/gpu. PodGroup default/second gets rejected due to Pod second-0 is unschedulable even after PostFilter.","reason":"Unschedulable"' "$out"
out=$(k get events --field-selector involvedObject.name=second-1,reason=FailedScheduling -o jsonpath='{.items[0].reportingComponent}')
expect "reported by the second scheduler" '^scheduler-plugins-scheduler$' "$out"

out=$(k delete pod -l scheduling.x-k8s.io/pod-group=first --wait)
expect "the first gang goes" 'pod "first-3" deleted' "$out"
wait_scheduled "then the second binds whole" True -l scheduling.x-k8s.io/pod-group=second

stop_devcluster
echo "$PASSED passed, 0 failed"
