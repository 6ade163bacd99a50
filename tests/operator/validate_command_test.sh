#!/usr/bin/env bash
# `ringleader-operator validate` as a user runs it: every example passes (exit 0) and renders, and
# a job with a field the CRD does not declare fails (exit 1) naming the field, as kubectl apply
# refuses it.
# Usage: validate_command_test.sh OPERATOR_BINARY   (run from the repository root)
set -u -o pipefail
operator=${1:?usage: validate_command_test.sh OPERATOR_BINARY}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for example in examples/*.yaml examples/*/*.yaml; do
  # Examples of other objects (Kueue's queues, priority classes) hold no TrainingJob.
  grep -q '^kind: TrainingJob$' "$example" || continue
  out=$("$operator" validate -f "$example" 2>&1)
  rc=$?
  [[ $rc -eq 0 ]] || fail "$example: exit $rc: $out"
  # Rendered too: what the operator would create for it, Pods included.
  out=$("$operator" render -f "$example" 2>&1)
  rc=$?
  [[ $rc -eq 0 ]] || fail "$example: render exit $rc: $out"
  grep -qx 'kind: Pod' <<<"$out" || fail "$example: render made no Pod: $out"
done

# validate FILE WANT_RC TEXT: the command's exit status and a line of its output.
check() {
  local out rc
  out=$("$operator" validate -f "$1" 2>&1)
  rc=$?
  [[ $rc -eq $2 ]] || fail "$1: exit $rc, want $2: $out"
  grep -Fqx -- "$3" <<<"$out" || fail "$1: no line '$3' in: $out"
}
data=tests/data/bad-trainingjobs
check $data/unknown-field-spec.yaml 1 "TrainingJob default/demo: spec.bogusField: unknown field"
check $data/unknown-field-nested.yaml 1 \
  "TrainingJob default/demo: spec.communication.preflight.minBandwidth: unknown field"
check $data/scheduling-kueue-queue-name-not-dns.yaml 1 \
  "TrainingJob default/demo: metadata.labels.kueue.x-k8s.io/queue-name: must be a LocalQueue name, a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), as Kueue requires; got \"Team_A\""

# Every unknown field of every job in the file, beside the other errors.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cat >"$tmp" <<'YAML'
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: first, namespace: ml}
spec:
  replicas: 0
  bogusField: 1
  template: {spec: {containers: [{name: trainer, image: example, bogus: kept}]}}
---
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: second}
spec:
  replicas: 1
  runPolicy: {suspended: true}
  template: {spec: {containers: [{name: trainer, image: example}]}}
YAML
check "$tmp" 1 "TrainingJob ml/first: spec.bogusField: unknown field"
check "$tmp" 1 "TrainingJob ml/first: spec.replicas: must be at least 1, got 0"
check "$tmp" 1 "TrainingJob default/second: spec.runPolicy.suspended: unknown field"
if "$operator" validate -f "$tmp" 2>&1 | grep -q bogus:; then
  fail "a field inside the Pod template (which the CRD preserves) was refused"
fi

# render shows a gang as on a cluster that runs its provider: provider Kubernetes gets the
# attempt's PodGroup, and each Pod names it.
cat >"$tmp" <<'YAML'
apiVersion: ringleader.dev/v1alpha1
kind: TrainingJob
metadata: {name: gang, namespace: ml}
spec:
  replicas: 2
  runPolicy:
    schedulingPolicy: {provider: Kubernetes, topology: {mode: Required, key: example.com/block}}
  template: {spec: {containers: [{name: trainer, image: example}]}}
YAML
out=$("$operator" render -f "$tmp" 2>&1)
grep -qx 'apiVersion: scheduling.k8s.io/v1beta1' <<<"$out" || fail "render: no scheduling.k8s.io PodGroup: $out"
[[ $(grep -c 'podGroupName: gang-00000000-0$' <<<"$out") -eq 2 ]] || fail "render: the Pods do not name the PodGroup: $out"
grep -q 'key: example.com/block' <<<"$out" || fail "render: the PodGroup has no topology: $out"

((failures == 0)) || exit 1
echo "validate: all checks passed"
