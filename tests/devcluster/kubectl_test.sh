#!/usr/bin/env bash
# Drives the real kubectl against the devcluster binary: CRD and TrainingJob apply, get (Table),
# watch, describe with Events, merge and status patches, wait, explain, label selectors,
# strategic merge on a Service, garbage collection, schema validation, authentication, and
# ServiceAccount tokens held to RBAC with an audit log.
# Usage: kubectl_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster --audit-log "$WORK/audit.log"
pass "devcluster starts and announces its URL and kubeconfig"

out=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/data/ca.crt" "$URL/api/v1/namespaces/default/pods")
expect "curl without a token gets 401" '^401$' "$out"
out=$(curl -s --cacert "$WORK/data/ca.crt" "$URL/api/v1/namespaces/default/pods")
expect "the 401 body is a Status" '"kind":"Status".*"reason":"Unauthorized"|"reason":"Unauthorized".*"kind":"Status"' "$out"

out=$(k version)
expect "kubectl version sees v1.32" 'Server Version: v1\.32\.' "$out"

out=$(k apply -f "$ROOT/crds/ringleader.dev_trainingjobs.yaml")
expect "apply CRD" 'customresourcedefinition.apiextensions.k8s.io/trainingjobs.ringleader.dev created' "$out"

out=$(k apply -f "$ROOT/examples/trainingjob.yaml")
expect "apply TrainingJob" '^trainingjob.ringleader.dev/demo created$' "$out"
out=$(k apply -f "$ROOT/examples/trainingjob.yaml")
expect "re-apply unchanged" '^trainingjob.ringleader.dev/demo unchanged$' "$out"
# The CRD lets replicas change only while the job is suspended.
sed -e 's/replicas: 4/replicas: 5/' -e 's/backoffLimit: 2/backoffLimit: 2\n    suspend: true/' \
  "$ROOT/examples/trainingjob.yaml" >"$WORK/tj-5.yaml"
out=$(k apply -f "$WORK/tj-5.yaml")
expect "apply with a change" '^trainingjob.ringleader.dev/demo configured$' "$out"
# The OpenAPI v3 document of a custom resource includes ObjectMeta, which kubectl's patch needs.
expect_not "apply computes its patch without a warning" 'warning|unable to find api field' "$out"

out=$(k get tj)
expect "get tj prints the CRD's printer columns" '^NAME +STATE +READY +REPLICAS +MASTER-PORT +BUSBW +AGE' "$out"
expect "get tj shows demo with 5 replicas" '^demo +5 +[0-9]+s' "$out"

out=$(k get tj demo -o yaml)
expect "get -o yaml has the spec" 'replicas: 5' "$out"
expect "get -o yaml has defaults applied" 'gpusPerReplica: 0' "$out"
expect "generation bumped by the spec change" 'generation: 2' "$out"
UID_TJ=$(k get tj demo -o jsonpath='{.metadata.uid}')
[[ "$UID_TJ" =~ ^[0-9a-f-]{36}$ ]] || fail "uid of demo" "$UID_TJ"

# get -w in the background sees the update a patch makes.
(timeout 8 kubectl get tj -w >"$WORK/watch.out" 2>&1 &)
for _ in $(seq 1 50); do grep -q '^demo' "$WORK/watch.out" 2>/dev/null && break; sleep 0.1; done
out=$(k patch tj demo --type=merge -p '{"spec":{"replicas":3}}')
expect "patch --type=merge" '^trainingjob.ringleader.dev/demo patched$' "$out"
out=$(k patch tj demo --type=merge -p '{"spec":{"replicas":3}}')
expect "a no-op patch changes nothing" 'patched \(no change\)' "$out"
for _ in $(seq 1 50); do grep -q '^demo +3 ' <(sed 's/  */ /g' "$WORK/watch.out") 2>/dev/null && break; sleep 0.1; done
out=$(cat "$WORK/watch.out")
expect "get -w prints the initial row" '^demo +5 ' "$out"
expect "get -w sees the update" '^demo +3 ' "$out"

out=$(k patch tj demo -p '{"spec":{"replicas":2}}')
expect "strategic merge on a custom resource is refused (415)" 'application/strategic-merge-patch\+json is not supported' "$out"

cat >"$WORK/event.yaml" <<YAML
apiVersion: v1
kind: Event
metadata:
  name: demo.preflight
  namespace: default
involvedObject:
  apiVersion: ringleader.dev/v1alpha1
  kind: TrainingJob
  name: demo
  namespace: default
  uid: $UID_TJ
reason: PreflightPassed
message: all-reduce bus bandwidth 12.5 GB/s
type: Normal
source:
  component: ringleader-operator
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
YAML
out=$(k create -f "$WORK/event.yaml")
expect "create an Event" 'event/demo.preflight created' "$out"
out=$(k describe tj demo)
expect "describe shows the spec" 'Replicas: +3' "$out"
expect "describe lists the Event" 'PreflightPassed.*all-reduce bus bandwidth 12.5 GB/s' "$out"

out=$(k patch tj demo --subresource=status --type=merge \
  -p '{"status":{"conditions":[{"type":"Succeeded","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}')
