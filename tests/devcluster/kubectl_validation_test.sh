#!/usr/bin/env bash
# What the real kube-apiserver (devcluster's) refuses and accepts, in its words, through the real
# kubectl: the first TrainingJob CRD's two refusals, every CEL rule of today's CRD refused and
# accepted, every bad job in tests/data judged by a server dry run, and every example and the Helm
# chart's rendered manifests through a server dry run and then a real apply, so a CRD or chart a
# real cluster refuses never lands again.
# Usage: kubectl_validation_test.sh PATH/TO/devcluster   (run from the repository root; helm from
# PATH or .deps/bin, where scripts/setup installs it)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_validation_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"
HELM=$(command -v helm || echo "$ROOT/.deps/bin/helm")
[[ -x "$HELM" ]] || fail "no helm (scripts/setup installs one in .deps/bin)"

start_devcluster

# --- The CRD ------------------------------------------------------------------------------------
# The first CRD, as a real kube-apiserver 1.32 refused it: its root metadata had a description...
out=$(k apply -f "$HERE/testdata/trainingjobs-crd-v0.yaml")
expect_text "the first CRD is refused for its root metadata" \
  'The CustomResourceDefinition "trainingjobs.ringleader.dev" is invalid: spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified' \
  "$out"
# ...and without it, the template rule named a field its preserve-unknown-fields object did not declare.
out=$(k apply -f "$HERE/testdata/trainingjobs-crd-v0-no-metadata-description.yaml")
expect_text "then for its template rule, at the rule's path" \
  'spec.validation.openAPIV3Schema.properties[spec].properties[template].x-kubernetes-validations[0].rule: Invalid value: ' "$out"
expect_text "in cel-go's words" "compilation failed: ERROR: <input>:1:4: undefined field 'spec'" "$out"
out=$(k get crd 2>&1)
expect "neither was stored" 'No resources found' "$out"
out=$(k apply -f "$ROOT/crds/ringleader.dev_trainingjobs.yaml")
expect "today's CRD is accepted" 'customresourcedefinition.apiextensions.k8s.io/trainingjobs.ringleader.dev created' "$out"

# --- Every CEL rule of the CRD, refused and accepted ------------------------------------------
# job NAME [SPEC_LINES...]: a TrainingJob with two replicas and one trainer, plus extra spec lines.
job() {
  local name=$1
  shift
  printf 'apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: %s\n  namespace: default\nspec:\n' "$name"
  local replicas_given=0
  for line in "$@"; do
    [[ "$line" == replicas:* ]] && replicas_given=1
    printf '  %s\n' "$line"
  done
  ((replicas_given)) || printf '  replicas: 2\n'
  if ! grep -q '^template:' <<<"$(printf '%s\n' "$@")"; then  # no pipe: grep -q may SIGPIPE it
    printf '  template:\n    spec:\n      containers:\n        - {name: trainer, image: ringleader/example-trainer:0.1.0}\n'
  fi
}
# dry NAME YAML: kubectl apply --dry-run=server of YAML.
dry() { k apply --dry-run=server -f - <<<"$2"; }

out=$(dry name "$(job 1demo)")
expect_text "a name that is no DNS-1035 label is refused" \
  "metadata.name: Invalid value: must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit" "$out"
out=$(dry name "$(job demo-1)")
expect "a DNS-1035 label is accepted" 'trainingjob.ringleader.dev/demo-1 created \(server dry run\)' "$out"

long=$(printf 'a%.0s' $(seq 1 61))
out=$(dry name "$(job "$long" 'replicas: 11')")
expect_text "a name with no room for the largest rank is refused" \
  'metadata.name: Invalid value: must be at most 60 characters, so that every Pod name <name>-<rank> fits in a 63-character DNS label' "$out"
out=$(dry name "$(job "$long" 'replicas: 10')")
expect "the same name with one rank digit fewer is accepted" "trainingjob.ringleader.dev/$long created \\(server dry run\\)" "$out"

out=$(dry nccl "$(job nccl 'communication: {backend: nccl}')")
expect_text "nccl without GPUs is refused" \
  'spec.communication.backend: Invalid value: communication.backend nccl needs gpusPerReplica of at least 1' "$out"
out=$(dry nccl "$(job nccl 'gpusPerReplica: 1' 'communication: {backend: nccl}')")
expect "nccl with a GPU is accepted" 'trainingjob.ringleader.dev/nccl created \(server dry run\)' "$out"

