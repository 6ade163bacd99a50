#!/usr/bin/env bash
# Drives the real kubectl's create subcommands against the devcluster binary. kubectl sends built-in
# kinds as application/vnd.kubernetes.protobuf; devcluster decodes them (namespace, secret,
# configmap, serviceaccount, token, role, clusterrole, rolebinding, clusterrolebinding, service,
# deployment) and refuses by name what it cannot decode or honour.
# Usage: kubectl_create_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_create_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster

# What kubectl sends: its request dump (-v=9) shows the headers; a JSON answer satisfies its Accept.
out=$(k create namespace ml -v=9)
expect "create namespace sends protobuf" 'Content-Type: application/vnd.kubernetes.protobuf' "$out"
expect "and accepts protobuf or JSON" 'Accept: application/vnd.kubernetes.protobuf,application/json' "$out"
expect "create namespace ml" '^namespace/ml created$' "$out"
out=$(k get namespace ml -o jsonpath='{.metadata.name}')
expect "the Namespace is stored" '^ml$' "$out"

out=$(k create secret generic s -n ml --from-literal=k=v --from-literal=other=w)
expect "create secret generic" '^secret/s created$' "$out"
out=$(k get secret s -n ml -o jsonpath='{.data.k}' | base64 -d)
expect "the Secret's bytes round-trip (base64)" '^v$' "$out"
out=$(k get secret s -n ml -o jsonpath='{.data.other}' | base64 -d)
expect "and so do the other key's" '^w$' "$out"
out=$(k get secret s -n ml -o jsonpath='{.type}')
expect "a Secret without a type is Opaque, as the server defaults it" '^Opaque$' "$out"
out=$(k create secret docker-registry reg -n ml --docker-server=r.example --docker-username=u --docker-password=p)
expect "create secret docker-registry" '^secret/reg created$' "$out"
out=$(k get secret reg -n ml -o jsonpath='{.type}')
expect "its type survives" '^kubernetes.io/dockerconfigjson$' "$out"

out=$(k create configmap c -n ml --from-literal=a=b)
expect "create configmap" '^configmap/c created$' "$out"
out=$(k get configmap c -n ml -o jsonpath='{.data.a}')
expect "the ConfigMap's data round-trips" '^b$' "$out"

out=$(k create serviceaccount sa -n ml)
expect "create serviceaccount" '^serviceaccount/sa created$' "$out"

# TokenRequest: --duration must reach the server; the token is for that ServiceAccount.
before=$(date +%s)
out=$(k create token sa -n ml --duration 10m -o jsonpath='{.spec.expirationSeconds} {.status.expirationTimestamp} {.status.token}')
after=$(date +%s)
read -r seconds expires token <<<"$out"
expect "create token --duration 10m asks for 600 seconds" '^600$' "$seconds"
expires_at=$(date -u -d "$expires" +%s 2>/dev/null || echo 0)
if ((expires_at < before + 600 - 1 || expires_at > after + 600)); then
  fail "the token expires 10 minutes from now" "expirationTimestamp $expires, requested between $before and $after"
fi
pass "the token expires 10 minutes from now ($expires)"
out=$(k create token sa -n ml --duration 5m)
expect "a token under 10 minutes is refused as kube-apiserver refuses it" \
  'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes' "$out"
out=$(k create token sa -n ml --bound-object-kind Secret --bound-object-name s)
expect "a bound token is refused, naming what devcluster lacks" \
  'devcluster cannot bind a token to Secret "s": its tokens are not revoked when a bound object is deleted' "$out"

as_sa() { "${KUBECTL[@]}" --token="$token" "$@" 2>&1; }
out=$(as_sa get configmaps -n ml)
expect "the token authenticates as the ServiceAccount" 'User "system:serviceaccount:ml:sa" cannot list resource "configmaps"' "$out"