expect "patch the status subresource" 'trainingjob.ringleader.dev/demo patched' "$out"
out=$(k get tj demo -o jsonpath='{.status.conditions[0].type}/{.metadata.generation}')
expect "status patch does not bump generation" '^Succeeded/3$' "$out"
out=$(k wait --for=condition=Succeeded tj/demo --timeout=10s)
expect "wait --for=condition=Succeeded" 'trainingjob.ringleader.dev/demo condition met' "$out"

out=$(k explain trainingjob.spec)
expect "explain shows the CRD's descriptions" 'What the user asks for' "$out"
expect "explain lists spec fields" 'replicas[[:space:]]+<integer>' "$out"

out=$(k get nodes)
expect "get nodes lists the default nodes as Ready" '^node-a +Ready +[0-9]+[smhd] +v1\.32\.0-devcluster' "$out"
expect "get nodes lists node-b" '^node-b +Ready' "$out"

out=$(k apply -f "$HERE/testdata/pods.yaml")
expect "apply Pods" 'pod/worker-x created' "$out"
out=$(k get pods -l app=x)
expect "get pods -l app=x lists the labelled Pod" '^worker-x ' "$out"
expect_not "get pods -l app=x hides the other Pod" 'worker-y' "$out"

out=$(k apply -f "$HERE/testdata/service-v1.yaml")
expect "apply Service" 'service/demo-svc created' "$out"
out=$(k apply -f "$HERE/testdata/service-v2.yaml")
expect "re-apply Service with changed ports" 'service/demo-svc configured' "$out"
out=$(k get svc demo-svc -o jsonpath='{range .spec.ports[*]}{.name}:{.port} {end}')
expect "strategic merge replaced the ports" '^http:80 grpc:50051 $' "$out"
out=$(k get svc demo-svc -o jsonpath='{.spec.clusterIP}')
expect "the Service keeps its clusterIP" '^10\.96\.' "$out"

cat >"$WORK/child.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo-child
  namespace: default
  ownerReferences:
    - apiVersion: ringleader.dev/v1alpha1
      kind: TrainingJob
      name: demo
      uid: $UID_TJ
      controller: true
      blockOwnerDeletion: true
data:
  rank: "0"
YAML
out=$(k create -f "$WORK/child.yaml")
expect "create a child owned by demo" 'configmap/demo-child created' "$out"
out=$(k delete tj demo)
expect "delete tj demo" 'trainingjob.ringleader.dev "demo" deleted' "$out"
out=$(k get configmap demo-child)
expect "the child is garbage-collected" 'NotFound|not found' "$out"
out=$(k get tj)
expect "no TrainingJobs left" 'No resources found' "$out"

out=$(k apply -f "$HERE/testdata/trainingjob-bad-replicas.yaml")
expect "replicas: \"four\" is rejected naming spec.replicas" 'spec\.replicas' "$out"
expect "replicas: \"four\" is rejected as invalid" 'is invalid|Invalid value' "$out"
out=$(k apply -f "$HERE/testdata/trainingjob-zero-replicas.yaml")
expect "replicas: 0 is rejected naming spec.replicas" 'spec\.replicas.*(greater than or equal to 1|should be greater)' "$out"

# A ServiceAccount's token (kubectl create token) is held to the RBAC rules bound to it.
cat >"$WORK/rbac.yaml" <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read-configmaps, namespace: default}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-reads-configmaps, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-configmaps}
subjects:
  - {kind: ServiceAccount, name: reader, namespace: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: readable, namespace: default}
data: {greeting: hello}
YAML
out=$(k apply -f "$WORK/rbac.yaml")
expect "apply a ServiceAccount, Role and RoleBinding" 'rolebinding.rbac.authorization.k8s.io/reader-reads-configmaps created' "$out"
token=$(k create token reader)
expect "kubectl create token issues a token" '^[0-9a-f]{64}$' "$token"
as_reader() { "${KUBECTL[@]}" --token="$token" "$@" 2>&1; }
out=$(as_reader get configmaps -o name)
expect "the ServiceAccount may list what its Role grants" '^configmap/readable$' "$out"
out=$(as_reader get secrets)
expect "and is refused the rest, named as kube-apiserver names it" \
  'secrets is forbidden: User "system:serviceaccount:default:reader" cannot list resource "secrets" in API group "" in the namespace "default"' "$out"
out=$(as_reader get configmaps -n kube-system)
expect "a Role grants nothing outside its namespace" 'cannot list resource "configmaps" in API group "" in the namespace "kube-system"' "$out"
out=$(grep '"user":"system:serviceaccount:default:reader"' "$WORK/audit.log" | grep '"resource":"secrets"' | grep '"verb":"list"')
expect "the audit log records the refusal" '"allowed":false' "$out"
out=$(k delete serviceaccount reader)
out=$(as_reader get configmaps)
expect "deleting the ServiceAccount revokes its token" 'Unauthorized|must be logged in' "$out"

stop_devcluster
pass "devcluster exits cleanly on SIGTERM"

echo "$PASSED passed, 0 failed"
