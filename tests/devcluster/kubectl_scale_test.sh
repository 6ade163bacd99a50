#!/usr/bin/env bash
# Elastic TrainingJobs on the real kube-apiserver (devcluster's), through the real kubectl: the
# scale subresource serves a Scale, `kubectl scale` within elasticPolicy's range is stored and
# outside it is refused naming the bound, a HorizontalPodAutoscaler is accepted and drives the job
# through /scale, and the transition rules keep a rigid job, a Kueue elastic job and the
# elasticPolicy itself fixed while the job runs. Only the API is needed: no operator runs.
# Usage: kubectl_scale_test.sh PATH/TO/devcluster   (run from the repository root)
set -u -o pipefail

DEVCLUSTER=${1:?usage: kubectl_scale_test.sh PATH/TO/devcluster}
# shellcheck source=tests/devcluster/kubectl_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubectl_harness.sh"

start_devcluster
out=$(k apply -f "$ROOT/crds/ringleader.dev_trainingjobs.yaml")
expect "the CRD is accepted" 'customresourcedefinition.apiextensions.k8s.io/trainingjobs.ringleader.dev created' "$out"
out=$(k wait --for condition=Established --timeout 60s crd/trainingjobs.ringleader.dev)
expect "and established" 'condition met' "$out"

# job NAME REPLICAS [SPEC_LINES...]: a TrainingJob whose trainer launches with torchrun.
job() {
  local name=$1 replicas=$2
  shift 2
  printf 'apiVersion: ringleader.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: %s\n  namespace: default\n' "$name"
  printf '  labels: {kueue.x-k8s.io/queue-name: team-a}\nspec:\n  replicas: %s\n' "$replicas"
  printf '  %s\n' "$@"
  printf '  template:\n    spec:\n      containers:\n'
  printf '        - {name: trainer, image: ringleader/example-trainer:0.1.0, command: [torchrun], args: [train.py]}\n'
}
replicas() { k get tj "$1" -o jsonpath='{.spec.replicas}'; }

# --- kubectl scale within and outside [minReplicas, maxReplicas] --------------------------------
out=$(k apply -f - <<<"$(job elastic 2 'elasticPolicy: {minReplicas: 2, maxReplicas: 4}')")
expect "an elastic job (min 2, max 4, replicas 2)" 'trainingjob.ringleader.dev/elastic created' "$out"
out=$(k get tj elastic -o jsonpath='{.spec.elasticPolicy}')
expect_text "  gets the CRD's defaults" '"maxRestarts":3' "$out"
expect_text "  both of them" '"minReplicasTimeoutSeconds":300' "$out"
out=$(k scale tj/elastic --replicas 3)
expect "kubectl scale --replicas 3 while it runs" 'trainingjob.ringleader.dev/elastic scaled' "$out"
expect "  is stored" '^3$' "$(replicas elastic)"
out=$(k scale tj/elastic --replicas 5)
expect_text "--replicas 5 is refused naming maxReplicas" \
  'spec.replicas: Invalid value: spec.replicas must be at most elasticPolicy.maxReplicas (4)' "$out"
out=$(k scale tj/elastic --replicas 1)
expect_text "--replicas 1 is refused naming minReplicas" \
  'spec.replicas: Invalid value: spec.replicas must be at least elasticPolicy.minReplicas (2)' "$out"
expect "  and neither is stored" '^3$' "$(replicas elastic)"

# --- The Scale object: spec from spec.replicas, status from status.replicas.active and selector --
selector="ringleader.dev/job-name=elastic"
out=$(k patch tj elastic --subresource=status --type=merge \
  -p "{\"status\":{\"replicas\":{\"active\":3},\"selector\":\"$selector\"}}")
expect "the status the operator would write (active Pods, selector)" 'trainingjob.ringleader.dev/elastic patched' "$out"
out=$(k get --raw /apis/ringleader.dev/v1alpha1/namespaces/default/trainingjobs/elastic/scale)
expect_text "GET .../scale returns a Scale" '"kind":"Scale","apiVersion":"autoscaling/v1"' "$out"
expect_text "  with spec.replicas" '"spec":{"replicas":3}' "$out"
expect_text "  and status replicas and selector" "\"status\":{\"replicas\":3,\"selector\":\"$selector\"}" "$out"

