#!/usr/bin/env bash
# charts/ringleader: lint-clean with a real Helm 3, and for the defaults and a matrix of values
# the rendered manifests are least-privilege, locked down and accepted by the operator's flags.
# Usage: chart_test.sh OPERATOR_BINARY. Exits 77 (skipped) only when no helm is found; run
# scripts/install-kube-tools to get one.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
operator=${1:?usage: chart_test.sh OPERATOR_BINARY}
chart="$top/charts/ringleader"
here="$top/tests/charts"
helm=${HELM:-}
if [[ -z "$helm" ]]; then
  if [[ -x "$top/.deps/bin/helm" ]]; then
    helm="$top/.deps/bin/helm"
  else
    helm=$(command -v helm || true)
  fi
fi
if [[ -z "$helm" ]]; then
  echo "SKIP: no helm (run scripts/install-kube-tools)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Helm keeps its cache and config out of the home directory.
export HELM_CACHE_HOME="$tmp/cache" HELM_CONFIG_HOME="$tmp/config" HELM_DATA_HOME="$tmp/data"
ns=ringleader-system
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

echo "helm: $("$helm" version --short)"
cmp "$top/crds/ringleader.dev_trainingjobs.yaml" "$chart/crds/ringleader.dev_trainingjobs.yaml" ||
  fail "charts/ringleader/crds/ differs from crds/ (copy it over)"
# Only CRDs in the chart's crds/: tools that install that directory as CRDs refuse anything else.
[[ $(ls "$chart/crds") == ringleader.dev_trainingjobs.yaml ]] || fail "charts/ringleader/crds/ holds more than the CRD"

to_json() { "$helm" template yaml2json "$here/yaml2json" --set-file "input=$1" | grep '^{' >"$2"; }
to_json "$chart/alerts/ringleader-rules.yaml" "$tmp/rules.json"

base_kinds=ServiceAccount,Service,Deployment,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding
election_kinds=Role,RoleBinding
# name | values | check_rendered.py options
cases=(
  "defaults||--kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap --dashboard $chart/dashboards/ringleader.json"
  "monitoring-and-alerts|monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true,monitoring.prometheusRule.enabled=true|--kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap,ServiceMonitor,PodMonitor,PrometheusRule --dashboard $chart/dashboards/ringleader.json --rules $tmp/rules.json --floor 1e+09"
  "alerts-custom-floor-no-dashboard|monitoring.prometheusRule.enabled=true,monitoring.prometheusRule.busBandwidthFloorBytesPerSecond=25000000000,monitoring.prometheusRule.trainingBusBandwidthFraction=1,monitoring.dashboard.enabled=false|--kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,PrometheusRule --rules $tmp/rules.json --floor 2.5e+10 --training-fraction 1"
  "watch-namespaces|operator.watchNamespaces={team-a,team-b},monitoring.podMonitor.enabled=true|--watch team-a,team-b --kinds $base_kinds,Role,RoleBinding,Role,RoleBinding,$election_kinds,ConfigMap,PodMonitor"
  "no-leader-election|leaderElection.enabled=false,replicaCount=1,operator.logFormat=text,monitoring.dashboard.enabled=false|--leader-election off --kinds $base_kinds,ClusterRole,ClusterRoleBinding"
  "everything-off|monitoring.dashboard.enabled=false,operator.portRange=40000-40999,operator.workers=8|--kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds"
  "host-network-jobs|jobDefaults.hostNetwork=true,monitoring.podMonitor.enabled=true|--default-host-network true --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap,PodMonitor"
  "gang-all-providers|gangScheduling.coscheduling.enabled=true,gangScheduling.volcano.enabled=true,gangScheduling.kueue.enabled=true,gangScheduling.kubernetes.enabled=true,operator.unschedulableAfterSeconds=120|--gang coscheduling,volcano,kueue,kubernetes --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap"
  "gang-volcano-in-namespaces|gangScheduling.volcano.enabled=true,operator.watchNamespaces={team-a}|--gang volcano --watch team-a --kinds $base_kinds,Role,RoleBinding,$election_kinds,ConfigMap"
  "gang-kubernetes-in-namespaces|gangScheduling.kubernetes.enabled=true,operator.watchNamespaces={team-a}|--gang kubernetes --watch team-a --kinds $base_kinds,Role,RoleBinding,$election_kinds,ConfigMap"
  "no-queue-name-policy|kueueQueueNamePolicy.enabled=false|--kinds ServiceAccount,Service,Deployment,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap"
  "gang-kueue-reads-workloads|gangScheduling.kueue.enabled=true|--gang kueue --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap"
  "host-network-jobs-monitoring-off|jobDefaults.hostNetwork=true,monitoring.dashboard.enabled=false|--default-host-network true --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds"
  "no-network-policies|networkPolicy.enabled=false|--network-policies false --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap"
  "no-network-policies-in-namespaces|networkPolicy.enabled=false,operator.watchNamespaces={team-a}|--network-policies false --watch team-a --kinds $base_kinds,Role,RoleBinding,$election_kinds,ConfigMap"
  # helm upgrade --reuse-values over a release of an older chart: its values lack what this chart
  # added. It renders (no nil pointer), leaving those flags to the operator's defaults, the alerts'
  # fraction to the rules file's, gang scheduling off and NetworkPolicies on (and granted).
  "reused-values-of-an-older-chart|gangScheduling=null,jobDefaults=null,networkPolicy=null,operator.summaryIntervalSeconds=null,operator.unschedulableAfterSeconds=null,operator.providerDiscoveryIntervalSeconds=null,monitoring.prometheusRule.enabled=true,monitoring.prometheusRule.trainingBusBandwidthFraction=null|--default-host-network unset --network-policies unset --absent-flags summary-interval,unschedulable-after,provider-discovery-interval --kinds $base_kinds,ClusterRole,ClusterRoleBinding,$election_kinds,ConfigMap,PrometheusRule --dashboard $chart/dashboards/ringleader.json --rules $tmp/rules.json --floor 1e+09"
)
for entry in "${cases[@]}"; do
  IFS='|' read -r name values options <<<"$entry"
  set_args=()
  [[ -n "$values" ]] && set_args=(--set "$values")
  if ! "$helm" lint --strict "$chart" --namespace "$ns" "${set_args[@]}" >"$tmp/lint.log" 2>&1; then
    cat "$tmp/lint.log" >&2
    fail "$name: helm lint --strict"
    continue
  fi
  if grep -q '^\[WARNING\]\|^\[ERROR\]' "$tmp/lint.log"; then
    cat "$tmp/lint.log" >&2
    fail "$name: helm lint reported warnings"
  fi
  "$helm" template rl "$chart" --namespace "$ns" "${set_args[@]}" >"$tmp/$name.yaml" ||
    { fail "$name: helm template"; continue; }
  to_json "$tmp/$name.yaml" "$tmp/$name.json"
  # shellcheck disable=SC2086 # options are words by design
  if python3 "$here/check_rendered.py" "$tmp/$name.json" --namespace "$ns" --operator "$operator" $options; then
    echo "ok: $name"
  else
    fail "$name: rendered manifests"
  fi
