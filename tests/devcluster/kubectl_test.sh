#!/usr/bin/env bash
# The real kubectl against the devcluster binary, which runs the real control plane: its
# components run as processes, the server names a real release and serves its metrics; the
# TrainingJob CRD through kubectl (apply, printer columns, defaults, the status subresource, wait,
# explain, the server's refusals), a TrainingJob's child garbage-collected by the real controller
# manager, and a ServiceAccount token held to RBAC, judged from the real audit log.
# Usage: kubectl_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster
pass "devcluster starts and announces its URL and kubeconfig"
AUDIT="$WORK/data/control-plane/audit.log"

# The control plane's components are devcluster's child processes.
for component in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  out=$(pgrep -P "$SERVER_PID" -f "/$component --")
  expect "$component runs as a process under devcluster" '^[0-9]+$' "$out"
done

out=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/data/ca.crt" "$URL/api/v1/namespaces/default/pods")
expect "curl without a token gets 403 (anonymous may not list Pods)" '^403$' "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/data/ca.crt" -H 'Authorization: Bearer nope' "$URL/api/v1/namespaces/default/pods")
expect "curl with a made-up token gets 401" '^401$' "$out"

out=$(k version)
expect "kubectl version names a real release, 1.34 or later" 'Server Version: v1\.(3[4-9]|[4-9][0-9])\.[0-9]+$' "$out"
out=$(k get --raw /metrics)
expect "the API server serves its own metrics" '^apiserver_request_total\{' "$out"

out=$(k apply -f "$ROOT/crds/ringleader.dev_trainingjobs.yaml")
expect "apply CRD" 'customresourcedefinition.apiextensions.k8s.io/trainingjobs.ringleader.dev created' "$out"
out=$(k wait --for=condition=Established crd/trainingjobs.ringleader.dev --timeout=30s)
expect "the CRD is established" 'condition met' "$out"

out=$(k apply -f "$ROOT/examples/trainingjob.yaml")
expect "apply TrainingJob" '^trainingjob.ringleader.dev/demo created$' "$out"
out=$(k apply -f "$ROOT/examples/trainingjob.yaml")
expect "re-apply unchanged" '^trainingjob.ringleader.dev/demo unchanged$' "$out"
# The CRD lets replicas change only while the job is suspended.
sed -e 's/replicas: 4/replicas: 5/' -e 's/backoffLimit: 2/backoffLimit: 2\n    suspend: true/' \
  "$ROOT/examples/trainingjob.yaml" >"$WORK/tj-5.yaml"
out=$(k apply -f "$WORK/tj-5.yaml")
expect "apply with a change" '^trainingjob.ringleader.dev/demo configured$' "$out"

out=$(k get tj)
expect "get tj prints the CRD's printer columns" '^NAME +STATE +READY +REPLICAS +MASTER-PORT +BUSBW +AGE' "$out"
expect "get tj shows demo with 5 replicas" '^demo +5 +[0-9]+s' "$out"

out=$(k get tj demo -o yaml)
expect "get -o yaml has the spec" 'replicas: 5' "$out"
expect "get -o yaml has the server's defaults" 'gpusPerReplica: 0' "$out"
expect "generation bumped by the spec change" 'generation: 2' "$out"
UID_TJ=$(k get tj demo -o jsonpath='{.metadata.uid}')
[[ "$UID_TJ" =~ ^[0-9a-f-]{36}$ ]] || fail "uid of demo" "$UID_TJ"

out=$(k patch tj demo -p '{"spec":{"replicas":2}}')
expect "strategic merge on a custom resource is refused (415)" 'application/strategic-merge-patch\+json is not supported' "$out"

out=$(k patch tj demo --subresource=status --type=merge \
  -p '{"status":{"conditions":[{"type":"Succeeded","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}')
expect "patch the status subresource" 'trainingjob.ringleader.dev/demo patched' "$out"
out=$(k get tj demo -o jsonpath='{.status.conditions[0].type}/{.metadata.generation}')
expect "status patch does not bump generation" '^Succeeded/2$' "$out"
out=$(k wait --for=condition=Succeeded tj/demo --timeout=10s)
expect "wait --for=condition=Succeeded" 'trainingjob.ringleader.dev/demo condition met' "$out"

# The OpenAPI of a new CRD is published a moment after it is established.
for _ in $(seq 1 50); do k explain trainingjob.spec.runPolicy >/dev/null && break; sleep 0.2; done
out=$(k explain trainingjob.spec.runPolicy)
expect "explain trainingjob.spec.runPolicy shows the CRD's descriptions" 'FIELD: runPolicy <Object>' "$out"
expect "explain lists runPolicy's fields" 'backoffLimit[[:space:]]+<integer>' "$out"

# A child the operator would own: the real garbage collector deletes it with its TrainingJob.
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
out=$(k wait --for=delete configmap/demo-child --timeout=60s)
expect "the child is garbage-collected" 'condition met' "$out"
out=$(grep '"resource":"configmaps"' "$AUDIT" | grep '"name":"demo-child"' | grep '"verb":"delete"')
expect "by the controller manager's garbage collector" '"username":"system:serviceaccount:kube-system:generic-garbage-collector"' "$out"

out=$(k apply -f "$HERE/testdata/trainingjob-bad-replicas.yaml")
expect_text "replicas: \"four\" is refused in the server's words" \
  'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' "$out"
out=$(k apply -f "$HERE/testdata/trainingjob-zero-replicas.yaml")
expect_text "replicas: 0 is refused in the server's words" \
  'spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1' "$out"

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
expect "kubectl create token issues a token (a signed JWT)" '^eyJ[A-Za-z0-9_.-]+$' "$token"
as_reader() { "${KUBECTL[@]}" --token="$token" "$@" 2>&1; }
out=$(as_reader get configmaps -o name)
expect "the ServiceAccount may list what its Role grants" '^configmap/readable$' "$out"
out=$(as_reader get secrets)
expect "and is refused the rest, named as kube-apiserver names it" \
  'secrets is forbidden: User "system:serviceaccount:default:reader" cannot list resource "secrets" in API group "" in the namespace "default"' "$out"
out=$(as_reader get configmaps -n kube-system)
expect "a Role grants nothing outside its namespace" 'cannot list resource "configmaps" in API group "" in the namespace "kube-system"' "$out"
out=$(grep '"username":"system:serviceaccount:default:reader"' "$AUDIT" | grep '"resource":"secrets"' | grep '"verb":"list"')
expect "the audit log records the refusal" '"authorization.k8s.io/decision":"forbid"' "$out"
out=$(k delete serviceaccount reader)
# The server checks a token's ServiceAccount in its informer cache, which sees the deletion a
# moment later.
for _ in $(seq 1 50); do
  out=$(as_reader get configmaps)
  grep -Eq 'Unauthorized|must be logged in' <<<"$out" && break
  sleep 0.2
done
expect "deleting the ServiceAccount revokes its token" 'Unauthorized|must be logged in' "$out"

stop_devcluster
pass "devcluster exits cleanly on SIGTERM"

echo "$PASSED passed, 0 failed"