# --- A HorizontalPodAutoscaler targets the job and drives it through /scale ----------------------
# Its minReplicas 4 is above the job's 3: the HPA controller scales the job up with no metrics.
out=$(k apply -f - <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: elastic, namespace: default}
spec:
  scaleTargetRef: {apiVersion: ringleader.dev/v1alpha1, kind: TrainingJob, name: elastic}
  minReplicas: 4
  maxReplicas: 4
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
EOF
)
expect "an autoscaling/v2 HPA targeting the TrainingJob is accepted" \
  'horizontalpodautoscaler.autoscaling/elastic created' "$out"
for _ in $(seq 1 150); do [[ "$(replicas elastic)" == 4 ]] && break; sleep 0.2; done
expect "  and the HPA controller scales the job to its minReplicas 4 through /scale" '^4$' "$(replicas elastic)"
out=$(k get hpa elastic -o jsonpath='{range .status.conditions[*]}{.type}={.status}:{.reason};{end}')
expect "  having read the Scale (AbleToScale)" 'AbleToScale=True:(SucceededGetScale|SucceededRescale|ReadyForNewScale)' "$out"
k delete hpa elastic >/dev/null

# --- What may not change while the job runs -------------------------------------------------------
out=$(k patch tj elastic --type=merge -p '{"spec":{"elasticPolicy":{"maxReplicas":8}}}')
expect_text "an elastic job's bounds are fixed while it runs" \
  'spec.elasticPolicy: Invalid value: elasticPolicy cannot be added or removed, nor its minReplicas, maxReplicas or maxRestarts changed, while the job is not suspended' "$out"
out=$(k patch tj elastic --type=merge -p '{"spec":{"gpusPerReplica":1}}')
expect_text "  as is gpusPerReplica, whose message says replicas may change" \
  "replicas, gpusPerReplica and networking cannot change while the job is not suspended (an elastic job may change replicas within elasticPolicy.minReplicas..maxReplicas)" "$out"

out=$(k apply -f - <<<"$(job rigid 2)")
expect "a rigid job" 'trainingjob.ringleader.dev/rigid created' "$out"
out=$(k scale tj/rigid --replicas 3)
expect_text "  cannot be scaled while it runs" \
  'spec: Invalid value: replicas, gpusPerReplica and networking cannot change while the job is not suspended' "$out"
expect "  and keeps its size" '^2$' "$(replicas rigid)"
out=$(k patch tj rigid --type=merge -p '{"spec":{"replicas":3,"elasticPolicy":{"minReplicas":2,"maxReplicas":4}}}')
expect_text "  nor made elastic while it runs" 'elasticPolicy cannot be added or removed' "$out"
out=$(k patch tj rigid --type=merge -p '{"spec":{"elasticPolicy":{"minReplicas":2,"maxReplicas":4},"runPolicy":{"suspend":true}}}')
expect "  but may be made elastic while suspending" 'trainingjob.ringleader.dev/rigid patched' "$out"

out=$(k apply -f - <<<"$(job queued 2 'elasticPolicy: {minReplicas: 2, maxReplicas: 4}' 'runPolicy: {schedulingPolicy: {provider: Kueue}}')")
expect "an elastic job with provider Kueue" 'trainingjob.ringleader.dev/queued created' "$out"
out=$(k scale tj/queued --replicas 3)
expect_text "  cannot be scaled while it runs, and the message says why" \
  'replicas of an elastic job with provider Kueue cannot change while the job is not suspended: Kueue admitted its Pod group at its size' "$out"
expect "  and keeps its size" '^2$' "$(replicas queued)"
out=$(k patch tj queued --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}')
expect "  suspended" 'trainingjob.ringleader.dev/queued patched' "$out"
out=$(k scale tj/queued --replicas 3)
expect "  it may be scaled" 'trainingjob.ringleader.dev/queued scaled' "$out"

# --- Creation: the name leaves room for maxReplicas' largest rank -------------------------------
long=$(printf 'a%.0s' $(seq 1 60))
out=$(k apply --dry-run=server -f - <<<"$(job "$long" 2 'elasticPolicy: {minReplicas: 2, maxReplicas: 101}')")
expect_text "a name with no room for rank 100 of maxReplicas 101 is refused" \
  'metadata.name: Invalid value: must be at most 59 characters' "$out"

stop_devcluster
pass "devcluster exits cleanly on SIGTERM"
echo "$PASSED passed, 0 failed"