out=$(dry template "$(job empty 'template: {spec: {containers: []}}')")
expect_text "a template without containers is refused" \
  'spec.template: Invalid value: template.spec.containers must name at least one trainer container' "$out"
out=$(dry template "$(job empty 'template: {metadata: {labels: {a: b}}}')")
expect_text "a template without a spec is refused" \
  'spec.template: Invalid value: template.spec.containers must name at least one trainer container' "$out"

for field in preflight.minBytes preflight.maxBytes preflight.minBusBandwidth monitor.messageBytes; do
  section=${field%%.*}
  key=${field#*.}
  out=$(dry quantity "$(job quantity "communication: {$section: {$key: -1}}")")
  expect_text "a negative $field is refused" "spec.communication.$field: Invalid value: " "$out"
  expect_text "  with the rule's message" 'must not be negative' "$out"
  out=$(dry quantity "$(job quantity "communication: {$section: {$key: 1}}")")
  expect "a non-negative $field is accepted" 'trainingjob.ringleader.dev/quantity created \(server dry run\)' "$out"
done

# Every field error in one 422; a type error or a missing field leaves the CEL rules unchecked.
out=$(dry several "$(job several 'replicas: 0' 'gpusPerReplica: -1' 'communication: {backend: nccl}')")
expect_text "several errors come in one answer: replicas" \
  'spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1' "$out"
expect_text "  gpusPerReplica" \
  'spec.gpusPerReplica: Invalid value: -1: spec.gpusPerReplica in body should be greater than or equal to 0' "$out"
expect_text "  and the CEL rule that still ran" 'communication.backend nccl needs gpusPerReplica of at least 1' "$out"
out=$(dry blocked "$(job blocked 'replicas: two' 'communication: {backend: nccl}')")
expect_text "a type error skips the CEL rules, as the server says" \
  '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' "$out"
expect_not "  and the skipped rule's message is absent" 'nccl needs' "$out"
out=$(dry strict "$(printf 'apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: strict}\nspec:\n- replicas: 2\n')")
expect_text "a list where spec is an object is a strict decoding error" \
  'strict decoding error: unknown field "spec[0].replicas"' "$out"
out=$(k apply -f - <<<"$(job ns-missing | sed 's/namespace: default/namespace: nowhere/')")
expect_text "nothing is created in a namespace that does not exist" 'namespaces "nowhere" not found' "$out"

# The transition rule: replicas, gpusPerReplica and networking change only while suspended.
out=$(k apply -f - <<<"$(job demo)")
expect "a job to update" 'trainingjob.ringleader.dev/demo created' "$out"
for change in '{"spec":{"replicas":3}}' '{"spec":{"gpusPerReplica":1}}' '{"spec":{"networking":{"hostNetwork":true}}}'; do
  out=$(k patch tj demo --type=merge -p "$change")
  expect_text "changing $change while running is refused" \
    'spec: Invalid value: replicas, gpusPerReplica and networking cannot change while the job is not suspended' "$out"
done
out=$(k patch tj demo --type=merge -p '{"spec":{"replicas":3,"runPolicy":{"suspend":true}}}')
expect "the same change while suspending is accepted" 'trainingjob.ringleader.dev/demo patched' "$out"
out=$(k patch tj demo --type=merge -p '{"spec":{"replicas":4,"runPolicy":{"suspend":false}}}')
expect "and while resuming" 'trainingjob.ringleader.dev/demo patched' "$out"
out=$(k get tj demo -o jsonpath='{.spec.replicas}')
expect "the accepted change is stored" '^4$' "$out"
k delete tj demo >/dev/null

# --- kubectl apply --dry-run=server of the examples, the bad jobs and the chart -----------------
out=$(k create namespace ml)
expect "kubectl create namespace (the GPU example's namespace)" 'namespace/ml created' "$out"
# examples/kueue's queues and flavors against Kueue's own CRDs, as its release ships them
# (scripts/build-kueue copies them); its manager needs not run for a dry run of its objects.
kueue_crds="$ROOT/.deps/kueue/manifests/crds"
[[ -d "$kueue_crds" ]] || fail "no Kueue CRDs in $kueue_crds (scripts/setup builds Kueue)"
out=$(k apply --server-side -f "$kueue_crds")
expect "Kueue's CRDs" 'clusterqueues.kueue.x-k8s.io serverside-applied' "$out"
out=$(k wait --for condition=Established --timeout 60s crd --all)
expect "are established" 'clusterqueues.kueue.x-k8s.io condition met' "$out"
# Every example that is an API object; Kueue's manager configuration is a file its manager reads.
examples() {
  for example in "$ROOT"/examples/*.yaml "$ROOT"/examples/*/*.yaml; do
    grep -q '^kind: Configuration$' "$example" || echo "$example"
  done
}
for example in $(examples); do
  out=$(k apply --dry-run=server -f "$example")
  expect "$(basename "$example") passes a server dry run" 'created \(server dry run\)' "$out"
done

# Each bad job says on its "# server:" line what a server does with it: "refused <text>",
# "kubectl <text>" (kubectl refuses it before sending) or "accepted" (only the operator catches it).
# The ones the server judges go through one kubectl: it sends every file and names the file in
# each error, so a refused job's error is found by its file and the accepted ones are counted.
refused=0
accepted=0
judged=()
for bad in "$ROOT"/tests/data/bad-trainingjobs/*.yaml; do
  name=$(basename "$bad")
  verdict=$(sed -n 's/^# server: //p' "$bad" | head -n 1)
  [[ -n "$verdict" ]] || fail "$name has no '# server:' line"
  case "$verdict" in
    accepted) accepted=$((accepted + 1)); judged+=(-f "$bad") ;;
    refused\ *) refused=$((refused + 1)); judged+=(-f "$bad") ;;
    kubectl\ *)
      out=$(k apply --dry-run=server -f "$bad")
      expect_text "$name is refused by kubectl" "${verdict#kubectl }" "$out" ;;
    *) fail "$name: unknown '# server:' verdict" "$verdict" ;;
  esac
done
out=$(k apply --dry-run=server "${judged[@]}")
for bad in "$ROOT"/tests/data/bad-trainingjobs/*.yaml; do
  name=$(basename "$bad")
  verdict=$(sed -n 's/^# server: //p' "$bad" | head -n 1)
  errors=$(grep -F -- "\"$bad\"" <<<"$out" || true)
  case "$verdict" in
    accepted) expect_not "$name passes the server (the operator refuses it)" '.' "$errors" ;;
    refused\ *) expect_text "$name is refused by the server" "${verdict#refused }" "$errors" ;;
  esac
done
stored=$(grep -c 'created (server dry run)$' <<<"$out" || true)
[[ "$stored" -eq "$accepted" ]] ||
  fail "exactly the $accepted accepted bad jobs pass a server dry run ($stored did)" "$out"
pass "exactly the $accepted accepted bad jobs pass a server dry run"
((refused >= 30)) || fail "only $refused bad jobs are refused by the server"

# The examples for real, once the bad jobs (dry runs, some named like them) are judged.
for example in $(examples); do
  out=$(k apply -f "$example")
  expect "$(basename "$example") is applied" 'created$' "$out"
done

out=$(k create namespace ringleader-system)
expect "the chart's namespace" 'namespace/ringleader-system created' "$out"
out=$(k apply -f "$ROOT/tests/e2e/testdata/prometheus-operator-crds.yaml")
expect "the Prometheus Operator's CRDs the chart's monitors need" 'created' "$out"
"$HELM" template rl "$ROOT/charts/ringleader" --namespace ringleader-system \
  --include-crds --set monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true,monitoring.prometheusRule.enabled=true \
  >"$WORK/chart.yaml" 2>"$WORK/helm.err" || fail "helm template" "$(cat "$WORK/helm.err")"
out=$(k apply --dry-run=server -f "$WORK/chart.yaml")
documents=$(grep -c '^kind: ' "$WORK/chart.yaml")
accepted=$(grep -c '(server dry run)$' <<<"$out")
[[ "$accepted" -eq "$documents" ]] || fail "the chart's $documents manifests pass a server dry run ($accepted did)" "$out"
pass "the chart's $documents rendered manifests pass a server dry run"
out=$(k apply -f "$WORK/chart.yaml")
applied=$(grep -cE ' (created|unchanged)$' <<<"$out")
[[ "$applied" -eq "$documents" ]] || fail "the chart's $documents manifests are applied ($applied were)" "$out"
pass "the chart's $documents rendered manifests are applied"

stop_devcluster
pass "devcluster exits cleanly on SIGTERM"
echo "$PASSED passed, 0 failed"