# RBAC kinds: what kubectl create makes must grant exactly what it says.
out=$(k create role cm-reader -n ml --verb=get,list --resource=configmaps)
expect "create role" '^role.rbac.authorization.k8s.io/cm-reader created$' "$out"
out=$(k create rolebinding sa-reads -n ml --role=cm-reader --serviceaccount=ml:sa)
expect "create rolebinding" '^rolebinding.rbac.authorization.k8s.io/sa-reads created$' "$out"
out=$(as_sa get configmaps -n ml -o name)
expect "the Role and RoleBinding grant the ServiceAccount configmaps" '^configmap/c$' "$out"
out=$(as_sa get secrets -n ml)
expect "and nothing else" 'cannot list resource "secrets"' "$out"
out=$(k create clusterrole ns-reader --verb=get,list --resource=namespaces)
expect "create clusterrole" '^clusterrole.rbac.authorization.k8s.io/ns-reader created$' "$out"
out=$(k create clusterrolebinding sa-reads-ns --clusterrole=ns-reader --serviceaccount=ml:sa)
expect "create clusterrolebinding" '^clusterrolebinding.rbac.authorization.k8s.io/sa-reads-ns created$' "$out"
out=$(as_sa get namespace ml -o name)
expect "the ClusterRoleBinding grants the ServiceAccount namespaces" '^namespace/ml$' "$out"

out=$(k create service clusterip web -n ml --tcp=80:8080)
expect "create service clusterip" '^service/web created$' "$out"
out=$(k get service web -n ml -o jsonpath='{.spec.type} {.spec.ports[0].port}:{.spec.ports[0].targetPort} {.spec.selector.app}')
expect "its ports and selector round-trip" '^ClusterIP 80:8080 web$' "$out"
out=$(k create service nodeport np -n ml --tcp=81:http)
expect "create service nodeport (named targetPort)" '^service/np created$' "$out"
out=$(k get service np -n ml -o jsonpath='{.spec.type} {.spec.ports[0].targetPort}')
expect "a named targetPort stays a string" '^NodePort http$' "$out"
out=$(k create service externalname ext -n ml --external-name=example.com)
expect "create service externalname" '^service/ext created$' "$out"

out=$(k create deployment web -n ml --image=nginx --replicas=2 --port=80)
expect "create deployment" '^deployment.apps/web created$' "$out"
out=$(k get deployment web -n ml -o jsonpath='{.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}')
expect "its replicas, selector and PodSpec round-trip" '^2 web nginx 80$' "$out"

# ResourceQuota: kubectl create quota sends protobuf; a Pod past it is refused as kube-apiserver
# refuses it, and kubectl prints the server's words.
out=$(k create quota pods-1 -n ml --hard=pods=1,requests.nvidia.com/gpu=4)
expect "create quota" '^resourcequota/pods-1 created$' "$out"
out=$(k get quota pods-1 -n ml -o jsonpath='{.spec.hard.pods} {.spec.hard.requests\.nvidia\.com/gpu}')
expect "its hard limits round-trip" '^1 4$' "$out"
out=$(k run first -n ml --image=busybox --restart=Never)
expect "the first Pod fits" '^pod/first created$' "$out"
out=$(k run second -n ml --image=busybox --restart=Never)
expect_text "the second is forbidden by the quota" \
  'Error from server (Forbidden): pods "second" is forbidden: exceeded quota: pods-1, requested: pods=1, used: pods=1, limited: pods=1' "$out"
out=$(k create quota lb -n ml --hard=services.loadbalancers=1)
expect_text "a quota devcluster cannot enforce is refused, naming the resource" \
  'spec.hard[services.loadbalancers]: Forbidden: devcluster does not enforce quota on this resource' "$out"

# A protobuf body devcluster has no table for (a Node) gets a 415 naming the kind; a malformed one a 400.
TOKEN=$(cat "$WORK/data/token")
post() {
  curl -s --cacert "$WORK/data/ca.crt" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary @- "$URL$1"
}
# "k8s\0", then Unknown{typeMeta{apiVersion "v1", kind "Node"}, raw{metadata{name "n"}}}.
out=$(printf 'k8s\000\012\012\012\002v1\022\004Node\022\005\012\003\012\001n' | post /api/v1/nodes)
expect "a protobuf Node is refused with 415, naming it" \
  '"code":415.*devcluster does not decode Node \(v1\) from application/vnd.kubernetes.protobuf' "$out"
out=$(printf 'k8s\000\012\017\012\002v1\022\011Namespace\022\005\012\003\012\001' | post /api/v1/namespaces)
expect "a truncated protobuf Namespace is refused with 400" '"code":400.*malformed' "$out"

stop_devcluster
pass "devcluster exits cleanly on SIGTERM"

echo "$PASSED passed, 0 failed"