done

# The CRD ships in the chart's crds/ (installed before the templates, never templated).
# Whole output first: with pipefail, grep -q quitting at its match could SIGPIPE helm mid-write.
with_crds=$("$helm" template rl "$chart" --namespace "$ns" --include-crds)
grep -q '^kind: CustomResourceDefinition$' <<<"$with_crds" ||
  fail "helm template --include-crds has no CustomResourceDefinition"
# The queue-name policy the chart renders is crds/ringleader.dev_kueue-queue-name-policy.yaml's.
to_json "$top/crds/ringleader.dev_kueue-queue-name-policy.yaml" "$tmp/policy.json"
python3 - "$tmp/defaults.json" "$tmp/policy.json" <<'PY' || fail "the chart's queue-name policy differs from crds/ringleader.dev_kueue-queue-name-policy.yaml"
import json, sys
def specs(path):
    return {o["kind"]: o["spec"] for o in json.load(open(path))["items"] if o["kind"].startswith("ValidatingAdmissionPolicy")}
chart, shipped = specs(sys.argv[1]), specs(sys.argv[2])
chart["ValidatingAdmissionPolicyBinding"].pop("policyName")
shipped["ValidatingAdmissionPolicyBinding"].pop("policyName")
sys.exit(0 if chart == shipped and len(chart) == 2 else 1)
PY

# values.schema.json rejects bad values.
for bad in monitoring.prometheusRule.trainingBusBandwidthFraction=0 monitoring.prometheusRule.trainingBusBandwidthFraction=2 \
  jobDefaults.hostNetwork=maybe operator.logFormat=xml operator.portRange=61000 operator.metricsPort=70000 \
  operator.watchNamespaces={Team_A} image.pullPolicy=Sometimes operator.bogus=1 \
  gangScheduling.volcano.enabled=maybe gangScheduling.yunikorn.enabled=true operator.unschedulableAfterSeconds=0 \
  networkPolicy.enabled=maybe networkPolicy.ingressFrom=all; do
  if "$helm" lint --strict "$chart" --set "$bad" >/dev/null 2>&1; then
    fail "values.schema.json accepts $bad"
  fi
done

((failures == 0)) || { echo "$failures failure(s)" >&2; exit 1; }
echo "chart: all checks passed"
